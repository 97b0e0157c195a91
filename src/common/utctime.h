/* utctime — the times claimd is given (an item's run_at, from claimctl, the HTTP API or a
 * jobs:batch line) read as points in time, and written back as UTC text. Pure: no I/O, no
 * allocation, does not log, and never asks the process's time zone.
 *
 *     2026-03-29 01:59:30            UTC (no offset given)
 *     2026-03-29T01:59:30.25Z        RFC 3339: 'T' or ' ', up to 6 digits of a second
 *     2026-03-29T03:59:30+02:00      an offset from UTC, -23:59 to +23:59
 */
#ifndef CLAIMD_UTCTIME_H
#define CLAIMD_UTCTIME_H

#include <stddef.h>
#include <stdint.h>

#define UTCTIME_TEXT_MAX 32    /* "YYYY-MM-DD HH:MM:SS.ffffff" and its NUL, with room */

/* The times the database's TIMESTAMP holds (MariaDB before 11.5), which a run_at must be in:
 * 1970-01-01T00:00:01Z to 2038-01-19T03:14:07.999999Z, in us. */
#define UTCTIME_DB_MIN_US 1000000LL
#define UTCTIME_DB_MAX_US 2147483647999999LL
#define UTCTIME_DB_RANGE "1970-01-01T00:00:01Z .. 2038-01-19T03:14:07Z"

/* Microseconds since 1970-01-01 00:00:00 UTC of the time s names (years 0001-9999, a real
 * calendar date, hours 0-23, no leap second), into *ret_us. Returns 0, or -EINVAL with what
 * is wrong in err. *ret_us is written only on success. */
int utctime_parse(const char *s, int64_t *ret_us, char *err, size_t errlen);

/* "YYYY-MM-DD HH:MM:SS.ffffff" of us (UTC), into out (UTCTIME_TEXT_MAX bytes). us must be
 * within the years 0001-9999. */
void utctime_format(int64_t us, char out[UTCTIME_TEXT_MAX]);

#endif
