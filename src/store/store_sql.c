/* store_sql — the pieces of statement text that the claim (store_claim.c) and the later
 * updates of a claimed row (store_rows.c) share: the fence, the FIFO group lock and hand-over,
 * an error text. See store_int.h. */
#include "store/store.h"
#include "store/store_browse.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERROR_TEXT_MAX 4000     /* bytes of last_error */

/* ---- the fence ---- */

/* The fence reads a row's token from an ELT list when the ids span at most this many (gaps
 * included) and there are at most ELT_MAX of them; sparser or larger sets take the CASE. */
#define FENCE_ELT_SPAN(n) (2 * (uint64_t)(n) + 64)
#define ELT_MAX 4096u

struct id_token {
	uint64_t id, token;
	size_t at;                   /* its place in refs */
};

static int by_id(const void *a, const void *b)
{
	const struct id_token *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

int sq_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* refs sorted by id, a repeated id dropped but for its first (as CASE took the first WHEN).
 * Returns the count; *ret NULL when out of memory. */
static size_t sorted_refs(const struct store_ref *refs, size_t n, struct id_token **ret)
{
	struct id_token *v = malloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;

	*ret = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++)
		v[i] = (struct id_token){ refs[i].id, refs[i].token, i };
	qsort(v, n, sizeof(*v), by_id);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1].id != v[i].id)
			v[k++] = v[i];
	return k;
}

/* Whether v[0..k) (sorted_refs) take their values by place in an ELT list. */
static bool by_place(const struct id_token *v, size_t k)
{
	return k > 1 && k <= ELT_MAX && v[k - 1].id - v[0].id < FENCE_ELT_SPAN(k);
}

void sq_add_id_runs(struct store *s, const uint64_t *ids, size_t n)
{
	size_t singles = 0, runs = 0;

	sql_add(s, "(");
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		if (j > i)
			sql_add(s, "%sid BETWEEN %llu AND %llu", runs++ ? " OR " : "",
				(unsigned long long)ids[i], (unsigned long long)ids[j]);
		i = j + 1;
	}
	for (size_t i = 0; i < n; i++) {
		bool alone = (i == 0 || ids[i - 1] + 1 != ids[i]) &&
			     (i + 1 == n || ids[i] + 1 != ids[i + 1]);
		if (!alone)
			continue;
		if (singles++ == 0)
			sql_add(s, "%sid IN (", runs ? " OR " : "");
		else
			sql_add(s, ",");
		sql_add(s, "%llu", (unsigned long long)ids[i]);
	}
	sql_add(s, "%s%s)", singles > 0 ? ")" : "", runs == 0 && singles == 0 ? "FALSE" : "");
}

void sq_add_fence(struct store *s, const struct store_ref *refs, size_t n)
{
	struct id_token *v;
	uint64_t *ids;
	size_t k = sorted_refs(refs, n, &v);

	ids = v ? malloc((k ? k : 1) * sizeof(*ids)) : NULL;
	if (!ids) {
		free(v);
		s->sql.failed = true; /* sq_run says out of memory */
		return;
	}
	for (size_t i = 0; i < k; i++)
		ids[i] = v[i].id;
	sql_add(s, "state = 'claimed' AND ");
	sq_add_id_runs(s, ids, k);
	if (k == 1) {
		sql_add(s, " AND claim_token = %llu", (unsigned long long)v[0].token);
	} else if (by_place(v, k)) {
		/* The row's token by its place in the span: one step per row, where CASE looks
		 * through the WHENs in turn (measured: 150 rows, ~0.3 ms of the server's time
		 * less). The ids in the gaps are not in the runs above: their 0s are never read. */
		size_t j = 0;
		sql_add(s, " AND claim_token = CAST(ELT(CAST(id AS SIGNED) - %llu",
			(unsigned long long)(v[0].id - 1));
		for (uint64_t id = v[0].id; id <= v[k - 1].id; id++) {
			uint64_t t = 0;
			if (v[j].id == id)
				t = v[j++].token;
			sql_add(s, ",'%llu'", (unsigned long long)t);
		}
		sql_add(s, ") AS UNSIGNED)");
	} else if (k > 1) {
		sql_add(s, " AND claim_token = CASE id");
		for (size_t i = 0; i < k; i++)
			sql_add(s, " WHEN %llu THEN %llu", (unsigned long long)v[i].id,
				(unsigned long long)v[i].token);
		sql_add(s, " END");
	}
	free(ids);
	free(v);
}

bool store_refs_grouped(const struct store_ref *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (refs[i].grouped)
			return true;
	return false;
}

/* "GROUP_LOCK;" for the rows refs[0..n) (ended by sq_end). */
void sq_add_group_lock(struct store *s, const struct store_ref *refs, size_t n)
{
	struct buf w;

	buf_init(&w);
	buf_puts(&w, "id IN (");
	for (size_t i = 0; i < n; i++)
		buf_printf(&w, "%s%llu", i ? "," : "", (unsigned long long)refs[i].id);
	buf_puts(&w, ")");
	if (buf_failed(&w)) {
		s->sql.failed = true; /* sq_run says out of memory */
	} else {
		sql_add(s, GROUP_LOCK, w.data);
		sq_end(s);
	}
	buf_free(&w);
}

/* Whether refs[i] is one add_key_fills leaves out: not key_fill (unless all), or, with
 * handed, one whose next rows the claim hands on (sq_ref_handed_by_key). */
static bool no_key_fill(const struct store_ref *r, bool all, bool handed)
{
	return (!all && !r->key_fill) || (handed && sq_ref_handed_by_key(r));
}

void sq_add_key_fill_many(struct store *s, const struct store_ref *refs, size_t n,
			  bool (*take)(const struct store_ref *r, const void *arg), const void *arg)
{
	struct buf parts;
	size_t k = 0;

	buf_init(&parts);
	for (size_t i = 0; i < n; i++) {
		if (refs[i].key_limit == 0 || !take(&refs[i], arg))
			continue;
		buf_printf(&parts, "%s" KEY_FILL_PART, k++ ? " UNION " : "",
			   (unsigned long long)refs[i].id, (unsigned long long)refs[i].id,
			   (unsigned)refs[i].key_limit);
	}
	if (buf_failed(&parts)) {
		s->sql.failed = true; /* sq_run says out of memory */
	} else if (k > 0) {
		sql_add(s, KEY_FILL_MANY, parts.data);
		sq_end(s);
	}
	buf_free(&parts);
}

/* sq_add_key_fill_many's choice for add_key_fill_many: arg, whether handed. */
static bool fills_key(const struct store_ref *r, const void *arg)
{
	return !no_key_fill(r, false, *(const bool *)arg);
}

/* KEY_FILL_MANY for the refs that know their key's limit (unless all); returns how many
 * refs are left for KEY_FILL, one by one. */
static size_t add_key_fill_many(struct store *s, const struct store_ref *refs, size_t n,
				bool all, bool handed)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		left += !no_key_fill(&refs[i], all, handed) && (all || refs[i].key_limit == 0);
	if (!all)
		sq_add_key_fill_many(s, refs, n, fills_key, &handed);
	return left;
}

/* The ids of refs[0..n) ("1,2,3") and a CASE of their tokens + 1 (" WHEN 1 THEN 8 .."); with
 * heads_only, of the refs whose key runs one at a time alone (grouped, not key_fill), and
 * *named (if not NULL) says how many. Returns false if out of memory. */
static bool ids_and_tokens(const struct store_ref *refs, size_t n, bool heads_only,
			   struct buf *ids, struct buf *tokens, size_t *named)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (heads_only && (!refs[i].grouped || refs[i].key_fill))
			continue;
		buf_printf(ids, "%s%llu", k++ ? "," : "", (unsigned long long)refs[i].id);
		buf_printf(tokens, " WHEN %llu THEN %llu", (unsigned long long)refs[i].id,
			   (unsigned long long)refs[i].token + 1);
	}
	if (named)
		*named = k;
	return !buf_failed(ids) && !buf_failed(tokens);
}

size_t sq_group_heads(struct buf *b, const struct store_ref *refs, size_t n)
{
	struct buf ids, tokens;
	size_t k;
	bool ok;

	buf_init(&ids);
	buf_init(&tokens);
	ok = ids_and_tokens(refs, n, true, &ids, &tokens, &k);
	if (k > 0 && !ok)
		b->failed = true;
	else if (k > 0)
		buf_printf(b, GROUP_HEADS, ids.data, tokens.data);
	buf_free(&ids);
	buf_free(&tokens);
	return k;
}

void sq_add_group_heads(struct store *s, const struct store_ref *refs, size_t n)
{
	struct buf parts;

	buf_init(&parts);
	if (sq_group_heads(&parts, refs, n) > 0) {
		if (buf_failed(&parts)) {
			s->sql.failed = true; /* sq_run says out of memory */
		} else {
			sql_add(s, GROUP_NEXT, parts.data);
			sq_end(s);
		}
	}
	buf_free(&parts);
}

/* The KEY_FILL statements of sq_add_group_next (with handed: not for the refs whose next
 * rows the claim hands on). */
static void add_key_fills(struct store *s, const struct store_ref *refs, size_t n, bool all,
			  bool handed)
{
	size_t nfill = 0;

	for (size_t i = 0; i < n; i++)
		if (!no_key_fill(&refs[i], all, handed))
			nfill++;
	if (nfill == 0)
		return;
	nfill = add_key_fill_many(s, refs, n, all, handed);
	if (nfill == 0)
		return;
	sql_add(s, KEY_FILL_PREPARE);
	sq_end(s);
	for (size_t i = 0; i < n; i++) {
		if (no_key_fill(&refs[i], all, handed) || (!all && refs[i].key_limit > 0))
			continue;
		sql_add(s, "SET @claimd_kq = NULL, @claimd_kk = NULL");
		sq_end(s);
		sql_add(s, KEY_FILL_ROW, (unsigned long long)refs[i].id);
		sq_end(s);
		sql_add(s, KEY_FILL_LIMIT);
		sq_end(s);
		sql_add(s, KEY_FILL);
		sq_end(s);
	}
}

void sq_add_group_next(struct store *s, const struct store_ref *refs, size_t n, bool all)
{
	if (!all)
		sq_add_group_heads(s, refs, n);
	add_key_fills(s, refs, n, all, false);
}

void sq_add_finish_begin(struct store *s)
{
	sql_add(s, "SET @claimd_t0 = NOW(6)");
	sq_end(s);
}

void sq_add_finished(struct store *s, bool first)
{
	sql_add(s, first ? "SET @claimd_fin = ROW_COUNT()" :
		"SET @claimd_fin = @claimd_fin + ROW_COUNT()");
	sq_end(s);
}

void sq_add_deps_done(struct store *s, const struct store_ref *refs, size_t n)
{
	struct buf ids, tokens;

	buf_init(&ids);
	buf_init(&tokens);
	if (!ids_and_tokens(refs, n, false, &ids, &tokens, NULL)) {
		s->sql.failed = true;
	} else {
		sql_add(s, DEPS_DONE, ids.data, tokens.data);
		sq_end(s);
		sql_add(s, DEPS_RELEASE, ids.data);
		sq_end(s);
	}
	buf_free(&ids);
	buf_free(&tokens);
}

/* The three statements of a dead set whose anchor is the SELECT anchor (of (id, root)), the
 * anchor's own ids being ids. */
static void add_dead(struct store *s, const char *anchor, const char *ids)
{
	struct buf set;

	buf_init(&set);
	buf_printf(&set, DEAD_SET, anchor);
	if (buf_failed(&set)) {
		s->sql.failed = true;
	} else {
		sql_add(s, DEPS_DEAD_RUN, set.data);
		sq_end(s);
		sql_add(s, DEPS_DEAD_RELEASE, set.data);
		sq_end(s);
		sql_add(s, DEPS_CANCEL, set.data, ids);
		sq_end(s);
	}
	buf_free(&set);
}

void sq_add_deps_dead(struct store *s, const struct store_ref *refs, size_t n)
{
	struct buf ids, tokens, anchor;

	buf_init(&ids);
	buf_init(&tokens);
	buf_init(&anchor);
	if (ids_and_tokens(refs, n, false, &ids, &tokens, NULL))
		buf_printf(&anchor, "SELECT p.id, p.id FROM work_items p WHERE p.id IN (%s) AND "
			   "p.state = 'dead' AND p.claim_token = CASE p.id%s END AND "
			   "@claimd_fin > 0 AND p.finished_at >= @claimd_t0", ids.data, tokens.data);
	if (buf_failed(&ids) || buf_failed(&tokens) || buf_failed(&anchor))
		s->sql.failed = true;
	else
		add_dead(s, anchor.data, ids.data);
	buf_free(&ids);
	buf_free(&tokens);
	buf_free(&anchor);
}

void sq_add_deps_gone(struct store *s, uint64_t id)
{
	char anchor[128], ids[24];

	snprintf(anchor, sizeof(anchor), "SELECT %llu, %llu FROM DUAL WHERE @claimd_deleted > 0 "
		 "AND @claimd_was_ready = 1", (unsigned long long)id, (unsigned long long)id);
	snprintf(ids, sizeof(ids), "%llu", (unsigned long long)id);
	add_dead(s, anchor, ids);
}

void sq_add_deps_gone_ids(struct store *s, const char *ids)
{
	struct buf anchor;

	buf_init(&anchor);
	buf_printf(&anchor, "SELECT DISTINCT d.parent_id, d.parent_id FROM work_deps d WHERE "
		   "d.parent_id IN (%s) AND FIND_IN_SET(d.parent_id, @claimd_gone_ready) > 0", ids);
	if (buf_failed(&anchor))
		s->sql.failed = true;
	else
		add_dead(s, anchor.data, ids);
	buf_free(&anchor);
}

void sq_add_heal_keys(struct store *s, const char *which)
{
	sql_add(s, HEAL_KEYS_TABLE);
	sq_end(s);
	sql_add(s, HEAL_KEYS_KEEP, which);
	sq_end(s);
}

void sq_add_put_back(struct store *s, const char *which)
{
	static const char *const steps[] = {
		PUT_BACK_TABLE, DOOMED_TABLE, NULL, PUT_BACK_LOCK, PUT_BACK_PRUNE, PUT_BACK_GROUPS,
		PUT_BACK_ROWS,
		PUT_BACK_COUNT, DOOMED_FIND, DOOMED_ROWS,
	};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (steps[i])
			sql_add(s, "%s", steps[i]);
		else
			sql_add(s, PUT_BACK_FIND, which);
		sq_end(s);
	}
	add_dead(s, DOOMED_ANCHOR, DOOMED_IDS);
	sql_add(s, PUT_BACK_RELEASE);
	sq_end(s);
}

void sq_add_text(struct store *s, const char *str, size_t len)
{
	char *q;

	if (!str) {
		sql_add(s, "NULL");
		return;
	}
	q = malloc(2 * len + 3);
	if (!q) {
		s->sql.failed = true;  /* sq_run says out of memory */
		return;
	}
	sq_quote(s->conn, q, str, len);
	sql_add(s, "%s", q);
	free(q);
}

/* last_error text: cut to ERROR_TEXT_MAX bytes, quoted; NULL stays NULL. */
void sq_add_error_text(struct store *s, const char *text)
{
	char clean[ERROR_TEXT_MAX + 1], quoted[2 * ERROR_TEXT_MAX + 3];

	if (!text) {
		sql_add(s, "NULL");
		return;
	}
	sq_quote(s->conn, quoted, clean, sq_utf8_sanitize(text, clean, ERROR_TEXT_MAX));
	sql_add(s, "%s", quoted);
}

/* Appends what(ref) quoted, or col where it has none. */
static void add_value(struct store *s, const char *col, const struct store_ref *ref,
		      const char *(*what)(const struct store_ref *ref, size_t *len))
{
	size_t len;
	const char *v = what(ref, &len);

	if (v)
		sq_add_text(s, v, len);
	else
		sql_add(s, "%s", col);
}

/* ", col = <each row's value, or col>" over the refs that have a value for it (what(ref,
 * &len) returns it, or NULL); nothing when none has. As the fence reads tokens: by the row's
 * place in an ELT list when the ids are close together, else "CASE id WHEN .. THEN <value>
 * .. ELSE col END". Only the fence's rows are updated, so every row's id is in the list. */
static void add_case(struct store *s, const char *col, const struct store_ref *refs, size_t n,
		     const char *(*what)(const struct store_ref *ref, size_t *len))
{
	struct id_token *v;
	size_t k, len, j = 0;
	bool any = false;

	for (size_t i = 0; i < n && !any; i++)
		any = what(&refs[i], &len) != NULL;
	if (!any)
		return;
	k = sorted_refs(refs, n, &v);
	if (!v) {
		s->sql.failed = true;  /* sq_run says out of memory */
		return;
	}
	if (by_place(v, k)) {
		sql_add(s, ", %s = ELT(CAST(id AS SIGNED) - %llu", col,
			(unsigned long long)(v[0].id - 1));
		for (uint64_t id = v[0].id; id <= v[k - 1].id; id++) {
			sql_add(s, ",");
			if (v[j].id == id)
				add_value(s, col, &refs[v[j++].at], what);
			else
				sql_add(s, "%s", col);
		}
		sql_add(s, ")");
	} else {
		sql_add(s, ", %s = CASE id", col);
		for (size_t i = 0; i < k; i++) {
			if (!what(&refs[v[i].at], &len))
				continue;
			sql_add(s, " WHEN %llu THEN ", (unsigned long long)v[i].id);
			add_value(s, col, &refs[v[i].at], what);
		}
		sql_add(s, " ELSE %s END", col);
	}
	free(v);
}

static const char *result_of(const struct store_ref *r, size_t *len)
{
	*len = r->result_len;
	return (const char *)r->result;
}

static const char *result_type_of(const struct store_ref *r, size_t *len)
{
	const char *t = r->result ? r->result_type : NULL;

	*len = t ? strlen(t) : 0;
	return t;
}

static const char *progress_of(const struct store_ref *r, size_t *len)
{
	*len = r->progress ? strlen(r->progress) : 0;
	return r->progress;
}

void sq_add_results(struct store *s, const struct store_ref *refs, size_t n)
{
	add_case(s, "result", refs, n, result_of);
	add_case(s, "result_type", refs, n, result_type_of);
	add_case(s, "progress", refs, n, progress_of);
}

void sq_add_progress(struct store *s, const struct store_ref *refs, size_t n)
{
	add_case(s, "progress", refs, n, progress_of);
}

/* ---- the job browser ---- */

void sq_add_attempt_errors(struct store *s, const struct store_ref *refs, size_t n,
			   const char *error)
{
	struct buf ids, tokens;

	buf_init(&ids);
	buf_init(&tokens);
	if (!ids_and_tokens(refs, n, false, &ids, &tokens, NULL)) {
		s->sql.failed = true;
	} else {
		sql_add(s, ATTEMPT_ERROR_ADD, error, ids.data, tokens.data);
		sq_end(s);
	}
	buf_free(&ids);
	buf_free(&tokens);
}

/* " AND name = 'value'" when value is set (at most max bytes). */
static int add_equal(struct store *s, const char *op, const char *name, const char *value,
		     size_t max, char *err, size_t errlen)
{
	size_t len = value ? strlen(value) : 0;
	char q[2 * 255 + 3];

	if (!value)
		return 0;
	if (len == 0 || len > max || max > 255)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: %s must be 1..%zu bytes", op, name,
				   max);
	sq_quote(s->conn, q, value, len);
	sql_add(s, " AND %s = %s", name, q);
	return 0;
}

int sq_add_filter(struct store *s, const char *op, const struct store_filter *f, char *err,
		  size_t errlen)
{
	char pattern[2 * STORE_FILTER_ERROR_MAX + 3], q[2 * sizeof(pattern) + 3];
	size_t n = 0, len;
	int r;

	if (f->states & ~ROW_STATE_ALL)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: unknown state bits", op);
	if (f->states && f->states != ROW_STATE_ALL) {
		sql_add(s, " AND state IN (");
		for (unsigned i = 0; i < ROW_STATE_COUNT; i++)
			if (f->states & ROW_STATE_BIT(i))
				sql_add(s, "%s'%s'", n++ ? ", " : "", row_state_name(i));
		sql_add(s, ")");
	}
	if (f->id)
		sql_add(s, " AND id = %llu", (unsigned long long)f->id);
	if ((r = add_equal(s, op, "queue", f->queue, STORE_QUEUE_MAX, err, errlen)) < 0 ||
	    (r = add_equal(s, op, "group_key", f->group, STORE_GROUP_KEY_MAX, err, errlen)) < 0 ||
	    (r = add_equal(s, op, "dedupe_key", f->dedupe, STORE_DEDUPE_KEY_MAX, err, errlen)) < 0)
		return r;
	if (!f->error)
		return 0;
	len = strlen(f->error);
	if (len == 0 || len > STORE_FILTER_ERROR_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: the error text must be 1..%d bytes",
				   op, STORE_FILTER_ERROR_MAX);
	/* LIKE '%text%' with the text's own '%', '_' and the escape '!' taken literally ('!'
	 * rather than '\', which NO_BACKSLASH_ESCAPES would change). */
	n = 0;
	pattern[n++] = '%';
	for (size_t i = 0; i < len; i++) {
		if (f->error[i] == '%' || f->error[i] == '_' || f->error[i] == '!')
			pattern[n++] = '!';
		pattern[n++] = f->error[i];
	}
	pattern[n++] = '%';
	sq_quote(s->conn, q, pattern, n);
	sql_add(s, " AND last_error LIKE %s ESCAPE '!'", q);
	return 0;
}

/* Finishing a row (done or dead) bumps its claim token, so that GROUP_NEXT below can tell
 * the rows this very transaction finished (token + 1) from rows finished before.
 * A successful run: done, or for a recurring row (period_s set) ready again period_s after
 * it finished, with a fresh count of attempts. Visible at NOW(6) + period_s, recurring rows
 * are claimed least recently finished first. A row whose cancel was asked for while it ran
 * (a live request, sql/migrations/007_cancel.sql) is dead, cancelled, even so: its cancel
 * was answered "cancelling", and it must not end done after that answer. (The assignments
 * run left to right: after the first, state says which.) */
#define COMPLETE \
	QUIET "UPDATE work_items SET state = IF(" CANCEL_LIVE ", 'dead', IF(period_s IS NULL, " \
	"'done', 'ready')), " \
	"claim_token = claim_token + 1, " \
	"finished_at = NOW(6), " \
	"visible_at = IF(period_s IS NULL OR state = 'dead', NULL, LEAST(NOW(6) + INTERVAL " \
	"period_s SECOND, " TS_MAX ")), " \
	"attempts = IF(period_s IS NULL OR state = 'dead', attempts, 0), " \
	"last_error = IF(state = 'dead', " CANCEL_ERROR ", IF(period_s IS NULL, last_error, NULL)), " \
	"dedupe_until = IF((period_s IS NULL OR state = 'dead') AND dedupe_key IS NOT NULL, " \
	"NOW(6) + INTERVAL IFNULL(dedupe_for_s, %u) SECOND, NULL)"

int sq_add_complete(struct store *s, const struct store_ref *done, size_t n, bool heads_later)
{
	bool grouped = store_refs_grouped(done, n), deps = false;
	int at;

	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (done[i].dependents) {
			deps = true;
			break;
		}
	if (grouped)
		sq_add_group_lock(s, done, n);
	if (deps)
		sq_add_finish_begin(s);
	at = (int)s->ncuts;
	sql_add(s, COMPLETE, s->dedupe_window_s);
	sq_add_results(s, done, n);
	sql_add(s, " WHERE ");
	sq_add_fence(s, done, n);
	sq_end(s);
	if (deps)
		sq_add_finished(s, true);
	if (grouped && heads_later)
		add_key_fills(s, done, n, false, true);
	else if (grouped)
		sq_add_group_next(s, done, n, false);
	if (deps) {
		/* Done, or dead for a cancel: each counts only the rows it applies to. */
		sq_add_deps_done(s, done, n);
		sq_add_deps_dead(s, done, n);
	}
	return at;
}
