#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char log_role[32] = "claimd";
static int log_max = LOG_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(const char *role, int level)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
	log_max = level;
}

int log_level(void)
{
	return log_max;
}

void log_msg(int level, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	size_t n;
	va_list ap;

	if (level > log_max)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03dZ claimd[%s] pid=%d %s: ",
			      (int)(tv.tv_usec / 1000), log_role, (int)getpid(),
			      level_names[level < 0 ? 0 : level > LOG_DEBUG ? LOG_DEBUG : level]);
	va_start(ap, fmt);
	if (n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so lines from the supervisor and its workers never interleave. */
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

const char *log_quote(const char *s, size_t max, char *out, size_t outlen)
{
	size_t o = 0, i;

	if (outlen < 8) {
		if (outlen)
			out[0] = '\0';
		return out;
	}
	out[o++] = '"';
	for (i = 0; i < max && s[i] && o + 8 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			out[o++] = '\\';
			out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	if (s[i] && o + 4 < outlen) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}
