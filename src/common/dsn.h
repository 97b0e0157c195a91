/* dsn — database connection settings: parsing of the DSN claimd takes.
 *
 *     mysql://user@host:port/db?socket=/path/to/sock
 *     mysql://user@localhost/db?socket=/run/mysqld/mysqld.sock
 *     mysql://app@db.example:3306/jobs
 *
 * A password is never part of a DSN (it would show in argv and in ps); dsn_parse rejects
 * "user:password@". The password comes from the environment (CLAIMD_DB_PASSWORD) or a file
 * (?password_file=/path, read at connect time by the store module). Pure, no logging.
 */
#ifndef CLAIMD_DSN_H
#define CLAIMD_DSN_H

#include <stddef.h>

#define DSN_FIELD_MAX 256

struct dsn {
	char user[DSN_FIELD_MAX];          /* "" = the client library's default */
	char host[DSN_FIELD_MAX];          /* "" = localhost */
	unsigned port;                     /* 0 = default (3306) */
	char db[DSN_FIELD_MAX];            /* required */
	char socket[DSN_FIELD_MAX];        /* "" = none; used when host is localhost or empty */
	char password_file[DSN_FIELD_MAX]; /* "" = none */
};

/* Parse s into *ret. Returns 0, or -EINVAL with a human message in err (what is wrong and
 * where), leaving *ret untouched. Percent-escapes (%2F) are decoded in every part.
 * Accepted query parameters: socket, password_file; any other is an error. */
int dsn_parse(const char *s, struct dsn *ret, char *err, size_t errlen);

#endif
