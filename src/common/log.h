/* log — one line per event on stderr, in one of three formats:
 *     text    2026-11-21T05:01:18.123Z claimd[sup] pid=1234 info: worker exited slot=2 ...
 *     logfmt  ts=2026-11-21T05:01:18.123Z level=info role=sup pid=1234 msg="worker exited ..."
 *     json    {"ts":"2026-11-21T05:01:18.123Z","level":"info","role":"sup","pid":1234,
 *              "msg":"worker exited ..."}
 * When stderr is the journal ($JOURNAL_STREAM names it), each line starts with its priority
 * (<3> error, <4> warn, <6> info, <7> debug) and text lines leave out the time (journald
 * stamps them). The role ("sup", "w3") is set once per process with log_init. */
#ifndef CLAIMD_LOG_H
#define CLAIMD_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };
enum log_format { LOG_TEXT = 0, LOG_LOGFMT, LOG_JSON };  /* config's CONFIG_LOG_* */

/* Role, level and format (enum log_format); looks at $JOURNAL_STREAM. */
void log_init(const char *role, int level, int format);
int log_level(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Quote a user string for a log line: "..." with quotes, backslashes and control characters
 * escaped (\n, \t, \xNN), cut to about max bytes of s with "..." appended. Returns out. */
const char *log_quote(const char *s, size_t max, char *out, size_t outlen);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
