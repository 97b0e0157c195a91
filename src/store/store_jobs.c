/* store_jobs — rows and queues as an operator asks about them: one row by id (read it,
 * cancel it) and every queue's counts and settings. */
#include "store/store.h"
#include "store/store_browse.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOB_COLUMNS \
	"id, queue, state, attempts, max_attempts, priority, period_s, timeout_s, " \
	UTC_TEXT("run_at") ", " UTC_TEXT("visible_at") ", " UTC_TEXT("created_at") ", " \
	UTC_TEXT("claimed_at") ", " UTC_TEXT("finished_at") ", claimed_by, group_key, " \
	"group_seq, dedupe_key, %s, LEFT(payload, %u), LENGTH(payload), content_type, " \
	"result_type, %s, progress, traceparent"
/* last_error and result whole for one row; cut for a list */
#define ONE_ROW "last_error", STORE_PREVIEW_MAX, "result"
#define LIST_ROW "LEFT(last_error, " STR(STORE_LIST_ERROR) ")", STORE_LIST_PREVIEW, "NULL"
#define STR_(x) #x
#define STR(x) STR_(x)

static void text(char *dst, size_t cap, const char *src)
{
	if (!src)
		dst[0] = '\0';
	else
		sq_utf8_sanitize(src, dst, cap - 1);
}

static int64_t num_or(const char *p, unsigned long len, int64_t none)
{
	uint64_t v;

	if (p && *p == '-')
		return -strtoll(p + 1, NULL, 10);
	return p && sq_parse_u64(p, len, &v) ? (int64_t)v : none;
}

static int take_job(MYSQL_RES *res, struct store_job *j)
{
	MYSQL_ROW row = mysql_fetch_row(res);
	unsigned long *len;
	uint64_t u;

	if (!row)
		return 0;
	if (mysql_num_fields(res) != 25)
		return -EIO;
	len = mysql_fetch_lengths(res);
	memset(j, 0, sizeof(*j));
	if (!sq_parse_u64(row[0], len[0], &j->id))
		return -EIO;
	text(j->queue, sizeof(j->queue), row[1]);
	if (!row_state_parse(row[2], &j->state))
		return -EIO;
	j->attempts = (uint32_t)num_or(row[3], len[3], 0);
	j->max_attempts = (uint32_t)num_or(row[4], len[4], 0);
	j->priority = (int)num_or(row[5], len[5], 0);
	j->period_s = num_or(row[6], len[6], -1);
	j->timeout_s = num_or(row[7], len[7], -1);
	text(j->run_at, sizeof(j->run_at), row[8]);
	text(j->visible_at, sizeof(j->visible_at), row[9]);
	text(j->created_at, sizeof(j->created_at), row[10]);
	text(j->claimed_at, sizeof(j->claimed_at), row[11]);
	text(j->finished_at, sizeof(j->finished_at), row[12]);
	text(j->claimed_by, sizeof(j->claimed_by), row[13]);
	text(j->group_key, sizeof(j->group_key), row[14]);
	j->group_seq = (uint64_t)num_or(row[15], len[15], 0);
	text(j->dedupe_key, sizeof(j->dedupe_key), row[16]);
	if (row[17] && !(j->last_error = strndup(row[17], len[17])))
		return -ENOMEM;
	if (row[18]) {
		j->payload = malloc(len[18] + 1);
		if (!j->payload)
			return -ENOMEM;
		memcpy(j->payload, row[18], len[18]);
		j->payload[len[18]] = '\0';
		j->payload_len = len[18];
	}
	j->payload_size = row[19] && sq_parse_u64(row[19], len[19], &u) ? u : 0;
	text(j->content_type, sizeof(j->content_type), row[20]);
	text(j->result_type, sizeof(j->result_type), row[21]);
	if (row[22]) {
		j->result = malloc(len[22] + 1);
		if (!j->result)
			return -ENOMEM;
		memcpy(j->result, row[22], len[22]);
		j->result[len[22]] = '\0';
		j->result_len = len[22];
	}
	if (row[23] && !(j->progress = strndup(row[23], len[23])))
		return -ENOMEM;
	text(j->traceparent, sizeof(j->traceparent), row[24]);
	return 1;
}

int store_job_get(struct store *s, uint64_t id, struct store_job *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_job_get", NULL, 0, NULL, err, errlen);
	struct run rr;

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "SELECT " JOB_COLUMNS " FROM work_items WHERE id = %llu", ONE_ROW,
		(unsigned long long)id);
	r = sq_run(s, "store_job_get", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "store_job_get: no result");
	r = take_job(rr.res, ret);
	mysql_free_result(rr.res);
	if (r < 0) {
		store_job_clear(ret);
		return sq_fail_msg(r, err, errlen, "store_job_get: %s",
				   r == -ENOMEM ? "out of memory" : "bad value in the result");
	}
	return r;
}

void store_job_clear(struct store_job *j)
{
	free(j->last_error);
	free(j->payload);
	free(j->result);
	free(j->progress);
	j->last_error = NULL;
	j->payload = NULL;
	j->result = NULL;
	j->progress = NULL;
}

/* Run the statement made (op names it in messages) and take its rows as jobs: *ret (n + 1
 * of them, the last empty, for store_jobs_free) and *ret_n. */
static int read_jobs(struct store *s, const char *op, struct store_job **ret, size_t *ret_n,
		     char *err, size_t errlen)
{
	struct store_job *jobs;
	size_t n = 0;
	struct run rr;
	int r = sq_run(s, op, &rr, err, errlen);

	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "%s: no result", op);
	jobs = calloc(mysql_num_rows(rr.res) + 1, sizeof(*jobs));
	r = jobs ? 1 : -ENOMEM;
	while (r == 1 && (r = take_job(rr.res, &jobs[n])) == 1)
		n++;
	mysql_free_result(rr.res);
	if (r < 0) {
		store_jobs_free(jobs, n + 1);
		return sq_fail_msg(r, err, errlen, "%s: %s", op,
				   r == -ENOMEM ? "out of memory" : "bad value in the result");
	}
	*ret = jobs;
	*ret_n = n;
	return 0;
}

int store_jobs_list(struct store *s, const char *state, const char *queue, uint64_t after_id,
		    unsigned limit, struct store_job **ret, size_t *ret_n, char *err,
		    size_t errlen)
{
	int r = sq_check(s, "store_jobs_list", NULL, 0, queue, err, errlen);
	char st[40], q[QUOTED_QUEUE_MAX];

	if (r < 0)
		return r;
	if (!state || strlen(state) > 15 || limit == 0 || limit > STORE_LIST_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_jobs_list: a state and 1..%d rows",
				   STORE_LIST_MAX);
	sq_quote(s->conn, st, state, strlen(state));
	sq_reset(s);
	sql_add(s, "SELECT " JOB_COLUMNS " FROM work_items WHERE state = %s", LIST_ROW, st);
	if (queue) {
		sq_quote(s->conn, q, queue, strlen(queue));
		sql_add(s, " AND queue = %s", q);
	}
	if (after_id)
		sql_add(s, " AND id < %llu", (unsigned long long)after_id);
	sql_add(s, " ORDER BY id DESC LIMIT %u", limit);
	return read_jobs(s, "store_jobs_list", ret, ret_n, err, errlen);
}

int store_jobs_top(struct store *s, uint64_t *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_jobs_top", NULL, 0, NULL, err, errlen);
	MYSQL_ROW row;
	struct run rr;
	uint64_t v = 0;

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "SELECT MAX(id) FROM work_items");
	r = sq_run(s, "store_jobs_top", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0] && !sq_parse_u64(row[0], strlen(row[0]), &v))
		r = sq_fail_msg(-EIO, err, errlen, "store_jobs_top: bad value in the result");
	mysql_free_result(rr.res);
	if (r == 0)
		*ret = v ? v + 1 : 0;
	return r;
}

/* A filter that one index finds the rows of, whatever the span: an id, or a queue's dedupe
 * key (dedupe_idx). */
static bool is_lookup(const struct store_filter *f)
{
	return f->id || (f->dedupe && f->queue);
}

int store_jobs_find(struct store *s, const struct store_filter *f, uint64_t before,
		    unsigned limit, struct store_job **ret, size_t *ret_n, uint64_t *ret_next,
		    char *err, size_t errlen)
{
	int r = sq_check(s, "store_jobs_find", NULL, 0, f->queue, err, errlen);
	uint64_t top = before, floor = 0;

	if (r < 0)
		return r;
	if (limit == 0 || limit > STORE_LIST_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_jobs_find: 1..%d rows",
				   STORE_LIST_MAX);
	if (!is_lookup(f) && !top && (r = store_jobs_top(s, &top, err, errlen)) < 0)
		return r;
	if (!is_lookup(f))
		floor = top > STORE_BROWSE_SPAN ? top - STORE_BROWSE_SPAN : 0;
	sq_reset(s);
	/* By primary key, from the top down: the scan stops at the page's last row or the
	 * span's bottom, whichever comes first (an index on queue would make it walk that
	 * queue's rows whatever the order). */
	sql_add(s, "SELECT " JOB_COLUMNS " FROM work_items%s WHERE TRUE", LIST_ROW,
		is_lookup(f) ? "" : " FORCE INDEX (PRIMARY)");
	if ((r = sq_add_filter(s, "jobs", f, err, errlen)) < 0)
		return r;
	if (before)
		sql_add(s, " AND id < %llu", (unsigned long long)before);
	if (!is_lookup(f))
		sql_add(s, " AND id >= %llu AND id < %llu", (unsigned long long)floor,
			(unsigned long long)top);
	sql_add(s, " ORDER BY id DESC LIMIT %u", limit);
	if ((r = read_jobs(s, "store_jobs_find", ret, ret_n, err, errlen)) < 0)
		return r;
	*ret_next = *ret_n == limit ? (*ret)[*ret_n - 1].id : floor > 1 ? floor : 0;
	return 0;
}

void store_jobs_free(struct store_job *jobs, size_t n)
{
	for (size_t i = 0; jobs && i < n; i++)
		store_job_clear(&jobs[i]);
	free(jobs);
}

int store_cancel(struct store *s, uint64_t id, const char *reason, char ret_state[16],
		 char ret_by[256], char *err, size_t errlen)
{
	int r = sq_check(s, "store_cancel", NULL, 0, NULL, err, errlen);
	enum row_state st;
	char which[96];
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	ret_state[0] = '\0';
	ret_by[0] = '\0';
	snprintf(which, sizeof(which), "id = %llu AND state IN ('ready', 'dead')",
		 (unsigned long long)id);
	/* The group is locked first (as every change of a group's rows does); a ready row that
	 * was its group's turn hands the turn on (GROUP_HEAL). */
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sql_add(s, GROUP_LOCK, which);
	sq_end(s);
	sq_add_heal_keys(s, which);
	/* Deleted while ready, it cancels (or counts off) the rows that wait for it; dead, it
	 * did so when it died. */
	sql_add(s, "SET @claimd_was_ready = 0");
	sq_end(s);
	sql_add(s, "SELECT state = 'ready' INTO @claimd_was_ready FROM work_items WHERE %s "
		"FOR UPDATE", which);
	sq_end(s);
	sql_add(s, "DELETE FROM work_items WHERE %s", which);
	sq_end(s);
	sql_add(s, "SET @claimd_deleted = ROW_COUNT()");
	sq_end(s);
	sql_add(s, "DELETE FROM attempt_errors WHERE item_id = %llu AND @claimd_deleted > 0",
		(unsigned long long)id);
	sq_end(s);
	sql_add(s, GROUP_HEAL, HEAL_SCOPE);
	sq_end(s);
	/* The rows that waited for it: cancelled, or counted off (work_deps.on_dead). */
	sq_add_deps_gone(s, id);
	/* A running row: the request, for its supervisor to notice (the first one's time and
	 * reason stay; the reason is set first, while the request's liveness is the old one). */
	sql_add(s, "UPDATE work_items SET cancel_reason = IF(" CANCEL_LIVE ", cancel_reason, ");
	sq_add_error_text(s, reason ? reason : "cancelled");
	sql_add(s, "), cancel_requested_at = IF(" CANCEL_LIVE ", cancel_requested_at, NOW(6)) "
		"WHERE id = %llu AND state = 'claimed'", (unsigned long long)id);
	sq_end(s);
	sql_add(s, "COMMIT");
	sq_end(s);
	sql_add(s, "SELECT state, claimed_by FROM work_items WHERE id = %llu",
		(unsigned long long)id);
	r = sq_run_retry(s, "store_cancel", &rr, err, errlen);
	if (r < 0)
		return r;
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0])
		snprintf(ret_state, 16, "%s", row[0]);
	if (row && row[1])
		sq_utf8_sanitize(row[1], ret_by, 255);
	mysql_free_result(rr.res);
	if (rr.rows[6] > 0)   /* the DELETE */
		return 1;
	if (row_state_parse(ret_state, &st) && st == ROW_CLAIMED)
		return 2;
	return ret_state[0] ? -EBUSY : 0;
}

int store_cancels_live(struct store *s, const struct store_ref *refs, size_t n,
		       struct store_ref *ret, size_t *ret_n, char *err, size_t errlen)
{
	int r = sq_check(s, "store_cancels_live", refs, n, NULL, err, errlen);
	MYSQL_ROW row;
	struct run rr;
	size_t k = 0;

	if (r < 0)
		return r;
	if (n == 0) {
		*ret_n = 0;
		return 0;
	}
	sq_reset(s);
	sql_add(s, "SELECT id, claim_token FROM work_items WHERE ");
	sq_add_fence(s, refs, n);
	sql_add(s, " AND " CANCEL_LIVE);
	r = sq_run(s, "store_cancels_live", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	while (rr.res && (row = mysql_fetch_row(rr.res)) && k < n) {
		unsigned long *len = mysql_fetch_lengths(rr.res);
		struct store_ref ref = { 0 };
		if (!sq_parse_u64(row[0], len[0], &ref.id) ||
		    !sq_parse_u64(row[1], len[1], &ref.token))
			continue;
		ret[k++] = ref;
	}
	mysql_free_result(rr.res);
	*ret_n = k;
	return 0;
}

/* ---- queues ---- */

static struct store_queue *find_queue(struct store_queue **qs, size_t *n, size_t *cap,
				      const char *name)
{
	char clean[STORE_QUEUE_MAX + 1];
	struct store_queue *q;

	sq_utf8_sanitize(name, clean, STORE_QUEUE_MAX);
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*qs)[i].name, clean))
			return &(*qs)[i];
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		void *p = realloc(*qs, c * sizeof(**qs));
		if (!p)
			return NULL;
		*qs = p;
		*cap = c;
	}
	q = &(*qs)[(*n)++];
	memset(q, 0, sizeof(*q));
	q->backoff.jitter_pct = -1;   /* not set */
	snprintf(q->name, sizeof(q->name), "%s", clean);
	return q;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct store_queue *)a)->name, ((const struct store_queue *)b)->name);
}

int store_queues(struct store *s, struct store_queue **ret, size_t *ret_n, char *err,
		 size_t errlen)
{
	int r = sq_check(s, "store_queues", NULL, 0, NULL, err, errlen);
	struct store_queue *qs = NULL, *q;
	size_t n = 0, cap = 0;
	MYSQL_RES *res[3] = { NULL, NULL, NULL };
	MYSQL_ROW row;
	enum row_state st;
	uint64_t v;

	if (r < 0)
		return r;
	/* Three statements, sent one by one (sq_run keeps two result sets): the counts, the
	 * earliest visible_at per queue and priority (a loose scan of claim_prio_idx: a few
	 * entries per priority, not the rows), and the queues table. */
	static const char *const stmts[3] = {
		"SELECT queue, state, COUNT(*) FROM work_items GROUP BY queue, state",
		"SELECT queue, GREATEST(0, TIMESTAMPDIFF(MICROSECOND, MIN(m), NOW(6))) / 1e6 FROM "
		"(SELECT queue, priority, MIN(visible_at) AS m FROM work_items "
		"WHERE visible_at IS NOT NULL GROUP BY queue, priority) AS p GROUP BY queue",
		"SELECT name, paused, min_interval_ms, IFNULL(retry_base_ms, 0), "
		"IFNULL(retry_max_ms, 0), IFNULL(retry_jitter_pct, -1) FROM queues",
	};
	for (int i = 0; i < 3; i++) {
		struct run rr;
		sq_reset(s);
		sql_add(s, "%s", stmts[i]);
		r = sq_run(s, "store_queues", &rr, err, errlen);
		if (r < 0)
			goto out;
		res[i] = rr.res;
		if (!res[i]) {
			r = sq_fail_msg(-EIO, err, errlen, "store_queues: no result");
			goto out;
		}
	}
	r = -ENOMEM;
	while ((row = mysql_fetch_row(res[0]))) {
		if (!row[0] || !row[1] || !(q = find_queue(&qs, &n, &cap, row[0])))
			goto fail;
		v = row[2] ? strtoull(row[2], NULL, 10) : 0;
		if (row_state_parse(row[1], &st))
			q->rows[st] = v;
	}
	while ((row = mysql_fetch_row(res[1]))) {
		if (!row[0] || !(q = find_queue(&qs, &n, &cap, row[0])))
			goto fail;
		q->oldest_ready_s = row[1] ? strtod(row[1], NULL) : 0;
	}
	while ((row = mysql_fetch_row(res[2]))) {
		if (!row[0] || !(q = find_queue(&qs, &n, &cap, row[0])))
			goto fail;
		q->paused = row[1] && row[1][0] == '1';
		q->min_interval_ms = row[2] ? (uint32_t)strtoul(row[2], NULL, 10) : 0;
		q->backoff.base_ms = row[3] ? (uint32_t)strtoul(row[3], NULL, 10) : 0;
		q->backoff.max_ms = row[4] ? (uint32_t)strtoul(row[4], NULL, 10) : 0;
		q->backoff.jitter_pct = row[5] ? atoi(row[5]) : -1;
	}
	if (n)
		qsort(qs, n, sizeof(*qs), by_name);
	*ret = qs;
	*ret_n = n;
	qs = NULL;
	r = 0;
	goto out;
fail:
	r = sq_fail_msg(-ENOMEM, err, errlen, "store_queues: out of memory");
out:
	for (int i = 0; i < 3; i++)
		mysql_free_result(res[i]);
	free(qs);
	return r < 0 ? sq_final(r) : r;
}

/* ---- supervisors ---- */

int store_supervisor_seen(struct store *s, const struct store_supervisor *sv,
			  const char *workers_json, bool sweep, char *err, size_t errlen)
{
	int r = sq_check(s, "store_supervisor_seen", NULL, 0, NULL, err, errlen);
	size_t wlen = strlen(workers_json);
	char id[2 * 128 + 3], host[2 * 255 + 3], ver[2 * 32 + 3], qs[2 * 1100 + 3], http[2 * 80 + 3];
	char *w;
	struct run rr;

	if (r < 0)
		return r;
	w = malloc(2 * wlen + 3);
	if (!w)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_supervisor_seen: out of memory");
	sq_quote(s->conn, id, sv->id, strnlen(sv->id, 128));
	sq_quote(s->conn, host, sv->host, strnlen(sv->host, 255));
	sq_quote(s->conn, ver, sv->version, strnlen(sv->version, 32));
	sq_quote(s->conn, qs, sv->queues, strnlen(sv->queues, 1100));
	sq_quote(s->conn, http, sv->http, strnlen(sv->http, 80));
	sq_quote(s->conn, w, workers_json, wlen);
	sq_reset(s);
	sql_add(s, "INSERT INTO supervisors (id, host, pid, version, queues, http, started_at, "
		"seen_at, workers) VALUES (%s, %s, %u, %s, %s, NULLIF(%s, ''), NOW(6), NOW(6), %s) "
		"ON DUPLICATE KEY UPDATE seen_at = NOW(6), workers = VALUES(workers), "
		"queues = VALUES(queues), http = VALUES(http)",
		id, host, sv->pid, ver, qs, http, w);
	free(w);
	if (sweep) {
		sq_end(s);
		sql_add(s, "DELETE FROM supervisors WHERE seen_at < NOW(6) - INTERVAL 1 DAY LIMIT 100");
	}
	r = sq_run(s, "store_supervisor_seen", &rr, err, errlen);
	return r < 0 ? sq_final(r) : 0;
}

int store_supervisor_gone(struct store *s, const char *id, char *err, size_t errlen)
{
	int r = sq_check(s, "store_supervisor_gone", NULL, 0, NULL, err, errlen);
	char q[2 * 128 + 3];
	struct run rr;

	if (r < 0)
		return r;
	sq_quote(s->conn, q, id, strnlen(id, 128));
	sq_reset(s);
	sql_add(s, "DELETE FROM supervisors WHERE id = %s", q);
	r = sq_run(s, "store_supervisor_gone", &rr, err, errlen);
	return r < 0 ? sq_final(r) : 0;
}

int store_supervisors(struct store *s, struct store_supervisor **ret, size_t *ret_n, char *err,
		      size_t errlen)
{
	int r = sq_check(s, "store_supervisors", NULL, 0, NULL, err, errlen);
	struct store_supervisor *svs;
	MYSQL_ROW row;
	struct run rr;
	size_t n, i;

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "SELECT id, host, pid, version, queues, COALESCE(http, ''), " UTC_TEXT("started_at")
		", " UTC_TEXT("seen_at") ", "
		"TIMESTAMPDIFF(MICROSECOND, seen_at, NOW(6)) / 1e6, workers FROM supervisors "
		"ORDER BY host, pid");
	r = sq_run(s, "store_supervisors", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "store_supervisors: no result");
	n = (size_t)mysql_num_rows(rr.res);
	svs = calloc(n ? n : 1, sizeof(*svs));
	if (!svs) {
		mysql_free_result(rr.res);
		return sq_fail_msg(-ENOMEM, err, errlen, "store_supervisors: out of memory");
	}
	for (i = 0; i < n && (row = mysql_fetch_row(rr.res)); i++) {
		struct store_supervisor *sv = &svs[i];
		text(sv->id, sizeof(sv->id), row[0]);
		text(sv->host, sizeof(sv->host), row[1]);
		sv->pid = row[2] ? (unsigned)strtoul(row[2], NULL, 10) : 0;
		text(sv->version, sizeof(sv->version), row[3]);
		text(sv->queues, sizeof(sv->queues), row[4]);
		text(sv->http, sizeof(sv->http), row[5]);
		text(sv->started_at, sizeof(sv->started_at), row[6]);
		text(sv->seen_at, sizeof(sv->seen_at), row[7]);
		sv->seen_ago_s = row[8] ? strtod(row[8], NULL) : 0;
		sv->lost = sv->seen_ago_s > STORE_SUPERVISOR_LOST_S;
		sv->workers = strdup(row[9] ? row[9] : "[]");
		if (!sv->workers) {
			mysql_free_result(rr.res);
			store_supervisors_free(svs, i);
			return sq_fail_msg(-ENOMEM, err, errlen, "store_supervisors: out of memory");
		}
	}
	mysql_free_result(rr.res);
	*ret = svs;
	*ret_n = i;
	return 0;
}

void store_supervisors_free(struct store_supervisor *svs, size_t n)
{
	for (size_t i = 0; svs && i < n; i++)
		free(svs[i].workers);
	free(svs);
}
