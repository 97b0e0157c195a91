/* errmsg — the message of a refusal, for the pure modules that return -EINVAL with what is
 * wrong in a caller's buffer (cron, tzfile, utctime, ctl). Does not log. */
#ifndef CLAIMD_ERRMSG_H
#define CLAIMD_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/* Writes the message to err (errlen bytes; nothing when err is NULL or errlen 0) and returns
 * -EINVAL. */
int errmsg_invalid(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with the arguments as a va_list. */
int errmsg_vinvalid(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif
