/* secret — a secret kept in a file (a database password, an HTTP token, a TLS key): its
 * first line, without the line break. A file group or others may access, or that is not a
 * regular file, is refused, as PostgreSQL refuses such a .pgpass: whoever else can read it
 * has the secret. Reads the file; does not log. */
#ifndef CLAIMD_SECRET_H
#define CLAIMD_SECRET_H

#include <stddef.h>

/* The first line of path into out (at most outlen - 1 bytes; a longer line is an error), if
 * path may hold a secret (secret_check). Returns 0, or a negative errno with err saying what
 * went wrong, naming what (e.g. "password_file") and the path. */
int secret_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		size_t errlen);

/* Whether path may hold a secret: a regular file (symbolic links followed) whose mode gives
 * group and others nothing (0600, 0400). Looks at the file without opening it (a process
 * that gave up root may no longer read a file it read at its start). Returns 0, -EPERM (its
 * mode, or not a regular file: err names the file, its mode and the fix) or another negative
 * errno (no such file), with err filled. */
int secret_check(const char *what, const char *path, char *err, size_t errlen);

#endif
