/* tzfile — see tzfile.h. A zone is its table of transitions (the file's 64-bit data where it
 * has them), then, after the last one, the POSIX TZ rule of the file's footer, which gives the
 * transitions of any later year. A span is found from a short list of the transitions around
 * a time: some of the table's, then the rule's for the years about it. */
#include "common/tzfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/civil.h"
#include "common/errmsg.h"

#define OFF_MAX (26 * 3600)      /* the widest offset accepted, either way */
#define TYPES_MAX 256
#define AROUND 4                 /* table transitions kept either side of a time */

/* A day of the year in a POSIX rule: Jn (1-365, February 29th never counted), n (0-365),
 * or Mm.w.d (day d of week w of month m, week 5 the last). time: the local time of the
 * change, in the time before it. */
struct rule_day {
	char kind;                   /* 'J', 'N' or 'M' */
	int a, b, c;
	int32_t time;
};

struct rule {
	int32_t std_off, dst_off;
	bool has_dst;
	struct rule_day start, end;
};

struct tzfile {
	size_t n;
	int64_t *times;              /* ascending */
	int32_t *offs;               /* the offset from times[i] on */
	int32_t off0;                /* before times[0] (or always, without transitions) */
	bool has_rule;
	struct rule rule;            /* after times[n - 1] (or always) */
};

struct tr {
	int64_t t;
	int32_t off;
};


/* --- the POSIX TZ rule of the footer ------------------------------------------------------ */

static const char *rule_name(const char *p)
{
	const char *q = p;

	if (*p == '<') {
		while (*++q && *q != '>')
			;
		return *q == '>' && q - p >= 4 ? q + 1 : NULL;
	}
	while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
		q++;
	return q - p >= 3 ? q : NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [+-]h[h[h]][:mm[:ss]], hours at most max_h, into *ret (seconds, signed). */
static const char *rule_hms(const char *p, int max_h, int32_t *ret)
{
	int sign = 1, h = 0, m = 0, s = 0, nd = 0;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	while (is_digit(*p) && nd < 3)
		h = h * 10 + (*p++ - '0'), nd++;
	if (nd == 0 || is_digit(*p) || h > max_h)
		return NULL;
	if (*p == ':') {
		if (!is_digit(p[1]) || !is_digit(p[2]))
			return NULL;
		m = (p[1] - '0') * 10 + (p[2] - '0');
		p += 3;
		if (*p == ':') {
			if (!is_digit(p[1]) || !is_digit(p[2]))
				return NULL;
			s = (p[1] - '0') * 10 + (p[2] - '0');
			p += 3;
		}
		if (m > 59 || s > 59)
			return NULL;
	}
	*ret = sign * (h * 3600 + m * 60 + s);
	return p;
}

static const char *rule_num(const char *p, int lo, int hi, int *ret)
{
	int v = 0, nd = 0;

	while (is_digit(*p) && nd < 4)
		v = v * 10 + (*p++ - '0'), nd++;
	if (nd == 0 || is_digit(*p) || v < lo || v > hi)
		return NULL;
	*ret = v;
	return p;
}

static const char *rule_date(const char *p, struct rule_day *d)
{
	d->time = 7200;
	if (*p == 'J') {
		d->kind = 'J';
		p = rule_num(p + 1, 1, 365, &d->a);
	} else if (*p == 'M') {
		d->kind = 'M';
		p = rule_num(p + 1, 1, 12, &d->a);
		if (p && *p == '.')
			p = rule_num(p + 1, 1, 5, &d->b);
		else
			p = NULL;
		if (p && *p == '.')
			p = rule_num(p + 1, 0, 6, &d->c);
		else
			p = NULL;
	} else {
		d->kind = 'N';
		p = rule_num(p, 0, 365, &d->a);
	}
	if (p && *p == '/')
		p = rule_hms(p + 1, 167, &d->time);
	return p;
}

static int rule_parse(const char *s, struct rule *r)
{
	const char *p = rule_name(s);
	int32_t v;

	memset(r, 0, sizeof(*r));
	if (!p || !(p = rule_hms(p, 24, &v)))
		return -EINVAL;
	r->std_off = -v;
	if (!*p)
		return 0;
	if (!(p = rule_name(p)))
		return -EINVAL;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (*p && *p != ',') {
		if (!(p = rule_hms(p, 24, &v)))
			return -EINVAL;
		r->dst_off = -v;
	}
	if (!*p) {   /* no dates: the rule POSIX leaves to the implementation, glibc's */
		r->start = (struct rule_day){ 'M', 3, 2, 0, 7200 };
		r->end = (struct rule_day){ 'M', 11, 1, 0, 7200 };
		return 0;
	}
	if (*p != ',' || !(p = rule_date(p + 1, &r->start)) || *p != ',' ||
	    !(p = rule_date(p + 1, &r->end)) || *p)
		return -EINVAL;
	return 0;
}

/* The local second (in the time before the change) at which d falls in year y. */
static int64_t rule_local(const struct rule_day *d, int64_t y)
{
	int64_t z, first;

	switch (d->kind) {
	case 'J':
		z = civil_days(y, 1, 1) + d->a - 1 + (civil_leap(y) && d->a >= 60);
		break;
	case 'N':
		z = civil_days(y, 1, 1) + d->a;
		break;
	default:
		first = civil_days(y, (unsigned)d->a, 1);
		z = first + (d->c - (int)civil_weekday(first) + 7) % 7 + 7 * (d->b - 1);
		while (z >= first + civil_days_in_month(y, (unsigned)d->a))
			z -= 7;
		break;
	}
	return z * CIVIL_S_PER_DAY + d->time;
}

/* The rule's two changes in year y, in order. */
static void rule_year(const struct rule *r, int64_t y, struct tr out[2])
{
	struct tr a = { rule_local(&r->start, y) - r->std_off, r->dst_off };
	struct tr b = { rule_local(&r->end, y) - r->dst_off, r->std_off };

	out[0] = a.t <= b.t ? a : b;
	out[1] = a.t <= b.t ? b : a;
}

/* --- the TZif file -------------------------------------------------------------------------- */

struct header {
	char version;
	uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int header_read(const uint8_t *p, size_t len, struct header *h, char *err, size_t errlen)
{
	if (len < 44 || memcmp(p, "TZif", 4) != 0)
		return errmsg_invalid(err, errlen, "not a TZif file");
	h->version = (char)p[4];
	if (h->version != 0 && (h->version < '2' || h->version > '4'))
		return errmsg_invalid(err, errlen, "TZif version %u is not one claimd reads", p[4]);
	h->isutcnt = be32(p + 20);
	h->isstdcnt = be32(p + 24);
	h->leapcnt = be32(p + 28);
	h->timecnt = be32(p + 32);
	h->typecnt = be32(p + 36);
	h->charcnt = be32(p + 40);
	if (h->typecnt == 0 || h->typecnt > TYPES_MAX || h->charcnt == 0 ||
	    (h->isutcnt && h->isutcnt != h->typecnt) || (h->isstdcnt && h->isstdcnt != h->typecnt) ||
	    h->timecnt > TZFILE_SIZE_MAX || h->leapcnt > TZFILE_SIZE_MAX ||
	    h->charcnt > TZFILE_SIZE_MAX)
		return errmsg_invalid(err, errlen, "TZif header with impossible counts");
	return 0;
}

static uint64_t block_size(const struct header *h, unsigned tsize)
{
	return (uint64_t)h->timecnt * tsize + h->timecnt + (uint64_t)h->typecnt * 6 + h->charcnt +
	       (uint64_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

/* The block at p (after its header), of h's counts and tsize-byte times, into z. */
static int block_read(const uint8_t *p, const struct header *h, unsigned tsize,
		      struct tzfile *z, char *err, size_t errlen)
{
	const uint8_t *idx = p + (size_t)h->timecnt * tsize;
	const uint8_t *types = idx + h->timecnt;
	int32_t offs[TYPES_MAX] = { 0 };   /* typecnt >= 1: header_read checked */

	for (uint32_t i = 0; i < h->typecnt; i++) {
		int32_t off = (int32_t)be32(types + 6 * i);
		if (off < -OFF_MAX || off > OFF_MAX)
			return errmsg_invalid(err, errlen, "TZif offset %d s is out of range", (int)off);
		offs[i] = off;
	}
	z->off0 = offs[0];
	if (h->timecnt) {
		z->times = malloc(h->timecnt * sizeof(*z->times));
		z->offs = malloc(h->timecnt * sizeof(*z->offs));
		if (!z->times || !z->offs)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < h->timecnt; i++) {
		const uint8_t *t = p + (size_t)i * tsize;
		z->times[i] = tsize == 8 ? be64(t) : (int64_t)(int32_t)be32(t);
		if (idx[i] >= h->typecnt)
			return errmsg_invalid(err, errlen, "TZif transition of a type it does not have");
		if (i > 0 && z->times[i] <= z->times[i - 1])
			return errmsg_invalid(err, errlen, "TZif transitions out of order");
		z->offs[i] = offs[idx[i]];
	}
	z->n = h->timecnt;
	return 0;
}

int tzfile_parse(const uint8_t *buf, size_t len, struct tzfile **ret, char *err, size_t errlen)
{
	struct tzfile *z = calloc(1, sizeof(*z));
	struct header h;
	unsigned tsize = 4;
	size_t at;
	uint64_t size;
	int r;

	if (!z)
		return -ENOMEM;
	if ((r = header_read(buf, len, &h, err, errlen)) < 0)
		goto fail;
	size = block_size(&h, 4);
	if (size > len - 44) {
		r = errmsg_invalid(err, errlen, "TZif file cut short");
		goto fail;
	}
	at = 44;
	if (h.version >= '2') {
		at += (size_t)size;
		if ((r = header_read(buf + at, len - at, &h, err, errlen)) < 0)
			goto fail;
		at += 44;
		tsize = 8;
		size = block_size(&h, 8);
		if (size > len - at) {
			r = errmsg_invalid(err, errlen, "TZif file cut short");
			goto fail;
		}
	}
	if ((r = block_read(buf + at, &h, tsize, z, err, errlen)) < 0)
		goto fail;
	at += (size_t)size;
	if (h.version >= '2') {
		const uint8_t *nl;
		char footer[128];
		size_t flen;

		if (at >= len || buf[at] != '\n' || !(nl = memchr(buf + at + 1, '\n', len - at - 1))) {
			r = errmsg_invalid(err, errlen, "TZif footer missing");
			goto fail;
		}
		flen = (size_t)(nl - (buf + at + 1));
		if (flen >= sizeof(footer) || memchr(buf + at + 1, '\0', flen)) {
			r = errmsg_invalid(err, errlen, "TZif footer too long");
			goto fail;
		}
		memcpy(footer, buf + at + 1, flen);
		footer[flen] = '\0';
		if (flen > 0) {
			if (rule_parse(footer, &z->rule) < 0) {
				r = errmsg_invalid(err, errlen, "TZif footer '%s' is not a POSIX TZ rule claimd reads",
					 footer);
				goto fail;
			}
			if ((z->rule.std_off < -OFF_MAX || z->rule.std_off > OFF_MAX) ||
			    (z->rule.dst_off < -OFF_MAX || z->rule.dst_off > OFF_MAX)) {
				r = errmsg_invalid(err, errlen, "TZif footer's offset is out of range");
				goto fail;
			}
			z->has_rule = true;
		}
	}
	*ret = z;
	return 0;
fail:
	tzfile_free(z);
	return r;
}

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > TZFILE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool part_start = i == 0 || name[i - 1] == '/';
		if (part_start && (c == '.' || c == '/'))
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '/' ||
		      c == '_' || c == '+' || c == '-' || c == '.'))
			return false;
	}
	return name[n - 1] != '/';
}

int tzfile_load(const char *name, struct tzfile **ret, char *err, size_t errlen)
{
	const char *dir = getenv("TZDIR");
	char path[512];
	uint8_t *buf = NULL;
	struct stat st;
	ssize_t got;
	int fd, r;

	if (!name || !name_ok(name))
		return errmsg_invalid(err, errlen, "'%.80s' is not a time zone name (such as UTC or "
			    "Europe/Berlin)", name ? name : "");
	if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
		struct tzfile *z = calloc(1, sizeof(*z));
		if (!z) {
			snprintf(err, errlen, "time zone '%s': out of memory", name);
			return -ENOMEM;
		}
		*ret = z;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : TZFILE_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT || r == -ENOTDIR) {
			snprintf(err, errlen, "no time zone '%s' (%s: %s)", name, path, strerror(-r));
			return -ENOENT;
		}
		/* Too many open files, EIO, a permission: the zone may read later. */
		snprintf(err, errlen, "cannot read time zone '%s' (%s: %s)", name, path, strerror(-r));
		return r == -EINVAL ? -EIO : r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot read time zone '%s' (%s: %s)", name, path, strerror(-r));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > TZFILE_SIZE_MAX) {
		r = errmsg_invalid(err, errlen, "'%s' is not a time zone file", path);
		goto out;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		snprintf(err, errlen, "time zone '%s': out of memory", name);
		r = -ENOMEM;
		goto out;
	}
	got = read(fd, buf, (size_t)st.st_size + 1);
	if (got != st.st_size) {
		/* A read error, or a file that changed size while read (tzdata being replaced). */
		r = got < 0 ? -errno : -EIO;
		snprintf(err, errlen, "cannot read time zone '%s' (%s: %s)", name, path,
			 got < 0 ? strerror(-r) : "it changed while read");
		if (r == -EINVAL || r == -ENOENT)
			r = -EIO;
		goto out;
	}
	r = tzfile_parse(buf, (size_t)got, ret, err, errlen);
	if (r == -EINVAL) {
		char why[128];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "time zone '%s': %s", name, why);
	}
out:
	free(buf);
	close(fd);
	return r;
}

void tzfile_free(struct tzfile *z)
{
	if (!z)
		return;
	free(z->times);
	free(z->offs);
	free(z);
}

/* --- spans ---------------------------------------------------------------------------------- */

static int64_t year_of(int64_t utc)
{
	int64_t y;
	unsigned m, d;

	civil_from_days(civil_day_of(utc), &y, &m, &d);
	return y;
}

/* The transitions about utc, in order, into L (at most 2 * AROUND + 8), and the offset before
 * the first of them into *init. Returns how many. */
static size_t around(const struct tzfile *z, int64_t utc, struct tr *L, int32_t *init)
{
	size_t k = 0, lo = 0, hi = z->n, from, to;
	int64_t last = INT64_MIN, y0;

	*init = z->off0;
	if (z->n > 0) {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (z->times[mid] <= utc)
				lo = mid + 1;
			else
				hi = mid;
		}
		from = lo >= AROUND ? lo - AROUND : 0;
		to = lo + AROUND < z->n ? lo + AROUND : z->n;
		*init = from > 0 ? z->offs[from - 1] : z->off0;
		for (size_t j = from; j < to; j++)
			L[k++] = (struct tr){ z->times[j], z->offs[j] };
		if (to < z->n)
			return k;
		last = z->times[z->n - 1];
	}
	if (!z->has_rule)
		return k;
	if (!z->rule.has_dst) {
		if (z->n == 0)
			*init = z->rule.std_off;
		return k;
	}
	/* Clamp so that the years stay far inside the calendar arithmetic's range. */
	if (utc < -(1LL << 40) || utc > (1LL << 40))
		utc = utc < 0 ? -(1LL << 40) : (1LL << 40);
	y0 = year_of(utc > last ? utc : last) - 1;
	if (z->n == 0) {
		struct tr before[2];
		rule_year(&z->rule, y0 - 1, before);
		*init = before[1].off;
	}
	for (int64_t y = y0; y <= y0 + 3; y++) {
		struct tr two[2];
		rule_year(&z->rule, y, two);
		for (int i = 0; i < 2; i++)
			if (two[i].t > last && (k == 0 || two[i].t > L[k - 1].t))
				L[k++] = two[i];
	}
	return k;
}

void tzfile_span(const struct tzfile *z, int64_t utc, struct tzspan *ret)
{
	struct tr L[2 * AROUND + 8];
	int32_t init;
	size_t k = around(z, utc, L, &init);
	size_t i = 0;

	while (i < k && L[i].t <= utc)
		i++;
	/* L[i - 1] is the last change at or before utc (none if i == 0). */
	ret->start = i > 0 ? L[i - 1].t : INT64_MIN;
	ret->off = i > 0 ? L[i - 1].off : init;
	ret->prev_off = i > 1 ? L[i - 2].off : init;
	ret->end = i < k ? L[i].t : INT64_MAX;
}

int32_t tzfile_offset(const struct tzfile *z, int64_t utc)
{
	struct tzspan s;

	tzfile_span(z, utc, &s);
	return s.off;
}
