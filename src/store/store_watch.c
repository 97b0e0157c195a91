/* store_watch — what the rows and batches that requests wait for look like now, for all of
 * them in one statement: a row's state and a fingerprint of what an operator sees of it, a
 * batch's fingerprint (its rows' states, its callback's). A fingerprint that changed means:
 * read that one again (store_job_get, store_batch_get). By primary key (a batch's rows by
 * batch_idx), at most STORE_WATCH_MAX ids a statement. */
#include "store/store.h"
#include "store/store_graph.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every column an operator sees of a row (store_job_get), each QUOTE'd (NULL is 'NULL', no
 * two lists run together), the long ones by length or checksum. */
#define WATCH_JOB_MARK \
	"CONV(LEFT(MD5(CONCAT_WS(',', QUOTE(state), attempts, max_attempts, priority, " \
	"QUOTE(period_s), QUOTE(timeout_s), QUOTE(run_at), QUOTE(visible_at), " \
	"QUOTE(claimed_at), QUOTE(finished_at), QUOTE(claimed_by), QUOTE(group_key), " \
	"QUOTE(group_seq), QUOTE(dedupe_key), QUOTE(CRC32(last_error)), QUOTE(LENGTH(payload)), " \
	"QUOTE(content_type), QUOTE(result_type), QUOTE(LENGTH(result)), QUOTE(progress), " \
	"QUOTE(traceparent))), 16), 16, 10)"
#define WATCH_JOBS "SELECT id, state, " WATCH_JOB_MARK " FROM work_items WHERE id IN (%s)"
/* A batch: how many rows it has and an order-free sum over (id, state) of each, and its
 * callback's state. */
#define WATCH_BATCHES \
	"SELECT b.id, '', CONV(LEFT(MD5(CONCAT_WS(',', COUNT(w.id), " \
	"IFNULL(SUM(CRC32(CONCAT(w.id, ':', w.state))), 0), QUOTE(MAX(c.state)))), 16), 16, 10) " \
	"FROM batches b LEFT JOIN work_items w ON w.batch_id = b.id " \
	"LEFT JOIN work_items c ON c.id = b.callback_id WHERE b.id IN (%s) GROUP BY b.id"

/* ids as "1,2,3" (n <= STORE_WATCH_MAX: at most 20 digits and a comma each). */
static char *id_list(const uint64_t *ids, size_t n)
{
	char *list = malloc(n * 21 + 1), *p = list;

	if (!list)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%llu", i ? "," : "", (unsigned long long)ids[i]);
	return list;
}

static int watch(struct store *s, const char *op, bool batches, const uint64_t *ids,
		 size_t n, struct store_watch_row *ret, size_t *ret_n, char *err, size_t errlen)
{
	int r = sq_check(s, op, NULL, 0, NULL, err, errlen);
	size_t got = 0;
	struct run rr;
	MYSQL_ROW row;
	char *list;

	if (r < 0)
		return r;
	if (n == 0 || n > STORE_WATCH_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: 1..%d ids", op, STORE_WATCH_MAX);
	list = id_list(ids, n);
	if (!list)
		return sq_fail_msg(-ENOMEM, err, errlen, "%s: out of memory", op);
	sq_reset(s);
	if (batches)
		sql_add(s, WATCH_BATCHES, list);
	else
		sql_add(s, WATCH_JOBS, list);
	free(list);
	r = sq_run(s, op, &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "%s: no result", op);
	while (r == 0 && (row = mysql_fetch_row(rr.res))) {
		unsigned long *len = mysql_fetch_lengths(rr.res);
		struct store_watch_row *w = &ret[got];
		if (got == n || !sq_parse_u64(row[0], len[0], &w->id) ||
		    !sq_parse_u64(row[2], len[2], &w->mark)) {
			r = -EIO;
			break;
		}
		w->state = row_state_of(row[1]);
		got++;
	}
	mysql_free_result(rr.res);
	if (r < 0)
		return sq_fail_msg(r, err, errlen, "%s: bad value in the result", op);
	*ret_n = got;
	return 0;
}

int store_watch_jobs(struct store *s, const uint64_t *ids, size_t n, struct store_watch_row *ret,
		     size_t *ret_n, char *err, size_t errlen)
{
	return watch(s, "store_watch_jobs", false, ids, n, ret, ret_n, err, errlen);
}

int store_watch_batches(struct store *s, const uint64_t *ids, size_t n,
			struct store_watch_row *ret, size_t *ret_n, char *err, size_t errlen)
{
	return watch(s, "store_watch_batches", true, ids, n, ret, ret_n, err, errlen);
}
