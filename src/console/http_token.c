#include "console/http_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/secret.h"
#include "console/http.h"

int http_token_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		    size_t errlen)
{
	char line[HTTP_TOKEN_MAX + 1], why[300];
	size_t n;

	if (secret_read(what, path, line, sizeof(line), why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -EINVAL;
	}
	n = strlen(line);
	for (size_t i = 0; i < n; i++)
		if (line[i] <= ' ' || line[i] > '~') {
			snprintf(err, errlen, "%s %s: the token has a character that is not printable "
				 "ASCII (or a space)", what, path);
			explicit_bzero(line, sizeof(line));
			return -EINVAL;
		}
	if (n < 16 || n >= outlen) {
		snprintf(err, errlen, "%s %s: the token (its first line) must be 16 to %d "
			 "characters", what, path, HTTP_TOKEN_MAX);
		explicit_bzero(line, sizeof(line));
		return -EINVAL;
	}
	memcpy(out, line, n + 1);
	explicit_bzero(line, sizeof(line));
	return 0;
}

int http_token_make(char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[HTTP_TOKEN_MADE_LEN / 2];
	size_t got = 0;

	if (outlen < HTTP_TOKEN_MADE_LEN + 1)
		return -ENOBUFS;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[HTTP_TOKEN_MADE_LEN] = '\0';
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

int http_token_path(const char *control, char *out, size_t outlen)
{
	const char *base = strrchr(control, '/'), *dot;
	size_t keep;

	base = base ? base + 1 : control;
	dot = strrchr(base, '.');
	keep = dot && dot > base ? (size_t)(dot - control) : strlen(control);
	if ((size_t)snprintf(out, outlen, "%.*s.http-token", (int)keep, control) >= outlen)
		return -ENAMETOOLONG;
	return 0;
}

int http_token_write(const char *path, const char *token, uid_t uid, gid_t gid, char *err,
		     size_t errlen)
{
	char tmp[4200];
	size_t len = strlen(token);
	int fd = -1, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= sizeof(tmp)) {
		snprintf(err, errlen, "the token file's path is too long: %s", path);
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	if (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) {
		r = -errno;
		goto fail;
	}
	errno = 0;
	if (write(fd, token, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		r = errno ? -errno : -EIO;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot write the HTTP token file %s: %s", path, strerror(-r));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return r;
}
