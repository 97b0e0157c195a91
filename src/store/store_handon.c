/* store_handon — the claim's hand-on (store_claim.c): the rows that a finished row's key lets
 * start next, locked for the claim that finishes it instead of made visible for any claimer.
 * A key run one at a time names its next row by number (GROUP_HEADS, store_int.h); a key
 * that runs N at once (sql/migrations/006_key_limits.sql) names, for the c rows of it that
 * the claim finishes, the first c rows parked after them, by number too (KEY_NEXT_PART). Its
 * first N live rows have a visible_at and the rest wait parked, in the order they were
 * added, so every parked row comes after every row that ran: the rows the finish lets start
 * are the first c parked after the highest number it finished, read from group_seq_idx in
 * order, whose entries never change (the walk of group_idx that KEY_FILL_MANY makes passes
 * the entries of every row of the key finished until the server's purge removes them: with
 * both workers taking rows of every key, most of the server's time). Rows deleted while
 * they waited leave no entry to pass; rows that finished before one numbered lower are
 * passed (one row running long while many after it finish: once, when it finishes).
 *
 * What the claim does not take (no room, not due, locked) its commit makes visible
 * (KEY_NEXT_SHOW): the first c after the same number that are parked or were just taken.
 * A key for which the numbers cannot tell (KEY_NEXT_OK: its rows put back, older than those
 * parked; its limit lower now than when its rows were claimed; a finish this transaction
 * did not make) falls back to KEY_FILL_MANY. Keys are compared as the server compares them
 * (its collation), never in C, but for telling which keys fell back: a key the server names
 * otherwise than the claim's rows falls back too. See store_int.h. */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A key's rows to hand on: (hid, k: key %s, quoted) of the first %u rows after number %llu
 * of key %s in queue %s that meet %s (PARKED, or KEY_NEXT_SHOW's), in this order of the
 * arguments: k, queue, key, number, condition, count. Queue and key are written out, so
 * that it is a range of three columns read in order that ends with the last row it needs
 * (read from a joined row of the finished ones, the same took the server five times as
 * long). */
#define KEY_NEXT_PART \
	"(SELECT p.id AS hid, %s AS k FROM work_items p FORCE INDEX (group_seq_idx) WHERE " \
	"p.queue = %s AND p.group_key = %s AND p.group_seq > %llu AND %s " \
	"ORDER BY p.group_seq LIMIT %u)"
#define PARKED "p.state = 'ready' AND p.visible_at IS NULL"
/* The keys whose rows may be handed on by number: every row the claim names (%s: their
 * ids, then a CASE of their new tokens) was finished by this transaction in the claim's
 * queue (%s), no rows of the key were put back, and its limit now is at least what it was
 * when they were claimed (a CASE of the ids: their limits). One statement for every key
 * (a part each, the same conditions took the server six times as long). */
#define KEY_NEXT_OK \
	"(SELECT d.group_key AS k FROM work_items d LEFT JOIN work_groups g ON g.queue = " \
	"d.queue AND g.group_key = d.group_key LEFT JOIN key_limits l ON l.queue = d.queue " \
	"AND l.group_key = d.group_key WHERE d.id IN (%s) GROUP BY d.group_key HAVING " \
	"SUM(d.claim_token = CASE d.id%s END AND d.state IN ('done', 'dead') AND d.queue = " \
	"%s) = COUNT(*) AND NOT IFNULL(MAX(g.put_back), 0) AND COALESCE(MAX(l.concurrency), " \
	"(SELECT key_concurrency FROM queues WHERE name = %s), 1) >= MAX(CASE d.id%s END))"
/* In the commit's round trip, after the claim's UPDATE: of the first c rows after the
 * number that are parked or were handed on to this claim (the parts' condition), those
 * parked get their visible_at, as GROUP_NEXT gives a FIFO group's. %s: the parts. */
#define KEY_NEXT_SHOW \
	"UPDATE work_items w JOIN (%s) AS h ON w.id = h.hid SET w.visible_at = " \
	"GREATEST(w.run_at, NOW(6)) WHERE w.visible_at IS NULL AND w.state = 'ready'"

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

unsigned sq_hand_on_refs(const struct store_ref *done, size_t n)
{
	unsigned k = sq_head_refs(done, n);

	for (size_t i = 0; i < n; i++)
		k += sq_ref_handed_by_key(&done[i]);
	return k;
}

/* One per finished row of a key run one at a time or N at once, at most half of max, so
 * that the claim's scan always has the other half (rows of other keys, of no key and of
 * other priorities are not held back by chains of a key's rows). */
unsigned sq_hand_on_room(const struct store_ref *done, size_t n, unsigned max)
{
	unsigned k = sq_hand_on_refs(done, n);

	return k < max / 2 ? k : max / 2;
}

void key_runs_free(struct key_runs *kr)
{
	free(kr->run);
	memset(kr, 0, sizeof(*kr));
}

/* The key runs of refs[0..n): one per key as its rows spell it. */
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
		}
		k->cnt++;
		if (r->group_seq > k->max_seq)
			k->max_seq = r->group_seq;
	}
	return 0;
}

/* KEY_NEXT_PART of every run (all, or those ok and not handed all they named), joined by
 * UNION ALL, in the claim's queue; cond: PARKED, or KEY_NEXT_SHOW's condition. */
static void add_parts(struct store *s, struct buf *b, const struct key_runs *kr, bool all,
		      const char *cond)
{
	size_t m = 0;

	for (size_t j = 0; j < kr->n; j++) {
		const struct key_run *k = &kr->run[j];
		size_t len = strlen(k->group);
		char *g;

		if (!all && (!k->ok || k->taken >= k->cnt))
			continue;
		g = malloc(2 * len + 3);
		if (!g) {
			b->failed = true;
			return;
		}
		sq_quote(s->conn, g, k->group, len);
		buf_printf(b, "%s" KEY_NEXT_PART, m++ ? " UNION ALL " : "", g, kr->q, g,
			   (unsigned long long)k->max_seq, cond, k->cnt);
		free(g);
	}
}

/* KEY_NEXT_OK for the refs of the runs. */
static void add_ok(struct buf *b, const struct store_ref *refs, size_t n, const char *q)
{
	struct buf ids, tokens, limits;
	size_t m = 0;

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
	if (buf_failed(&ids) || buf_failed(&tokens) || buf_failed(&limits))
		b->failed = true;
	else
		buf_printf(b, KEY_NEXT_OK, ids.data, tokens.data, q, q, limits.data);
	buf_free(&ids);
	buf_free(&tokens);
	buf_free(&limits);
}

size_t sq_hand_on_sources(struct store *s, struct buf *b, struct key_runs *kr,
			  const char *queue, const struct store_ref *refs, size_t n)
{
	size_t heads = sq_group_heads(b, refs, n);

	if (key_runs_find(kr, refs, n) < 0) {
		b->failed = true;
		return 0;
	}
	sq_quote(s->conn, kr->q, queue, strlen(queue));
	if (kr->n == 0)
		return heads;
	buf_printf(b, "%sSELECT DISTINCT kp.hid FROM (", heads ? " UNION ALL " : "");
	add_parts(s, b, kr, true, PARKED);
	buf_puts(b, ") AS kp JOIN ");
	add_ok(b, refs, n, kr->q);
	buf_puts(b, " AS ok ON ok.k = kp.k");
	return heads + kr->n;
}

void sq_add_key_next_ok(struct store *s, const struct key_runs *kr,
			const struct store_ref *refs, size_t n)
{
	buf_puts(&s->sql, "SELECT k FROM ");
	add_ok(&s->sql, refs, n, kr->q);
	buf_puts(&s->sql, " AS ok");
	sq_end(s);
}

int key_runs_take(struct key_runs *kr, MYSQL_RES *res, const struct store_item *handed,
		  size_t h)
{
	MYSQL_ROW row;

	if (!res || mysql_num_fields(res) != 1)
		return -EIO;
	/* Runs that were handed all they named need nothing shown (a key the server compares
	 * equal but that is spelled otherwise is shown: its statement is right either way). */
	for (size_t i = 0; i < h; i++)
		for (size_t j = 0; handed[i].group && j < kr->n; j++)
			kr->run[j].taken += strcmp(kr->run[j].group, handed[i].group) == 0;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *len = mysql_fetch_lengths(res);
		for (size_t j = 0; row[0] && j < kr->n; j++)
			if (strlen(kr->run[j].group) == len[0] &&
			    memcmp(kr->run[j].group, row[0], len[0]) == 0)
				kr->run[j].ok = true;
	}
	return 0;
}

/* sq_add_key_fill_many's choice for the runs that fell back (arg: the runs). */
static bool fell_back(const struct store_ref *r, const void *arg)
{
	const struct key_runs *kr = arg;

	for (size_t j = 0; sq_ref_handed_by_key(r) && j < kr->n; j++)
		if (strcmp(r->group, kr->run[j].group) == 0)
			return !kr->run[j].ok;
	return false;
}

/* KEY_NEXT_SHOW for the runs that go by number and were not handed all they named. */
static void add_show(struct store *s, const struct key_runs *kr,
		     const struct store_item *handed, size_t h)
{
	struct buf cond, parts;

	buf_init(&cond);
	buf_init(&parts);
	buf_puts(&cond, "(" PARKED " OR p.id IN (0");
	for (size_t i = 0; i < h; i++)
		buf_printf(&cond, ",%llu", (unsigned long long)handed[i].id);
	buf_puts(&cond, "))");
	if (!buf_failed(&cond))
		add_parts(s, &parts, kr, false, cond.data);
	if (buf_failed(&cond) || buf_failed(&parts)) {
		s->sql.failed = true; /* sq_run says out of memory */
	} else {
		sql_add(s, KEY_NEXT_SHOW, parts.data);
		sq_end(s);
	}
	buf_free(&cond);
	buf_free(&parts);
}

void sq_add_key_next_rest(struct store *s, const struct key_runs *kr,
			  const struct store_item *handed, size_t h, const struct store_ref *refs,
			  size_t n)
{
	for (size_t j = 0; j < kr->n; j++)
		if (kr->run[j].ok && kr->run[j].taken < kr->run[j].cnt) {
			add_show(s, kr, handed, h);
			break;
		}
	sq_add_key_fill_many(s, refs, n, fell_back, kr);   /* KEY_FILL_MANY */
}
