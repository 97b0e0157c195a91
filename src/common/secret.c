#include "common/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* st, path's, checked as secret_check says. */
static int check_mode(const char *what, const char *path, const struct stat *st, char *err,
		      size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%s \"%s\" is not a regular file: a secret is read from a "
			 "file of its owner's alone (mode 0600)", what, path);
		return -EPERM;
	}
	if (st->st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen, "%s \"%s\" is open to group or others (mode %04o): a secret "
			 "must be its owner's alone; chmod 600 %s", what, path,
			 (unsigned)(st->st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

static int fail_errno(const char *how, const char *what, const char *path, char *err,
		      size_t errlen)
{
	int r = -errno;

	snprintf(err, errlen, "cannot %s %s \"%s\": %s", how, what, path, strerror(-r));
	return r;
}

int secret_check(const char *what, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return fail_errno("find", what, path, err, errlen);
	return check_mode(what, path, &st, err, errlen);
}

int secret_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		size_t errlen)
{
	struct stat st;
	FILE *f = NULL;
	size_t n;
	int fd, r = 0;

	if (!outlen)
		return -EINVAL;
	out[0] = '\0';
	/* O_NONBLOCK: a FIFO in the file's place must not hang the open; it is refused. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail_errno("open", what, path, err, errlen);
	if (fstat(fd, &st) < 0)
		r = fail_errno("read", what, path, err, errlen);
	else if ((r = check_mode(what, path, &st, err, errlen)) == 0 && !(f = fdopen(fd, "r")))
		r = fail_errno("read", what, path, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!fgets(out, (int)outlen, f))
		out[0] = '\0';
	n = strcspn(out, "\r\n");
	int next = !out[n] && n == outlen - 1 ? fgetc(f) : EOF;
	if (next != EOF && next != '\n' && next != '\r') {
		snprintf(err, errlen, "%s \"%s\": its first line is over %zu bytes", what, path,
			 outlen - 1);
		r = -EMSGSIZE;
	}
	out[n] = '\0';
	fclose(f);
	return r;
}
