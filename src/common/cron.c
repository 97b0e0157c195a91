/* cron — see cron.h. A field is a bit set; the next matching wall-clock time is found by
 * skipping whole months, days and hours that do not match. The next moment in a zone is found
 * span by span (a span: the zone's offset constant), where wall-clock time is UTC shifted. */
#include "common/cron.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/civil.h"
#include "common/errmsg.h"

enum field { F_MIN, F_HOUR, F_MDAY, F_MONTH, F_WDAY, NFIELDS };

static const struct {
	const char *name;
	unsigned lo, hi;             /* the values written; day of the week 7 is Sunday (0) */
	const char *const *names;    /* names[i] stands for lo + i */
} fields[NFIELDS] = {
	[F_MIN] = { "minute", 0, 59, NULL },
	[F_HOUR] = { "hour", 0, 23, NULL },
	[F_MDAY] = { "day of the month", 1, 31, NULL },
	[F_MONTH] = { "month", 1, 12, (const char *const[]){ "jan", "feb", "mar", "apr", "may",
		      "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL } },
	[F_WDAY] = { "day of the week", 0, 7, (const char *const[]){ "sun", "mon", "tue", "wed",
		     "thu", "fri", "sat", NULL } },
};

static const struct {
	const char *name, *expr;
} shorthands[] = {
	{ "@yearly", "0 0 1 1 *" },   { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },   { "@daily", "0 0 * * *" },    { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};


/* A number or a name of field f at *p (up to end), into *ret; moves *p past it. */
static bool value(enum field f, const char **p, const char *end, unsigned *ret)
{
	const char *q = *p;
	unsigned v = 0;

	if (q < end && *q >= '0' && *q <= '9') {
		while (q < end && *q >= '0' && *q <= '9' && v < 1000)
			v = v * 10 + (unsigned)(*q++ - '0');
		if (v > fields[f].hi || v < fields[f].lo)
			return false;
		*p = q;
		*ret = v;
		return true;
	}
	for (unsigned i = 0; fields[f].names && fields[f].names[i]; i++) {
		if (end - q >= 3 && strncasecmp(q, fields[f].names[i], 3) == 0 &&
		    (end - q == 3 || !((q[3] | 0x20) >= 'a' && (q[3] | 0x20) <= 'z'))) {
			*p = q + 3;
			*ret = fields[f].lo + i;
			return true;
		}
	}
	return false;
}

/* One item of field f, [p, end): '*', N, N-M, each with /STEP. Sets its bits in *bits. */
static bool item(enum field f, const char *p, const char *end, uint64_t *bits)
{
	unsigned lo = fields[f].lo, hi = fields[f].hi, step = 1;

	if (f == F_WDAY)
		hi = 6;   /* '*' is 0-6; 7 only when written */
	if (p < end && *p == '*') {
		p++;
	} else {
		if (!value(f, &p, end, &lo))
			return false;
		if (p < end && *p == '-') {
			p++;
			if (!value(f, &p, end, &hi) || hi < lo)
				return false;
		} else if (p < end && *p == '/') {
			hi = fields[f].hi;   /* N/STEP: N to the field's end (Sunday again: 7) */
		} else {
			hi = lo;
		}
	}
	if (p < end && *p == '/') {
		step = 0;
		p++;
		if (p == end)
			return false;
		while (p < end && *p >= '0' && *p <= '9' && step < 1000)
			step = step * 10 + (unsigned)(*p++ - '0');
		if (step == 0 || step > fields[f].hi)
			return false;
	}
	if (p != end)
		return false;
	for (unsigned v = lo; v <= hi; v += step)
		*bits |= 1ULL << (f == F_WDAY && v == 7 ? 0 : v);
	return true;
}

static int field(enum field f, const char *p, const char *end, uint64_t *bits, char *err,
		 size_t errlen)
{
	const char *start = p;

	*bits = 0;
	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		if (stop == p || !item(f, p, stop, bits))
			return errmsg_invalid(err, errlen, "the %s field '%.*s' is not a list of *, N, N-M "
				    "(each with an optional /STEP) with values %u-%u%s",
				    fields[f].name, (int)(end - start), start, fields[f].lo,
				    fields[f].hi, fields[f].names ? " or names" : "");
		p = stop + 1;
		if (!comma)
			break;
	}
	return 0;
}

static uint64_t all_bits(unsigned lo, unsigned hi)
{
	uint64_t b = 0;

	for (unsigned v = lo; v <= hi; v++)
		b |= 1ULL << v;
	return b;
}

int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen)
{
	const char *p = expr, *start[NFIELDS], *end[NFIELDS];
	uint64_t bits[NFIELDS];
	struct cron c;
	int n = 0, r;

	if (!expr)
		return errmsg_invalid(err, errlen, "no cron expression");
	if (strlen(expr) > CRON_TEXT_MAX)
		return errmsg_invalid(err, errlen, "a cron expression is at most %d characters",
			    CRON_TEXT_MAX);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '@') {
		size_t len = strcspn(p, " \t");
		for (size_t i = 0; i < sizeof(shorthands) / sizeof(shorthands[0]); i++)
			if (strlen(shorthands[i].name) == len &&
			    strncasecmp(p, shorthands[i].name, len) == 0 && !p[len + strspn(p + len, " \t")])
				return cron_parse(shorthands[i].expr, ret, err, errlen);
		return errmsg_invalid(err, errlen, "'%.40s' is not @yearly, @annually, @monthly, @weekly, "
			    "@daily, @midnight or @hourly", p);
	}
	while (*p) {
		if (n == NFIELDS)
			return errmsg_invalid(err, errlen, "'%s' has more than 5 fields (minute hour "
				    "day-of-month month day-of-week)", expr);
		start[n] = p;
		p += strcspn(p, " \t");
		end[n++] = p;
		while (*p == ' ' || *p == '\t')
			p++;
	}
	if (n < NFIELDS)
		return errmsg_invalid(err, errlen, "'%s' has %d field%s, not 5 (minute hour day-of-month month "
			    "day-of-week)", expr, n, n == 1 ? "" : "s");
	for (int f = 0; f < NFIELDS; f++)
		if ((r = field((enum field)f, start[f], end[f], &bits[f], err, errlen)) < 0)
			return r;
	c = (struct cron){
		.minutes = bits[F_MIN],
		.hours = (uint32_t)bits[F_HOUR],
		.mdays = (uint32_t)bits[F_MDAY],
		.months = (uint16_t)bits[F_MONTH],
		.wdays = (uint8_t)bits[F_WDAY],
	};
	c.every_mday = c.mdays == all_bits(1, 31);
	c.every_wday = c.wdays == all_bits(0, 6);
	c.every_hour = c.hours == all_bits(0, 23);
	*ret = c;
	return 0;
}

static bool day_matches(const struct cron *c, int64_t day, unsigned mday)
{
	bool md = c->mdays >> mday & 1, wd = c->wdays >> civil_weekday(day) & 1;

	if (c->every_mday || c->every_wday)
		return md && wd;
	return md || wd;
}

bool cron_matches(const struct cron *c, int64_t local)
{
	int64_t day = civil_day_of(local), y, sod = local - day * CIVIL_S_PER_DAY;
	unsigned m, d;

	civil_from_days(day, &y, &m, &d);
	return sod % 60 == 0 && c->months >> m & 1 && day_matches(c, day, d) &&
	       c->hours >> (sod / 3600) & 1 && c->minutes >> (sod / 60 % 60) & 1;
}

int cron_next_local(const struct cron *c, int64_t local, int64_t limit, int64_t *ret)
{
	int64_t t = (local - (local % 60 + 60) % 60) + 60;

	while (t <= limit) {
		int64_t day = civil_day_of(t), y, sod = t - day * CIVIL_S_PER_DAY;
		unsigned m, d, h = (unsigned)(sod / 3600), mi = (unsigned)(sod / 60 % 60);

		civil_from_days(day, &y, &m, &d);
		if (!(c->months >> m & 1)) {
			t = civil_days(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * CIVIL_S_PER_DAY;
			continue;
		}
		if (!day_matches(c, day, d)) {
			t = (day + 1) * CIVIL_S_PER_DAY;
			continue;
		}
		if (!(c->hours >> h & 1)) {
			t = day * CIVIL_S_PER_DAY + (int64_t)(h + 1) * 3600;
			continue;
		}
		if (!(c->minutes >> mi & 1)) {
			uint64_t later = c->minutes & ~((2ULL << mi) - 1);
			if (!later) {
				t = day * CIVIL_S_PER_DAY + (int64_t)(h + 1) * 3600;
				continue;
			}
			t = day * CIVIL_S_PER_DAY + (int64_t)h * 3600 + __builtin_ctzll(later) * 60;
			continue;
		}
		*ret = t;
		return 0;
	}
	return -ENOENT;
}

int cron_next(const struct cron *c, const struct tzfile *z, int64_t after, int64_t *ret)
{
	int64_t horizon = after + (int64_t)CRON_HORIZON_YEARS * 366 * CIVIL_S_PER_DAY;
	int64_t t = after;

	while (t < horizon) {
		struct tzspan s;
		int64_t from, last, w;

		tzfile_span(z, t, &s);
		/* Entering a span whose start skipped wall-clock times: a fixed-hour time among
		 * them fires at the jump. */
		if (t == s.start && t > after && s.prev_off < s.off && !c->every_hour &&
		    cron_next_local(c, s.start + s.prev_off - 1, s.start + s.off - 1, &w) == 0) {
			*ret = s.start;
			return 0;
		}
		from = t == after ? after + s.off : t + s.off - 1;
		last = (s.end < horizon ? s.end : horizon) + s.off - 1;
		while (cron_next_local(c, from, last, &w) == 0) {
			/* A wall-clock time the span before showed too: fixed-hour times fire once. */
			if (s.prev_off > s.off && w < s.start + s.prev_off && !c->every_hour &&
			    s.start != INT64_MIN) {
				from = w;
				continue;
			}
			*ret = w - s.off;
			return 0;
		}
		if (s.end >= horizon)
			break;
		t = s.end;
	}
	return -ENOENT;
}

int cron_check(const char *cron, const char *zone, char *err, size_t errlen)
{
	struct tzfile *z = NULL;
	struct cron c;
	int64_t t;
	int r;

	if ((r = cron_parse(cron, &c, err, errlen)) < 0)
		return r;
	if ((r = tzfile_load(zone ? zone : "UTC", &z, err, errlen)) < 0)
		return r == -ENOENT ? -EINVAL : r;
	r = cron_next(&c, z, 0, &t);
	tzfile_free(z);
	if (r == -ENOENT) {
		snprintf(err, errlen, "'%s' never fires (a day that no month has?)", cron);
		return -EINVAL;
	}
	return 0;
}
