/* store — all SQL of claimd, over MariaDB Connector/C's text protocol. This file: the claim
 * (completing the previous batch in the same transaction). store_rows.c has what a claimed row
 * goes through after it, store_sql.c the statement pieces both share, store_cursor.c where
 * claims go on, store_conn.c connections and running statements, store_admin.c the rest, all
 * on store_int.h.
 *
 * Text protocol with multi-statements, not prepared statements: a claim costs round trips,
 * not parsing. It is the only statement that turns multi-statements on for its connection
 * (a worker's: sq_need_multi); every value in its texts is an integer formatted here, a
 * cursor's visible_at that is digits and "-:. " only (parse_row, store_cursor.c), or a string
 * quoted by sq_quote (mysql_real_escape_string), the one function that writes strings into
 * any statement of the store. "START TRANSACTION; complete; SELECT ... FOR UPDATE SKIP LOCKED" is one round
 * trip and "UPDATE by id; COMMIT" a second; prepared statements take one round trip each
 * (measured: 10-20% fewer claims/s at batch 1..16). Strings go through
 * mysql_real_escape_string on a utf8mb4 connection; integers are formatted directly.
 *
 * FORCE INDEX (claim_prio_idx): with ORDER BY ... LIMIT, MariaDB 10.11 may pick "ref" access
 * on (queue) alone and walk, by index condition pushdown, every entry whose visible_at is
 * NULL (all done and dead rows sort first in each priority) before the first claimable one:
 * 5 ms a claim with 40,000 done rows. The hint makes it the ranges (queue, priority,
 * NULL < visible_at <= NOW(6)). tests/integration/test_schema.py runs EXPLAIN on the CLAIM_*,
 * DUE_PRIORITIES and GROUP_* texts.
 *
 * The fence is "(ids) AND claim_token = (each row's token)" (sq_add_fence): a one-element
 * "(id, claim_token) IN ((x, y))" is not range-optimised (a full index scan on 10.11), and a
 * longer one costs the server more than the ELT list it takes for ids close together.
 *
 * No UPDATE here reads a column the same statement assigns, so each means the same with
 * and without SIMULTANEOUS_ASSIGNMENT in sql_mode.
 */
#include "store/store.h"
#include "store/store_int.h"
#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The claim query over the priorities in a set (see struct prio_set): the second %s is the
 * list, the third "" (scan from the oldest row), CLAIM_AFTER or CLAIM_UPTO (see struct
 * claim_cursor). */
#define CLAIM_COLUMNS \
	"id, claim_token, attempts, max_attempts, payload, IFNULL(visible_at, NOW(6)), " \
	"timeout_s, ROUND(UNIX_TIMESTAMP(created_at) * 1000), " \
	"(SELECT CONCAT_WS(' ', min_interval_ms, IFNULL(retry_base_ms, 0), IFNULL(retry_max_ms, 0), " \
	"IFNULL(retry_jitter_pct, -1)) FROM queues WHERE name = %s), priority, group_key, group_seq, " \
	"content_type, GREATEST(0, TIMESTAMPDIFF(MICROSECOND, visible_at, NOW(6))), " \
	"has_dependents, " CANCEL_LIVE ", traceparent, IFNULL(retry_base_ms, 0), " \
	"IFNULL(retry_max_ms, 0)"
#define CLAIM_SELECT \
	"SELECT " CLAIM_COLUMNS " FROM work_items FORCE INDEX (claim_prio_idx) " \
	"WHERE queue = %s AND priority IN (%s) AND visible_at <= NOW(6)%s AND " NOT_PAUSED \
	" ORDER BY priority, visible_at, id LIMIT %u FOR UPDATE SKIP LOCKED"
/* The claim's hand-on: the next rows of the FIFO groups whose rows it finished (keys run one
 * at a time: GROUP_HEADS, %s), still parked, due and in this queue, locked
 * for this claim instead of made visible for any: they go from parked to claimed with no
 * visible entry in claim_prio_idx between, which the claim's scan and the supervisor's
 * next-due question would walk, delete-marked, until the server's purge removed it (with
 * 100 keys, ~10,000 pages a claim). Those it does not take (locked, not due, no room) are
 * made visible by GROUP_NEXT in the commit's round trip. Their visible_at reads NOW(6) and
 * they waited 0 (they could start the moment the row before them finished). */
#define HAND_ON \
	"SELECT " CLAIM_COLUMNS " FROM (%s) AS h JOIN work_items ON id = h.hid WHERE " \
	"queue = %s AND state = 'ready' AND visible_at IS NULL AND run_at <= NOW(6) AND " \
	NOT_PAUSED " LIMIT %u FOR UPDATE SKIP LOCKED"
/* After the cursor: every other priority whole, the cursor's own past the cursor. Up to it:
 * the cursor's priority before the cursor (the rest was in the scan after it). */
#define CLAIM_AFTER \
	" AND (priority <> %d OR visible_at > '%s' OR (visible_at = '%s' AND id > %llu))"
#define CLAIM_UPTO \
	" AND priority = %d AND (visible_at < '%s' OR (visible_at = '%s' AND id <= %llu))"
#define CLAIM_FIELDS 19
/* Is a row of priority %d due in queue %s: one range, one lookup. DUE_PRIORITIES asks it
 * for every priority in one statement, each with the priority written out: a correlated
 * form (a derived table of priorities, a loose index scan) leaves the plan to MariaDB's
 * statistics, and with many done rows it may walk them. */
#define DUE_PRIORITY \
	"(SELECT 1 FROM work_items FORCE INDEX (claim_prio_idx) " \
	"WHERE queue = %s AND priority = %d AND visible_at <= NOW(6) LIMIT 1)"
#define CLAIM_HEAD_SCAN_MS 1000u /* scan from the oldest row at least this often */
/* A claim that hands rows on (HAND_ON) scans for other due rows only if its last scan from
 * the head (this connection's, this queue's) found one, or ran at least this long ago. Its
 * worker claims again as each batch of its keys' rows ends, most often with nothing else
 * due, and a scan that finds nothing is not free: it reads on past the last due entry to
 * the first that is not, and right after "now" lie the entries of the leases of the rows
 * claimed and finished in the last second or so, delete-marked until the server's purge
 * removes them, each checked for a lock by a read of its clustered row (100 keys at
 * N = 1: 7,000 pages a claim that found nothing, half of the server's time). A row that
 * becomes due meanwhile waits this long at most for this worker (the others, woken for
 * it, may take it sooner). */
#define CLAIM_HANDON_SCAN_MS 20u
#define CLAIM_HAND_RETRY_MS 100u /* after a claim found no row to hand on */

struct claim_args {
	const char *queue;
	unsigned max, lease_ms;
	const struct store_ref *done;
	size_t ndone;
};


/* ---- claim ---- */

void store_items_clear(struct store_item *items, size_t n)
{
	size_t i;

	for (i = 0; items && i < n; i++) {
		free(items[i].payload);
		free(items[i].group);
		free(items[i].content_type);
		free(items[i].traceparent);
		items[i].payload = NULL;
		items[i].payload_len = 0;
		items[i].group = NULL;
		items[i].content_type = NULL;
		items[i].traceparent = NULL;
	}
}

/* The queue's settings, "min_interval_ms base max jitter" (CLAIM_SELECT's ninth column; NULL
 * when the queue has no row: none set), into it. */
static bool parse_queue(const char *v, size_t len, struct store_item *it)
{
	unsigned long long n[3];
	const char *p = v;
	char *end;
	long j;

	it->min_interval_ms = it->retry_base_ms = it->retry_max_ms = 0;
	it->retry_jitter_pct = -1;
	if (!v)
		return true;
	if (strlen(v) != len)
		return false;
	for (int i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return false;
		n[i] = strtoull(p, &end, 10);
		if (*end != ' ' || n[i] > UINT32_MAX)
			return false;
		p = end + 1;
	}
	j = strtol(p, &end, 10);
	if (end == p || *end || j < -1 || j > 100)
		return false;
	it->min_interval_ms = (uint32_t)n[0];
	it->retry_base_ms = (uint32_t)n[1];
	it->retry_max_ms = (uint32_t)n[2];
	it->retry_jitter_pct = (int8_t)j;
	return true;
}

/* One row of CLAIM_SELECT into it and *pos. Attempt and token are the values the claim's
 * UPDATE writes: the row is locked by us until COMMIT, so old + 1 is exact. */
static int parse_row(MYSQL_ROW row, const unsigned long *lens, const char *queue,
		     struct store_item *it, struct claim_pos *pos)
{
	uint64_t attempts, max_attempts, timeout_s = 0, created_ms = 0, seq = 0;
	uint64_t waited = 0, own_base = 0, own_max = 0;
	long prio;
	char *end;

	it->payload = NULL;
	it->payload_len = 0;
	it->group = NULL;
	it->content_type = NULL;
	it->traceparent = NULL;
	if (!sq_parse_u64(row[0], lens[0], &it->id) || !sq_parse_u64(row[1], lens[1], &it->token) ||
	    !sq_parse_u64(row[2], lens[2], &attempts) || !sq_parse_u64(row[3], lens[3], &max_attempts) ||
	    attempts >= UINT32_MAX || max_attempts > UINT32_MAX || !row[5] || lens[5] == 0 ||
	    lens[5] >= sizeof(pos->visible_at) || strspn(row[5], "0123456789-:. ") != lens[5] ||
	    (row[6] && !sq_parse_u64(row[6], lens[6], &timeout_s)) ||
	    (row[7] && !sq_parse_u64(row[7], lens[7], &created_ms)) ||
	    !parse_queue(row[8], lens[8], it) || !row[9] ||
	    (row[11] && !sq_parse_u64(row[11], lens[11], &seq)) ||
	    (row[13] && !sq_parse_u64(row[13], lens[13], &waited)) ||
	    !row[17] || !sq_parse_u64(row[17], lens[17], &own_base) || own_base > UINT32_MAX ||
	    !row[18] || !sq_parse_u64(row[18], lens[18], &own_max) || own_max > UINT32_MAX)
		return -EIO;
	prio = strtol(row[9], &end, 10);
	if (end != row[9] + lens[9] || prio < INT16_MIN || prio > INT16_MAX)
		return -EIO;
	pos->priority = (int)prio;
	it->priority = (int16_t)prio;
	/* Over ~49 days a limit is no limit. */
	it->timeout_ms = timeout_s > UINT32_MAX / 1000u ? UINT32_MAX : (uint32_t)timeout_s * 1000u;
	it->enqueued_at_ms = created_ms > INT64_MAX ? 0 : (int64_t)created_ms;
	it->token++;
	it->attempt = (uint32_t)attempts + 1;
	it->max_attempts = (uint32_t)max_attempts;
	it->spent = attempts >= max_attempts;
	snprintf(it->queue, sizeof(it->queue), "%s", queue);
	memcpy(pos->visible_at, row[5], lens[5] + 1);
	pos->id = it->id;
	it->group_seq = seq;
	it->waited_us = waited;
	it->has_dependents = row[14] && row[14][0] == '1';
	it->key_concurrency = 1;   /* read with the commit (take_key_limits) */
	it->key_interval_ms = 0;
	it->cancelled = row[15] && row[15][0] == '1';
	/* The row's own back-off (migration 14) before its queue's: its base with its own max
	 * (0: claimd's cap), or its max alone over the queue's base. */
	if (own_base) {
		it->retry_base_ms = (uint32_t)own_base;
		it->retry_max_ms = (uint32_t)own_max;
	} else if (own_max) {
		it->retry_max_ms = (uint32_t)own_max;
	}
	if (row[10] && !(it->group = strndup(row[10], lens[10])))
		return -ENOMEM;
	if (row[12] && !(it->content_type = strndup(row[12], lens[12])))
		return -ENOMEM;
	if (row[16] && !(it->traceparent = strndup(row[16], lens[16])))
		return -ENOMEM;
	if (!row[4])
		return 0;
	it->payload = malloc(lens[4] + 1);
	if (!it->payload)
		return -ENOMEM;
	memcpy(it->payload, row[4], lens[4]);
	it->payload[lens[4]] = '\0';
	it->payload_len = lens[4];
	return 0;
}

enum claim_scan { SCAN_HEAD, SCAN_AFTER, SCAN_UPTO };

static void sql_add_claim(struct store *s, const char *queue, enum claim_scan scan,
			  const struct prio_set *set, unsigned limit)
{
	const struct claim_pos *at = &s->cursor.pos;
	char q[QUOTED_QUEUE_MAX], c[200] = "", list[PRIO_SET_MAX * 8] = "";
	size_t len = 0;

	if (scan == SCAN_AFTER)
		snprintf(c, sizeof(c), CLAIM_AFTER, at->priority, at->visible_at, at->visible_at,
			 (unsigned long long)at->id);
	else if (scan == SCAN_UPTO)
		snprintf(c, sizeof(c), CLAIM_UPTO, at->priority, at->visible_at, at->visible_at,
			 (unsigned long long)at->id);
	for (unsigned i = 0; i < set->n; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", i ? "," : "",
					set->p[i]);
	sq_quote(s->conn, q, queue, strlen(queue));
	sql_add(s, CLAIM_SELECT, q, q, list, c, q, limit);
}

/* Reads a result of CLAIM_SELECT or HAND_ON (freed, *res set to NULL) into
 * s->scratch[*n..max); *last = the place of the last row. On error the rows appended so far
 * are freed (*n is left as it was). */
static int take_claimed(struct store *s, const struct claim_args *a, MYSQL_RES **res,
			size_t *n, struct claim_pos *last, char *err, size_t errlen)
{
	size_t i = *n;
	MYSQL_ROW row;
	int r = 0;

	if (!*res || mysql_num_fields(*res) != CLAIM_FIELDS) {
		mysql_free_result(*res);
		*res = NULL;
		return sq_fail_msg(-EIO, err, errlen, "store_claim: unexpected result shape");
	}
	while (r == 0 && i < a->max && (row = mysql_fetch_row(*res))) {
		r = parse_row(row, mysql_fetch_lengths(*res), a->queue, &s->scratch[i], last);
		i++;
	}
	mysql_free_result(*res);
	*res = NULL;
	if (r < 0) {
		store_items_clear(s->scratch + *n, i - *n);
		return r == -ENOMEM ? sq_fail_msg(r, err, errlen, "store_claim: out of memory") :
		       sq_fail_msg(-EIO, err, errlen, "store_claim: bad value in a claimed row");
	}
	*n = i;
	return 0;
}

/* One more scan inside the open transaction: rows of set after, up to or from the head. */
static int claim_more(struct store *s, const struct claim_args *a, enum claim_scan scan,
		      const struct prio_set *set, size_t *n, struct claim_pos *last,
		      char *err, size_t errlen)
{
	struct run rr;
	int r;

	sq_reset(s);
	sql_add_claim(s, a->queue, scan, set, a->max - (unsigned)*n);
	r = sq_run(s, "store_claim", &rr, err, errlen);
	return r < 0 ? r : take_claimed(s, a, &rr.res, n, last, err, errlen);
}

/* "SELECT DUE_PRIORITY, ..." for every priority: one row, a column per priority. */
static void sql_add_due(struct store *s, const char *queue)
{
	char q[QUOTED_QUEUE_MAX];

	sq_quote(s->conn, q, queue, strlen(queue));
	sql_add(s, "SELECT ");
	for (int p = STORE_PRIORITY_MIN; p <= STORE_PRIORITY_MAX; p++)
		sql_add(s, "%s" DUE_PRIORITY, p > STORE_PRIORITY_MIN ? "," : "", q, p);
}

/* s->prios = the priorities of queue with due rows, from the result of sql_add_due (freed). */
static int take_due(struct store *s, MYSQL_RES *res, const char *queue, char *err,
		    size_t errlen)
{
	struct prio_set *set = &s->prios;
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;

	set->known = false;
	if (!row || mysql_num_fields(res) != PRIO_SET_MAX) {
		mysql_free_result(res);
		return sq_fail_msg(-EIO, err, errlen, "store_claim: unexpected result shape");
	}
	set->n = 0;
	for (int p = 0; p < PRIO_SET_MAX; p++)
		if (row[p])
			set->p[set->n++] = STORE_PRIORITY_MIN + p;
	mysql_free_result(res);
	snprintf(set->queue, sizeof(set->queue), "%s", queue);
	set->known = true;
	return 0;
}

static bool prio_in(const struct prio_set *set, int p)
{
	for (unsigned k = 0; k < set->n; k++)
		if (set->p[k] == p)
			return true;
	return false;
}

/* Every priority not in set, smallest first. */
static void prios_other(const struct prio_set *set, struct prio_set *out)
{
	unsigned k = 0;

	out->n = 0;
	for (int p = STORE_PRIORITY_MIN; p <= STORE_PRIORITY_MAX; p++) {
		while (k < set->n && set->p[k] < p)
			k++;
		if (k == set->n || set->p[k] != p)
			out->p[out->n++] = p;
	}
}

/* Adds the priorities of items[0..n) to set, keeping it sorted. */
static void prios_add_found(struct prio_set *set, const struct store_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned k = 0;

		while (k < set->n && set->p[k] < items[i].priority)
			k++;
		if (k < set->n && set->p[k] == items[i].priority)
			continue;
		memmove(set->p + k + 1, set->p + k, (set->n - k) * sizeof(set->p[0]));
		set->p[k] = items[i].priority;
		set->n++;
	}
}

/* HAND_ON, and which keys run N at once go by number (sq_add_key_next_ok) when there are
 * any. */
static void sql_add_hand_on(struct store *s, const struct claim_args *a, unsigned limit,
			    struct key_runs *kr)
{
	struct buf parts;

	buf_init(&parts);
	sq_hand_on_sources(s, &parts, kr, a->queue, a->done, a->ndone);
	if (buf_failed(&parts)) {
		s->sql.failed = true; /* sq_run says out of memory */
	} else {
		sql_add(s, HAND_ON, kr->q, parts.data, kr->q, kr->q, limit);
		sq_end(s);
		if (kr->n > 0)
			sq_add_key_next_ok(s, kr, a->done, a->ndone);
	}
	buf_free(&parts);
}

/* Round trip 1: open the transaction, complete done[], take the rows handed on from the FIFO
 * groups of those (HAND_ON), lock up to max rows after the cursor in the priorities that
 * had due rows, or, from the head, in every priority (and, after a full claim, ask which
 * have due rows now). Only if that came back short: the rows up to the cursor, then those
 * of the other priorities (round trips 1b, 1c). The rows handed on come first in
 * s->scratch; the scans' rows after them (up to max in all: the rest of a scan's rows stay
 * as they were). *next = where the claim after this one starts. */
static int claim_lock(struct store *s, const struct claim_args *a, size_t *ret_n,
		      size_t *ret_completed, bool *ret_heads_left, struct key_runs *kr,
		      struct claim_cursor *next, char *err, size_t errlen)
{
	uint64_t now = sq_mono_ms();
	/* An empty set of priorities would make "after" two round trips that scan every one.
	 * After a short claim the cursor saves nothing: every due row was taken then, and the
	 * scan after it would come back short too and take two more round trips (up to it, the
	 * other priorities) to look where one scan from the head looks at once, the rows that
	 * became due since (a worker woken for one new row claims it in one round trip, not
	 * three). */
	bool after = s->last_full && s->cursor.set && strcmp(s->cursor.queue, a->queue) == 0 &&
		     now - s->cursor.head_scan_ms < CLAIM_HEAD_SCAN_MS && s->prios.known &&
		     s->prios.n > 0 && strcmp(s->prios.queue, a->queue) == 0;
	bool head = !after, ask_due = head && s->last_full;
	/* Rows under a key each, say, have no next rows to hand on: after a claim that found
	 * none, the next ones do not look for CLAIM_HAND_RETRY_MS (the finish makes any next
	 * row visible all the same; the lookup, ~2 us a row, is what is saved). */
	unsigned hand = s->hand_empty_ms && now - s->hand_empty_ms < CLAIM_HAND_RETRY_MS ? 0 :
			sq_hand_on_room(a->done, a->ndone, a->max);
	/* A claim that hands rows on, soon after a scan from the head found no due row: no
	 * scan (CLAIM_HANDON_SCAN_MS). */
	bool skip = hand > 0 && head && !ask_due && s->prios.known && s->prios.n == 0 &&
		    strcmp(s->prios.queue, a->queue) == 0 && s->cursor.head_scan_ms > 0 &&
		    strcmp(s->cursor.queue, a->queue) == 0 &&
		    now - s->cursor.head_scan_ms < CLAIM_HANDON_SCAN_MS;
	struct claim_pos last[3], handed_pos;
	struct prio_set all = { .n = 0 }, other;
	size_t n = 0, h, mark[3] = { 0, 0, 0 };
	uint64_t scanned;
	MYSQL_RES *hres, *kres, *cres, *dres, **res;
	struct run rr;
	int r = 0, k, ci;

	for (int p = STORE_PRIORITY_MIN; p <= STORE_PRIORITY_MAX; p++)
		all.p[all.n++] = p;
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	/* Without a hand-on the groups' next rows are made visible before the scan, which may
	 * take them (a worker with room for one row goes on with its group's next, as it may). */
	ci = sq_add_complete(s, a->done, a->ndone, hand > 0);
	if (hand > 0)
		sql_add_hand_on(s, a, hand, kr);
	if (skip) {
		/* the rows handed on alone */
	} else if (head) {
		sql_add_claim(s, a->queue, SCAN_HEAD, &all, a->max);
		if (ask_due) {
			sq_end(s);
			sql_add_due(s, a->queue);
		}
	} else {
		sql_add_claim(s, a->queue, SCAN_AFTER, &s->prios, a->max);
	}
	r = sq_run(s, "store_claim", &rr, err, errlen);
	if (r < 0)
		return r;
	/* The result sets in the order asked for. */
	res = (MYSQL_RES *[]){ rr.res, rr.res2, rr.res3, rr.res4 };
	hres = hand > 0 ? *res++ : NULL;
	kres = hand > 0 && kr->n > 0 ? *res++ : NULL;
	cres = skip ? NULL : *res++;
	dres = skip ? NULL : *res;
	scanned = cres ? mysql_num_rows(cres) : 0;
	if (hand > 0)
		r = take_claimed(s, a, &hres, &n, &handed_pos, err, errlen);
	h = n;
	kr->nhanded = h;
	if (r == 0 && kres && key_runs_take(kr, kres, s->scratch, h) < 0)
		r = sq_fail_msg(-EIO, err, errlen, "store_claim: bad rows of keys to hand on");
	mysql_free_result(kres);
	if (hand > 0)
		s->hand_empty_ms = h > 0 ? 0 : now ? now : 1;
	if (r == 0 && ask_due) {
		r = take_due(s, dres, a->queue, err, errlen);
		dres = NULL;
	}
	if (r == 0 && !skip)
		r = take_claimed(s, a, &cres, &n, &last[0], err, errlen);
	mysql_free_result(hres);
	mysql_free_result(cres);
	mysql_free_result(dres);
	if (r < 0) {
		store_items_clear(s->scratch, n);
		return r;
	}
	/* The next rows of the FIFO groups finished that were not handed on are made visible in
	 * the commit's round trip (after this claim's UPDATE made those it took claimed): none
	 * are left when each finished row had its next one handed on (one a row: GROUP_HEADS
	 * names one row per finished row, and two finished rows of one group would have named
	 * the same; not told apart from the rows of keys run N at once, whose are left to
	 * sq_add_key_next_rest: GROUP_NEXT finds nothing to do for a group whose row was
	 * taken). */
	*ret_heads_left = hand > 0 && sq_head_refs(a->done, a->ndone) > 0 &&
			  h < sq_hand_on_refs(a->done, a->ndone);
	/* No scan: the key fills' rows were not looked for (GROUP_NEXT's: claim_commit). */
	s->left_next = skip && sq_has_key_fills(a->done, a->ndone);
	if (skip) {
		*ret_completed = a->ndone ? (size_t)rr.rows[ci] : 0;
		*next = s->cursor;   /* as it was: no scan moved it */
		*ret_n = n;
		return 0;
	}
	if (head && !ask_due) {
		/* Short: every due row was looked at, and these are the priorities that had
		 * some. Full (or cut short to make room for rows handed on): unknown; the next
		 * claim scans from the head and asks. */
		s->prios.n = 0;
		prios_add_found(&s->prios, s->scratch + h, n - h);
		snprintf(s->prios.queue, sizeof(s->prios.queue), "%s", a->queue);
		s->prios.known = scanned < a->max && n - h == scanned;
	}
	*ret_completed = a->ndone ? (size_t)rr.rows[ci] : 0;
	mark[0] = n;
	if (after && n < a->max && prio_in(&s->prios, s->cursor.pos.priority))
		r = claim_more(s, a, SCAN_UPTO, &s->prios, &n, &last[1], err, errlen);
	mark[1] = n;
	if (r == 0 && after && n < a->max) {
		prios_other(&s->prios, &other);
		if (other.n > 0)
			r = claim_more(s, a, SCAN_HEAD, &other, &n, &last[2], err, errlen);
		if (r == 0)
			prios_add_found(&s->prios, s->scratch + mark[1], n - mark[1]);
	}
	mark[2] = n;
	if (r < 0) {
		store_items_clear(s->scratch, n);
		return r;
	}
	if (n < a->max)
		after = false; /* every due row was looked at: as good as a scan from the head */
	*next = s->cursor;
	if (!after)
		next->head_scan_ms = now;
	/* The cursor goes on from the first scan that found rows (the rows handed on are not
	 * in the scans' order). */
	for (k = 0; k < 3 && mark[k] == (k ? mark[k - 1] : h); k++)
		;
	next->set = k < 3;
	if (k < 3)
		next->pos = last[k];
	snprintf(next->queue, sizeof(next->queue), "%s", a->queue);
	*ret_n = n;
	return 0;
}

/* The limits of the keys of the grouped rows among the claimed scratch[0..n)
 * (sql/migrations/006_key_limits.sql), asked in the commit's round trip: the queue's for every
 * key (a first row with a NULL key), then the keys' own (key_limits, by primary key), each
 * column NULL where it takes the queue's. Rows without a key pay nothing. Returns whether it
 * added the statement. */
static bool sql_add_key_limits(struct store *s, const struct claim_args *a, size_t n)
{
	char q[QUOTED_QUEUE_MAX];
	size_t nk = 0;

	for (size_t i = 0; i < n; i++) {
		const char *g = s->scratch[i].group;
		bool seen = false;
		if (!g)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = s->scratch[k].group && !strcmp(s->scratch[k].group, g);
		if (seen)
			continue;
		if (nk++ == 0) {
			sq_quote(s->conn, q, a->queue, strlen(a->queue));
			sql_add(s, "SELECT NULL, key_concurrency, key_interval_ms FROM queues WHERE "
				"name = %s UNION ALL SELECT group_key, concurrency, interval_ms FROM "
				"key_limits WHERE queue = %s AND group_key IN (", q, q);
		} else {
			sql_add(s, ",");
		}
		sq_add_text(s, g, strlen(g));
	}
	if (nk == 0)
		return false;
	sql_add(s, ")");
	sq_end(s);
	return true;
}

/* A limit column of sql_add_key_limits: *v unchanged when NULL. */
static bool limit_of(const char *p, unsigned long len, uint32_t *v)
{
	uint64_t x;

	if (!p)
		return true;
	if (!sq_parse_u64(p, len, &x) || x > UINT32_MAX)
		return false;
	*v = (uint32_t)x;
	return true;
}

/* The answer of sql_add_key_limits into the claimed rows with a key: the queue's first (in
 * whatever order the rows came), then each key's own over it. */
static int take_key_limits(struct store *s, MYSQL_RES *res, size_t n)
{
	uint32_t conc = 1, interval = 0;
	MYSQL_ROW row;

	if (!res || mysql_num_fields(res) != 3)
		return -EIO;
	for (int pass = 0; pass < 2; pass++) {
		mysql_data_seek(res, 0);
		while ((row = mysql_fetch_row(res))) {
			unsigned long *len = mysql_fetch_lengths(res);
			uint32_t c = conc, iv = interval;
			if ((pass == 0) != !row[0])
				continue;
			if (!limit_of(row[1], len[1], &c) || !limit_of(row[2], len[2], &iv))
				return -EIO;
			if (pass == 0) {
				conc = c;
				interval = iv;
				continue;
			}
			for (size_t i = 0; i < n; i++) {
				struct store_item *it = &s->scratch[i];
				if (it->group && strlen(it->group) == len[0] &&
				    !memcmp(it->group, row[0], len[0])) {
					it->key_concurrency = c;
					it->key_interval_ms = iv;
				}
			}
		}
		/* The queue's (or the defaults) for every row with a key, before the keys'. */
		for (size_t i = 0; pass == 0 && i < n; i++)
			if (s->scratch[i].group) {
				s->scratch[i].key_concurrency = conc;
				s->scratch[i].key_interval_ms = interval;
			}
	}
	return 0;
}

/* Round trip 2: mark the locked rows claimed, by primary key, read their keys' limits, and
 * commit. */
static int claim_commit(struct store *s, const struct claim_args *a, size_t n, bool heads_left,
			const struct key_runs *kr, char *err, size_t errlen)
{
	struct run rr;
	uint64_t *ids = NULL;
	int r;

	sq_reset(s);
	if (n > 0) {
		if (!(ids = malloc(n * sizeof(*ids))))
			return sq_fail_msg(-ENOMEM, err, errlen, "store_claim: out of memory");
		for (size_t i = 0; i < n; i++)
			ids[i] = s->scratch[i].id;
		qsort(ids, n, sizeof(*ids), sq_cmp_u64);
		/* claim_worker and claim_time keep their sizes: the row changes in place
		 * (migration 012), the name padded to the width the row has (a longer name
		 * is written whole, as the migration copies it). */
		sql_add(s, QUIET "UPDATE work_items SET state = 'claimed', claim_token = claim_token + 1, "
			"attempts = attempts + 1, claim_worker = RPAD(%s, GREATEST(CHAR_LENGTH("
			"claim_worker), CHAR_LENGTH(%s)), ' '), claim_time = NOW(6), progress = NULL, "
			"visible_at = NOW(6) + INTERVAL %llu MICROSECOND WHERE ",
			s->claimer_sql, s->claimer_sql, (unsigned long long)a->lease_ms * 1000u);
		sq_add_id_runs(s, ids, n);
		free(ids);
		sq_end(s);
	}
	size_t heads_at = s->ncuts;
	if (heads_left)   /* see claim_lock */
		sq_add_group_heads(s, a->done, a->ndone);
	if (kr->n > 0 && kr->nhanded < sq_hand_on_refs(a->done, a->ndone))
		sq_add_key_next_rest(s, kr, s->scratch, kr->nhanded, a->done, a->ndone);
	size_t heads_end = s->ncuts;   /* GROUP_NEXT, KEY_NEXT_SHOW, KEY_FILL_MANY */
	bool keys = sql_add_key_limits(s, a, n);
	sql_add(s, "COMMIT");
	r = sq_run(s, "store_claim", &rr, err, errlen);
	if (r < 0)
		return r;
	/* Cannot differ while we hold the row locks; if it did, the tokens handed out would be
	 * wrong. The COMMIT went through: the rows stay claimed until their lease ends. */
	if (n > 0 && rr.rows[0] != n)
		r = sq_fail_msg(-EIO, err, errlen, "store_claim: locked %zu rows but updated %llu",
			     n, (unsigned long long)rr.rows[0]);
	else if (keys && take_key_limits(s, rr.res, n) < 0)
		r = sq_fail_msg(-EIO, err, errlen, "store_claim: bad value in a key's limits");
	for (size_t k = heads_at; k < heads_end; k++)
		s->left_next |= rr.rows[k] > 0; /* rows made visible after the scan */
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return r;
}

static int claim_once(struct store *s, const struct claim_args *a, size_t *ret_n,
		      size_t *ret_completed, char *err, size_t errlen)
{
	struct claim_cursor next;
	size_t n = 0;
	bool heads_left = false;
	struct key_runs kr = { .n = 0 };
	struct run rr;
	int r, k;

	if (a->max == 0) { /* complete only */
		sq_reset(s);
		sql_add(s, "START TRANSACTION");
		sq_end(s);
		k = sq_add_complete(s, a->done, a->ndone, false);
		sql_add(s, "COMMIT");
		r = sq_run(s, "store_claim", &rr, err, errlen);
		if (r < 0)
			goto fail;
		*ret_n = 0;
		*ret_completed = (size_t)rr.rows[k];
		s->left_next = store_refs_grouped(a->done, a->ndone);
		return 0;
	}
	r = claim_lock(s, a, &n, ret_completed, &heads_left, &kr, &next, err, errlen);
	if (r < 0)
		goto fail;
	if (n > 0 && s->locked)
		s->locked(s->locked_arg, s->scratch, n);
	r = claim_commit(s, a, n, heads_left, &kr, err, errlen);
	if (r < 0)
		goto fail;
	key_runs_free(&kr);
	s->cursor = next;
	s->last_full = n == a->max;
	*ret_n = n;
	return 0;
fail:
	key_runs_free(&kr);
	store_items_clear(s->scratch, n);
	s->cursor.set = false;
	sq_abort(s);
	return r;
}

void store_set_claim_hook(struct store *s,
			  void (*locked)(void *arg, const struct store_item *items, size_t n),
			  void *arg)
{
	s->locked = locked;
	s->locked_arg = arg;
}

static int scratch_reserve(struct store *s, size_t n)
{
	struct store_item *p;

	if (n <= s->scratch_cap)
		return 0;
	p = realloc(s->scratch, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + s->scratch_cap, 0, (n - s->scratch_cap) * sizeof(*p));
	s->scratch = p;
	s->scratch_cap = n;
	return 0;
}

int store_claim(struct store *s, const char *queue, unsigned max, unsigned lease_ms,
		const struct store_ref *done, size_t ndone,
		struct store_item *items, size_t *ret_n, size_t *ret_completed,
		char *err, size_t errlen)
{
	struct claim_args a = { queue, max, lease_ms, done, ndone };
	size_t n = 0, completed = 0;
	unsigned attempt = 0;
	int r;

	if (!ret_n || !ret_completed || (max > 0 && !items) || max > MAX_REFS)
		return sq_fail_msg(-EINVAL, err, errlen, "store_claim: bad arguments");
	r = sq_check(s, "store_claim", done, ndone, queue ? queue : "", err, errlen);
	if (r < 0)
		return r;
	if (scratch_reserve(s, max) < 0)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_claim: out of memory");
	/* Its two round trips are a text of several statements each. */
	if ((r = sq_need_multi(s, err, errlen)) < 0)
		return r;
	if (max > 0 || ndone > 0) {
		do
			r = claim_once(s, &a, &n, &completed, err, errlen);
		while (r < 0 && sq_retry(s, r, &attempt));
		if (r < 0)
			return sq_final(r);
	}
	if (n > 0) {
		memcpy(items, s->scratch, n * sizeof(*items));
		memset(s->scratch, 0, n * sizeof(*items));
	}
	*ret_n = n;
	*ret_completed = completed;
	return 0;
}

bool store_claim_left_next(const struct store *s)
{
	return s->left_next;
}
