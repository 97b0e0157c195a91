/* store_handon — the claim's hand-on (store_claim.c): the rows that a finished row's key lets
 * start next, locked for the claim that finishes it instead of made visible for any claimer.
 * A key run one at a time names its next row by number (GROUP_HEADS, store_int.h); a key
 * that runs N at once (sql/migrations/006_key_limits.sql) names, for the c rows of it that
 * the claim finishes, the first c rows parked after them, by number too (KEY_NEXT_PART). Its
 * first N live rows have a visible_at and the rest wait parked, in the order they were
 * added, so every parked row comes after every row that ran: the rows the finish lets start
 * are the first c parked after the highest number it finished, found in a short range of
 * group_seq_idx, whose entries never change (the walk of group_idx that KEY_FILL_MANY makes
 * passes the entries of every row of the key finished until the server's purge removes
 * them, and with both workers taking rows of every key, it was most of the server's time).
 * What the range cannot tell falls back to KEY_FILL_MANY: a key whose rows were put back
 * (older than those parked), whose limit is lower now than when its rows were claimed, a
 * finish this transaction did not make (the fence), or fewer parked rows in the range than
 * finished rows while the key has rows past it. See store_int.h. */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How far past the highest finished number a key's parked rows are looked for: its running
 * rows (fewer than its limit), rows that finished before the one that finished last, and
 * gaps (rows cancelled or deleted while they waited). */
#define KEY_NEXT_SPAN(lim) (2 * (uint64_t)(lim) + 64)

/* A key's rows to hand on: part %u, key %s (quoted), the first %u rows parked after number
 * %llu, up to number %llu, in queue %s. The range is read in group_seq order and ends with
 * the last row it needs; queue and key are written out, so that it is a range of three
 * columns (read from a joined row, the same took the server five times as long). */
#define KEY_NEXT_PART \
	"(SELECT %u AS part, p.id AS hid, %s AS k FROM work_items p FORCE INDEX (group_seq_idx) " \
	"WHERE p.queue = %s AND p.group_key = %s AND p.group_seq > %llu AND p.group_seq <= %llu " \
	"AND p.state = 'ready' AND p.visible_at IS NULL ORDER BY p.group_seq LIMIT %u)"
/* Part %u's end: whether its range reached past the last row ever added to key %s (queue
 * %s, the range's end %llu), so that fewer parked rows than finished ones means that the
 * key has no more. */
#define KEY_NEXT_END \
	"(SELECT %u AS part, NULL AS hid, %s AS k, (SELECT last_seq FROM work_groups WHERE " \
	"queue = %s AND group_key = %s) <= %llu AS covered)"
/* The keys whose rows may be handed on by number: every row the claim names (%s: their
 * ids, then a CASE of their new tokens) was finished by this transaction in the claim's
 * queue (%s), no rows of the key were put back, and its limit now is at least what it was
 * when they were claimed (a CASE of the ids: their limits). One statement for every key:
 * a part each, the same conditions took the server six times as long. */
#define KEY_NEXT_OK \
	"(SELECT d.group_key AS k FROM work_items d LEFT JOIN work_groups g ON g.queue = " \
	"d.queue AND g.group_key = d.group_key LEFT JOIN key_limits l ON l.queue = d.queue " \
	"AND l.group_key = d.group_key WHERE d.id IN (%s) GROUP BY d.group_key HAVING " \
	"SUM(d.claim_token = CASE d.id%s END AND d.state IN ('done', 'dead') AND d.queue = " \
	"%s) = COUNT(*) AND NOT IFNULL(MAX(g.put_back), 0) AND COALESCE(MAX(l.concurrency), " \
	"(SELECT key_concurrency FROM queues WHERE name = %s), 1) >= MAX(CASE d.id%s END))"
/* The parked rows handed on but not taken (locked, not due, no room): made visible in the
 * commit's round trip, as GROUP_NEXT makes a FIFO group's. %s: their ids. */
#define KEY_NEXT_SHOW \
	"UPDATE work_items SET visible_at = GREATEST(run_at, NOW(6)) WHERE id IN (%s) AND " \
	"visible_at IS NULL AND state = 'ready'"

unsigned sq_head_refs(const struct store_ref *done, size_t n)
{
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += done[i].grouped && !done[i].key_fill;
	return k;
}

bool sq_has_key_fills(const struct store_ref *done, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (done[i].key_fill && !sq_ref_handed_by_key(&done[i]))
			return true;
	return false;
}

/* One per finished row of a key run one at a time or N at once, at most half of max, so
 * that the claim's scan always has the other half (rows of other keys, of no key and of
 * other priorities are not held back by chains of a key's rows). */
unsigned sq_hand_on_room(const struct store_ref *done, size_t n, unsigned max)
{
	unsigned k = sq_head_refs(done, n);

	for (size_t i = 0; i < n; i++)
		k += sq_ref_handed_by_key(&done[i]);
	return k < max / 2 ? k : max / 2;
}

void key_runs_free(struct key_runs *kr)
{
	free(kr->run);
	free(kr->cand);
	memset(kr, 0, sizeof(*kr));
}

/* The key runs of refs[0..n): one per key name (the rows of one claim's done[] may be of
 * several queues: a run whose rows are not all in its first row's queue falls back, by
 * KEY_NEXT_OK). */
static int key_runs_find(struct key_runs *kr, const struct store_ref *refs, size_t n)
{
	key_runs_free(kr);
	for (size_t i = 0; i < n; i++) {
		const struct store_ref *r = &refs[i];
		struct key_run *k = NULL;
		if (!sq_ref_handed_by_key(r))
			continue;
		for (size_t j = 0; j < kr->n && !k; j++)
			if (strcmp(kr->run[j].group, r->group) == 0)
				k = &kr->run[j];
		if (!k) {
			if (!kr->run && !(kr->run = calloc(n, sizeof(*kr->run))))
				return -ENOMEM;
			k = &kr->run[kr->n++];
			k->group = r->group;
			k->first_id = r->id;
		}
		k->cnt++;
		if (r->group_seq > k->max_seq)
			k->max_seq = r->group_seq;
		if (r->key_limit > k->lim)
			k->lim = r->key_limit;
	}
	return 0;
}

/* s->conn's quoting of text (malloc'd), or NULL out of memory. */
static char *quoted(struct store *s, const char *text)
{
	size_t len = strlen(text);
	char *q = malloc(2 * len + 3);

	if (q)
		sq_quote(s->conn, q, text, len);
	return q;
}

/* The parts (end: KEY_NEXT_END, else KEY_NEXT_PART) of every run, joined by UNION ALL;
 * q: the claim's queue, quoted. */
static bool add_parts(struct store *s, struct buf *b, const struct key_runs *kr,
		      const char *q, bool end)
{
	for (size_t j = 0; j < kr->n; j++) {
		const struct key_run *k = &kr->run[j];
		unsigned long long to = k->max_seq + KEY_NEXT_SPAN(k->lim);
		char *g = quoted(s, k->group);

		if (!g)
			return false;
		if (j)
			buf_puts(b, " UNION ALL ");
		if (end)
			buf_printf(b, KEY_NEXT_END, (unsigned)j, g, q, g, to);
		else
			buf_printf(b, KEY_NEXT_PART, (unsigned)j, g, q, g,
				   (unsigned long long)k->max_seq, to, k->cnt);
		free(g);
	}
	return !buf_failed(b);
}

/* KEY_NEXT_OK for the refs of the runs. */
static bool add_ok(struct buf *b, const struct store_ref *refs, size_t n, const char *q)
{
	struct buf ids, tokens, limits;
	size_t m = 0;
	bool ok;

	buf_init(&ids);
	buf_init(&tokens);
	buf_init(&limits);
	for (size_t i = 0; i < n; i++) {
		unsigned long long id = refs[i].id;
		if (!sq_ref_handed_by_key(&refs[i]))
			continue;
		buf_printf(&ids, "%s%llu", m++ ? "," : "", id);
		buf_printf(&tokens, " WHEN %llu THEN %llu", id,
			   (unsigned long long)refs[i].token + 1);
		buf_printf(&limits, " WHEN %llu THEN %u", id, (unsigned)refs[i].key_limit);
	}
	ok = !buf_failed(&ids) && !buf_failed(&tokens) && !buf_failed(&limits);
	if (ok)
		buf_printf(b, KEY_NEXT_OK, ids.data, tokens.data, q, q, limits.data);
	buf_free(&ids);
	buf_free(&tokens);
	buf_free(&limits);
	return ok && !buf_failed(b);
}

size_t sq_hand_on_sources(struct store *s, struct buf *b, struct key_runs *kr,
			  const char *q, const struct store_ref *refs, size_t n)
{
	size_t heads = sq_group_heads(b, refs, n);

	if (key_runs_find(kr, refs, n) < 0) {
		b->failed = true;
		return 0;
	}
	if (kr->n == 0)
		return heads;
	buf_printf(b, "%sSELECT kp.hid FROM (", heads ? " UNION ALL " : "");
	if (!add_parts(s, b, kr, q, false))
		b->failed = true;
	buf_puts(b, ") AS kp JOIN ");
	if (!add_ok(b, refs, n, q))
		b->failed = true;
	buf_puts(b, " AS ok ON ok.k = kp.k");
	return heads + kr->n;
}

void sq_add_key_next_find(struct store *s, const struct key_runs *kr, const char *q,
			  const struct store_ref *refs, size_t n)
{
	struct buf *b = &s->sql;

	buf_puts(b, "SELECT x.part, x.hid, x.covered AND ok.k IS NOT NULL FROM (SELECT part, "
		 "hid, k, NULL AS covered FROM (");
	if (!add_parts(s, b, kr, q, false))
		b->failed = true;
	buf_puts(b, ") AS kc UNION ALL ");
	if (!add_parts(s, b, kr, q, true))
		b->failed = true;
	buf_puts(b, ") AS x LEFT JOIN ");
	if (!add_ok(b, refs, n, q))
		b->failed = true;
	buf_puts(b, " AS ok ON ok.k = x.k WHERE x.hid IS NULL OR ok.k IS NOT NULL");
	sq_end(s);
}

int key_runs_take(struct key_runs *kr, MYSQL_RES *res, const struct store_item *handed,
		  size_t h)
{
	MYSQL_ROW row;
	uint64_t part, v;

	if (!res || mysql_num_fields(res) != 3)
		return -EIO;
	if (!(kr->cand = calloc(mysql_num_rows(res) + 1, sizeof(*kr->cand))))
		return -ENOMEM;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *len = mysql_fetch_lengths(res);
		if (!row[0] || !sq_parse_u64(row[0], len[0], &part) || part >= kr->n)
			return -EIO;
		if (row[1]) {   /* a row handed on */
			if (!sq_parse_u64(row[1], len[1], &v))
				return -EIO;
			kr->run[part].found++;
			kr->cand[kr->ncand].id = v;
			kr->cand[kr->ncand].taken = false;
			for (size_t i = 0; i < h; i++)
				if (handed[i].id == v)
					kr->cand[kr->ncand].taken = true;
			kr->nhanded += kr->cand[kr->ncand].taken;
			kr->ncand++;
		} else {        /* the part's end */
			kr->run[part].covered = row[2] && row[2][0] == '1';
		}
	}
	return 0;
}

bool key_runs_short(const struct key_run *k)
{
	return k->found < k->cnt && !k->covered;
}

/* KEY_FILL_MANY of the refs of the runs that fell back. */
static void add_fallback(struct store *s, const struct key_runs *kr, const struct store_ref *refs,
			 size_t n)
{
	struct buf parts;
	size_t m = 0;

	buf_init(&parts);
	for (size_t j = 0; j < kr->n; j++) {
		if (!key_runs_short(&kr->run[j]))
			continue;
		for (size_t i = 0; i < n; i++)
			if (sq_ref_handed_by_key(&refs[i]) && !strcmp(refs[i].group, kr->run[j].group))
				buf_printf(&parts, "%s" KEY_FILL_PART, m++ ? " UNION " : "",
					   (unsigned long long)refs[i].id,
					   (unsigned long long)refs[i].id, (unsigned)refs[i].key_limit);
	}
	if (buf_failed(&parts)) {
		s->sql.failed = true; /* sq_run says out of memory */
	} else if (m > 0) {
		sql_add(s, KEY_FILL_MANY, parts.data);
		sq_end(s);
	}
	buf_free(&parts);
}

size_t sq_add_key_next_rest(struct store *s, const struct key_runs *kr,
			    const struct store_ref *refs, size_t n)
{
	size_t at = s->ncuts, m = 0;
	struct buf ids;

	buf_init(&ids);
	for (size_t i = 0; i < kr->ncand; i++)
		if (!kr->cand[i].taken)
			buf_printf(&ids, "%s%llu", m++ ? "," : "", (unsigned long long)kr->cand[i].id);
	if (buf_failed(&ids)) {
		s->sql.failed = true;
	} else if (m > 0) {
		sql_add(s, KEY_NEXT_SHOW, ids.data);
		sq_end(s);
	}
	buf_free(&ids);
	add_fallback(s, kr, refs, n);
	return s->ncuts - at;
}
