/* store_admin — the store's statements outside the claim path: adding rows (with dedupe),
 * queue settings (pause, rate limit and its start slots), dead rows back, counts, and the
 * maintenance passes (pruning done and dead rows, forgetting expired dedupe keys). */
#include "store/store.h"
#include "store/store_browse.h"
#include "store/store_int.h"

#include "common/ctl.h"

#include "common/trace.h"
#include "common/utctime.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int take_counts(MYSQL_RES *res, struct store_count **ret, size_t *ret_n,
		       char *err, size_t errlen)
{
	size_t n = (size_t)mysql_num_rows(res), i;
	struct store_count *c = calloc(n ? n : 1, sizeof(*c));
	MYSQL_ROW row;

	if (!c)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_counts: out of memory");
	for (i = 0; i < n && (row = mysql_fetch_row(res)); i++) {
		if (!row[0] || !row[1] || !sq_parse_u64(row[2], mysql_fetch_lengths(res)[2],
						     &c[i].count)) {
			free(c);
			return sq_fail_msg(-EIO, err, errlen, "store_counts: bad value in the result");
		}
		/* 64 characters can be more bytes than fit: cut on a character boundary. */
		sq_utf8_sanitize(row[0], c[i].queue, STORE_QUEUE_MAX);
		snprintf(c[i].state, sizeof(c[i].state), "%s", row[1]);
	}
	*ret = c;
	*ret_n = i;
	return 0;
}

int store_counts(struct store *s, struct store_count **ret, size_t *ret_n,
		 char *err, size_t errlen)
{
	int r = sq_check(s, "store_counts", NULL, 0, NULL, err, errlen);
	struct run rr;

	if (r < 0)
		return r;
	if (!ret || !ret_n)
		return sq_fail_msg(-EINVAL, err, errlen, "store_counts: bad arguments");
	sq_reset(s);
	sql_add(s, "SELECT queue, state, COUNT(*) FROM work_items GROUP BY queue, state "
		"ORDER BY queue, state");
	r = sq_run(s, "store_counts", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res)
		return sq_fail_msg(-EIO, err, errlen, "store_counts: no result");
	r = take_counts(rr.res, ret, ret_n, err, errlen);
	mysql_free_result(rr.res);
	return r;
}

/* ---- enqueue and maintenance ---- */


static void sql_add_quoted(struct store *s, const char *v, size_t len)
{
	sql_add(s, ", ");
	sq_add_text(s, v, len);
}

/* A run_at (utctime_parse) inside the TIMESTAMP's range into *ret_us; -EINVAL with why. */
static int run_at_us(const char *run_at, int64_t *ret_us, char *err, size_t errlen)
{
	char why[200];
	int64_t us;

	if (utctime_parse(run_at, &us, why, sizeof(why)) < 0)
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: run_at %s", why);
	if (us < UTCTIME_DB_MIN_US || us > UTCTIME_DB_MAX_US)
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: run_at '%.40s' is outside "
				   UTCTIME_DB_RANGE ", the times the database's TIMESTAMP holds",
				   run_at);
	*ret_us = us;
	return 0;
}

/* ", 'YYYY-MM-DD HH:MM:SS.ffffff'": run_at in UTC, as claimd's sessions read it (checked by
 * check_add before). */
static void sql_add_run_at(struct store *s, const char *run_at)
{
	char text[UTCTIME_TEXT_MAX];
	int64_t us = 0;

	(void)run_at_us(run_at, &us, NULL, 0);
	utctime_format(us, text);
	sql_add(s, ", '%s'", text);
}

/* "(queue, payload, run_at, ..., content_type" of one row: without the closing parenthesis,
 * for the dedupe key to follow. */
void sq_add_values(struct store *s, const char *queue, const unsigned char *payload,
		   size_t len, const struct store_add_opts *o)
{
	char q[QUOTED_QUEUE_MAX];

	sq_quote(s->conn, q, queue, strlen(queue));
	sql_add(s, "(%s", q);
	sql_add_quoted(s, (const char *)(payload ? payload : (const unsigned char *)""), len);
	if (o->run_at)
		sql_add_run_at(s, o->run_at);
	else if (o->delay_ms)
		sql_add(s, ", NOW(6) + INTERVAL %llu MICROSECOND", (unsigned long long)o->delay_ms * 1000u);
	else
		sql_add(s, ", DEFAULT");
	if (o->period_s >= 0)
		sql_add(s, ", %ld", o->period_s);
	else
		sql_add(s, ", DEFAULT");
	if (o->max_attempts)
		sql_add(s, ", %u", o->max_attempts);
	else
		sql_add(s, ", DEFAULT");
	if (o->timeout_s)
		sql_add(s, ", %u", o->timeout_s);
	else
		sql_add(s, ", DEFAULT");
	sql_add(s, ", %d", o->priority);
	sql_add_quoted(s, o->group_key, o->group_key ? strlen(o->group_key) : 0);
	sql_add_quoted(s, o->content_type, o->content_type ? strlen(o->content_type) : 0);
	sql_add_quoted(s, o->traceparent, o->traceparent ? strlen(o->traceparent) : 0);
	if (o->retry_base_ms)
		sql_add(s, ", %u", o->retry_base_ms);
	else
		sql_add(s, ", DEFAULT");
	if (o->retry_max_ms)
		sql_add(s, ", %u", o->retry_max_ms);
	else
		sql_add(s, ", DEFAULT");
	if (o->dedupe_for_set)
		sql_add(s, ", %u", o->dedupe_for_s);
	else
		sql_add(s, ", DEFAULT");
}

void sq_add_dedupe_row(struct store *s, const char *queue, const unsigned char *payload,
		       size_t len, const struct store_add_opts *o)
{
	char q[QUOTED_QUEUE_MAX], k[2 * STORE_DEDUPE_KEY_MAX + 3];

	/* A key whose window has passed is free now, not at the next maintenance pass. */
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_quote(s->conn, k, o->dedupe_key, strlen(o->dedupe_key));
	sql_add(s, "UPDATE work_items SET dedupe_key = NULL, dedupe_until = NULL "
		"WHERE queue = %s AND dedupe_key = %s AND dedupe_until < NOW(6)", q, k);
	sq_end(s);
	sql_add(s, "SET @claimd_dup = 0");
	sq_end(s);
	sql_add(s, "INSERT INTO work_items " ADD_COLUMNS ", dedupe_key) VALUES ");
	sq_add_values(s, queue, payload, len, o);
	sql_add(s, ", %s) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id) + 0 * (@claimd_dup := 1)",
		k);
	sq_end(s);
}

void store_add_opts_from(const struct ctl_request *q, struct store_add_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->run_at = ctl_has(q, CTL_F_RUN_AT) ? q->run_at : NULL;
	o->delay_ms = q->delay_ms;
	o->period_s = ctl_has(q, CTL_F_PERIOD) ? (long)(q->period_ms / 1000u) : -1;
	o->max_attempts = q->max_attempts;
	o->timeout_s = (unsigned)(((uint64_t)q->timeout_ms + 999) / 1000);
	o->dedupe_key = ctl_has(q, CTL_F_DEDUPE) ? q->dedupe : NULL;
	o->priority = q->priority;
	o->group_key = ctl_has(q, CTL_F_GROUP) ? q->group : NULL;
	o->content_type = ctl_has(q, CTL_F_CONTENT_TYPE) ? q->content_type : NULL;
	o->traceparent = ctl_has(q, CTL_F_TRACEPARENT) ? q->traceparent : NULL;
	o->retry_base_ms = ctl_has(q, CTL_F_RETRY_BASE) ? q->retry_base_ms : 0;
	o->retry_max_ms = ctl_has(q, CTL_F_RETRY_MAX) ? q->retry_max_ms : 0;
	o->dedupe_for_set = ctl_has(q, CTL_F_DEDUPE_FOR);
	o->dedupe_for_s = (unsigned)(((uint64_t)q->dedupe_for_ms + 999) / 1000);
}

struct store_add_row store_add_row_from(const struct ctl_request *q, struct store_add_opts *o)
{
	store_add_opts_from(q, o);
	return (struct store_add_row){ .queue = q->queue, .payload = q->payload,
				       .len = q->payload_len, .opts = o };
}

int sq_check_add(const char *queue, size_t len, const struct store_add_opts *o, char *err,
		 size_t errlen)
{
	int64_t us;

	if (!queue || !*queue || strlen(queue) > STORE_QUEUE_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: queue name must be 1..%d bytes",
				   STORE_QUEUE_MAX);
	if (len > STORE_PAYLOAD_MAX)
		return sq_fail_msg(-EMSGSIZE, err, errlen, "store_add: payload of %zu bytes is over "
				"the %u byte limit", len, STORE_PAYLOAD_MAX);
	if ((o->dedupe_key && strlen(o->dedupe_key) > STORE_DEDUPE_KEY_MAX) ||
	    (o->group_key && strlen(o->group_key) > STORE_GROUP_KEY_MAX) ||
	    (o->run_at && strlen(o->run_at) > 64) ||
	    (o->content_type && strlen(o->content_type) > STORE_TYPE_MAX))
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: dedupe key, group key, run_at "
				"or content type too long");
	if (o->traceparent && !trace_parent_valid(o->traceparent))
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: traceparent is not a W3C "
				   "traceparent");
	if (o->priority < STORE_PRIORITY_MIN || o->priority > STORE_PRIORITY_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: priority %d is out of range",
				o->priority);
	if (o->retry_base_ms > STORE_BACKOFF_MAX_MS || o->retry_max_ms > STORE_BACKOFF_MAX_MS ||
	    (o->retry_max_ms && o->retry_max_ms < o->retry_base_ms))
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: retry back-off out of range "
				   "(1 ms to 7 days, the max not below the base)");
	if (o->dedupe_for_set && o->dedupe_for_s > STORE_DEDUPE_FOR_MAX_S)
		return sq_fail_msg(-EINVAL, err, errlen, "store_add: dedupe_for is over %u s",
				   STORE_DEDUPE_FOR_MAX_S);
	if (o->run_at)
		return run_at_us(o->run_at, &us, err, errlen);
	return 0;
}

int store_add(struct store *s, const char *queue, const unsigned char *payload, size_t len,
	      const struct store_add_opts *opts, uint64_t *ret_id, char *err, size_t errlen)
{
	static const struct store_add_opts none = { .period_s = -1 };
	const struct store_add_opts *o = opts ? opts : &none;
	int r = sq_check(s, "store_add", NULL, 0, queue ? queue : "", err, errlen);
	MYSQL_ROW row;
	struct run rr;
	uint64_t id;

	if (r < 0 || (r = sq_check_add(queue, len, o, err, errlen)) < 0)
		return r;
	sq_reset(s);
	if (o->dedupe_key) {
		sq_add_dedupe_row(s, queue, payload, len, o);
		sql_add(s, "SELECT @claimd_dup, LAST_INSERT_ID()");
	} else {
		sql_add(s, "INSERT INTO work_items " ADD_COLUMNS ") VALUES ");
		sq_add_values(s, queue, payload, len, o);
		sql_add(s, ") RETURNING 0, id");
	}
	r = sq_run(s, "store_add", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = row && row[0] && row[1] && sq_parse_u64(row[1], strlen(row[1]), &id) && id > 0 ?
	    row[0][0] == '1' : -EIO;
	mysql_free_result(rr.res);
	if (r < 0)
		return sq_fail_msg(r, err, errlen, "store_add: no id came back");
	*ret_id = id;
	return r;
}

/* Reads "dup:id,dup:id,..." (n of them) into rows. */
static int take_ids(const char *p, struct store_add_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *end;
		if ((p[0] != '0' && p[0] != '1') || p[1] != ':')
			return -EIO;
		rows[i].duplicate = p[0] == '1';
		rows[i].id = strtoull(p + 2, &end, 10);
		if (end == p + 2 || *end != ',' || rows[i].id == 0)
			return -EIO;
		p = end + 1;
	}
	return *p ? -EIO : 0;
}

int store_add_many(struct store *s, struct store_add_row *rows, size_t n, char *err,
		   size_t errlen)
{
	static const struct store_add_opts none = { .period_s = -1 };
	int r = sq_check(s, "store_add_many", NULL, 0, NULL, err, errlen);
	size_t plain = 0, keyed = 0;
	MYSQL_RES *ids = NULL, *keys = NULL;
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &none;
		rows[i].rc = sq_check_add(rows[i].queue, rows[i].len, o, rows[i].err,
				       sizeof(rows[i].err));
		if (rows[i].rc == 0)
			o->dedupe_key ? keyed++ : plain++;
	}
	if (plain + keyed == 0)
		return 0;
	/* One transaction: the rows without a dedupe key in one multi-row INSERT whose
	 * RETURNING gives their ids in order (alone, one statement and one round trip); each row
	 * with a key as store_add writes it, its dup flag and id appended to a session variable
	 * read at the end (a statement and a round trip each, without multi-statements). */
	sq_reset(s);
	if (keyed) {
		sql_add(s, "START TRANSACTION");
		sq_end(s);
	}
	if (plain) {
		bool first = true;
		sql_add(s, "INSERT INTO work_items " ADD_COLUMNS ") VALUES ");
		for (size_t i = 0; i < n; i++) {
			const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &none;
			if (rows[i].rc < 0 || o->dedupe_key)
				continue;
			if (!first)
				sql_add(s, ",");
			sq_add_values(s, rows[i].queue, rows[i].payload, rows[i].len, o);
			sql_add(s, ")");
			first = false;
		}
		sql_add(s, " RETURNING id");
	}
	if (keyed) {
		if (plain)
			sq_end(s);
		sql_add(s, "SET @claimd_ids = ''");
		sq_end(s);
		for (size_t i = 0; i < n; i++) {
			const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &none;
			if (rows[i].rc < 0 || !o->dedupe_key)
				continue;
			sq_add_dedupe_row(s, rows[i].queue, rows[i].payload, rows[i].len, o);
			sql_add(s, "SET @claimd_ids = CONCAT(@claimd_ids, @claimd_dup, ':', "
				"LAST_INSERT_ID(), ',')");
			sq_end(s);
		}
		sql_add(s, "COMMIT");
		sq_end(s);
		sql_add(s, "SELECT @claimd_ids");
	}
	r = sq_run_retry(s, "store_add_many", &rr, err, errlen);
	if (r < 0)
		return r;
	ids = plain ? rr.res : NULL;
	keys = keyed ? (plain ? rr.res2 : rr.res) : NULL;
	r = (plain && (!ids || mysql_num_rows(ids) != plain)) || (keyed && !keys) ? -EIO : 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &none;
		if (rows[i].rc < 0 || o->dedupe_key)
			continue;
		row = mysql_fetch_row(ids);
		if (!row || !row[0] || !sq_parse_u64(row[0], strlen(row[0]), &rows[i].id))
			r = -EIO;
		rows[i].duplicate = false;
	}
	if (r == 0 && keyed) {
		struct store_add_row *got = malloc(keyed * sizeof(*got));
		row = mysql_fetch_row(keys);
		r = !got ? -ENOMEM : row && row[0] ? take_ids(row[0], got, keyed) : -EIO;
		for (size_t i = 0, j = 0; r == 0 && i < n; i++) {
			const struct store_add_opts *o = rows[i].opts ? rows[i].opts : &none;
			if (rows[i].rc < 0 || !o->dedupe_key)
				continue;
			rows[i].id = got[j].id;
			rows[i].duplicate = got[j++].duplicate;
			rows[i].rc = rows[i].duplicate;
		}
		free(got);
	}
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (r < 0)
		return sq_fail_msg(r, err, errlen, "store_add_many: the ids did not come back");
	return 0;
}

/* Runs the statement built and returns how many rows it changed (capped to INT32_MAX), or a
 * negative error. */
static int run_count(struct store *s, const char *op, char *err, size_t errlen)
{
	struct run rr;
	int r = sq_run(s, op, &rr, err, errlen);

	if (r < 0)
		return sq_final(r);
	return rr.rows[0] > INT32_MAX ? INT32_MAX : (int)rr.rows[0];
}

int store_dedupe_expire(struct store *s, unsigned limit, char *err, size_t errlen)
{
	int r = sq_check(s, "store_dedupe_expire", NULL, 0, NULL, err, errlen);

	if (r < 0)
		return r;
	sq_reset(s);
	sql_add(s, QUIET "UPDATE work_items SET dedupe_key = NULL, dedupe_until = NULL "
		"WHERE dedupe_until < NOW(6) LIMIT %u", limit ? limit : 1);
	return run_count(s, "store_dedupe_expire", err, errlen);
}

int store_retry_dead(struct store *s, uint64_t id, char *err, size_t errlen)
{
	int r = sq_check(s, "store_retry_dead", NULL, 0, NULL, err, errlen);
	char which[64];
	unsigned long long put = 0, doomed = 0, doomed_id = 0, root = 0;
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	snprintf(which, sizeof(which), "state = 'dead' AND id = %llu", (unsigned long long)id);
	/* A grouped row goes back parked, behind its group's running row if there is one; if
	 * there is none, the oldest live row of the group starts (GROUP_HEAL). */
	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sql_add(s, GROUP_LOCK, which);
	sq_end(s);
	sq_add_heal_keys(s, which);
	sq_add_put_back(s, which);
	sql_add(s, GROUP_HEAL, HEAL_SCOPE);
	sq_end(s);
	sql_add(s, PUT_BACK_RESULT);
	sq_end(s);
	sql_add(s, "COMMIT");
	r = sq_run_retry(s, "store_retry_dead", &rr, err, errlen);
	if (r < 0)
		return r;
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0] && row[1]) {
		put = strtoull(row[0], NULL, 10);
		doomed = strtoull(row[1], NULL, 10);
		if (row[2] && sscanf(row[2], "%llu %llu", &doomed_id, &root) != 2)
			doomed_id = 0;
	}
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (!row)
		return sq_fail_msg(-EIO, err, errlen, "store_retry_dead: no result");
	if (doomed && doomed_id == id)
		return sq_fail_msg(-ENOLINK, err, errlen, "row %llu waits for row %llu, which is "
				   "dead: retry row %llu, and row %llu comes back with it",
				   (unsigned long long)id, root, root, (unsigned long long)id);
	return put > INT32_MAX ? INT32_MAX : (int)put;
}

int store_group_heal(struct store *s, const char *queue, const char *after, char *ret_last,
		     char *err, size_t errlen)
{
	int r = sq_check(s, "store_group_heal", NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX], a[2 * STORE_GROUP_KEY_MAX + 3];
	struct buf keys;
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	struct run rr;
	size_t n = 0, sick = 0;

	if (r < 0)
		return r;
	if (strlen(after) > STORE_GROUP_KEY_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "store_group_heal: a key is at most %d bytes",
				   STORE_GROUP_KEY_MAX);
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_quote(s->conn, a, after, strlen(after));
	ret_last[0] = '\0';   /* after it is read: ret_last may be after */
	sq_reset(s);
	sql_add(s, HEAL_KEYS, q, q, a, STORE_HEAL_KEYS, q, q);
	r = sq_run(s, "store_group_heal", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	res = rr.res;
	buf_init(&keys);
	while (res && (row = mysql_fetch_row(res)) && row[0]) {
		unsigned long *len = mysql_fetch_lengths(res);
		snprintf(ret_last, STORE_GROUP_KEY_MAX + 1, "%.*s", (int)len[0], row[0]);
		n++;
		if (!row[1] || strcmp(row[1], "1") != 0)
			continue;
		char k[2 * STORE_GROUP_KEY_MAX + 3];
		sq_quote(s->conn, k, row[0], len[0] > STORE_GROUP_KEY_MAX ? STORE_GROUP_KEY_MAX : len[0]);
		buf_printf(&keys, "%s%s", sick++ ? ", " : "", k);
	}
	mysql_free_result(res);
	if (n < STORE_HEAL_KEYS)
		ret_last[0] = '\0';   /* the last chunk */
	if (buf_failed(&keys)) {
		buf_free(&keys);
		return sq_fail_msg(-ENOMEM, err, errlen, "store_group_heal: out of memory");
	}
	r = 0;
	if (sick > 0) {
		char *scope = malloc(keys.len + sizeof(q) + 64);
		if (!scope) {
			buf_free(&keys);
			return sq_fail_msg(-ENOMEM, err, errlen, "store_group_heal: out of memory");
		}
		sprintf(scope, "queue = %s AND group_live IN (%s)", q, keys.data);
		sq_reset(s);
		sql_add(s, GROUP_HEAL, scope);
		free(scope);
		r = run_count(s, "store_group_heal", err, errlen);
	}
	buf_free(&keys);
	return r;
}

int store_paused(struct store *s, const char *queue, char *err, size_t errlen)
{
	int r = sq_check(s, "store_paused", NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX];
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_reset(s);
	sql_add(s, "SELECT paused FROM queues WHERE name = %s", q);
	r = sq_run(s, "store_paused", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = row && row[0] && strcmp(row[0], "0") != 0;
	mysql_free_result(rr.res);
	return r;
}

/* One column of queue's row in queues, created with the defaults if it is missing. column
 * is one of ours, never user input. */
static int set_queue_setting(struct store *s, const char *op, const char *queue,
			     const char *column, unsigned value, char *err, size_t errlen)
{
	int r = sq_check(s, op, NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX];
	struct run rr;

	if (r < 0)
		return r;
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_reset(s);
	sql_add(s, "INSERT INTO queues (name, %s) VALUES (%s, %u) "
		"ON DUPLICATE KEY UPDATE %s = VALUES(%s)", column, q, value, column, column);
	r = sq_run(s, op, &rr, err, errlen);
	return r < 0 ? sq_final(r) : 0;
}

int store_set_paused(struct store *s, const char *queue, bool paused, char *err, size_t errlen)
{
	return set_queue_setting(s, "store_set_paused", queue, "paused", paused, err, errlen);
}

/* ", value" or ", NULL". */
static void sql_add_setting(struct store *s, bool set, long value)
{
	if (set)
		sql_add(s, ", %ld", value);
	else
		sql_add(s, ", NULL");
}

int store_set_backoff(struct store *s, const char *queue, const struct store_backoff *b,
		      unsigned set, struct store_backoff *ret, char *err, size_t errlen)
{
	static const char *const cols[3] = { "retry_base_ms", "retry_max_ms", "retry_jitter_pct" };
	int r = sq_check(s, "store_set_backoff", NULL, 0, queue, err, errlen);
	char q[QUOTED_QUEUE_MAX];
	bool first = true;
	MYSQL_ROW row;
	struct run rr;

	if (r < 0)
		return r;
	if (!b || !ret || !(set & 7))
		return sq_fail_msg(-EINVAL, err, errlen, "store_set_backoff: bad arguments");
	sq_quote(s->conn, q, queue, strlen(queue));
	sq_reset(s);
	sql_add(s, "INSERT INTO queues (name, retry_base_ms, retry_max_ms, retry_jitter_pct) "
		"VALUES (%s", q);
	sql_add_setting(s, (set & STORE_BACKOFF_BASE) && b->base_ms > 0, (long)b->base_ms);
	sql_add_setting(s, (set & STORE_BACKOFF_MAX) && b->max_ms > 0, (long)b->max_ms);
	/* A jitter of 0 is a setting (exact waits): only -1 is none. */
	sql_add_setting(s, (set & STORE_BACKOFF_JITTER) && b->jitter_pct >= 0, b->jitter_pct);
	sql_add(s, ") ON DUPLICATE KEY UPDATE ");
	for (int i = 0; i < 3; i++)
		if (set & (1u << i)) {
			sql_add(s, "%s%s = VALUES(%s)", first ? "" : ", ", cols[i], cols[i]);
			first = false;
		}
	sq_end(s);
	sql_add(s, "SELECT IFNULL(retry_base_ms, 0), IFNULL(retry_max_ms, 0), "
		"IFNULL(retry_jitter_pct, -1) FROM queues WHERE name = %s", q);
	r = sq_run(s, "store_set_backoff", &rr, err, errlen);
	if (r == -EDOM && !strncmp(err, "retry_max_range", 15))
		snprintf(err, errlen, "retry_max_range: queue '%.64s': the maximum would be below "
			 "the base (retry_max_ms < retry_base_ms), or out of range", queue);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = row && row[0] && row[1] && row[2] ? 0 : -EIO;
	if (r == 0) {
		ret->base_ms = (uint32_t)strtoul(row[0], NULL, 10);
		ret->max_ms = (uint32_t)strtoul(row[1], NULL, 10);
		ret->jitter_pct = atoi(row[2]);
	}
	mysql_free_result(rr.res);
	return r < 0 ? sq_fail_msg(r, err, errlen, "store_set_backoff: no settings came back") : 0;
}

int store_prune(struct store *s, unsigned keep_done_s, unsigned keep_dead_s, uint64_t from,
		unsigned span, uint64_t *ret_next, char *err, size_t errlen)
{
	unsigned long long a = (unsigned long long)from, b = a + (span ? span : 1);
	unsigned keep = keep_done_s && (!keep_dead_s || keep_done_s < keep_dead_s) ?
			keep_done_s : keep_dead_s;
	char which[2 * sizeof(PRUNE_DONE) + 32] = "";
	MYSQL_ROW row;
	struct run rr;
	int r = sq_check(s, "store_prune", NULL, 0, NULL, err, errlen);

	*ret_next = 0;
	if (r < 0)
		return r;
	if (!keep)
		return sq_fail_msg(-EINVAL, err, errlen, "store_prune: no window: nothing to prune");
	if (keep_done_s)
		snprintf(which, sizeof(which), PRUNE_DONE, keep_done_s);
	if (keep_dead_s)
		snprintf(which + strlen(which), sizeof(which) - strlen(which), "%s" PRUNE_DEAD,
			 *which ? ") OR (" : "", keep_dead_s);
	sq_reset(s);
	/* The election first: only the session holding the prune lock deletes and sweeps on.
	 * Lock names are server-wide, hence the database's name in it; IS_USED_LOCK first, as
	 * taking a lock this session holds would nest it. Then the span by primary key, and the
	 * row after it: a row created less than the shorter window ago cannot have finished
	 * earlier, and ids grow with creation time, so the sweep ends there. The span's rows'
	 * edges to the rows that waited for them go with them (by work_deps' primary key): a
	 * dead row's children were cancelled or counted off when it died, as a done row's were
	 * when it completed, so none waits for a row that goes. */
	sql_add(s, PRUNE_ELECT);
	sq_end(s);
	sql_add(s, PRUNE_SPAN, a, b, which, keep);
	sq_end(s);
	sql_add(s, PRUNE_EDGES, a, b);
	sq_end(s);
	sql_add(s, PRUNE_ERRORS, a, b);
	sq_end(s);
	sql_add(s, PRUNE_NEXT, keep, b);
	r = sq_run(s, "store_prune", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (row && row[0] && row[1] && strcmp(row[1], "1") == 0)
		*ret_next = strtoull(row[0], NULL, 10);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	return rr.rows[1] > INT32_MAX ? INT32_MAX : (int)rr.rows[1];
}

int store_prune_groups(struct store *s, unsigned keep_s, unsigned limit, char *err,
		       size_t errlen)
{
	int r = sq_check(s, "store_prune_groups", NULL, 0, NULL, err, errlen);

	if (r < 0)
		return r;
	sq_reset(s);
	/* A racing insert into the group holds the row locked: the DELETE waits for it and then
	 * sees its new updated_at. */
	sql_add(s, "DELETE FROM work_groups WHERE updated_at < NOW(6) - INTERVAL %u SECOND "
		"AND NOT EXISTS (SELECT 1 FROM work_items FORCE INDEX (group_idx) "
		"WHERE work_items.queue = work_groups.queue AND "
		"work_items.group_live = work_groups.group_key) "
		"AND IF(IS_USED_LOCK(" PRUNE_LOCK ") = CONNECTION_ID(), 1, "
		"GET_LOCK(" PRUNE_LOCK ", 0)) = 1 ORDER BY updated_at LIMIT %u", keep_s,
		limit ? limit : 1);
	return run_count(s, "store_prune_groups", err, errlen);
}
