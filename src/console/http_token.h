/* http_token — the HTTP tokens: read from a file the operator wrote (--http-token-file,
 * --http-read-token-file), or made at start from getrandom and written to a file only its
 * owner may read, beside the control socket (removed at a clean stop by whoever wrote it).
 * Does not log. */
#ifndef CLAIMD_HTTP_TOKEN_H
#define CLAIMD_HTTP_TOKEN_H

#include <stddef.h>
#include <sys/types.h>

#define HTTP_TOKEN_MADE_LEN 64   /* hex digits of a made token (32 random bytes) */

/* The first line of path, 16..HTTP_TOKEN_MAX printable ASCII characters but space, into out.
 * what names the option in err ("--http-token-file"). Returns 0 or -EINVAL with err filled. */
int http_token_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		    size_t errlen);

/* A new token: 32 bytes from getrandom as 64 hex digits, into out (at least 65 bytes).
 * Returns 0 or a negative errno. */
int http_token_make(char *out, size_t outlen);

/* Where a made token is written: the control socket's path with its extension (what follows
 * the last dot of its last component, not a leading one) replaced by ".http-token", or with
 * ".http-token" added: /run/claimd/claimd.sock -> /run/claimd/claimd.http-token. Returns 0
 * or -ENAMETOOLONG. */
int http_token_path(const char *control, char *out, size_t outlen);

/* Write token and a newline to path, mode 0600, owned by uid:gid unless uid is -1 (a
 * supervisor started as root that becomes --user), replacing a file left there (through a
 * temporary file renamed over it: a reader never sees half of it). Returns 0 or a negative
 * errno with err filled. */
int http_token_write(const char *path, const char *token, uid_t uid, gid_t gid, char *err,
		     size_t errlen);

#endif
