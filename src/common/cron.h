/* cron — a standard 5-field cron expression, and the next time it fires in a time zone. Pure:
 * no I/O, no allocation, does not log; the zone comes in as a parsed tzfile.
 *
 *     minute hour day-of-month month day-of-week
 *     0-59   0-23 1-31         1-12  0-7 (0 and 7: Sunday)
 *
 * A field is a comma-separated list of '*', N, N-M, each with an optional /STEP ('N/STEP':
 * N to the field's end); months and days of the week also by their English three-letter names
 * (JAN, mon; any case). '@yearly' ('@annually'), '@monthly', '@weekly', '@daily'
 * ('@midnight') and '@hourly' stand for the expressions they name.
 *
 * Days: when both day fields are restricted (neither allows every value), a day matches
 * either; when one allows every value, the other decides alone.
 *
 * Clock changes (the times are wall-clock times in the zone):
 *   - a time the clock skips (spring forward) fires at the moment of the jump, once however
 *     many of the expression's times the skipped hour held — unless the hour field allows every
 *     hour: then the times that do not exist are skipped, as the clock does;
 *   - a time the clock shows twice (fall back) fires once, on its first pass — unless the hour
 *     field allows every hour: then it fires on both passes (every 15 minutes stays every 15
 *     minutes). */
#ifndef CLAIMD_CRON_H
#define CLAIMD_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/tzfile.h"

#define CRON_TEXT_MAX 255       /* the longest expression accepted, without its NUL */
#define CRON_HORIZON_YEARS 30   /* how far cron_next looks for a time that matches */

struct cron {
	uint64_t minutes;   /* bit n: minute n */
	uint32_t hours;     /* bit n: hour n */
	uint32_t mdays;     /* bit n: day of the month n, 1-31 */
	uint16_t months;    /* bit n: month n, 1-12 */
	uint8_t wdays;      /* bit n: day of the week n, 0 (Sunday) - 6 */
	bool every_mday;    /* the day-of-month field allows every day */
	bool every_wday;    /* the day-of-week field allows every day */
	bool every_hour;    /* the hour field allows every hour (see clock changes above) */
};

/* Parses expr into *ret. Returns 0, or -EINVAL with what is wrong in err (quoting the field).
 * *ret is written only on success. An expression that can never fire (30 2 *: February
 * 30th) parses; cron_next then answers -ENOENT. */
int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen);

/* Whether the wall-clock time local (seconds from 1970-01-01 00:00 as on a clock, on a
 * minute) matches c. */
bool cron_matches(const struct cron *c, int64_t local);

/* The first wall-clock time that matches c, strictly after local and not after limit (both
 * wall-clock seconds), into *ret. Returns 0, or -ENOENT if there is none. */
int cron_next_local(const struct cron *c, int64_t local, int64_t limit, int64_t *ret);

/* The first moment (UTC seconds) strictly after after at which c fires in zone z, by the
 * rules above, into *ret. Returns 0, or -ENOENT if it does not fire within
 * CRON_HORIZON_YEARS. */
int cron_next(const struct cron *c, const struct tzfile *z, int64_t after, int64_t *ret);

/* Whether cron is an expression claimd takes and zone (NULL: UTC) a zone it can read (the
 * file is read: blocks), with why not in err. Returns 0, -EINVAL, or another negative error
 * when the zone's file could not be read now (tzfile_load). */
int cron_check(const char *cron, const char *zone, char *err, size_t errlen);

#endif
