#include "common/sqlsplit.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

void sqlsplit_init(struct sqlsplit *s, const char *text, size_t len)
{
	s->p = text;
	s->end = text + len;
	strcpy(s->delim, ";");
	s->line = 1;
}

static bool at_line_start(const struct sqlsplit *s, const char *start, const char *q)
{
	return q == start || q[-1] == '\n';
}

/* Whether the word w, followed by a space, starts at p (before end); case does not matter. */
static bool word_at(const char *p, const char *end, const char *w)
{
	size_t n = strlen(w);

	return (size_t)(end - p) > n && strncasecmp(p, w, n) == 0 && isspace((unsigned char)p[n]);
}

/* A "DELIMITER x" line at q (a line's start): the new delimiter; q moves past the line.
 * Returns 1, 0 when it is not one, -EINVAL for a bad one. */
static int delimiter_line(struct sqlsplit *s, const char **q)
{
	const char *p = *q, *e;
	size_t n;

	while (p < s->end && (*p == ' ' || *p == '\t'))
		p++;
	if (!word_at(p, s->end, "DELIMITER"))
		return 0;
	p += 9;
	while (p < s->end && (*p == ' ' || *p == '\t'))
		p++;
	e = p;
	while (e < s->end && !isspace((unsigned char)*e))
		e++;
	n = (size_t)(e - p);
	if (n == 0 || n > SQLSPLIT_DELIM_MAX)
		return -EINVAL;
	memcpy(s->delim, p, n);
	s->delim[n] = '\0';
	while (e < s->end && *e != '\n')
		e++;
	*q = e;
	return 1;
}

/* Past the quote that starts at q; NULL when it does not end. */
static const char *skip_quote(const struct sqlsplit *s, const char *q, unsigned *lines)
{
	char c = *q++;

	while (q < s->end) {
		if (*q == '\n')
			(*lines)++;
		if (*q == '\\' && c != '`' && q + 1 < s->end) {
			q += 2;
			continue;
		}
		if (*q == c) {
			if (q + 1 < s->end && q[1] == c) {   /* a doubled quote */
				q += 2;
				continue;
			}
			return q + 1;
		}
		q++;
	}
	return NULL;
}

/* Past the comment at q (q is at its start) or q itself when none starts there; NULL for
 * one that does not end. */
static const char *skip_comment(const struct sqlsplit *s, const char *q, unsigned *lines)
{
	if (*q == '#' || (s->end - q >= 2 && q[0] == '-' && q[1] == '-' &&
			  (s->end - q == 2 || isspace((unsigned char)q[2])))) {
		while (q < s->end && *q != '\n')
			q++;
		return q;
	}
	if (s->end - q >= 2 && q[0] == '/' && q[1] == '*') {
		for (q += 2; q + 1 < s->end; q++) {
			if (*q == '\n')
				(*lines)++;
			if (q[0] == '*' && q[1] == '/')
				return q + 2;
		}
		return NULL;
	}
	return q;
}

int sqlsplit_next(struct sqlsplit *s, const char **ret_p, size_t *ret_len, unsigned *ret_line)
{
	const char *start = s->p, *q = s->p, *first = NULL;
	size_t dl = strlen(s->delim);
	unsigned first_line = 0;

	while (q < s->end) {
		const char *after;
		int r;
		if (at_line_start(s, start, q) && !first) {
			r = delimiter_line(s, &q);
			if (r < 0)
				return -EINVAL;
			if (r > 0) {
				dl = strlen(s->delim);
				continue;
			}
		}
		if (*q == '\n') {
			s->line++;
			q++;
			continue;
		}
		after = skip_comment(s, q, &s->line);
		if (!after)
			return -EINVAL;
		if (after != q) {
			q = after;
			continue;
		}
		if (isspace((unsigned char)*q)) {
			q++;
			continue;
		}
		if (!first) {
			first = q;
			first_line = s->line;
		}
		if ((size_t)(s->end - q) >= dl && !memcmp(q, s->delim, dl)) {
			const char *e = q;
			while (e > first && isspace((unsigned char)e[-1]))
				e--;
			s->p = q + dl;
			*ret_p = first;
			*ret_len = (size_t)(e - first);
			*ret_line = first_line;
			return 1;
		}
		if (*q == '\'' || *q == '"' || *q == '`') {
			q = skip_quote(s, q, &s->line);
			if (!q)
				return -EINVAL;
			continue;
		}
		q++;
	}
	s->p = s->end;
	if (!first)
		return 0;
	/* The last statement may lack its delimiter. */
	while (q > first && isspace((unsigned char)q[-1]))
		q--;
	*ret_p = first;
	*ret_len = (size_t)(q - first);
	*ret_line = first_line;
	return 1;
}
