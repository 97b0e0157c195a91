/* store_cursor — where a store's claims go on (see struct claim_cursor in store_int.h), and
 * the place in claim order the workers of a host share as an opaque struct place. Its bytes:
 * the priority (+ 2^31, big-endian u32), visible_at packed into an integer that sorts the same
 * way (big-endian u64), the id (big-endian u64). Only this file reads them. */
#include "store/store.h"
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(PLACE_SIZE == 20, "a place is priority, packed visible_at and id");

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" <-> one integer in the same order (mixed radix). */
static bool pack_datetime(const char *s, uint64_t *ret)
{
	unsigned y, mo, d, h, mi, sec, us = 0;
	char frac[8] = "";
	int n = 0;

	if (sscanf(s, "%4u-%2u-%2u %2u:%2u:%2u%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
		return false;
	if (s[n] == '.' && sscanf(s + n + 1, "%6[0-9]", frac) == 1) {
		for (size_t k = strlen(frac); k < 6; k++)
			frac[k] = '0';
		frac[6] = '\0';
		us = (unsigned)strtoul(frac, NULL, 10);
	}
	if (mo > 12 || d > 31 || h > 23 || mi > 59 || sec > 59)
		return false;
	*ret = (((((uint64_t)y * 13 + mo) * 32 + d) * 24 + h) * 60 + mi) * 60 + sec;
	*ret = *ret * 1000000u + us;
	return true;
}

static void unpack_datetime(uint64_t v, char *out, size_t outlen)
{
	unsigned us = (unsigned)(v % 1000000u), sec, mi, h, d, mo;

	v /= 1000000u;
	sec = (unsigned)(v % 60), v /= 60;
	mi = (unsigned)(v % 60), v /= 60;
	h = (unsigned)(v % 24), v /= 24;
	d = (unsigned)(v % 32), v /= 32;
	mo = (unsigned)(v % 13), v /= 13;
	snprintf(out, outlen, "%04u-%02u-%02u %02u:%02u:%02u.%06u", (unsigned)v, mo, d, h, mi, sec,
		 us);
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The place of pos; false if its visible_at does not parse. */
static bool encode(const struct claim_pos *pos, struct place *ret)
{
	uint64_t packed;

	if (!pack_datetime(pos->visible_at, &packed) || packed == 0)
		return false;
	put_be(ret->b, (uint64_t)((int64_t)pos->priority + 2147483648LL), 4);
	put_be(ret->b + 4, packed, 8);
	put_be(ret->b + 12, pos->id, 8);
	return true;
}

/* False for none or a place this store did not write (visible_at 0). */
static bool decode(const struct place *p, struct claim_pos *ret)
{
	uint64_t packed = get_be(p->b + 4, 8);

	if (packed == 0)
		return false;
	ret->priority = (int)((int64_t)get_be(p->b, 4) - 2147483648LL);
	unpack_datetime(packed, ret->visible_at, sizeof(ret->visible_at));
	ret->id = get_be(p->b + 12, 8);
	return true;
}

bool store_place_after(const struct place *a, const struct place *b)
{
	if (place_none(a))
		return false;
	if (place_none(b))
		return true;
	/* The bytes sort in claim order. */
	return memcmp(a->b, b->b, PLACE_SIZE) > 0;
}

bool store_cursor(const struct store *s, struct place *ret)
{
	return s->cursor.set && encode(&s->cursor.pos, ret);
}

void store_cursor_hint(struct store *s, const char *queue, const struct place *at)
{
	struct place own;
	struct claim_pos pos;
	bool same = s->cursor.set && !strcmp(s->cursor.queue, queue);

	if (strlen(queue) > STORE_QUEUE_MAX)
		return;
	/* The host decides when the scan from the head is due: now (no place given), or not
	 * before the next hint. */
	s->cursor.head_scan_ms = place_none(at) ? 0 : sq_mono_ms();
	if (place_none(at) || !decode(at, &pos))
		return;
	if (same && store_cursor(s, &own) && !store_place_after(at, &own))
		return;
	s->cursor.pos = pos;
	snprintf(s->cursor.queue, sizeof(s->cursor.queue), "%s", queue);
	s->cursor.set = true;
}
