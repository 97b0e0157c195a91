/* store_schedules — the schedules table: written by claimctl and the HTTP API (or plain SQL),
 * read by operators, and fired by every supervisor (store_schedule_fire). Exactly one row per
 * tick: the transaction that adds a tick's rows holds the schedule's row (FOR UPDATE SKIP
 * LOCKED, a supervisor that finds it locked passes on) and moves its next_tick_at past them
 * before it commits; under Galera, where locks are per node, the second of two such
 * transactions fails its certification (a deadlock to the client), is retried, and finds the
 * tick gone. */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS_LAST_S 2147483647LL   /* the last second a TIMESTAMP holds */
/* catch_up one or none: how many missed ticks are counted one by one before the schedule
 * simply goes on from now */
#define COUNT_MISSED_MAX 100000

const char *const store_catch_up_names[STORE_CATCH_UP_COUNT] = {
	[STORE_CATCH_UP_ONE] = "one",
	[STORE_CATCH_UP_ALL] = "all",
	[STORE_CATCH_UP_NONE] = "none",
};

#define SCHEDULE_COLUMNS \
	"name, cron, time_zone, queue, LEFT(payload, " STR(STORE_PREVIEW_MAX) "), " \
	"LENGTH(payload), content_type, group_key, priority, max_attempts, timeout_s, " \
	"catch_up + 0, paused, " UTC_TEXT("next_tick_at") ", " UTC_TEXT("last_tick_at") ", " \
	UTC_TEXT("created_at") ", " UTC_TEXT("updated_at") ", last_item_id, ticks, error"
#define SCHEDULE_NCOLUMNS 20
#define STR_(x) #x
#define STR(x) STR_(x)

static int check_name(const char *op, const char *name, char *err, size_t errlen)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > STORE_SCHEDULE_NAME_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: a schedule's name is 1..%d bytes", op,
				   STORE_SCHEDULE_NAME_MAX);
	return 0;
}

int store_schedule_put(struct store *s, const struct store_schedule_def *d, char *err,
		       size_t errlen)
{
	int r = sq_check(s, "store_schedule_put", NULL, 0, d && d->queue ? d->queue : "default",
			 err, errlen);
	struct run rr;

	if (r < 0 || (r = check_name("store_schedule_put", d->name, err, errlen)) < 0)
		return r;
	if (!d->cron || strlen(d->cron) > STORE_CRON_MAX ||
	    (d->time_zone && strlen(d->time_zone) > STORE_ZONE_MAX) ||
	    d->len > STORE_PAYLOAD_MAX || (unsigned)d->catch_up >= STORE_CATCH_UP_COUNT)
		return sq_fail_msg(-EINVAL, err, errlen, "store_schedule_put: bad arguments");
	sq_reset(s);
	sql_add(s, "INSERT INTO schedules (name, cron, time_zone, queue, payload, content_type, "
		"group_key, priority, max_attempts, timeout_s, catch_up, paused) VALUES (");
	sq_add_text(s, d->name, strlen(d->name));
	sql_add(s, ", ");
	sq_add_text(s, d->cron, strlen(d->cron));
	sql_add(s, ", ");
	sq_add_text(s, d->time_zone ? d->time_zone : "UTC", strlen(d->time_zone ? d->time_zone : "UTC"));
	sql_add(s, ", ");
	sq_add_text(s, d->queue ? d->queue : "default", strlen(d->queue ? d->queue : "default"));
	sql_add(s, ", ");
	sq_add_text(s, (const char *)d->payload, d->len);
	sql_add(s, ", ");
	sq_add_text(s, d->content_type, d->content_type ? strlen(d->content_type) : 0);
	sql_add(s, ", ");
	sq_add_text(s, d->group_key, d->group_key ? strlen(d->group_key) : 0);
	sql_add(s, ", %d, %u, ", d->priority, d->max_attempts ? d->max_attempts : 5);
	if (d->timeout_s)
		sql_add(s, "%u", d->timeout_s);
	else
		sql_add(s, "NULL");
	sql_add(s, ", '%s', %d) ON DUPLICATE KEY UPDATE cron = VALUES(cron), "
		"time_zone = VALUES(time_zone), queue = VALUES(queue), payload = VALUES(payload), "
		"content_type = VALUES(content_type), group_key = VALUES(group_key), "
		"priority = VALUES(priority), max_attempts = VALUES(max_attempts), "
		"timeout_s = VALUES(timeout_s), catch_up = VALUES(catch_up), "
		"paused = VALUES(paused)", store_catch_up_names[d->catch_up], d->paused ? 1 : 0);
	if (buf_failed(&s->sql))
		return sq_fail_msg(-ENOMEM, err, errlen, "store_schedule_put: out of memory");
	r = sq_run(s, "store_schedule_put", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	/* 1 row: inserted; 2: updated; 0: updated to what it was */
	return rr.rows[0] == 1 ? 0 : 1;
}

/* Runs "<verb> ... WHERE name = <name>" (verb: everything before the name), then whether
 * the schedule is (or was) there. */
static int by_name(struct store *s, const char *op, const char *name, const char *verb,
		   char *err, size_t errlen)
{
	char q[2 * STORE_SCHEDULE_NAME_MAX + 3];
	struct run rr;
	MYSQL_ROW row;
	int r = sq_check(s, op, NULL, 0, NULL, err, errlen);

	if (r < 0 || (r = check_name(op, name, err, errlen)) < 0)
		return r;
	sq_quote(s->conn, q, name, strlen(name));
	sq_reset(s);
	sql_add(s, "%s WHERE name = %s", verb, q);
	sq_end(s);
	sql_add(s, "SELECT ROW_COUNT() > 0 OR EXISTS (SELECT 1 FROM schedules WHERE name = %s)",
		q);
	r = sq_run_retry(s, op, &rr, err, errlen);
	if (r < 0)
		return r;
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	r = row && row[0] ? row[0][0] == '1' : -EIO;
	mysql_free_result(rr.res);
	return r < 0 ? sq_fail_msg(r, err, errlen, "%s: no answer", op) : r;
}

int store_schedule_delete(struct store *s, const char *name, char *err, size_t errlen)
{
	return by_name(s, "store_schedule_delete", name, "DELETE FROM schedules", err, errlen);
}

int store_schedule_set_paused(struct store *s, const char *name, bool paused, char *err,
			      size_t errlen)
{
	return by_name(s, "store_schedule_set_paused", name, paused ?
		       "UPDATE schedules SET paused = 1" : "UPDATE schedules SET paused = 0", err,
		       errlen);
}

static void text(char *dst, size_t cap, const char *src)
{
	if (!src)
		dst[0] = '\0';
	else
		sq_utf8_sanitize(src, dst, cap - 1);
}

static uint64_t u64_or_0(const char *p, unsigned long len)
{
	uint64_t v;

	return p && sq_parse_u64(p, len, &v) ? v : 0;
}

static int take_schedule(MYSQL_ROW row, unsigned long *len, struct store_schedule *c)
{
	unsigned k;

	memset(c, 0, sizeof(*c));
	text(c->name, sizeof(c->name), row[0]);
	text(c->cron, sizeof(c->cron), row[1]);
	text(c->time_zone, sizeof(c->time_zone), row[2]);
	text(c->queue, sizeof(c->queue), row[3]);
	c->payload_null = !row[4];
	text(c->payload, sizeof(c->payload), row[4]);
	c->payload_len = (size_t)u64_or_0(row[5], len[5]);
	text(c->content_type, sizeof(c->content_type), row[6]);
	text(c->group_key, sizeof(c->group_key), row[7]);
	c->priority = row[8] ? atoi(row[8]) : 0;
	c->max_attempts = (unsigned)u64_or_0(row[9], len[9]);
	c->timeout_s = (unsigned)u64_or_0(row[10], len[10]);
	k = (unsigned)u64_or_0(row[11], len[11]);   /* the ENUM's index, from 1 */
	if (k < 1 || k > STORE_CATCH_UP_COUNT)
		return -EIO;
	c->catch_up = (enum store_catch_up)(k - 1);
	c->paused = row[12] && row[12][0] == '1';
	text(c->next_tick_at, sizeof(c->next_tick_at), row[13]);
	text(c->last_tick_at, sizeof(c->last_tick_at), row[14]);
	text(c->created_at, sizeof(c->created_at), row[15]);
	text(c->updated_at, sizeof(c->updated_at), row[16]);
	c->last_item_id = u64_or_0(row[17], len[17]);
	c->ticks = u64_or_0(row[18], len[18]);
	text(c->error, sizeof(c->error), row[19]);
	return 0;
}

int store_schedules(struct store *s, const char *name, const char *after, unsigned limit,
		    struct store_schedule **ret, size_t *ret_n, char *err, size_t errlen)
{
	char q[2 * STORE_SCHEDULE_NAME_MAX + 3];
	struct store_schedule *out;
	struct run rr;
	MYSQL_ROW row;
	size_t n = 0;
	int r = sq_check(s, "store_schedules", NULL, 0, NULL, err, errlen);

	if (r < 0 || (name && (r = check_name("store_schedules", name, err, errlen)) < 0) ||
	    (after && (r = check_name("store_schedules", after, err, errlen)) < 0))
		return r;
	sq_reset(s);
	sql_add(s, "SELECT " SCHEDULE_COLUMNS " FROM schedules");
	if (name) {
		sq_quote(s->conn, q, name, strlen(name));
		sql_add(s, " WHERE name = %s", q);
	} else if (after) {
		sq_quote(s->conn, q, after, strlen(after));
		sql_add(s, " WHERE name > %s", q);
	}
	sql_add(s, " ORDER BY name");
	if (!name && limit)
		sql_add(s, " LIMIT %u", limit);
	r = sq_run(s, "store_schedules", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	if (!rr.res || mysql_num_fields(rr.res) != SCHEDULE_NCOLUMNS) {
		mysql_free_result(rr.res);
		return sq_fail_msg(-EIO, err, errlen, "store_schedules: no result");
	}
	out = calloc(mysql_num_rows(rr.res) + 1, sizeof(*out));
	r = out ? 0 : -ENOMEM;
	while (r == 0 && (row = mysql_fetch_row(rr.res)))
		r = take_schedule(row, mysql_fetch_lengths(rr.res), &out[n++]);
	mysql_free_result(rr.res);
	if (r < 0) {
		free(out);
		return sq_fail_msg(r, err, errlen, "store_schedules: %s",
				   r == -ENOMEM ? "out of memory" : "bad value in the result");
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

/* ---- firing ---- */

/* A due schedule, as its locked row has it. */
struct due {
	char q[2 * STORE_SCHEDULE_NAME_MAX + 3];   /* its name, quoted */
	char cron[STORE_CRON_MAX + 1], zone[STORE_ZONE_MAX + 1];
	enum store_catch_up catch_up;
	bool unread;            /* next_tick_at NULL */
	int64_t tick, now;      /* next_tick_at, NOW(6), whole seconds */
};

static bool parse_i64(const char *p, int64_t *ret)
{
	char *end;
	long long v;

	if (!p)
		return false;
	v = strtoll(p, &end, 10);
	if (end == p || (*end && *end != '.'))
		return false;
	*ret = v;
	return true;
}

/* " AND name NOT IN (...)" for the schedules that wait (skip, their quoted names, comma
 * separated), or nothing. */
static void add_skip(struct store *s, const struct buf *skip)
{
	if (skip->len)
		sql_add(s, " AND name NOT IN (%s)", skip->data);
}

/* Lock the first due schedule, not one of skip. Returns 1 (in a transaction), 0 (none due,
 * no transaction), or a negative error. */
static int lock_due(struct store *s, const struct buf *skip, struct due *d, char *err,
		    size_t errlen)
{
	struct run rr;
	MYSQL_ROW row;
	unsigned long *len;
	int r;

	sq_reset(s);
	sql_add(s, "START TRANSACTION");
	sq_end(s);
	sql_add(s, "SELECT name, cron, time_zone, catch_up + 0, UNIX_TIMESTAMP(next_tick_at), "
		"UNIX_TIMESTAMP(NOW(6)) FROM schedules WHERE paused = 0 AND error IS NULL AND "
		"(next_tick_at IS NULL OR next_tick_at <= NOW(6))");
	add_skip(s, skip);
	sql_add(s, " ORDER BY next_tick_at LIMIT 1 FOR UPDATE SKIP LOCKED");
	r = sq_run(s, "store_schedule_fire", &rr, err, errlen);
	if (r < 0) {
		sq_abort(s);
		return r;
	}
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	if (!row) {
		mysql_free_result(rr.res);
		sq_abort(s);   /* nothing locked: the transaction ends */
		return 0;
	}
	len = mysql_fetch_lengths(rr.res);
	sq_quote(s->conn, d->q, row[0], len[0] < STORE_SCHEDULE_NAME_MAX ? len[0] :
		 STORE_SCHEDULE_NAME_MAX);
	text(d->cron, sizeof(d->cron), row[1]);
	text(d->zone, sizeof(d->zone), row[2]);
	d->catch_up = (enum store_catch_up)((row[3] ? atoi(row[3]) : 1) - 1);
	if ((unsigned)d->catch_up >= STORE_CATCH_UP_COUNT)
		d->catch_up = STORE_CATCH_UP_ONE;
	d->unread = !row[4];
	r = (d->unread || parse_i64(row[4], &d->tick)) && parse_i64(row[5], &d->now) ? 1 : -EIO;
	mysql_free_result(rr.res);
	if (r < 0) {
		sq_abort(s);
		return sq_fail_msg(r, err, errlen, "store_schedule_fire: bad value in the result");
	}
	return 1;
}

/* Ends the locked schedule's transaction with the update in s->sql. */
static int commit(struct store *s, char *err, size_t errlen)
{
	struct run rr;
	int r;

	sq_end(s);
	sql_add(s, "COMMIT");
	if (buf_failed(&s->sql)) {
		sq_abort(s);
		return sq_fail_msg(-ENOMEM, err, errlen, "store_schedule_fire: out of memory");
	}
	r = sq_run(s, "store_schedule_fire", &rr, err, errlen);
	mysql_free_result(rr.res);
	mysql_free_result(rr.res2);
	if (r < 0)
		sq_abort(s);
	return r;
}

/* The update of a schedule whose expression or zone is refused, or that fires no more. */
static void add_refusal(struct store *s, const struct due *d, const char *why)
{
	sql_add(s, "UPDATE schedules SET next_tick_at = NULL, error = ");
	sq_add_text(s, why, strlen(why) > 255 ? 255 : strlen(why));
	sql_add(s, " WHERE name = %s", d->q);
}

static void add_next(struct store *s, int64_t next)
{
	if (next < 0)
		sql_add(s, "NULL");
	else
		sql_add(s, "FROM_UNIXTIME(%lld)", (long long)next);
}

/* The ticks of d that are due, by its catch_up, into ticks (at most STORE_SCHEDULE_ALL_MAX),
 * and the next tick after them into *ret_next (-1: never). Returns how many, or tick's error
 * (-EINVAL: refused; another: not now) with err filled. */
static int due_ticks(store_tick_fn tick, void *data, const struct due *d, int64_t *ticks,
		     int64_t *ret_next, char *err, size_t errlen)
{
	int64_t t = d->tick, last = -1;
	unsigned seen = 0;
	int n = 0, r;

	while (t >= 0 && t <= d->now) {
		if (d->catch_up == STORE_CATCH_UP_ALL) {
			if (n == STORE_SCHEDULE_ALL_MAX)
				break;   /* the rest in the next transaction */
			ticks[n++] = t;
		}
		last = t;
		if (++seen > COUNT_MISSED_MAX && d->catch_up != STORE_CATCH_UP_ALL) {
			r = tick(data, d->cron, d->zone, d->now, &t, err, errlen);
		} else {
			r = tick(data, d->cron, d->zone, t, &t, err, errlen);
		}
		if (r == -ENOENT || (r == 0 && t > TS_LAST_S))
			t = -1;
		else if (r < 0)
			return r;
	}
	if (d->catch_up == STORE_CATCH_UP_ONE && last >= 0)
		ticks[n++] = last;
	else if (d->catch_up == STORE_CATCH_UP_NONE && last >= 0 &&
		 d->now - last <= STORE_SCHEDULE_MISSED_S)
		ticks[n++] = last;
	*ret_next = t;
	return n;
}

/* Adds the rows of ticks[0..n) and moves the schedule on to next, in the transaction. */
static int add_rows(struct store *s, const struct due *d, const int64_t *ticks, int n,
		    int64_t next, char *err, size_t errlen)
{
	struct run rr;
	MYSQL_ROW row;
	uint64_t last_id = 0;
	int r;

	sq_reset(s);
	if (n > 0) {
		sql_add(s, "INSERT INTO work_items (queue, payload, content_type, priority, "
			"max_attempts, timeout_s, group_key, run_at) SELECT c.queue, c.payload, "
			"c.content_type, c.priority, c.max_attempts, c.timeout_s, c.group_key, "
			"FROM_UNIXTIME(k.t) FROM schedules c JOIN (");
		for (int i = 0; i < n; i++)
			sql_add(s, "%sSELECT %lld AS t", i ? " UNION ALL " : "", (long long)ticks[i]);
		sql_add(s, ") k WHERE c.name = %s ORDER BY k.t RETURNING id", d->q);
		if (buf_failed(&s->sql)) {
			sq_abort(s);
			return sq_fail_msg(-ENOMEM, err, errlen, "store_schedule_fire: out of memory");
		}
		r = sq_run(s, "store_schedule_fire", &rr, err, errlen);
		if (r < 0) {
			sq_abort(s);
			return r;
		}
		while (rr.res && (row = mysql_fetch_row(rr.res))) {
			uint64_t id = u64_or_0(row[0], mysql_fetch_lengths(rr.res)[0]);
			last_id = id > last_id ? id : last_id;
		}
		mysql_free_result(rr.res);
		sq_reset(s);
	}
	sql_add(s, "UPDATE schedules SET next_tick_at = ");
	add_next(s, next);
	if (next < 0)
		sql_add(s, ", error = 'fires no more (its next time is after 2038-01-19, or more "
			"than 30 years away)'");
	if (n > 0)
		sql_add(s, ", last_tick_at = FROM_UNIXTIME(%lld), last_item_id = %llu, "
			"ticks = ticks + %d", (long long)ticks[n - 1], (unsigned long long)last_id, n);
	sql_add(s, " WHERE name = %s", d->q);
	return commit(s, err, errlen);
}

/* A schedule whose ticks tick could not compute now (a zone file that did not read): its
 * transaction rolled back, its row left as it is for a later pass. */
static int wait_one(struct store *s, struct store_fire *ret, const char *why, bool *waits)
{
	sq_abort(s);
	if (!ret->waiting)
		snprintf(ret->why, sizeof(ret->why), "%s", why);
	*waits = true;
	return 0;
}

/* One due schedule, locked: its rows and next tick. Returns rows added, or a negative
 * error; *refused when it was found unable to run, *waits when it cannot run now. */
static int fire_one(struct store *s, store_tick_fn tick, void *data, const struct due *d,
		    struct store_fire *ret, bool *refused, bool *waits, char *err, size_t errlen)
{
	int64_t ticks[STORE_SCHEDULE_ALL_MAX + 1];
	char why[sizeof(ret->why)];
	int64_t next;
	int n, r;

	*refused = *waits = false;
	why[0] = '\0';
	if (d->unread) {
		r = tick(data, d->cron, d->zone, d->now, &next, why, sizeof(why));
		if (r == 0 && next > TS_LAST_S)
			r = -ENOENT;
		sq_reset(s);
		if (r == -EINVAL || r == -ENOENT) {
			*refused = true;
			add_refusal(s, d, r == -ENOENT ? "fires no more (its next time is after "
				    "2038-01-19, or more than 30 years away)" : why);
		} else if (r < 0) {
			return wait_one(s, ret, why, waits);
		} else {
			sql_add(s, "UPDATE schedules SET next_tick_at = FROM_UNIXTIME(%lld) "
				"WHERE name = %s", (long long)next, d->q);
		}
		r = commit(s, err, errlen);
		return r < 0 ? r : 0;
	}
	n = due_ticks(tick, data, d, ticks, &next, why, sizeof(why));
	if (n == -EINVAL) {
		*refused = true;
		sq_reset(s);
		add_refusal(s, d, why);
		r = commit(s, err, errlen);
		return r < 0 ? r : 0;
	}
	if (n < 0)
		return wait_one(s, ret, why, waits);
	r = add_rows(s, d, ticks, n, next, err, errlen);
	return r < 0 ? r : n;
}

/* Until the next tick of a schedule that runs, skip's aside (ms, database clock; 0 when
 * due, -1 none), and whether a schedule is not read yet. One statement, no locks. */
static int next_due(struct store *s, const struct buf *skip, int64_t *ret_ms, bool *ret_unread,
		    char *err, size_t errlen)
{
	struct run rr;
	MYSQL_ROW row;
	int64_t ms, unread = 0;
	int r;

	sq_reset(s);
	sql_add(s, "SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), MIN(next_tick_at)) DIV 1000, "
		"COUNT(*) - COUNT(next_tick_at) FROM schedules WHERE paused = 0 AND error IS NULL");
	add_skip(s, skip);
	r = sq_run(s, "store_schedule_fire", &rr, err, errlen);
	if (r < 0)
		return sq_final(r);
	row = rr.res ? mysql_fetch_row(rr.res) : NULL;
	*ret_ms = row && parse_i64(row[0], &ms) ? (ms < 0 ? 0 : ms) : -1;
	*ret_unread = row && parse_i64(row[1], &unread) && unread > 0;
	mysql_free_result(rr.res);
	return 0;
}

int store_schedule_fire(struct store *s, store_tick_fn tick, void *data, unsigned max,
			struct store_fire *ret, char *err, size_t errlen)
{
	int r = sq_check(s, "store_schedule_fire", NULL, 0, NULL, err, errlen);
	unsigned attempt = 0;
	bool unread = false;
	struct buf skip;   /* the quoted names of the schedules that wait, comma separated */
	struct due d;

	memset(ret, 0, sizeof(*ret));
	ret->due_in_ms = -1;
	if (r < 0)
		return r;
	buf_init(&skip);
	/* Nothing due (the usual answer): one statement, no transaction. */
	if ((r = next_due(s, &skip, &ret->due_in_ms, &unread, err, errlen)) < 0)
		return r;
	if (!unread && ret->due_in_ms != 0)
		return 0;
	while (ret->schedules < max && ret->waiting < max) {
		bool refused = false, waits = false;
		memset(&d, 0, sizeof(d));
		r = lock_due(s, &skip, &d, err, errlen);
		if (r > 0)
			r = fire_one(s, tick, data, &d, ret, &refused, &waits, err, errlen);
		else if (r == 0)
			break;
		if (r < 0) {
			if (sq_retry(s, r, &attempt))
				continue;
			r = sq_final(r);
			goto out;
		}
		attempt = 0;
		if (waits) {
			/* Passed by for the rest of this call. */
			buf_printf(&skip, "%s%s", skip.len ? "," : "", d.q);
			ret->waiting++;
			if (buf_failed(&skip)) {
				r = sq_fail_msg(-ENOMEM, err, errlen, "store_schedule_fire: out of memory");
				goto out;
			}
			continue;
		}
		ret->schedules++;
		ret->rows += (unsigned)r;
		ret->refused += refused;
	}
	ret->more = ret->schedules == max;
	r = ret->more ? 0 : next_due(s, &skip, &ret->due_in_ms, &unread, err, errlen);
out:
	buf_free(&skip);
	return r;
}
