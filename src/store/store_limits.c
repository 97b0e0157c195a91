/* store — the limits on starts (sql/migrations/006_key_limits.sql): a queue's rate, its keys'
 * concurrency and rates, setting and reading them, and taking a start of a rate. The claim
 * reads a row's key limits itself (store_claim.c), and the finish of a row starts its key's
 * next ones (GROUP_NEXT and KEY_FILL, store_sql.c). */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- taking a start ---- */

/* The token bucket of a queue (key NULL) or of one key of it, held as the time its next start
 * is free (tat: next_start_at) with a start per interval iv and up to b at once: a start may
 * go at tat - (b - 1) * iv, and taking one moves tat on by iv (from now, if it has passed).
 * The UPDATE takes it only when that is at most hold_us from now; the SELECT after it reads
 * the row again: taken, the start is at tat - b * iv; not, at tat - (b - 1) * iv. */
#define SLOT_TAT "GREATEST(COALESCE(next_start_at, NOW(6)), NOW(6))"
#define SLOT_TAKE \
	QUIET "UPDATE %s SET next_start_at = " SLOT_TAT " + INTERVAL @claimd_iv MICROSECOND " \
	"WHERE %s AND @claimd_iv > 0 AND " SLOT_TAT " - INTERVAL (@claimd_b - 1) * @claimd_iv " \
	"MICROSECOND <= NOW(6) + INTERVAL %llu MICROSECOND"
#define SLOT_AFTER \
	"SELECT ROW_COUNT() > 0, COALESCE((SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, " \
	"NOW(6), " SLOT_TAT " - INTERVAL (@claimd_b - IF(ROW_COUNT() > 0, 0, 1)) * " \
	"@claimd_iv MICROSECOND)) FROM %s WHERE %s AND @claimd_iv > 0), 0)"

int store_take_slot(struct store *s, const char *queue, const char *key, unsigned hold_ms,
		    unsigned *ret_wait_ms, char *err, size_t errlen)
{
	int r = sq_check(s, "store_take_slot", NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX], k[2 * STORE_GROUP_KEY_MAX + 3], where[sizeof(q) + sizeof(k) + 64];
	const char *table = key ? "work_groups" : "queues";
	uint64_t taken = 0, us = 0;
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	if (key && strlen(key) > STORE_GROUP_KEY_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_take_slot: a key is at most %d "
				   "bytes", STORE_GROUP_KEY_MAX);
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_reset(s);
	if (key) {
		sq_quote(s->conn, k, key, strlen(key));
		snprintf(where, sizeof(where), "queue = %s AND group_key = %s", q, k);
		sql_add(s, "SET @claimd_iv = 1000 * COALESCE((SELECT interval_ms FROM key_limits "
			"WHERE %s), (SELECT key_interval_ms FROM queues WHERE name = %s), 0), "
			"@claimd_b = GREATEST(1, COALESCE((SELECT burst FROM key_limits WHERE %s), "
			"(SELECT key_burst FROM queues WHERE name = %s), 1))", where, q, where, q);
	} else {
		snprintf(where, sizeof(where), "name = %s", q);
		sql_add(s, "SET @claimd_iv = 1000 * COALESCE((SELECT min_interval_ms FROM queues "
			"WHERE %s), 0), @claimd_b = GREATEST(1, COALESCE((SELECT burst FROM queues "
			"WHERE %s), 1))", where, where);
	}
	sq_end(s);
	sql_add(s, SLOT_TAKE, table, where, (unsigned long long)hold_ms * 1000u);
	sq_end(s);
	sql_add(s, SLOT_AFTER, table, where);
	r = sq_run(s, "store_take_slot", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = row && row[0] && row[1] && sq_parse_u64(row[0], strlen(row[0]), &taken) &&
	    sq_parse_u64(row[1], strlen(row[1]), &us) ? 0 : -EIO;
	mysql_free_result(rr.res);
	if (r < 0)
		return sq_fail_msg(r, err, errlen, "store_take_slot: no slot came back");
	us = (us + 999) / 1000;
	*ret_wait_ms = us > UINT_MAX ? UINT_MAX : (unsigned)us;
	/* No limit (any more): nothing to take, the start is now. */
	return taken || *ret_wait_ms == 0 ? 1 : 0;
}

/* ---- setting ---- */

/* ", col = VALUES(col)" for each column given. */
static void add_updates(struct store *s, const char *const *cols, const bool *given, size_t n)
{
	bool first = true;

	for (size_t i = 0; i < n; i++)
		if (given[i]) {
			sql_add(s, "%s%s = VALUES(%s)", first ? " ON DUPLICATE KEY UPDATE " : ", ",
				cols[i], cols[i]);
			first = false;
		}
}

int store_set_limit(struct store *s, const struct store_limit_set *set, char *err,
		    size_t errlen)
{
	int r = sq_check(s, "store_set_limit", NULL, 0, set->queue, err, errlen);
	char q[QUOTED_QUEUE_MAX], k[2 * STORE_GROUP_KEY_MAX + 3], scope[sizeof(q) + sizeof(k) + 64];
	const bool given[3] = { set->has_concurrency, set->has_interval, set->has_burst };
	struct run rr;

	if (r < 0)
		return r;
	if (set->key && (!*set->key || strlen(set->key) > STORE_GROUP_KEY_MAX))
		return sq_fail_msg(-EINVAL, err, errlen, "store_set_limit: a key is 1..%d bytes",
				   STORE_GROUP_KEY_MAX);
	if ((set->has_burst && set->burst < 1) || (set->has_concurrency && !set->key &&
						  !set->each_key))
		return sq_fail_msg(-EINVAL, err, errlen, "store_set_limit: a burst is at least 1, "
				   "and a concurrency is a key's");
	sq_quote(s->conn, q, set->queue, strlen(set->queue));
	snprintf(scope, sizeof(scope), "queue = %s AND group_live IS NOT NULL", q);
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	if (set->key) {
		static const char *const cols[3] = { "concurrency", "interval_ms", "burst" };
		sq_quote(s->conn, k, set->key, strlen(set->key));
		snprintf(scope, sizeof(scope), "queue = %s AND group_live = %s", q, k);
		sql_add(s, "INSERT INTO key_limits (queue, group_key, concurrency, interval_ms, "
			"burst) VALUES (%s, %s, ", q, k);
		if (set->has_concurrency)
			sql_add(s, "%u, ", set->concurrency);
		else
			sql_add(s, "NULL, ");
		if (set->has_interval)
			sql_add(s, "%u, ", set->interval_ms);
		else
			sql_add(s, "NULL, ");
		if (set->has_burst)
			sql_add(s, "%u)", set->burst);
		else
			sql_add(s, "NULL)");
		add_updates(s, cols, given, 3);
	} else if (set->each_key) {
		static const char *const cols[3] = { "key_concurrency", "key_interval_ms",
						     "key_burst" };
		sql_add(s, "INSERT INTO queues (name, key_concurrency, key_interval_ms, key_burst) "
			"VALUES (%s, %u, %u, %u)", q, set->has_concurrency ? set->concurrency : 1,
			set->has_interval ? set->interval_ms : 0, set->has_burst ? set->burst : 1);
		add_updates(s, cols, given, 3);
	} else {
		static const char *const cols[3] = { "", "min_interval_ms", "burst" };
		sql_add(s, "INSERT INTO queues (name, min_interval_ms, burst) VALUES (%s, %u, %u)", q,
			set->has_interval ? set->interval_ms : 0, set->has_burst ? set->burst : 1);
		add_updates(s, cols, given, 3);
	}
	sq_end(s);
	/* A raised limit of one key starts the rows it makes room for now, under the key's lock
	 * (every key's: the caller's store_group_heal, a chunk of keys at a time). */
	if (set->has_concurrency && set->key) {
		sql_add(s, GROUP_LOCK, scope);
		sq_end(s);
		sql_add(s, GROUP_HEAL, scope);
		sq_end(s);
	}
	sql_add(s, "COMMIT");
	r = sq_run_retry(s, "store_set_limit", &rr, err, errlen);
	return r < 0 ? r : 0;
}

/* ---- reading ---- */

void store_limits_clear(struct store_limits *l)
{
	free(l->keys);
	l->keys = NULL;
	l->nkeys = 0;
}

/* A column that may be NULL (-1) or a number. */
static int64_t nullable(const char *v)
{
	uint64_t x;

	return v && sq_parse_u64(v, strlen(v), &x) && x <= INT64_MAX ? (int64_t)x : -1;
}

int store_limits_get(struct store *s, const char *queue, struct store_limits *ret, char *err,
		     size_t errlen)
{
	int r = sq_check(s, "store_limits_get", NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX];
	MYSQL_ROW row;
	struct run rr;
	size_t n;

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->queue, sizeof(ret->queue), "%s", queue);
	ret->burst = ret->key_concurrency = ret->key_burst = 1;
	if (r < 0)
		return r;
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_reset(s);
	sql_add(s, "SELECT min_interval_ms, burst, key_concurrency, key_interval_ms, key_burst "
		"FROM queues WHERE name = %s", q);
	sq_end(s);
	/* Per key: its own settings, its rows running and waiting their turn (group_idx). */
	sql_add(s, "SELECT k.group_key, k.concurrency, k.interval_ms, k.burst, "
		"(SELECT COUNT(*) FROM work_items FORCE INDEX (group_idx) WHERE queue = k.queue "
		"AND group_live = k.group_key AND state = 'claimed'), "
		"(SELECT COUNT(*) FROM work_items FORCE INDEX (group_idx) WHERE queue = k.queue "
		"AND group_live = k.group_key AND visible_at IS NULL) "
		"FROM key_limits k WHERE k.queue = %s ORDER BY k.group_key LIMIT %u", q,
		STORE_LIMIT_KEYS_MAX);
	r = sq_run(s, "store_limits_get", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (rr.res && (row = mysql_fetch_row(rr.res))) {
		ret->interval_ms = (uint32_t)nullable(row[0]);
		ret->burst = (uint32_t)nullable(row[1]);
		ret->key_concurrency = (uint32_t)nullable(row[2]);
		ret->key_interval_ms = (uint32_t)nullable(row[3]);
		ret->key_burst = (uint32_t)nullable(row[4]);
	}
	n = rr.res2 ? mysql_num_rows(rr.res2) : 0;
	if (n > 0 && !(ret->keys = calloc(n, sizeof(*ret->keys)))) {
		r = sq_fail_msg(-ENOMEM, err, errlen, "store_limits_get: out of memory");
		n = 0;
	}
	for (size_t i = 0; i < n && (row = mysql_fetch_row(rr.res2)); i++) {
		struct store_key_limit *kl = &ret->keys[ret->nkeys++];
		sq_utf8_sanitize(row[0] ? row[0] : "", kl->key, STORE_GROUP_KEY_MAX);
		kl->concurrency = nullable(row[1]);
		kl->interval_ms = nullable(row[2]);
		kl->burst = nullable(row[3]);
		kl->running = (uint64_t)(nullable(row[4]) < 0 ? 0 : nullable(row[4]));
		kl->waiting = (uint64_t)(nullable(row[5]) < 0 ? 0 : nullable(row[5]));
	}
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (r < 0)
		store_limits_clear(ret);
	return r;
}
