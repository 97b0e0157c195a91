/* The queues' history (sql/migrations/010_history.sql): each supervisor adds its counts of a
 * queue's minute to a row of its own; readers add up the rows of a time range per step. The
 * histogram columns (run0..run17, wait0..wait17) are written out by the loops below rather
 * than spelled in a statement text. */
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[2] = { "run", "wait" };

/* ", run0, .., run17, wait0, .., wait17", or each column's SUM(). */
static void add_buckets(struct store *s, bool sum)
{
	for (int k = 0; k < 2; k++)
		for (unsigned i = 0; i < STORE_HISTORY_BUCKETS; i++)
			sql_add(s, sum ? ", SUM(%s%u)" : ", %s%u", kinds[k], i);
}

/* col = IF(the flush is new to the row, col + the flush's, col) */
static void add_sum(struct store *s, const char *col, bool first)
{
	sql_add(s, "%s%s = IF(VALUES(flush_seq) > flush_seq, %s + VALUES(%s), %s)",
		first ? "" : ", ", col, col, col, col);
}

int store_history_add(struct store *s, const char *supervisor, uint64_t seq,
		      const struct store_history_row *rows, size_t n, char *err, size_t errlen)
{
	static const char *const sums[] = { "done", "retried", "dead", "run_sum_us",
					    "wait_sum_us" };
	int r = sq_check(s, "store_history_add", NULL, 0, NULL, err, errlen);
	char sv[2 * 128 + 3], q[QUOTED_QUEUE_MAX];
	struct run rr;

	if (r < 0)
		return r;
	if (n == 0 || n > STORE_HISTORY_ROWS_MAX || !supervisor || !*supervisor)
		return sq_fail_msg(-EINVAL, err, errlen, "store_history_add: %zu rows (1..%u), "
				   "and a supervisor id", n, STORE_HISTORY_ROWS_MAX);
	sq_quote(s->conn, sv, supervisor, strnlen(supervisor, 128));
	sq_reset(s);
	sql_add(s, "INSERT INTO queue_history (minute, queue, supervisor_id, done, retried, dead, "
		"run_sum_us, wait_sum_us");
	add_buckets(s, false);
	sql_add(s, ", flush_seq) VALUES ");
	for (size_t i = 0; i < n; i++) {
		const struct store_history_row *h = &rows[i];
		sq_quote(s->conn, q, h->queue, strnlen(h->queue, STORE_QUEUE_MAX));
		sql_add(s, "%s(FROM_UNIXTIME(%lld), %s, %s, %llu, %llu, %llu, %llu, %llu", i ? ", " : "",
			(long long)h->minute, q, sv, (unsigned long long)h->done,
			(unsigned long long)h->retried, (unsigned long long)h->dead,
			(unsigned long long)h->run_sum_us, (unsigned long long)h->wait_sum_us);
		for (unsigned b = 0; b < STORE_HISTORY_BUCKETS; b++)
			sql_add(s, ", %llu", (unsigned long long)h->run[b]);
		for (unsigned b = 0; b < STORE_HISTORY_BUCKETS; b++)
			sql_add(s, ", %llu", (unsigned long long)h->wait[b]);
		sql_add(s, ", %llu)", (unsigned long long)seq);
	}
	sql_add(s, " ON DUPLICATE KEY UPDATE ");
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		add_sum(s, sums[i], i == 0);
	for (int k = 0; k < 2; k++)
		for (unsigned b = 0; b < STORE_HISTORY_BUCKETS; b++) {
			char col[16];
			snprintf(col, sizeof(col), "%s%u", kinds[k], b);
			add_sum(s, col, false);
		}
	/* Last: the assignments before it read the row's old flush_seq. */
	sql_add(s, ", flush_seq = GREATEST(flush_seq, VALUES(flush_seq))");
	if (buf_failed(&s->sql))
		return sq_fail_msg(-ENOMEM, err, errlen, "store_history_add: out of memory");
	r = sq_run_retry(s, "store_history_add", &rr, err, errlen);
	return r < 0 ? r : 0;
}

static uint64_t column_u64(const char *p)
{
	uint64_t v = 0;

	/* SUM() of integers is a DECIMAL without a fraction. */
	return p && sq_parse_u64(p, (unsigned long)strcspn(p, "."), &v) ? v : 0;
}

int store_history_read(struct store *s, const char *queue, int64_t from, int64_t to,
		       unsigned step, struct store_history_row **ret, size_t *ret_n, char *err,
		       size_t errlen)
{
	int r = sq_check(s, "store_history_read", NULL, 0, queue, err, errlen);
	struct store_history_row *rows;
	char q[QUOTED_QUEUE_MAX];
	MYSQL_ROW row;
	struct run rr;
	size_t n, i;

	if (r < 0)
		return r;
	if (step == 0 || from < 0 || to < from)
		return sq_fail_msg(-EINVAL, err, errlen, "store_history_read: a step and a range");
	sq_reset(s);
	sql_add(s, "SELECT %lld + FLOOR((UNIX_TIMESTAMP(minute) - %lld) / %u) * %u AS step, "
		"SUM(done), SUM(retried), SUM(dead), SUM(run_sum_us), SUM(wait_sum_us)",
		(long long)from, (long long)from, step, step);
	add_buckets(s, true);
	sql_add(s, " FROM queue_history WHERE minute >= FROM_UNIXTIME(%lld) AND "
		"minute < FROM_UNIXTIME(%lld)", (long long)from, (long long)to);
	if (queue) {
		sq_quote(s->conn, q, queue, strlen(queue));
		sql_add(s, " AND queue = %s", q);
	}
	sql_add(s, " GROUP BY step ORDER BY step");
	r = sq_run(s, "store_history_read", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "store_history_read: no result");
	n = (size_t)mysql_num_rows(rr.res);
	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows) {
		mysql_free_result(rr.res);
		return sq_fail_msg(-ENOMEM, err, errlen, "store_history_read: out of memory");
	}
	for (i = 0; i < n && (row = mysql_fetch_row(rr.res)); i++) {
		struct store_history_row *h = &rows[i];
		h->minute = row[0] ? strtoll(row[0], NULL, 10) : 0;
		h->done = column_u64(row[1]);
		h->retried = column_u64(row[2]);
		h->dead = column_u64(row[3]);
		h->run_sum_us = column_u64(row[4]);
		h->wait_sum_us = column_u64(row[5]);
		for (unsigned b = 0; b < STORE_HISTORY_BUCKETS; b++) {
			h->run[b] = column_u64(row[6 + b]);
			h->wait[b] = column_u64(row[6 + STORE_HISTORY_BUCKETS + b]);
		}
	}
	mysql_free_result(rr.res);
	*ret = rows;
	*ret_n = i;
	return 0;
}

int store_history_prune(struct store *s, unsigned keep_s, unsigned limit, char *err,
			size_t errlen)
{
	int r = sq_check(s, "store_history_prune", NULL, 0, NULL, err, errlen);
	struct run rr;

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, "DELETE FROM queue_history WHERE minute < UTC_TIMESTAMP() - INTERVAL %u SECOND "
		"ORDER BY minute LIMIT %u", keep_s, limit ? limit : 1);
	r = sq_run(s, "store_history_prune", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	return rr.rows[0] > INT32_MAX ? INT32_MAX : (int)rr.rows[0];
}
