#include "common/secret.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int secret_read(const char *what, const char *path, char *out, size_t outlen, char *err,
		size_t errlen)
{
	FILE *f;
	size_t n;
	int r = 0;

	if (!outlen)
		return -EINVAL;
	out[0] = '\0';
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "cannot open %s \"%s\": %s", what, path, strerror(-r));
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
