/* store_graph — rows that wait for each other (work_deps) added together, and batches of rows
 * with a callback: written in one transaction, all or nothing; and batches as an operator
 * reads them. What a finishing row does to the rows that wait for it is in the finishing
 * statements themselves (store_sql.c, DEPS_*). */
#include "store/store.h"
#include "store/store_graph.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct store_add_opts no_opts = { .period_s = -1 };

/* Rows added together (what they are, for the message: "a graph is"): 1 to STORE_GRAPH_MAX,
 * each an add's (sq_check_add), one that is not refused naming its line. */
static int check_rows(const struct store_add_row *rows, size_t n, const char *what, char *err,
		      size_t errlen)
{
	if (n == 0 || n > STORE_GRAPH_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "%s 1 to %d rows", what, STORE_GRAPH_MAX);
	for (size_t i = 0; i < n; i++) {
		char why[256];
		int r = sq_check_add(rows[i].queue, rows[i].len, rows[i].opts ? rows[i].opts :
				     &no_opts, why, sizeof(why));
		if (r < 0)
			return sq_fail_msg(r, err, errlen, "line %zu: %s", i + 1, why);
	}
	return 0;
}

static int check_graph(struct store_add_row *rows, size_t n, const struct store_edge *edges,
		       size_t nedges, const struct store_batch_def *batch, char *err,
		       size_t errlen)
{
	int r = check_rows(rows, n, "a graph is", err, errlen);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &no_opts;
		if (o->dedupe_key)
			return sq_fail_msg(-EINVAL, err, errlen, "line %zu: a row of a graph or a batch "
					   "has no dedupe key", i + 1);
		if (o->period_s >= 0 || o->group_key)
			return sq_fail_msg(-EINVAL, err, errlen, "line %zu: a row of a graph or a batch "
					   "is not recurring and in no FIFO group", i + 1);
	}
	for (size_t i = 0; i < nedges; i++)
		if (edges[i].parent >= n || edges[i].child >= n || edges[i].parent == edges[i].child)
			return sq_fail_msg(-EINVAL, err, errlen, "an edge from line %zu to line %zu",
					   edges[i].parent + 1, edges[i].child + 1);
	if (batch && (batch->callback >= (long)n || batch->callback < -1 ||
		      (batch->description && strlen(batch->description) > STORE_BATCH_DESC_MAX)))
		return sq_fail_msg(-EINVAL, err, errlen, "a batch's callback or description");
	return 0;
}

/* The graph's shape, from its edges (each pair once): how many rows each line waits for,
 * and whether any waits for it. */
struct shape {
	unsigned *waits;          /* [n] */
	unsigned char *waited;    /* [n] */
};

/* Whether the edges all[0..m) (each pair once) of a graph of n lines leave no line waiting,
 * through others, for itself: Kahn's order, time linear in n + m. Fills sh. Returns 0, or
 * -EINVAL with err naming two lines of a cycle, or -ENOMEM. */
static int check_acyclic(const struct store_edge *all, size_t m, size_t n, struct shape *sh,
			 char *err, size_t errlen)
{
	size_t *first = calloc(n + 1, sizeof(*first)), *by_parent = malloc((m + 1) *
								     sizeof(*by_parent));
	size_t *order = malloc((n + 1) * sizeof(*order)), *left = calloc(n + 1, sizeof(*left));
	size_t head = 0, tail = 0;
	int r = 0;

	if (!first || !by_parent || !order || !left) {
		r = sq_fail_msg(-ENOMEM, err, errlen, "store_add_graph: out of memory");
		goto out;
	}
	for (size_t i = 0; i < m; i++) {
		sh->waits[all[i].child]++;
		sh->waited[all[i].parent] = 1;
		first[all[i].parent + 1]++;
	}
	for (size_t i = 0; i < n; i++)
		first[i + 1] += first[i];
	for (size_t i = 0; i < m; i++)
		by_parent[first[all[i].parent] + left[all[i].parent]++] = all[i].child;
	for (size_t i = 0; i < n; i++) {
		left[i] = sh->waits[i];
		if (left[i] == 0)
			order[tail++] = i;
	}
	while (head < tail) {
		size_t v = order[head++];
		for (size_t k = first[v]; k < first[v + 1]; k++)
			if (--left[by_parent[k]] == 0)
				order[tail++] = by_parent[k];
	}
	if (tail < n) {
		/* Every line left waits for another line left: walk up from one until a line
		 * comes round again. */
		size_t v = 0, steps = 0;
		while (left[v] == 0)
			v++;
		for (; steps <= n; steps++) {
			size_t parent = n;
			for (size_t i = 0; i < m && parent == n; i++)
				if (all[i].child == v && left[all[i].parent] > 0)
					parent = all[i].parent;
			v = parent;
		}
		for (size_t i = 0; i < m; i++)
			if (all[i].child == v && left[all[i].parent] > 0) {
				r = sq_fail_msg(-EINVAL, err, errlen, "line %zu waits, through line %zu, "
						"for itself: a cycle", v + 1, all[i].parent + 1);
				break;
			}
	}
out:
	free(first);
	free(by_parent);
	free(order);
	free(left);
	return r;
}

/* Round trip 1 (begin: it opens the transaction; else it goes on in the one open): the
 * batch's row, the rows (their ids back, in order), each with how many lines it waits for
 * (no visible_at while that is above 0) and whether any waits for it. */
static int insert_rows(struct store *s, struct store_add_row *rows, size_t n,
		       const struct store_batch_def *batch, const struct shape *sh, bool begin,
		       uint64_t *ret_batch, char *err, size_t errlen)
{
	struct run rr;
	MYSQL_ROW row;
	int r;

	sq_reset(s);
	sql_add(s, "SET @claimd_graph_checked = NULL");
	if (begin) {
		sq_end(s);
		sql_add(s, "START TRANSACTION");
	}
	sq_end(s);
	if (batch) {
		char q[QUOTED_QUEUE_MAX], d[2 * STORE_BATCH_DESC_MAX + 3] = "NULL";
		sq_quote(s->conn, q, rows[0].queue, strlen(rows[0].queue));
		if (batch->description)
			sq_quote(s->conn, d, batch->description, strlen(batch->description));
		sql_add(s, "INSERT INTO batches (queue, description, size) VALUES (%s, %s, %zu)", q, d,
			n - (batch->callback >= 0));
		sq_end(s);
		sql_add(s, "SET @claimd_batch = LAST_INSERT_ID()");
		sq_end(s);
	}
	sql_add(s, "INSERT INTO work_items " ADD_COLUMNS ", batch_id, waiting_for, has_dependents) "
		"VALUES ");
	for (size_t i = 0; i < n; i++) {
		sql_add(s, i ? "," : "");
		sq_add_values(s, rows[i].queue, rows[i].payload, rows[i].len,
			      rows[i].opts ? rows[i].opts : &no_opts);
		sql_add(s, "%s, %u, %d)", batch ? ", @claimd_batch" : ", NULL", sh->waits[i],
			sh->waited[i]);
	}
	sql_add(s, " RETURNING id");
	if (batch) {
		sq_end(s);
		sql_add(s, "SELECT @claimd_batch");
	}
	r = sq_run(s, "store_add_graph", &rr, err, errlen);
	if (r < 0)
		return r;
	r = rr.res && mysql_num_rows(rr.res) == n ? 0 : -EIO;
	for (size_t i = 0; r == 0 && i < n; i++) {
		row = mysql_fetch_row(rr.res);
		if (!row || !row[0] || !sq_parse_u64(row[0], strlen(row[0]), &rows[i].id))
			r = -EIO;
		rows[i].rc = 0;
		rows[i].duplicate = false;
	}
	if (r == 0 && batch) {
		row = rr.res2 ? mysql_fetch_row(rr.res2) : NULL;
		r = row && row[0] && sq_parse_u64(row[0], strlen(row[0]), ret_batch) ? 0 : -EIO;
	}
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return r < 0 ? sq_fail_msg(r, err, errlen, "store_add_graph: the ids did not come back") : 0;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct store_edge *x = a, *y = b;

	if (x->child != y->child)
		return x->child < y->child ? -1 : 1;
	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

/* The edges, and the batch's callback's edges from every member: sorted, each pair once
 * (an edge's trigger counts it, so a pair given twice would be counted twice). A pair given
 * twice with different on_dead is refused. Returns how many, or -EINVAL. */
static long all_edges(const struct store_edge *edges, size_t nedges, size_t n,
		      const struct store_batch_def *batch, struct store_edge *out, char *err,
		      size_t errlen)
{
	size_t k = 0, m = 0;

	for (size_t i = 0; i < nedges; i++)
		out[k++] = edges[i];
	if (batch && batch->callback >= 0)
		for (size_t i = 0; i < n; i++)
			if ((long)i != batch->callback)
				out[k++] = (struct store_edge){ i, (size_t)batch->callback, true };
	qsort(out, k, sizeof(*out), edge_cmp);
	for (size_t i = 0; i < k; i++) {
		if (m > 0 && edge_cmp(&out[m - 1], &out[i]) == 0) {
			bool from_callback = batch && (long)out[i].child == batch->callback;
			if (out[m - 1].on_dead_run != out[i].on_dead_run && !from_callback)
				return sq_fail_msg(-EINVAL, err, errlen, "line %zu waits for line %zu "
						   "twice, with different on_dead", out[i].child + 1,
						   out[i].parent + 1);
			continue;
		}
		out[m++] = out[i];
	}
	return (long)m;
}

/* Round trip 2: the edges (checked here, counted in their rows already: their trigger is told
 * so, sql/migrations/013_workflows.sql), the batch's callback, and the commit. */
static int insert_edges(struct store *s, const struct store_add_row *rows,
			const struct store_edge *edges, size_t nedges,
			const struct store_batch_def *batch, uint64_t batch_id, char *err,
			size_t errlen)
{
	struct run rr;
	int r;

	sq_reset(s);
	if (nedges) {
		sql_add(s, "SET @claimd_graph_checked = 1");
		sq_end(s);
	}
	for (size_t i = 0; i < nedges; i++) {
		sql_add(s, "%s(%llu, %llu, '%s')", i ? "," : "INSERT INTO work_deps (parent_id, "
			"child_id, on_dead) VALUES ", (unsigned long long)rows[edges[i].parent].id,
			(unsigned long long)rows[edges[i].child].id,
			edges[i].on_dead_run ? "run" : "cancel");
	}
	if (nedges) {
		sq_end(s);
		sql_add(s, "SET @claimd_graph_checked = NULL");
		sq_end(s);
	}
	if (batch && batch->callback >= 0) {
		sql_add(s, "UPDATE batches SET callback_id = %llu WHERE id = %llu",
			(unsigned long long)rows[batch->callback].id, (unsigned long long)batch_id);
		sq_end(s);
	}
	sql_add(s, "COMMIT");
	r = sq_run(s, "store_add_graph", &rr, err, errlen);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return r;
}

/* The first statements of a run's outcome with the rows it adds: open the transaction and
 * complete done. Returns 1 when it is done (or ready again: recurring), 2 when it is dead (a
 * cancel was asked for while it ran), 0 when it was fenced out, or a negative error; the
 * transaction stays open. */
static int complete_one(struct store *s, const struct store_ref *done, char *err,
			size_t errlen)
{
	struct run rr;
	MYSQL_ROW row;
	int r, k;

	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	k = sq_add_complete(s, done, 1, false);
	sql_add(s, "SELECT state FROM work_items WHERE id = %llu", (unsigned long long)done->id);
	r = sq_run(s, "store_complete_adding", &rr, err, errlen);
	if (r < 0)
		return r;
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = rr.rows[k] == 0 ? 0 : row && row[0] && strcmp(row[0], "dead") == 0 ? 2 : 1;
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return r;
}

/* What a graph's rows need before their statements: checked whole, the edges each pair
 * once (with the batch callback's) into *all, the shape. Returns the number of edges or a
 * negative error; the caller frees *all and sh's arrays. */
static long prepare_graph(struct store_add_row *rows, size_t n, const struct store_edge *edges,
			  size_t nedges, const struct store_batch_def *batch,
			  struct store_edge **all, struct shape *sh, char *err, size_t errlen)
{
	int r = check_graph(rows, n, edges, nedges, batch, err, errlen);
	long m;

	if (r < 0)
		return r;
	*all = malloc((nedges + n + 1) * sizeof(**all));
	sh->waits = calloc(n, sizeof(*sh->waits));
	sh->waited = calloc(n, 1);
	if (!*all || !sh->waits || !sh->waited)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_add_graph: out of memory");
	m = all_edges(edges, nedges, n, batch, *all, err, errlen);
	if (m < 0)
		return m;
	r = check_acyclic(*all, (size_t)m, n, sh, err, errlen);
	return r < 0 ? r : m;
}

int store_add_graph(struct store *s, struct store_add_row *rows, size_t n,
		    const struct store_edge *edges, size_t nedges,
		    const struct store_batch_def *batch, uint64_t *ret_batch_id, char *err,
		    size_t errlen)
{
	int r = sq_check(s, "store_add_graph", NULL, 0, NULL, err, errlen);
	struct store_edge *all = NULL;
	struct shape sh = { NULL, NULL };
	unsigned attempt = 0;
	uint64_t batch_id = 0;
	long m = r < 0 ? r : prepare_graph(rows, n, edges, nedges, batch, &all, &sh, err, errlen);

	for (r = m < 0 ? (int)m : 0; r == 0;) {
		r = insert_rows(s, rows, n, batch, &sh, true, &batch_id, err, errlen);
		if (r == 0)
			r = insert_edges(s, rows, all, (size_t)m, batch, batch_id, err, errlen);
		if (r == 0)
			break;
		sq_abort(s);
		if (sq_retry(s, r, &attempt))
			r = 0;
	}
	free(all);
	free(sh.waits);
	free(sh.waited);
	if (r < 0)
		return sq_final(r);
	if (ret_batch_id)
		*ret_batch_id = batch_id;
	return 0;
}

/* ---- a run's outcome and the rows it adds ---- */

/* The rows of store_complete_adding without a graph, in their order (runs of rows without a
 * dedupe key in one INSERT each, a row with one as store_add writes it), and the commit. */
static int insert_plain_commit(struct store *s, struct store_add_row *rows, size_t n,
			       char *err, size_t errlen)
{
	bool open = false;   /* a multi-row INSERT is being written */
	struct run rr;
	int r;

	sq_reset(s);
	for (size_t i = 0; i < n; i++) {
		const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &no_opts;
		if (o->dedupe_key && open)
			sq_end(s);
		if (o->dedupe_key) {
			sq_add_dedupe_row(s, rows[i].queue, rows[i].payload, rows[i].len, o);
			open = false;
			continue;
		}
		sql_add(s, open ? "," : "INSERT INTO work_items " ADD_COLUMNS ") VALUES ");
		sq_add_values(s, rows[i].queue, rows[i].payload, rows[i].len, o);
		sql_add(s, ")");
		open = true;
	}
	if (open)
		sq_end(s);
	sql_add(s, "COMMIT");
	r = sq_run(s, "store_complete_adding", &rr, err, errlen);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return r;
}

static int commit(struct store *s, char *err, size_t errlen)
{
	struct run rr;

	sq_reset(s);
	sql_add(s, "COMMIT");
	return sq_run(s, "store_complete_adding", &rr, err, errlen);
}

int store_complete_adding(struct store *s, const struct store_ref *done,
			  struct store_add_row *rows, size_t n, const struct store_edge *edges,
			  size_t nedges, const struct store_batch_def *batch, char *err,
			  size_t errlen)
{
	int r = sq_check(s, "store_complete_adding", done, 1, NULL, err, errlen);
	bool graph = nedges > 0 || batch;
	struct store_edge *all = NULL;
	struct shape sh = { NULL, NULL };
	unsigned attempt = 0;
	uint64_t batch_id = 0;
	long m = 0;

	if (r == 0)
		m = graph ? prepare_graph(rows, n, edges, nedges, batch, &all, &sh, err, errlen) :
			    check_rows(rows, n, "what a run adds is", err, errlen);
	for (r = r < 0 ? r : m < 0 ? (int)m : 0; r == 0;) {
		int how = complete_one(s, done, err, errlen);
		r = how < 0 ? how : 0;
		if (how == 0) {
			sq_abort(s);
			break;
		}
		if (how == 2)
			r = commit(s, err, errlen);
		else if (how == 1 && !graph)
			r = insert_plain_commit(s, rows, n, err, errlen);
		else if (how == 1)
			r = insert_rows(s, rows, n, batch, &sh, false, &batch_id, err, errlen);
		if (how == 1 && graph && r == 0)
			r = insert_edges(s, rows, all, (size_t)m, batch, batch_id, err, errlen);
		if (r == 0) {
			r = how;
			break;
		}
		sq_abort(s);
		if (sq_retry(s, r, &attempt))
			r = 0;
	}
	free(all);
	free(sh.waits);
	free(sh.waited);
	return r < 0 ? sq_final(r) : r;
}

/* ---- batches ---- */

#define BATCH_COLUMNS \
	"b.id, b.queue, COALESCE(b.description, ''), b.size, COALESCE(b.callback_id, 0), " \
	UTC_TEXT("b.created_at") ", (SELECT state FROM work_items WHERE id = b.callback_id)"

static void text(char *dst, size_t cap, const char *src)
{
	if (!src)
		dst[0] = '\0';
	else
		sq_utf8_sanitize(src, dst, cap - 1);
}

static uint64_t u64_of(const char *p)
{
	uint64_t v;

	return p && sq_parse_u64(p, strlen(p), &v) ? v : 0;
}

static void take_batch(MYSQL_ROW row, struct store_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->id = u64_of(row[0]);
	text(b->queue, sizeof(b->queue), row[1]);
	text(b->description, sizeof(b->description), row[2]);
	b->size = (unsigned)u64_of(row[3]);
	b->callback_id = u64_of(row[4]);
	text(b->created_at, sizeof(b->created_at), row[5]);
	b->callback_state = row_state_of(row[6]);
}

/* Adds the member counts of res's rows (batch_id, state, count) to bs[0..n). */
static void take_counts(MYSQL_RES *res, struct store_batch *bs, size_t n)
{
	MYSQL_ROW row;

	while (res && (row = mysql_fetch_row(res))) {
		uint64_t id = u64_of(row[0]), c = u64_of(row[2]);
		enum row_state st;
		for (size_t i = 0; i < n; i++)
			if (bs[i].id == id && row_state_parse(row[1], &st))
				bs[i].members[st] += c;
	}
	for (size_t i = 0; i < n; i++)
		bs[i].finished = bs[i].members[ROW_READY] + bs[i].members[ROW_CLAIMED] == 0;
}

/* Reads the batches WHERE where says, newest first, at most limit. */
static int read_batches(struct store *s, const char *op, const char *where, unsigned limit,
			struct store_batch **ret, size_t *ret_n, char *err, size_t errlen)
{
	struct store_batch *bs;
	struct run rr;
	MYSQL_ROW row;
	size_t n = 0;
	int r;

	sq_reset(s);
	sql_add(s, "SELECT " BATCH_COLUMNS " FROM batches b WHERE %s ORDER BY b.id DESC LIMIT %u",
		where, limit);
	sq_end(s);
	/* The members' states, the callback not counted: by batch_idx, a lookup a member. */
	sql_add(s, "SELECT w.batch_id, w.state, COUNT(*) FROM (SELECT id, callback_id FROM "
		"batches b WHERE %s ORDER BY b.id DESC LIMIT %u) AS b JOIN work_items w "
		"ON w.batch_id = b.id WHERE w.id <> COALESCE(b.callback_id, 0) "
		"GROUP BY w.batch_id, w.state", where, limit);
	r = sq_run(s, op, &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	bs = calloc((rr.res ? mysql_num_rows(rr.res) : 0) + 1, sizeof(*bs));
	r = !rr.res ? -EIO : bs ? 0 : -ENOMEM;
	while (r == 0 && (row = mysql_fetch_row(rr.res)))
		take_batch(row, &bs[n++]);
	if (r == 0)
		take_counts(rr.res2, bs, n);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (r < 0) {
		free(bs);
		return sq_fail_msg(r, err, errlen, "%s: %s", op, r == -ENOMEM ? "out of memory" :
				   "no result");
	}
	*ret = bs;
	*ret_n = n;
	return 0;
}

int store_batch_get(struct store *s, uint64_t id, struct store_batch *ret, char *err,
		    size_t errlen)
{
	int r = sq_check(s, "store_batch_get", NULL, 0, NULL, err, errlen);
	struct store_batch *bs = NULL;
	char where[48];
	size_t n = 0;

	if (r < 0)
		return r;
	snprintf(where, sizeof(where), "b.id = %llu", (unsigned long long)id);
	r = read_batches(s, "store_batch_get", where, 1, &bs, &n, err, errlen);
	if (r < 0)
		return r;
	if (n == 1)
		*ret = bs[0];
	free(bs);
	return n == 1;
}

int store_batches(struct store *s, uint64_t before, unsigned limit, struct store_batch **ret,
		  size_t *ret_n, char *err, size_t errlen)
{
	int r = sq_check(s, "store_batches", NULL, 0, NULL, err, errlen);
	char where[48];

	if (r < 0)
		return r;
	if (limit == 0 || limit > STORE_LIST_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_batches: 1..%d batches",
				   STORE_LIST_MAX);
	if (before)
		snprintf(where, sizeof(where), "b.id < %llu", (unsigned long long)before);
	else
		snprintf(where, sizeof(where), "TRUE");
	return read_batches(s, "store_batches", where, limit, ret, ret_n, err, errlen);
}

/* ---- the count of parents, checked ---- */

/* A parent that still holds its child back: not finished (ready, or claimed), or dead on a
 * 'cancel' edge or gone on one (the child should have gone dead with it: left alone). d and
 * p: the edge and its parent row (NULL when gone). */
#define LIVE_PARENT \
	"(p.id IS NULL AND d.on_dead = 'cancel' OR p.state IN ('ready', 'claimed') OR " \
	"(p.state = 'dead' AND d.on_dead = 'cancel'))"
/* The children of a chunk of work_deps (its child ids after %llu, at most %u), the last of
 * them, and those ready rows among them that wait for more parents than hold them back. */
#define HEAL_DEPS_CHUNK \
	"(SELECT DISTINCT child_id FROM work_deps FORCE INDEX (child_idx) WHERE child_id > %llu " \
	"ORDER BY child_id LIMIT %u) AS k"
#define HEAL_DEPS_FIND \
	"SELECT c.id FROM " HEAL_DEPS_CHUNK " JOIN work_items c ON c.id = k.child_id " \
	"WHERE c.state = 'ready' AND c.waiting_for > (SELECT COUNT(*) FROM work_deps d " \
	"LEFT JOIN work_items p ON p.id = d.parent_id WHERE d.child_id = c.id AND " \
	LIVE_PARENT ") ORDER BY c.id LIMIT %u"
#define HEAL_FIND_MAX 500u

int store_deps_heal(struct store *s, uint64_t from, unsigned span, uint64_t *ret_next,
		    char *err, size_t errlen)
{
	int r = sq_check(s, "store_deps_heal", NULL, 0, NULL, err, errlen);
	struct buf ids;
	struct run rr;
	MYSQL_ROW row;
	size_t n = 0;

	*ret_next = 0;
	if (r < 0)
		return r;
	if (span == 0)
		span = 1;
	/* Found without a lock (one statement's snapshot: a finish and its count-off are in
	 * one transaction, so a row found here was missed, not caught half-way). */
	sq_reset(s);
	sql_add(s, "SELECT MAX(child_id) FROM " HEAL_DEPS_CHUNK, (unsigned long long)from, span);
	sq_end(s);
	sql_add(s, HEAL_DEPS_FIND, (unsigned long long)from, span, HEAL_FIND_MAX);
	r = sq_run(s, "store_deps_heal", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0])
		*ret_next = strtoull(row[0], NULL, 10);
	buf_init(&ids);
	while (rr.res2 && (row = mysql_fetch_row(rr.res2)))
		buf_printf(&ids, "%s%s", n++ ? "," : "", row[0]);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (buf_failed(&ids)) {
		buf_free(&ids);
		return sq_fail_msg(-ENOMEM, err, errlen, "store_deps_heal: out of memory");
	}
	if (n == 0) {
		buf_free(&ids);
		return 0;
	}
	/* Counted again under the parents' locks, taken first as a finishing parent's
	 * transaction takes them (parent, then child): a parent that finishes, is retried or
	 * gets a new edge meanwhile waits for this, or this for it. */
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sql_add(s, "SELECT p.id FROM work_deps d JOIN work_items p ON p.id = d.parent_id "
		"WHERE d.child_id IN (%s) ORDER BY p.id FOR UPDATE", ids.data);
	sq_end(s);
	sql_add(s, "UPDATE work_items c JOIN (SELECT d.child_id, SUM(" LIVE_PARENT ") AS live "
		"FROM work_deps d LEFT JOIN work_items p ON p.id = d.parent_id WHERE d.child_id "
		"IN (%s) GROUP BY d.child_id) AS k ON c.id = k.child_id SET c.waiting_for = k.live, "
		"c.visible_at = IF(k.live = 0 AND c.visible_at IS NULL AND c.group_key IS NULL, "
		"GREATEST(c.run_at, NOW(6)), c.visible_at) WHERE c.state = 'ready' AND "
		"c.waiting_for > k.live", ids.data);
	sq_end(s);
	sql_add(s, "COMMIT");
	buf_free(&ids);
	r = sq_run_retry(s, "store_deps_heal", &rr, err, errlen);
	mysql_free_result(rr.res);
	if (r < 0)
		return r;
	return rr.rows[2] > INT32_MAX ? INT32_MAX : (int)rr.rows[2];
}
