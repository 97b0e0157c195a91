/* test_utctime — table-driven tests of utctime_parse (every form it takes, with the instant
 * each names, and what it refuses, with the reason), every prefix of every case read without
 * crashing, and utctime_format's text read back as the same instant. */
#include "common/utctime.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

struct ok_case {
	const char *in;
	long long us;        /* since 1970-01-01 00:00:00 UTC */
	const char *utc;     /* utctime_format of it */
};

struct bad_case {
	const char *in;
	const char *err_contains;
};

static const struct ok_case ok_cases[] = {
	{ "1970-01-01 00:00:00", 0, "1970-01-01 00:00:00.000000" },
	{ "1970-01-01 00:00:01", 1000000, "1970-01-01 00:00:01.000000" },
	{ "2026-03-29 01:00:00", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-29T01:00:00Z", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-29t01:00:00z", 1774746000000000, "2026-03-29 01:00:00.000000" },
	/* Berlin's summer time, and a zone west of UTC across midnight */
	{ "2026-03-29T03:00:00+02:00", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-28T21:30:00-03:30", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-29 01:00:00+00:00", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-29 01:00:00-00:00", 1774746000000000, "2026-03-29 01:00:00.000000" },
	{ "2026-03-29T01:00:00.5Z", 1774746000500000, "2026-03-29 01:00:00.500000" },
	{ "2026-03-29 01:00:00.000001", 1774746000000001, "2026-03-29 01:00:00.000001" },
	{ "2026-03-29 01:00:00.123456+01:00", 1774742400123456, "2026-03-29 00:00:00.123456" },
	{ "2038-01-19 03:14:07.999999", 2147483647999999, "2038-01-19 03:14:07.999999" },
	{ "2024-02-29 12:00:00", 1709208000000000, "2024-02-29 12:00:00.000000" },
	{ "2000-02-29 00:00:00", 951782400000000, "2000-02-29 00:00:00.000000" },
	{ "1969-12-31 23:59:59.5", -500000, "1969-12-31 23:59:59.500000" },
	{ "0001-01-01 00:00:00", -62135596800000000, "0001-01-01 00:00:00.000000" },
	{ "9999-12-31 23:59:59.999999", 253402300799999999, "9999-12-31 23:59:59.999999" },
	{ "2026-01-01T00:00:00+23:59", 1767139260000000, "2025-12-31 00:01:00.000000" },
};

static const struct bad_case bad_cases[] = {
	{ "", "is not 'YYYY-MM-DD" },
	{ "tomorrow", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00", "is not 'YYYY-MM-DD" },
	{ "2026-1-01 10:00:00", "is not 'YYYY-MM-DD" },
	{ "2026-01-01  10:00:00", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00.", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00.1234567", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00 ", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00Z ", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00+2", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00+0200", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00 +02:00", "is not 'YYYY-MM-DD" },
	{ "2026-01-01 10:00:00+24:00", "offset" },
	{ "2026-01-01 10:00:00-01:60", "offset" },
	{ "2026-02-29 10:00:00", "not a date" },
	{ "1900-02-29 10:00:00", "not a date" },
	{ "2026-13-01 10:00:00", "not a date" },
	{ "2026-00-10 10:00:00", "not a date" },
	{ "2026-04-31 10:00:00", "not a date" },
	{ "0000-01-01 00:00:00", "not a date" },
	{ "2026-01-01 24:00:00", "not a time of day" },
	{ "2026-01-01 23:60:00", "not a time of day" },
	{ "2026-06-30 23:59:60Z", "not a time of day" },
	{ "2026-01-01 10:00:00\n", "is not 'YYYY-MM-DD" },
	{ "+2026-01-01 10:00:00", "is not 'YYYY-MM-DD" },
};

int main(void)
{
	char err[200], text[UTCTIME_TEXT_MAX], prefix[64];
	long long us;

	for (size_t i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]); i++) {
		const struct ok_case *c = &ok_cases[i];
		int64_t got = -1, again = -1;
		int r = utctime_parse(c->in, &got, err, sizeof(err));
		CHECK(r == 0, "'%s': %d (%s)", c->in, r, err);
		CHECK(got == c->us, "'%s': %lld us, want %lld", c->in, (long long)got, c->us);
		utctime_format(got, text);
		CHECK(!strcmp(text, c->utc), "'%s' written as '%s', want '%s'", c->in, text, c->utc);
		r = utctime_parse(text, &again, err, sizeof(err));
		CHECK(r == 0 && again == got, "'%s' read back: %d, %lld", text, r, (long long)again);
	}
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		int64_t got = 12345;
		int r;
		err[0] = '\0';
		r = utctime_parse(c->in, &got, err, sizeof(err));
		CHECK(r == -EINVAL, "'%s': %d, want -EINVAL", c->in, r);
		CHECK(got == 12345, "'%s': *ret_us written on error", c->in);
		CHECK(strstr(err, c->err_contains) != NULL, "'%s': error '%s' lacks '%s'", c->in, err,
		      c->err_contains);
	}
	/* Every prefix of every accepted text: read or refused, never past its end. */
	for (size_t i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]); i++) {
		size_t n = strlen(ok_cases[i].in);
		for (size_t k = 0; k < n; k++) {
			int64_t got;
			memcpy(prefix, ok_cases[i].in, k);
			prefix[k] = '\0';
			int r = utctime_parse(prefix, &got, err, sizeof(err));
			CHECK(r == 0 || r == -EINVAL, "prefix '%s': %d", prefix, r);
		}
	}
	CHECK(utctime_parse(NULL, (int64_t *)&us, err, sizeof(err)) == -EINVAL, "NULL");
	if (failures)
		return 1;
	printf("ok - utctime: %zu accepted, %zu refused\n", sizeof(ok_cases) / sizeof(ok_cases[0]),
	       sizeof(bad_cases) / sizeof(bad_cases[0]));
	return 0;
}
