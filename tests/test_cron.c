/* test_cron — cron_parse (what it takes, what it refuses and why), cron_next across clock
 * changes by the rules cron.h states (spring forward, fall back, both hemispheres, a
 * 30-minute change), and tzfile_parse: the spans of a zone given as a table, as a footer's
 * rule and as both, and every prefix and every one-byte change of a file read without
 * crashing; tzfile_load's errors, final or not. The zones are built here as TZif bytes: the
 * test needs no tzdata. */
#include "common/cron.h"
#include "common/tzfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/civil.h"

/* --- TZif bytes ------------------------------------------------------------------------------ */

struct bytes {
	uint8_t b[4096];
	size_t n;
};

static void put(struct bytes *o, const void *p, size_t n)
{
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put32(struct bytes *o, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	put(o, b, 4);
}

static void put64(struct bytes *o, int64_t v)
{
	put32(o, (uint32_t)((uint64_t)v >> 32));
	put32(o, (uint32_t)v);
}

static void header(struct bytes *o, uint32_t timecnt, uint32_t typecnt)
{
	uint8_t zero[15] = { 0 };

	put(o, "TZif2", 5);
	put(o, zero, 15);
	put32(o, 0);          /* isutcnt */
	put32(o, 0);          /* isstdcnt */
	put32(o, 0);          /* leapcnt */
	put32(o, timecnt);
	put32(o, typecnt);
	put32(o, 4);          /* charcnt: "ZZZ\0" */
}

static void block(struct bytes *o, const int64_t *times, const int32_t *offs, size_t n,
		  int32_t off0, unsigned tsize)
{
	for (size_t i = 0; i < n; i++) {
		if (tsize == 8)
			put64(o, times[i]);
		else
			put32(o, (uint32_t)(int32_t)times[i]);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t idx = (uint8_t)(i + 1);
		put(o, &idx, 1);
	}
	for (size_t i = 0; i <= n; i++) {
		uint8_t tail[2] = { 0, 0 };
		put32(o, (uint32_t)(i == 0 ? off0 : offs[i - 1]));
		put(o, tail, 2);
	}
	put(o, "ZZZ", 4);
}

/* A version 2 file: the transitions (each its own type), then the footer's rule. */
static void tzif(struct bytes *o, const int64_t *times, const int32_t *offs, size_t n,
		 int32_t off0, const char *footer)
{
	o->n = 0;
	header(o, (uint32_t)n, (uint32_t)n + 1);
	block(o, times, offs, n, off0, 4);
	header(o, (uint32_t)n, (uint32_t)n + 1);
	block(o, times, offs, n, off0, 8);
	put(o, "\n", 1);
	put(o, footer, strlen(footer));
	put(o, "\n", 1);
}

static struct tzfile *zone(const char *footer)
{
	struct bytes o;
	struct tzfile *z = NULL;
	char err[256];

	tzif(&o, NULL, NULL, 0, 0, footer);
	if (tzfile_parse(o.b, o.n, &z, err, sizeof(err)) < 0) {
		CHECK(false, "footer '%s' refused: %s", footer, err);
		exit(1);
	}
	return z;
}

/* --- times ----------------------------------------------------------------------------------- */

static int64_t utc(int y, unsigned m, unsigned d, int h, int mi)
{
	return civil_days(y, m, d) * CIVIL_S_PER_DAY + h * 3600 + mi * 60;
}

/* --- parsing --------------------------------------------------------------------------------- */

static const struct {
	const char *expr;
	const char *err;   /* NULL: parses */
} parse_cases[] = {
	{ "* * * * *", NULL },
	{ "0 0 1 1 *", NULL },
	{ "*/15 9-17 * * mon-fri", NULL },
	{ "0 12 * JAN,Jul sun", NULL },
	{ "5,10-20/5,59 0 1,15 */2 0,7", NULL },
	{ "  0   0  *  *  *  ", NULL },
	{ "@hourly", NULL },
	{ "@YEARLY", NULL },
	{ "0 0 30 2 *", NULL },   /* never fires: parses, cron_next says -ENOENT */
	{ "", "has 0 fields" },
	{ "* * * *", "has 4 fields" },
	{ "* * * * * *", "more than 5 fields" },
	{ "60 * * * *", "minute field '60'" },
	{ "* 24 * * *", "hour field '24'" },
	{ "* * 0 * *", "day of the month field '0'" },
	{ "* * 32 * *", "day of the month field '32'" },
	{ "* * * 0 *", "month field '0'" },
	{ "* * * 13 *", "month field '13'" },
	{ "* * * * 8", "day of the week field '8'" },
	{ "5-1 * * * *", "minute field '5-1'" },
	{ "*/0 * * * *", "minute field '*/0'" },
	{ "*/ * * * *", "minute field" },
	{ "1, * * * *", "minute field '1,'" },
	{ ",1 * * * *", "minute field" },
	{ "1-2-3 * * * *", "minute field" },
	{ "* * * janu *", "month field 'janu'" },
	{ "* * * * mo", "day of the week field 'mo'" },
	{ "L * * * *", "minute field 'L'" },
	{ "* * ? * *", "day of the month field '?'" },
	{ "* * * * 1#2", "day of the week field '1#2'" },
	{ "@reboot", "is not @yearly" },
	{ "@hourly 5", "is not @yearly" },
	{ "99999999999999999999 * * * *", "minute field" },
};

static void test_parse(void)
{
	char err[256];
	struct cron c;

	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		int r = cron_parse(parse_cases[i].expr, &c, err, sizeof(err));
		if (!parse_cases[i].err)
			CHECK(r == 0, "'%s' refused: %s", parse_cases[i].expr, err);
		else
			CHECK(r == -EINVAL && strstr(err, parse_cases[i].err),
			      "'%s': r=%d err='%s', want '%s'", parse_cases[i].expr, r,
			      r < 0 ? err : "", parse_cases[i].err);
	}
	cron_parse("0,30 9-17/4 * * 1-5", &c, err, sizeof(err));
	CHECK(c.minutes == (1ULL << 0 | 1ULL << 30), "minutes %llx", (unsigned long long)c.minutes);
	CHECK(c.hours == (1u << 9 | 1u << 13 | 1u << 17), "hours %x", c.hours);
	CHECK(c.wdays == 0x3e && !c.every_wday && c.every_mday, "wdays %x", c.wdays);
	cron_parse("* * * * 0-7", &c, err, sizeof(err));
	CHECK(c.wdays == 0x7f && c.every_wday, "0-7 is every day: %x", c.wdays);
	cron_parse("* * * * 5-7", &c, err, sizeof(err));
	CHECK(c.wdays == (1 << 5 | 1 << 6 | 1 << 0), "5-7 is Fri, Sat, Sun: %x", c.wdays);
	cron_parse("@weekly", &c, err, sizeof(err));
	CHECK(c.minutes == 1 && c.hours == 1 && c.wdays == 1 && c.every_mday, "@weekly");
	{
		char long_expr[CRON_TEXT_MAX + 2];
		memset(long_expr, ' ', sizeof(long_expr) - 1);
		long_expr[sizeof(long_expr) - 1] = '\0';
		CHECK(cron_parse(long_expr, &c, err, sizeof(err)) == -EINVAL &&
		      strstr(err, "at most"), "a too long expression: %s", err);
	}
}

/* --- days, and the next time in UTC -------------------------------------------------------- */

static void expect_next(const char *expr, const struct tzfile *z, int64_t after,
			const int64_t *want, size_t n)
{
	char err[256];
	struct cron c;
	int64_t t = after;

	if (cron_parse(expr, &c, err, sizeof(err)) < 0) {
		CHECK(false, "'%s' refused: %s", expr, err);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int r = cron_next(&c, z, t, &t);
		CHECK(r == 0 && t == want[i], "'%s' fire %zu: r=%d got %lld want %lld", expr, i, r,
		      (long long)t, (long long)want[i]);
		if (r < 0 || t != want[i])
			return;
	}
}

static void test_days(void)
{
	struct tzfile *u = zone("UTC0");
	char err[256];
	struct cron c;
	int64_t t;

	/* 2026-11-25 is a Wednesday. The 1st or a Friday: both restricted, either day. */
	expect_next("0 9 1 * fri", u, utc(2026, 11, 25, 12, 0),
		    (int64_t[]){ utc(2026, 11, 27, 9, 0), utc(2026, 12, 1, 9, 0),
				 utc(2026, 12, 4, 9, 0) }, 3);
	/* The 13th that is a Friday: one field allows every day, so the other decides alone. */
	expect_next("0 0 13 * *", u, utc(2026, 11, 25, 0, 0),
		    (int64_t[]){ utc(2026, 12, 13, 0, 0), utc(2027, 1, 13, 0, 0) }, 2);
	expect_next("0 0 * * 1-5", u, utc(2026, 11, 27, 12, 0),   /* a Friday */
		    (int64_t[]){ utc(2026, 11, 30, 0, 0), utc(2026, 12, 1, 0, 0) }, 2);
	/* February 29th: leap years only. */
	expect_next("0 0 29 2 *", u, utc(2026, 1, 1, 0, 0),
		    (int64_t[]){ utc(2028, 2, 29, 0, 0), utc(2032, 2, 29, 0, 0) }, 2);
	/* Ends of months and years. */
	expect_next("59 23 31 * *", u, utc(2026, 11, 25, 0, 0),
		    (int64_t[]){ utc(2026, 12, 31, 23, 59), utc(2027, 1, 31, 23, 59),
				 utc(2027, 3, 31, 23, 59) }, 3);
	expect_next("*/20 * * * *", u, utc(2026, 12, 31, 23, 45),
		    (int64_t[]){ utc(2027, 1, 1, 0, 0), utc(2027, 1, 1, 0, 20) }, 2);
	/* Strictly after: a time that matches is not its own next. */
	expect_next("0 0 * * *", u, utc(2026, 11, 25, 0, 0),
		    (int64_t[]){ utc(2026, 11, 26, 0, 0) }, 1);
	expect_next("0 0 * * *", u, utc(2026, 11, 25, 0, 0) - 1,
		    (int64_t[]){ utc(2026, 11, 25, 0, 0) }, 1);
	/* Never. */
	cron_parse("0 0 30 2 *", &c, err, sizeof(err));
	CHECK(cron_next(&c, u, 0, &t) == -ENOENT, "February 30th fires");
	cron_parse("0 0 31 4,6,9,11 *", &c, err, sizeof(err));
	CHECK(cron_next(&c, u, 0, &t) == -ENOENT, "April 31st fires");
	tzfile_free(u);
}

/* --- clock changes --------------------------------------------------------------------------- */

static void test_spring_forward(void)
{
	/* Europe/Berlin by its rule: 2026-03-29 01:00 UTC the clock goes 02:00 CET -> 03:00
	 * CEST. */
	struct tzfile *z = zone("CET-1CEST,M3.5.0,M10.5.0/3");
	int64_t jump = utc(2026, 3, 29, 1, 0);

	/* A fixed time in the skipped hour fires at the jump, then normally. */
	expect_next("30 2 * * *", z, utc(2026, 3, 28, 12, 0),
		    (int64_t[]){ jump, utc(2026, 3, 30, 0, 30) }, 2);
	/* Several skipped times fire once. */
	expect_next("0,15,45 2 * * *", z, utc(2026, 3, 28, 12, 0),
		    (int64_t[]){ jump, utc(2026, 3, 30, 0, 0) }, 2);
	/* A fixed time outside it is untouched: 01:30 CET, then 03:30 CEST. */
	expect_next("30 1,3 * * *", z, utc(2026, 3, 29, 0, 0),
		    (int64_t[]){ utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30) }, 2);
	/* Every hour: the times that do not exist are skipped, as the clock does. */
	expect_next("30 * * * *", z, utc(2026, 3, 28, 23, 45),
		    (int64_t[]){ utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 30) }, 2);
	expect_next("*/30 * * * *", z, utc(2026, 3, 29, 0, 15),
		    (int64_t[]){ utc(2026, 3, 29, 0, 30), jump, utc(2026, 3, 29, 1, 30) }, 3);
	tzfile_free(z);
}

static void test_fall_back(void)
{
	/* 2026-10-25 01:00 UTC the clock goes 03:00 CEST -> 02:00 CET: 02:00-02:59 twice. */
	struct tzfile *z = zone("CET-1CEST,M3.5.0,M10.5.0/3");

	/* A fixed time in the repeated hour fires once, on its first pass. */
	expect_next("30 2 * * *", z, utc(2026, 10, 24, 12, 0),
		    (int64_t[]){ utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30) }, 2);
	/* Even asked from within the second pass. */
	expect_next("45 2 * * *", z, utc(2026, 10, 25, 1, 10),
		    (int64_t[]){ utc(2026, 10, 26, 1, 45) }, 1);
	/* Every hour: both passes. */
	expect_next("0 * * * *", z, utc(2026, 10, 24, 23, 30),
		    (int64_t[]){ utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 1, 0),
				 utc(2026, 10, 25, 2, 0) }, 3);
	expect_next("*/20 * * * *", z, utc(2026, 10, 25, 0, 30),
		    (int64_t[]){ utc(2026, 10, 25, 0, 40), utc(2026, 10, 25, 1, 0),
				 utc(2026, 10, 25, 1, 20) }, 3);
	tzfile_free(z);
}

static void test_other_zones(void)
{
	/* Australia/Sydney: summer time from the first Sunday of October to the first of April
	 * (2026-04-05 03:00 AEDT -> 02:00 AEST; 2026-10-04 02:00 AEST -> 03:00 AEDT). */
	struct tzfile *z = zone("AEST-10AEDT,M10.1.0,M4.1.0/3");

	expect_next("30 2 * * *", z, utc(2026, 10, 3, 0, 0),
		    (int64_t[]){ utc(2026, 10, 3, 16, 0), utc(2026, 10, 4, 15, 30) }, 2);
	expect_next("30 2 * * *", z, utc(2026, 4, 3, 12, 0),   /* 23:00 AEDT */
		    (int64_t[]){ utc(2026, 4, 3, 15, 30), utc(2026, 4, 4, 15, 30),
				 utc(2026, 4, 5, 16, 30) }, 3);
	tzfile_free(z);
	/* Australia/Lord_Howe: a change of 30 minutes (02:00 -> 02:30 on 2026-10-04). */
	z = zone("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
	expect_next("15 2 * * *", z, utc(2026, 10, 3, 0, 0),
		    (int64_t[]){ utc(2026, 10, 3, 15, 30), utc(2026, 10, 4, 15, 15) }, 2);
	tzfile_free(z);
	/* No rule change at all, east of UTC by 5:45. */
	z = zone("<+0545>-5:45");
	expect_next("0 0 * * *", z, utc(2026, 11, 25, 0, 0),
		    (int64_t[]){ utc(2026, 11, 25, 18, 15) }, 1);
	tzfile_free(z);
}

/* --- tzfile ---------------------------------------------------------------------------------- */

static void test_tzfile(void)
{
	/* A table (Berlin's 2025 changes, with a different offset first) and the rule after. */
	int64_t times[] = { utc(2025, 3, 30, 1, 0), utc(2025, 10, 26, 1, 0) };
	int32_t offs[] = { 7200, 3600 };
	struct tzfile *z = NULL;
	struct tzspan s;
	struct bytes o;
	char err[256];

	tzif(&o, times, offs, 2, 3208, "CET-1CEST,M3.5.0,M10.5.0/3");
	CHECK(tzfile_parse(o.b, o.n, &z, err, sizeof(err)) == 0, "table and rule: %s", err);
	if (!z)
		return;
	CHECK(tzfile_offset(z, utc(1900, 1, 1, 0, 0)) == 3208, "before the table");
	tzfile_span(z, utc(2025, 6, 1, 0, 0), &s);
	CHECK(s.start == times[0] && s.end == times[1] && s.off == 7200 && s.prev_off == 3208,
	      "summer 2025 from the table: %lld %lld %d %d", (long long)s.start, (long long)s.end,
	      s.off, s.prev_off);
	tzfile_span(z, utc(2025, 12, 1, 0, 0), &s);
	CHECK(s.start == times[1] && s.end == utc(2026, 3, 29, 1, 0) && s.off == 3600 &&
	      s.prev_off == 7200, "winter 2025-26: the table, then the rule");
	tzfile_span(z, utc(2031, 7, 1, 0, 0), &s);
	CHECK(s.start == utc(2031, 3, 30, 1, 0) && s.end == utc(2031, 10, 26, 1, 0) &&
	      s.off == 7200 && s.prev_off == 3600, "summer 2031 by the rule");
	tzfile_span(z, utc(2300, 1, 1, 0, 0), &s);
	CHECK(s.off == 3600 && s.end == utc(2300, 3, 25, 1, 0), "winter 2300 by the rule");
	tzfile_free(z);

	/* Every prefix of the file is refused, without crashing. */
	for (size_t n = 0; n < o.n; n++) {
		z = NULL;
		CHECK(tzfile_parse(o.b, n, &z, err, sizeof(err)) < 0 && !z, "prefix %zu taken", n);
	}
	/* Every byte changed: parsed or refused, and spans answered either way. */
	for (size_t i = 0; i < o.n; i++) {
		uint8_t keep = o.b[i];
		for (unsigned v = 0; v < 256; v += 37) {
			o.b[i] = (uint8_t)(keep ^ (v | 1));
			z = NULL;
			if (tzfile_parse(o.b, o.n, &z, err, sizeof(err)) == 0) {
				tzfile_span(z, utc(2030, 1, 1, 0, 0), &s);
				CHECK(s.start < s.end, "byte %zu: an empty span", i);
				tzfile_free(z);
			}
		}
		o.b[i] = keep;
	}
	/* Rules refused. */
	{
		static const char *const bad[] = { "C", "CET", "CET-1CEST,M3.5.0", "CET-1CEST,M13.5.0,M10.5.0",
			"CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,M3.5.7,M10.5.0", "CET-1CEST,J0,J365",
			"CET-1CEST,J1/168,J365", "CET-25", "<+03", "CET-1:60" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			tzif(&o, NULL, NULL, 0, 0, bad[i]);
			z = NULL;
			CHECK(tzfile_parse(o.b, o.n, &z, err, sizeof(err)) == -EINVAL && !z,
			      "rule '%s' taken", bad[i]);
		}
	}
	/* Names that cannot be zones never reach the file system. */
	{
		static const char *const bad[] = { "", "/etc/passwd", "../etc/passwd", "Europe/../x",
			"Europe/.x", "Europe/", "a b", "Europe\\Berlin",
			"Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			z = NULL;
			CHECK(tzfile_load(bad[i], &z, err, sizeof(err)) == -EINVAL && !z &&
			      strstr(err, "not a time zone name"), "name '%s': %s", bad[i], err);
		}
		CHECK(tzfile_load("UTC", &z, err, sizeof(err)) == 0 && tzfile_offset(z, 0) == 0,
		      "UTC needs no file");
		tzfile_free(z);
	}
}

/* tzfile_load's answers, each naming what the caller does: -ENOENT (no such zone) and
 * -EINVAL (not a zone file) are final; a file that does not read for now (here a symbolic
 * link loop, ELOOP) is neither, and the same zone reads once the file is back. */
static void test_tzfile_load_errors(void)
{
	char dir[] = "/tmp/claimd-test-tzdir-XXXXXX", path[256], err[256];
	int32_t offs[] = { 3600 };
	int64_t times[] = { 0 };
	struct tzfile *z = NULL;
	struct bytes o;
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	setenv("TZDIR", dir, 1);
	snprintf(path, sizeof(path), "%s/T", dir);
	CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/T/Dir", dir);
	CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
	snprintf(path, sizeof(path), "%s/T/Junk", dir);
	if ((f = fopen(path, "w"))) {
		fputs("not TZif\n", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/T/Loop", dir);
	CHECK(symlink("Loop", path) == 0, "symlink %s", path);

	CHECK(tzfile_load("T/None", &z, err, sizeof(err)) == -ENOENT && !z &&
	      strstr(err, "no time zone 'T/None'"), "a missing zone: %s", err);
	CHECK(tzfile_load("T/Junk/Zone", &z, err, sizeof(err)) == -ENOENT && !z,
	      "a path through a file (ENOTDIR) is no such zone: %s", err);
	CHECK(tzfile_load("T/Dir", &z, err, sizeof(err)) == -EINVAL && !z &&
	      strstr(err, "is not a time zone file"), "a directory: %s", err);
	CHECK(tzfile_load("T/Junk", &z, err, sizeof(err)) == -EINVAL && !z,
	      "a file that is not TZif: %s", err);
	CHECK(tzfile_load("T/Loop", &z, err, sizeof(err)) == -ELOOP && !z &&
	      strstr(err, "cannot read time zone 'T/Loop'"),
	      "a file that does not read for now is neither final answer: %s", err);
	/* The file is back: the same name reads. */
	unlink(path);
	tzif(&o, times, offs, 1, 0, "CET-1");
	if ((f = fopen(path, "w"))) {
		fwrite(o.b, 1, o.n, f);
		fclose(f);
	}
	CHECK(tzfile_load("T/Loop", &z, err, sizeof(err)) == 0 && z &&
	      tzfile_offset(z, 86400) == 3600, "the zone reads once its file does: %s", err);
	tzfile_free(z);

	unlink(path);
	snprintf(path, sizeof(path), "%s/T/Junk", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/T/Dir", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/T", dir);
	rmdir(path);
	rmdir(dir);
	unsetenv("TZDIR");
}

int main(void)
{
	test_parse();
	test_days();
	test_spring_forward();
	test_fall_back();
	test_other_zones();
	test_tzfile();
	test_tzfile_load_errors();
	if (failures)
		return 1;
	printf("ok - cron\n");
	return 0;
}
