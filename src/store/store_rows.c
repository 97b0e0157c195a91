/* store_rows — what a claimed row goes through after its claim: a failed run (ready again or
 * dead: decided here, in one statement), a release, a deferral, progress, a lease extension; and the
 * cheap poll for claimable rows. Every update is fenced (store_sql.c). */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Attempts used up, or a live cancel request (the first assignment below leaves only those). */
#define IS_DEAD "(attempts >= max_attempts OR cancel_requested_at IS NOT NULL)"

/* ---- fail, release, extend ---- */

/* Runs s->sql (one fenced UPDATE) with retries; returns the rows it changed. */
static int run_update(struct store *s, const char *op, size_t n, char *err, size_t errlen)
{
	struct run rr;
	int r = sq_run_retry(s, op, &rr, err, errlen);

	if (r < 0)
		return r;
	return rr.rows[0] > n ? (int)n : (int)rr.rows[0];
}

/* "UPDATE .. SET <dead if attempts are used up or a cancel is live, else ready visible at
 * NOW(6) + delay_ms>, last_error = <text, or unchanged for rows that stay ready if keep; a
 * cancel's reason for a cancelled row> WHERE ". Assignments are made left to right, each
 * reading the ones before: the first drops a stale cancel request (the row finished after
 * it) before finished_at changes, so the later ones need only ask whether one is left. A row
 * claimed again after its cancel (its worker vanished) never ran that attempt: given back. */
static void sql_add_finish(struct store *s, unsigned delay_ms, const char *text, bool keep)
{
	sql_add(s, "UPDATE work_items SET "
		"cancel_requested_at = IF(" CANCEL_LIVE ", cancel_requested_at, NULL), "
		"attempts = IF(cancel_requested_at IS NOT NULL AND claimed_at > cancel_requested_at "
		"AND attempts > 0, attempts - 1, attempts), "
		"state = IF(" IS_DEAD ", 'dead', 'ready'), "
		"claim_token = claim_token + 1, "
		"visible_at = IF(" IS_DEAD ", NULL, NOW(6) + INTERVAL %llu MICROSECOND), "
		"finished_at = IF(" IS_DEAD ", NOW(6), NULL), "
		"dedupe_until = IF(" IS_DEAD " AND dedupe_key IS NOT NULL, "
		"NOW(6) + INTERVAL IFNULL(dedupe_for_s, %u) SECOND, NULL), "
		"last_error = IF(cancel_requested_at IS NOT NULL, " CANCEL_ERROR ", ",
		(unsigned long long)delay_ms * 1000u, s->dedupe_window_s);
	if (keep)
		sql_add(s, "IF(" IS_DEAD ", ");
	sq_add_error_text(s, text);
	sql_add(s, "%s) WHERE ", keep ? ", last_error)" : "");
}

/* In a transaction, the rows of refs[0..n) with a live cancel request go dead as a failure's
 * would: GROUP_LOCK and the UPDATE here (returns the UPDATE's statement index), the rest
 * (their groups go on, their dependents as for any dead row) by sql_add_cancelled_after,
 * once the caller's own fenced UPDATE (release, defer) found them no longer claimed. */
static size_t sql_add_cancelled_dead(struct store *s, const struct store_ref *refs, size_t n,
				     const char *of)
{
	size_t at;

	sq_add_group_lock(s, refs, n);
	sq_add_finish_begin(s);
	at = s->ncuts;
	sql_add_finish(s, 0, NULL, true);
	sq_add_fence(s, refs, n);
	sql_add(s, "%s AND " CANCEL_LIVE, of);
	sq_end(s);
	sq_add_finished(s, true);
	return at;
}

static void sql_add_cancelled_after(struct store *s, const struct store_ref *refs, size_t n)
{
	/* Not every key's fill (all = false): this runs with every release and defer, and a
	 * key of limit N > 1 whose row a cancel ended is filled by its next finish or the
	 * maintenance pass (GROUP_HEAL). */
	sq_add_group_next(s, refs, n, false);
	sq_add_deps_dead(s, refs, n);
}

/* Rows the two fenced UPDATEs at statements a and b changed, at most n. */
static int rows_of(const struct run *rr, size_t a, size_t b, size_t n)
{
	uint64_t k = (a < RUN_MAX_STMTS ? rr->rows[a] : 0) + (b < RUN_MAX_STMTS ? rr->rows[b] : 0);

	return k > n ? (int)n : (int)k;
}

/* The state the SELECT at the end of store_fail_many read for id: 1 ready, 2 dead, or
 * -EIO (not there, or another state: the UPDATE that changed it said ready or dead). */
static int state_read(MYSQL_RES *res, uint64_t id)
{
	enum row_state st;
	MYSQL_ROW row;

	if (!res)
		return -EIO;
	mysql_data_seek(res, 0);
	while ((row = mysql_fetch_row(res)))
		if (row[0] && row[1] && strtoull(row[0], NULL, 10) == id)
			return !row_state_parse(row[1], &st) ? -EIO : st == ROW_DEAD ? 2 :
			       st == ROW_READY ? 1 : -EIO;
	return -EIO;
}

/* One transaction, one round trip: a fenced UPDATE each decides dead or ready in SQL (its
 * own delay and error); the SELECT after them (the rows are still locked by us) says which
 * it decided. */
int store_fail_many(struct store *s, struct store_failure *f, size_t n, char *err,
		    size_t errlen)
{
	struct store_ref refs[STORE_FAIL_MAX], grouped[STORE_FAIL_MAX], deps[STORE_FAIL_MAX];
	uint64_t ids[STORE_FAIL_MAX];
	size_t ng = 0, nd = 0, u;
	struct run rr;
	int r = 0;

	if (n == 0 || n > STORE_FAIL_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_fail: %zu rows (1..%d)", n,
				   STORE_FAIL_MAX);
	for (size_t i = 0; i < n; i++) {
		/* Not written, until the run says otherwise: a run that fails (retries of a
		 * deadlock or a lock wait used up come back as -EIO too) leaves it so. */
		f[i].result = -EAGAIN;
		refs[i] = f[i].ref;
		ids[i] = f[i].ref.id;
		if (f[i].ref.grouped)
			grouped[ng++] = f[i].ref;
		/* Only a row with children (its claim read has_dependents; a running row
		 * cannot get a new one) carries the three statements that end or count off
		 * its children: they cost ~1.5 ms of the server's time however empty. */
		if (f[i].ref.dependents)
			deps[nd++] = f[i].ref;
	}
	r = sq_check(s, "store_fail", refs, n, NULL, err, errlen);
	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	if (ng)
		sq_add_group_lock(s, grouped, ng);
	if (nd)
		sq_add_finish_begin(s);
	u = s->ncuts;
	for (size_t i = 0; i < n; i++) {
		sql_add_finish(s, f[i].retry_ms, f[i].error, false);
		sq_add_fence(s, &refs[i], 1);
		sq_end(s);
		if (nd)
			sq_add_finished(s, i == 0);
	}
	sq_add_attempt_errors(s, refs, n, "last_error");
	if (ng)
		sq_add_group_next(s, grouped, ng, false);
	if (nd)
		sq_add_deps_dead(s, deps, nd);
	sql_add(s, "SELECT id, state FROM work_items WHERE ");
	sq_add_id_runs(s, ids, n);
	sq_end(s);
	sql_add(s, "COMMIT");
	_Static_assert(3 + 2 * STORE_FAIL_MAX <= RUN_MAX_STMTS, "store_fail_many's UPDATEs' counts");
	r = sq_run_retry(s, "store_fail", &rr, err, errlen);
	if (r < 0)
		return r;
	/* Statements: START, [GROUP_LOCK], [SET @claimd_t0], n x (UPDATE, [SET @claimd_fin]),
	 * ATTEMPT_ERROR_ADD, [GROUP_NEXT], [3 x DEPS], SELECT, COMMIT; the SELECT's is the only
	 * result set. */
	for (size_t i = 0; i < n; i++) {
		f[i].result = rr.rows[u + i * (nd ? 2 : 1)] == 0 ? 0 :
			      state_read(rr.res, f[i].ref.id);
		if (f[i].result < 0 && r == 0)
			r = sq_fail_msg(f[i].result, err, errlen, "store_fail: row %llu changed but "
					"its state is unexpected", (unsigned long long)f[i].ref.id);
	}
	mysql_free_result(rr.res);
	return r;
}

int store_fail(struct store *s, struct store_ref ref, unsigned retry_ms, const char *error,
	       char *err, size_t errlen)
{
	struct store_failure f = { .ref = ref, .retry_ms = retry_ms, .error = error };
	int r = store_fail_many(s, &f, 1, err, errlen);

	return r < 0 ? r : f.result;
}

/* A release that counts the attempt failed it: its reason is the attempt's error (a row that
 * went dead for a cancel has the cancel's in last_error). */
static void add_release_errors(struct store *s, const struct store_ref *refs, size_t n,
			       const char *reason)
{
	char clean[1001], quoted[2 * sizeof(clean) + 3], expr[sizeof(quoted) + 48];

	sq_quote(s->conn, quoted, clean,
		 sq_utf8_sanitize(reason ? reason : "released", clean, sizeof(clean) - 1));
	snprintf(expr, sizeof(expr), "IF(state = 'dead', last_error, %s)", quoted);
	sq_add_attempt_errors(s, refs, n, expr);
}

int store_release(struct store *s, const struct store_ref *refs, size_t n, bool count_attempt,
		  const char *reason, const char *claimer, char *err, size_t errlen)
{
	int r = sq_check(s, "store_release", refs, n, NULL, err, errlen);
	char q[2 * sizeof(s->claimer) + 1], of[sizeof(q) + 24] = "";
	struct run rr;
	size_t at;

	if (r < 0 || n == 0)
		return r;
	if (claimer) {
		if (strlen(claimer) >= sizeof(s->claimer))
			return sq_fail_msg(-EINVAL, err, errlen, "store_release: a claimer's name is "
					   "at most %zu bytes", sizeof(s->claimer) - 1);
		sq_quote(s->conn, q, claimer, strlen(claimer));
		snprintf(of, sizeof(of), " AND claimed_by = %s", q);
	}
	sq_reset(s);
	if (!count_attempt) {
		size_t dead_at, back_at;
		sql_add(s, "START TRANSACTION");
		sq_end(s);
		dead_at = sql_add_cancelled_dead(s, refs, n, of);
		back_at = s->ncuts;
		sql_add(s, "UPDATE work_items SET state = 'ready', visible_at = NOW(6), "
			"attempts = IF(attempts > 0, attempts - 1, 0) WHERE ");
		sq_add_fence(s, refs, n);
		sql_add(s, "%s", of);
		sq_end(s);
		sql_add_cancelled_after(s, refs, n);
		sql_add(s, "COMMIT");
		r = sq_run_retry(s, "store_release", &rr, err, errlen);
		return r < 0 ? r : rows_of(&rr, dead_at, back_at, n);
	}
	/* Rows whose last attempt this was go dead: their groups go on. */
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sq_add_group_lock(s, refs, n);
	sq_add_finish_begin(s);
	at = s->ncuts;
	sql_add_finish(s, 0, reason, true);
	sq_add_fence(s, refs, n);
	sql_add(s, "%s", of);
	sq_end(s);
	sq_add_finished(s, true);
	add_release_errors(s, refs, n, reason);
	sq_add_group_next(s, refs, n, true);
	sq_add_deps_dead(s, refs, n);
	sql_add(s, "COMMIT");
	r = sq_run_retry(s, "store_release", &rr, err, errlen);
	if (r < 0)
		return r;
	return rr.rows[at] > n ? (int)n : (int)rr.rows[at];
}

int store_defer(struct store *s, struct store_ref ref, unsigned delay_ms, char *err,
		size_t errlen)
{
	int r = sq_check(s, "store_defer", &ref, 1, NULL, err, errlen);
	size_t dead_at, back_at;
	struct run rr;

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	dead_at = sql_add_cancelled_dead(s, &ref, 1, "");
	back_at = s->ncuts;
	sql_add(s, "UPDATE work_items SET state = 'ready', "
		"visible_at = NOW(6) + INTERVAL %llu MICROSECOND, "
		"attempts = IF(attempts > 0, attempts - 1, 0) WHERE ",
		(unsigned long long)delay_ms * 1000u);
	sq_add_fence(s, &ref, 1);
	sq_end(s);
	sql_add_cancelled_after(s, &ref, 1);
	sql_add(s, "COMMIT");
	r = sq_run_retry(s, "store_defer", &rr, err, errlen);
	return r < 0 ? r : rows_of(&rr, dead_at, back_at, 1);
}

int store_progress(struct store *s, const struct store_ref *refs, size_t n, char *err,
		   size_t errlen)
{
	int r = sq_check(s, "store_progress", refs, n, NULL, err, errlen);

	if (r < 0 || n == 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (!refs[i].progress || strlen(refs[i].progress) > STORE_PROGRESS_MAX)
			return sq_fail_msg(-EINVAL, err, errlen, "store_progress: progress must be "
					   "1..%d bytes", STORE_PROGRESS_MAX);
	sq_reset(s);
	/* claim_token = claim_token changes nothing: the SET list's first item, before the
	 * CASE that sq_add_progress starts with a comma. */
	sql_add(s, QUIET "UPDATE work_items SET claim_token = claim_token");
	sq_add_progress(s, refs, n);
	sql_add(s, " WHERE ");
	sq_add_fence(s, refs, n);
	return run_update(s, "store_progress", n, err, errlen);
}

int store_extend(struct store *s, const struct store_ref *refs, size_t n, unsigned lease_ms,
		 char *err, size_t errlen)
{
	int r = sq_check(s, "store_extend", refs, n, NULL, err, errlen);

	if (r < 0 || n == 0)
		return r;
	sq_reset(s);
	sql_add(s, QUIET "UPDATE work_items SET visible_at = NOW(6) + INTERVAL %llu MICROSECOND "
		"WHERE ",
		(unsigned long long)lease_ms * 1000u);
	sq_add_fence(s, refs, n);
	return run_update(s, "store_extend", n, err, errlen);
}

/* ---- reading ---- */

int store_poll(struct store *s, const char *queue, char *err, size_t errlen)
{
	return store_poll_any(s, &queue, 1, err, errlen);
}

int store_poll_any(struct store *s, const char *const *queues, size_t n, char *err,
		   size_t errlen)
{
	int r = sq_check(s, "store_poll", NULL, 0, NULL, err, errlen);
	struct run rr;

	if (r < 0)
		return r;
	sq_reset(s);
	/* One statement for any number of queues: a range per queue and priority. */
	sql_add(s, "SELECT 1 FROM work_items FORCE INDEX (claim_prio_idx) WHERE ");
	r = sq_add_queue_in(s, "store_poll", &s->sql, queues, n, err, errlen);
	if (r < 0)
		return r;
	sql_add(s, " AND priority IN (");
	for (int p = STORE_PRIORITY_MIN; p <= STORE_PRIORITY_MAX; p++)
		sql_add(s, "%s%d", p > STORE_PRIORITY_MIN ? "," : "", p);
	sql_add(s, ") AND visible_at <= NOW(6) AND queue NOT IN "
		"(SELECT name FROM queues WHERE paused) LIMIT 1");
	r = sq_run(s, "store_poll", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	mysql_free_result(rr.res);
	return rr.rows[0] > 0;
}

#define STORE_POLL_QUEUES_MAX 16   /* 21 lookups each */

int store_poll_next(struct store *s, const char *const *queues, size_t n, int64_t *ret_us,
		    char *err, size_t errlen)
{
	int r = sq_check(s, "store_poll_next", NULL, 0, NULL, err, errlen);
	char q[2 * STORE_QUEUE_MAX + 3];
	MYSQL_ROW row;
	struct run rr;

	*ret_us = -1;
	if (r < 0)
		return r;
	if (n == 0 || n > STORE_POLL_QUEUES_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_poll_next: 1 to %d queues",
				   STORE_POLL_QUEUES_MAX);
	sq_reset(s);
	/* The first entry of each (queue, priority) range of the index with a visible_at: one
	 * lookup each (a GROUP BY would read them all); whether the queue is paused asked once
	 * for all of them (in each part, it was 40 % of the statement's time). */
	sql_add(s, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), MIN(v)) FROM (");
	for (size_t i = 0; i < n; i++) {
		if (strlen(queues[i]) > STORE_QUEUE_MAX)
			return sq_fail_msg(-EINVAL, err, errlen, "store_poll_next: queue name too long");
		sq_quote(s->conn, q, queues[i], strlen(queues[i]));
		for (int p = STORE_PRIORITY_MIN; p <= STORE_PRIORITY_MAX; p++)
			sql_add(s, "%s(SELECT %s q, visible_at v FROM work_items FORCE INDEX "
				"(claim_prio_idx) WHERE queue = %s AND priority = %d AND visible_at IS "
				"NOT NULL ORDER BY visible_at LIMIT 1)",
				i || p > STORE_PRIORITY_MIN ? " UNION ALL " : "", q, q, p);
	}
	sql_add(s, ") AS t WHERE q NOT IN (SELECT name FROM queues WHERE paused)");
	r = sq_run(s, "store_poll_next", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0]) {
		long long us = strtoll(row[0], NULL, 10);
		*ret_us = us > 0 ? us : 0;
	}
	mysql_free_result(rr.res);
	return *ret_us == 0;
}
