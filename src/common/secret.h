/* secret — a secret kept in a file (a database password, an HTTP token): its first line,
 * without the line break. Reads the file; does not log. */
#ifndef CLAIMD_SECRET_H
#define CLAIMD_SECRET_H

#include <stddef.h>

/* The first line of path into out (at most outlen - 1 bytes; a longer line is an error).
 * Returns 0, or a negative errno with err saying what went wrong, naming what (e.g.
 * "password_file") and the path. */
int secret_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		size_t errlen);

#endif
