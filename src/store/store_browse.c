/* store_browse — what the job browser reads beyond a row (each failed attempt's error, the
 * rows it waits for and that wait for it, its batch) and its bulk actions: counting the rows
 * a filter picks and acting on them a chunk per transaction, span by span of the primary
 * key (there is no index on state, and one would cost every claim). */
#include "store/store.h"
#include "store/store_browse.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a job page's more distant parts ---- */

/* The statements of a job page, by primary key (attempt_errors', work_deps' and its
 * child_idx, work_items'); %llu: the row's id. */
#define PAGE_ERRORS \
	"SELECT attempt, " UTC_TEXT("failed_at") ", error FROM attempt_errors " \
	"WHERE item_id = %llu ORDER BY failed_at"
#define PAGE_PARENTS \
	"SELECT d.parent_id, COALESCE(p.state, ''), d.on_dead = 'run' FROM work_deps d " \
	"LEFT JOIN work_items p ON p.id = d.parent_id WHERE d.child_id = %llu " \
	"ORDER BY d.parent_id LIMIT %u"
#define PAGE_CHILDREN \
	"SELECT d.child_id, COALESCE(c.state, ''), d.on_dead = 'run' FROM work_deps d " \
	"LEFT JOIN work_items c ON c.id = d.child_id WHERE d.parent_id = %llu " \
	"ORDER BY d.child_id LIMIT %u"
#define PAGE_ROW "SELECT waiting_for, batch_id FROM work_items WHERE id = %llu"
#define PAGE_BATCH \
	"SELECT b.id, b.queue, COALESCE(b.description, ''), b.callback_id, " \
	UTC_TEXT("b.created_at") " FROM batches b WHERE b.id = %llu"

void store_job_extra_clear(struct store_job_extra *x)
{
	for (size_t i = 0; x->errors && i < x->nerrors; i++)
		free(x->errors[i].error);
	free(x->errors);
	free(x->parents);
	free(x->children);
	memset(x, 0, sizeof(*x));
}

/* Runs s->sql (one SELECT) into *ret_res. */
static int select_one(struct store *s, const char *op, MYSQL_RES **ret_res, char *err,
		      size_t errlen)
{
	struct run rr;
	int r = sq_run(s, op, &rr, err, errlen);

	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "%s: no result", op);
	*ret_res = rr.res;
	return 0;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
	if (!src)
		dst[0] = '\0';
	else
		sq_utf8_sanitize(src, dst, cap - 1);
}

static int read_errors(struct store *s, uint64_t id, struct store_job_extra *x, char *err,
		       size_t errlen)
{
	MYSQL_ROW row = NULL;
	MYSQL_RES *res;
	int r;

	sq_reset(s);
	sql_add(s, PAGE_ERRORS, (unsigned long long)id);
	if ((r = select_one(s, "store_job_extra_get", &res, err, errlen)) < 0)
		return r;
	x->errors = calloc(mysql_num_rows(res) + 1, sizeof(*x->errors));
	while (x->errors && (row = mysql_fetch_row(res))) {
		struct store_attempt_error *e = &x->errors[x->nerrors];
		e->attempt = row[0] ? (uint32_t)strtoul(row[0], NULL, 10) : 0;
		copy_text(e->failed_at, sizeof(e->failed_at), row[1]);
		if (row[2] && !(e->error = strdup(row[2])))
			break;
		x->nerrors++;
	}
	r = x->errors && !row ? 0 : -ENOMEM;
	mysql_free_result(res);
	return r < 0 ? sq_fail_msg(r, err, errlen, "store_job_extra_get: out of memory") : 0;
}

/* The edges of one side: the rows it waits for (parents), or those that wait for it. */
static int read_links(struct store *s, bool parents, uint64_t id, struct store_job_link **ret,
		      size_t *ret_n, bool *ret_more, char *err, size_t errlen)
{
	struct store_job_link *links;
	MYSQL_RES *res;
	MYSQL_ROW row;
	size_t n = 0;
	int r;

	sq_reset(s);
	if (parents)
		sql_add(s, PAGE_PARENTS, (unsigned long long)id, STORE_JOB_LINKS_MAX + 1);
	else
		sql_add(s, PAGE_CHILDREN, (unsigned long long)id, STORE_JOB_LINKS_MAX + 1);
	if ((r = select_one(s, "store_job_extra_get", &res, err, errlen)) < 0)
		return r;
	links = calloc(STORE_JOB_LINKS_MAX + 1, sizeof(*links));
	while (links && (row = mysql_fetch_row(res)) && n < STORE_JOB_LINKS_MAX + 1) {
		unsigned long *len = mysql_fetch_lengths(res);
		if (!row[0] || !sq_parse_u64(row[0], len[0], &links[n].id))
			continue;
		copy_text(links[n].state, sizeof(links[n].state), row[1]);
		links[n++].on_dead_run = row[2] && row[2][0] == '1';
	}
	mysql_free_result(res);
	if (!links)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_job_extra_get: out of memory");
	*ret_more = n > STORE_JOB_LINKS_MAX;
	*ret_n = n > STORE_JOB_LINKS_MAX ? STORE_JOB_LINKS_MAX : n;
	*ret = links;
	return 0;
}

/* The batch's members counted by state (batch_idx), as store_batch_get has them. */
static int read_batch(struct store *s, uint64_t batch_id, struct store_batch *b, char *err,
		      size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int r;

	sq_reset(s);
	sql_add(s, PAGE_BATCH, (unsigned long long)batch_id);
	if ((r = select_one(s, "store_job_extra_get", &res, err, errlen)) < 0)
		return r;
	row = mysql_fetch_row(res);
	b->callback_state = ROW_NONE;
	if (row) {
		b->id = batch_id;
		copy_text(b->queue, sizeof(b->queue), row[1]);
		copy_text(b->description, sizeof(b->description), row[2]);
		b->callback_id = row[3] ? strtoull(row[3], NULL, 10) : 0;
		copy_text(b->created_at, sizeof(b->created_at), row[4]);
	}
	mysql_free_result(res);
	if (!row)
		return 0;
	sq_reset(s);
	sql_add(s, "SELECT state, COUNT(*), SUM(id = %llu) FROM work_items WHERE batch_id = %llu "
		"GROUP BY state", (unsigned long long)b->callback_id, (unsigned long long)batch_id);
	if ((r = select_one(s, "store_job_extra_get", &res, err, errlen)) < 0)
		return r;
	while ((row = mysql_fetch_row(res))) {
		uint64_t k = row[1] ? strtoull(row[1], NULL, 10) : 0;
		uint64_t cb = row[2] ? strtoull(row[2], NULL, 10) : 0;
		enum row_state st;
		if (cb)
			b->callback_state = row_state_of(row[0]);
		k -= cb;
		b->size += (unsigned)k;
		if (row_state_parse(row[0], &st))
			b->members[st] += k;
	}
	mysql_free_result(res);
	b->finished = b->members[ROW_READY] == 0 && b->members[ROW_CLAIMED] == 0;
	return 1;
}

int store_job_extra_get(struct store *s, uint64_t id, struct store_job_extra *ret, char *err,
			size_t errlen)
{
	int r = sq_check(s, "store_job_extra_get", NULL, 0, NULL, err, errlen);
	uint64_t batch_id = 0;
	MYSQL_RES *res;
	MYSQL_ROW row;

	memset(ret, 0, sizeof(*ret));
	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, PAGE_ROW, (unsigned long long)id);
	if ((r = select_one(s, "store_job_extra_get", &res, err, errlen)) < 0)
		return r;
	row = mysql_fetch_row(res);
	if (row) {
		ret->waiting_for = row[0] ? (uint32_t)strtoul(row[0], NULL, 10) : 0;
		batch_id = row[1] ? strtoull(row[1], NULL, 10) : 0;
	}
	mysql_free_result(res);
	if (!row)
		return 0;
	if ((r = read_errors(s, id, ret, err, errlen)) < 0 ||
	    (r = read_links(s, true, id, &ret->parents, &ret->nparents,
			    &ret->more_parents, err, errlen)) < 0 ||
	    (r = read_links(s, false, id, &ret->children, &ret->nchildren,
			    &ret->more_children, err, errlen)) < 0 ||
	    (batch_id && (r = read_batch(s, batch_id, &ret->batch, err, errlen)) < 0)) {
		store_job_extra_clear(ret);
		return r;
	}
	ret->has_batch = batch_id && r == 1;
	return 1;
}

/* ---- bulk actions ---- */

/* A span of ids by primary key, whatever the filter's conditions after it (%llu: the span's
 * bottom and top): there is no index on state, group_key or last_error, and one on queue
 * would walk a queue's rows in its order. The chunk's rows are read without locks. */
#define BULK_COUNT \
	"SELECT COUNT(*) FROM work_items FORCE INDEX (PRIMARY) WHERE id >= %llu AND id < %llu"
#define BULK_CHUNK \
	"SELECT id, queue FROM work_items FORCE INDEX (PRIMARY) WHERE id >= %llu AND id < %llu"

unsigned store_bulk_states(enum store_bulk_action a)
{
	switch (a) {
	case STORE_BULK_RETRY: return ROW_STATE_BIT(ROW_DEAD);
	case STORE_BULK_DISCARD: return ROW_STATE_BIT(ROW_READY) | ROW_STATE_BIT(ROW_DEAD);
	default: return ROW_STATE_BIT(ROW_READY) | ROW_STATE_BIT(ROW_DEAD) |
			ROW_STATE_BIT(ROW_CLAIMED);
	}
}

/* f with its states narrowed to those of the action (bits, 0: none left). */
static struct store_filter narrowed(const struct store_filter *f, enum store_bulk_action a)
{
	struct store_filter g = *f;

	g.states = (f->states ? f->states : ROW_STATE_ALL) & store_bulk_states(a);
	return g;
}

static int check_span(const char *op, uint64_t lo, uint64_t hi, char *err, size_t errlen)
{
	if (hi < lo || hi - lo > STORE_BROWSE_SPAN)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: a span of at most %u ids", op,
				   STORE_BROWSE_SPAN);
	return 0;
}

int store_bulk_count(struct store *s, const struct store_filter *f, uint64_t lo, uint64_t hi,
		     uint64_t *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_bulk_count", NULL, 0, f->queue, err, errlen);
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (r < 0 || (r = check_span("store_bulk_count", lo, hi, err, errlen)) < 0)
		return r;
	sq_reset(s);
	sql_add(s, BULK_COUNT, (unsigned long long)lo, (unsigned long long)hi);
	if ((r = sq_add_filter(s, "bulk", f, err, errlen)) < 0)
		return r;
	if ((r = select_one(s, "store_bulk_count", &res, err, errlen)) < 0)
		return r;
	row = mysql_fetch_row(res);
	*ret = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

/* The chunk's rows, the highest first, read without locks: their ids ("1,2,3") and the
 * lowest id. Returns how many, or a negative error. */
static int chunk_ids(struct store *s, const struct store_filter *f, uint64_t lo, uint64_t hi,
		     struct buf *ids, uint64_t *ret_low, char *err, size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int r, n = 0;

	sq_reset(s);
	sql_add(s, BULK_CHUNK, (unsigned long long)lo, (unsigned long long)hi);
	if ((r = sq_add_filter(s, "bulk", f, err, errlen)) < 0)
		return r;
	sql_add(s, " ORDER BY id DESC LIMIT %u", STORE_BULK_CHUNK);
	if ((r = select_one(s, "store_bulk_chunk", &res, err, errlen)) < 0)
		return r;
	while ((row = mysql_fetch_row(res)) && row[0]) {
		buf_printf(ids, "%s%s", n++ ? "," : "", row[0]);
		*ret_low = strtoull(row[0], NULL, 10);
	}
	mysql_free_result(res);
	if (buf_failed(ids))
		return sq_fail_msg(-ENOMEM, err, errlen, "store_bulk_chunk: out of memory");
	return n;
}

/* The transaction acting on the chunk's rows ids (which: "id IN (..)" and the filter again,
 * read under the rows' locks). Returns the index of the statement whose row count is the
 * rows acted on, and in *ret_second another one's (or RUN_MAX_STMTS); a retry says how many
 * in its result set instead (RUN_MAX_STMTS). */
static size_t add_action(struct store *s, enum store_bulk_action a, const char *which,
			 const char *ids, const char *reason, size_t *ret_second)
{
	size_t at;

	*ret_second = RUN_MAX_STMTS;
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sql_add(s, GROUP_LOCK, which);
	sq_end(s);
	sq_add_heal_keys(s, which);
	if (a == STORE_BULK_RETRY) {
		/* The rows acted on: PUT_BACK_RESULT's first column, the result set. */
		sq_add_put_back(s, which);
		sql_add(s, GROUP_HEAL, HEAL_SCOPE);
		sq_end(s);
		sql_add(s, PUT_BACK_RESULT);
		sq_end(s);
		sql_add(s, "COMMIT");
		return RUN_MAX_STMTS;
	}
	/* The rows deleted, named (and locked) first: the rows that waited for those deleted
	 * while ready are cancelled or counted off as for store_cancel's, exactly once. */
	sql_add(s, "SELECT GROUP_CONCAT(id), GROUP_CONCAT(IF(state = 'ready', id, NULL)) INTO "
		"@claimd_gone, @claimd_gone_ready FROM work_items WHERE %s AND "
		"state IN ('ready', 'dead') FOR UPDATE", which);
	sq_end(s);
	at = s->ncuts;
	sql_add(s, "DELETE FROM work_items WHERE %s AND state IN ('ready', 'dead')", which);
	sq_end(s);
	sql_add(s, GROUP_HEAL, HEAL_SCOPE);
	sq_end(s);
	sql_add(s, "DELETE FROM attempt_errors WHERE item_id IN (%s) AND "
		"FIND_IN_SET(item_id, @claimd_gone) > 0", ids);
	sq_end(s);
	sq_add_deps_gone_ids(s, ids);
	if (a == STORE_BULK_CANCEL) {
		*ret_second = s->ncuts;
		sql_add(s, "UPDATE work_items SET cancel_reason = IF(" CANCEL_LIVE ", cancel_reason, ");
		sq_add_error_text(s, reason ? reason : "cancelled");
		sql_add(s, "), cancel_requested_at = IF(" CANCEL_LIVE ", cancel_requested_at, "
			"NOW(6)) WHERE %s AND state = 'claimed'", which);
		sq_end(s);
	}
	sql_add(s, "COMMIT");
	return at;
}

int store_bulk_chunk(struct store *s, enum store_bulk_action a, const struct store_filter *f,
		     const char *reason, uint64_t lo, uint64_t hi, uint64_t *ret_hi, char *err,
		     size_t errlen)
{
	int r = sq_check(s, "store_bulk_chunk", NULL, 0, f->queue, err, errlen), n;
	struct store_filter g = narrowed(f, a);
	struct buf ids, which;
	uint64_t low = lo, k;
	size_t at, second;
	struct run rr;

	if (r < 0 || (r = check_span("store_bulk_chunk", lo, hi, err, errlen)) < 0)
		return r;
	if (!g.states) {
		*ret_hi = lo;
		return 0;
	}
	buf_init(&ids);
	buf_init(&which);
	n = chunk_ids(s, &g, lo, hi, &ids, &low, err, errlen);
	if (n <= 0) {
		r = n;
		goto out;
	}
	/* The filter's text, once, for the transaction's statements. */
	sq_reset(s);
	sql_add(s, "id IN (%s)", ids.data);
	if ((r = sq_add_filter(s, "bulk", &g, err, errlen)) < 0)
		goto out;
	buf_puts(&which, s->sql.data);
	if (buf_failed(&which)) {
		r = sq_fail_msg(-ENOMEM, err, errlen, "store_bulk_chunk: out of memory");
		goto out;
	}
	sq_reset(s);
	at = add_action(s, a, which.data, ids.data, reason, &second);
	r = sq_run_retry(s, "store_bulk_chunk", &rr, err, errlen);
	if (r < 0)
		goto out;
	if (a == STORE_BULK_RETRY) {
		/* Rows put back: those asked for, and the rows their death had cancelled. */
		MYSQL_ROW row = rr.res ? mysql_fetch_row(rr.res) : NULL;
		k = row && row[0] ? strtoull(row[0], NULL, 10) : 0;
		r = k > INT32_MAX ? INT32_MAX : (int)k;
	} else {
		k = (at < RUN_MAX_STMTS ? rr.rows[at] : 0) +
		    (second < RUN_MAX_STMTS ? rr.rows[second] : 0);
		r = k > (uint64_t)n ? n : (int)k;
	}
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
out:
	if (r >= 0)
		*ret_hi = n >= (int)STORE_BULK_CHUNK ? low : lo;
	buf_free(&ids);
	buf_free(&which);
	return r;
}
