/* sqlsplit — the statements of a SQL script as the mariadb client reads them: a statement
 * ends at the delimiter (';'), which a line "DELIMITER x" changes (for trigger bodies); the
 * delimiter does not count inside quotes ('...', "...", `...`, with backslash escapes and
 * doubled quotes) or comments (-- to the end of the line, # likewise, slash-star to
 * star-slash). Pure: no I/O, no allocation, does not log. */
#ifndef CLAIMD_SQLSPLIT_H
#define CLAIMD_SQLSPLIT_H

#include <stddef.h>

#define SQLSPLIT_DELIM_MAX 16

struct sqlsplit {
	const char *p, *end;
	char delim[SQLSPLIT_DELIM_MAX + 1];
	unsigned line;        /* of p, from 1 */
};

void sqlsplit_init(struct sqlsplit *s, const char *text, size_t len);

/* The next statement, without its delimiter and the blanks around it: returns 1 with
 * *ret_p, *ret_len and *ret_line (where it starts), 0 when there is none left (what is left
 * is blanks and comments), or -EINVAL for a quote or comment that does not end, or a bad
 * DELIMITER line. */
int sqlsplit_next(struct sqlsplit *s, const char **ret_p, size_t *ret_len, unsigned *ret_line);

#endif
