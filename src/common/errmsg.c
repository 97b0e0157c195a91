#include "common/errmsg.h"

#include <errno.h>
#include <stdio.h>

int errmsg_vinvalid(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	return -EINVAL;
}

int errmsg_invalid(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = errmsg_vinvalid(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}
