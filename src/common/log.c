#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char log_role[32] = "claimd";
static int log_max = LOG_INFO;
static int log_fmt = LOG_TEXT;
static int journal;   /* stderr is the journal: a priority before each line */

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const char journal_prio[] = { '3', '4', '6', '7' };

/* $JOURNAL_STREAM is "device:inode" of the journal's stream: stderr is it if they match. */
static int stderr_is_journal(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!v || sscanf(v, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *role, int level, int format)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
	log_max = level;
	log_fmt = format;
	journal = stderr_is_journal();
}

int log_level(void)
{
	return log_max;
}

/* s as the inside of a quoted string: \ and " escaped, control characters as \n, \t or
 * \u00XX (JSON's escapes, which logfmt readers take too). Returns the new length of line. */
static size_t put_escaped(char *line, size_t n, size_t cap, const char *s)
{
	for (; *s && n + 7 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			line[n++] = '\\';
			line[n++] = (char)c;
		} else if (c == '\n' || c == '\t') {
			line[n++] = '\\';
			line[n++] = c == '\n' ? 'n' : 't';
		} else if (c < 0x20 || c == 0x7f) {
			n += (size_t)snprintf(line + n, cap - n, "\\u%04x", c);
		} else {
			line[n++] = (char)c;
		}
	}
	return n;
}

void log_msg(int level, const char *fmt, ...)
{
	char line[2048], msg[1800], ts[40];
	const char *name;
	struct timeval tv;
	struct tm tm;
	size_t n = 0;
	va_list ap;

	if (level > log_max)
		return;
	level = level < 0 ? 0 : level > LOG_DEBUG ? LOG_DEBUG : level;
	name = level_names[level];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03dZ", (int)(tv.tv_usec / 1000));
	n = 0;
	if (journal) {
		line[n++] = '<';
		line[n++] = journal_prio[level];
		line[n++] = '>';
	}
	switch (log_fmt) {
	case LOG_LOGFMT:
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      "ts=%s level=%s role=%s pid=%d msg=\"", ts, name, log_role,
				      (int)getpid());
		n = put_escaped(line, n, sizeof(line) - 2, msg);
		line[n++] = '"';
		break;
	case LOG_JSON:
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      "{\"ts\":\"%s\",\"level\":\"%s\",\"role\":\"%s\",\"pid\":%d,"
				      "\"msg\":\"", ts, name, log_role, (int)getpid());
		n = put_escaped(line, n, sizeof(line) - 3, msg);
		line[n++] = '"';
		line[n++] = '}';
		break;
	default:
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%sclaimd[%s] pid=%d %s: %s",
				      journal ? "" : ts, journal ? "" : " ", log_role,
				      (int)getpid(), name, msg);
		if (n > sizeof(line) - 2)
			n = sizeof(line) - 2;
	}
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
