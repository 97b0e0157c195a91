/* utctime — see utctime.h. Dates are counted as days from 1970-01-01 in the proleptic
 * Gregorian calendar (common/civil.h), so that no libc time function, and no TZ, takes part. */
#include "common/utctime.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/civil.h"
#include "common/errmsg.h"

#define US_PER_S 1000000LL
#define S_PER_DAY CIVIL_S_PER_DAY


/* n decimal digits at *p into *ret; moves *p past them. */
static bool digits(const char **p, int n, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (unsigned)(c - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

static bool lit(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

int utctime_parse(const char *s, int64_t *ret_us, char *err, size_t errlen)
{
	const char *p = s;
	unsigned y, mo, d, h, mi, sec, oh = 0, om = 0, frac = 0;
	int64_t us, off_s = 0;
	int nfrac = 0;

	if (!s)
		return errmsg_invalid(err, errlen, "no time given");
	if (!digits(&p, 4, &y) || !lit(&p, '-') || !digits(&p, 2, &mo) || !lit(&p, '-') ||
	    !digits(&p, 2, &d) || !(lit(&p, ' ') || lit(&p, 'T') || lit(&p, 't')) ||
	    !digits(&p, 2, &h) || !lit(&p, ':') || !digits(&p, 2, &mi) || !lit(&p, ':') ||
	    !digits(&p, 2, &sec))
		goto form;
	if (lit(&p, '.')) {
		while (*p >= '0' && *p <= '9' && nfrac < 6)
			frac = frac * 10 + (unsigned)(*p++ - '0'), nfrac++;
		if (nfrac == 0 || (*p >= '0' && *p <= '9'))
			goto form;
		for (int i = nfrac; i < 6; i++)
			frac *= 10;
	}
	if (lit(&p, 'Z') || lit(&p, 'z')) {
		off_s = 0;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		if (!digits(&p, 2, &oh) || !lit(&p, ':') || !digits(&p, 2, &om))
			goto form;
		if (oh > 23 || om > 59)
			return errmsg_invalid(err, errlen, "the offset in '%.40s' is not -23:59 to +23:59", s);
		off_s = sign * ((int64_t)oh * 3600 + (int64_t)om * 60);
	}
	if (*p)
		goto form;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > civil_days_in_month(y, mo))
		return errmsg_invalid(err, errlen, "'%.40s' is not a date of the calendar", s);
	if (h > 23 || mi > 59 || sec > 59)
		return errmsg_invalid(err, errlen, "'%.40s' is not a time of day (00:00:00 to 23:59:59)", s);
	us = ((civil_days(y, mo, d) * S_PER_DAY + h * 3600 + mi * 60 + sec) - off_s) *
	     US_PER_S + frac;
	*ret_us = us;
	return 0;
form:
	return errmsg_invalid(err, errlen, "'%.40s' is not 'YYYY-MM-DD HH:MM:SS[.ffffff]' (UTC) or RFC 3339 "
		    "('YYYY-MM-DDTHH:MM:SS[.ffffff]Z', or with an offset such as +02:00)", s);
}

void utctime_format(int64_t us, char out[UTCTIME_TEXT_MAX])
{
	int64_t s = us >= 0 ? us / US_PER_S : (us - (US_PER_S - 1)) / US_PER_S;
	int64_t frac = us - s * US_PER_S;
	int64_t days = s >= 0 ? s / S_PER_DAY : (s - (S_PER_DAY - 1)) / S_PER_DAY;
	int64_t rest = s - days * S_PER_DAY, y;
	unsigned m, d;

	civil_from_days(days, &y, &m, &d);
	/* The modulos only tell the compiler how wide each field is. */
	snprintf(out, UTCTIME_TEXT_MAX, "%04u-%02u-%02u %02u:%02u:%02u.%06u",
		 (unsigned)y % 10000u, m % 13u, d % 32u, (unsigned)(rest / 3600) % 24u,
		 (unsigned)(rest / 60 % 60), (unsigned)(rest % 60), (unsigned)frac % 1000000u);
}
