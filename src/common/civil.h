/* civil — the proleptic Gregorian calendar as days from 1970-01-01 (Howard Hinnant's
 * days_from_civil and its inverse), for the modules that must not ask libc or TZ: utctime,
 * cron, tzfile. Pure, header only. */
#ifndef CLAIMD_CIVIL_H
#define CLAIMD_CIVIL_H

#include <stdbool.h>
#include <stdint.h>

#define CIVIL_S_PER_DAY 86400LL

/* Days from 1970-01-01 to y-m-d (m 1-12, d 1-31). */
static inline int64_t civil_days(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* The date of day z (days from 1970-01-01). */
static inline void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static inline bool civil_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static inline unsigned civil_days_in_month(int64_t y, unsigned m)
{
	static const unsigned char n[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return m == 2 && civil_leap(y) ? 29 : n[m - 1];
}

/* Day of the week of day z: 0 Sunday .. 6 Saturday (1970-01-01 was a Thursday). */
static inline unsigned civil_weekday(int64_t z)
{
	return (unsigned)(z >= -4 ? (z + 4) % 7 : (z + 5) % 7 + 6);
}

/* Floor division of seconds into days. */
static inline int64_t civil_day_of(int64_t s)
{
	return s >= 0 ? s / CIVIL_S_PER_DAY : (s - (CIVIL_S_PER_DAY - 1)) / CIVIL_S_PER_DAY;
}

#endif
