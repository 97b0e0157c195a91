/* store_migrate — applying a migration (sql/migrations) to a database that is in use: its
 * statements one by one, each tried again when a lock wait ran out, the long fills in batches
 * of rows with their progress, and a stop between statements or by killing the running one.
 * One migrating session per database (named locks), and what a dead one left running on the
 * server ended. See store.h for the interface. */
#include "store/store.h"
#include "store/store_int.h"
#include "store/store_migrate.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sqlsplit.h"

/* A batch takes about BATCH_FAST_MS..BATCH_SLOW_MS (its rows grow or shrink to it): it holds
 * its rows' locks that long (a worker finishing one of them waits), short enough, and long
 * enough that the four round trips around it cost little. BATCH_MAX rows at most, so that one
 * batch the server is slow with (a busy moment) still holds its locks for less than a second. */
#define BATCH_FIRST 1000u
#define BATCH_MIN 100u
#define BATCH_MAX 10000u
#define BATCH_FAST_MS 50u
#define BATCH_SLOW_MS 250u
#define REPORT_MS 2000u
/* Lock waits and deadlocks: tried again after a pause that doubles up to PAUSE_MAX_MS, for up
 * to GIVE_UP_MS; the pause lets what queued behind the statement's lock request drain. */
#define PAUSE_FIRST_MS 250u
#define PAUSE_MAX_MS 5000u
#define GIVE_UP_MS (10u * 60 * 1000)

#define DIRECTIVE "-- claimd-batches:"
#define NAME_MAX_LEN 64

#define MIGRATE_LOCK "CONCAT('claimd.migrate.', MD5(DATABASE()))"
#define ALIVE_LOCK "CONCAT('claimd.migrate.alive.', MD5(DATABASE()))"

struct batches {
	bool on;
	char table[NAME_MAX_LEN + 1], column[NAME_MAX_LEN + 1];
	char cond[NAME_MAX_LEN + 2];   /* "@var", or "" */
};

struct run_ctx {
	struct store *s;
	const struct store_migration *m;
	const struct store_migrate_watch *w;
	unsigned line;
	uint64_t t0_ms;
};

static bool stopped(const struct run_ctx *c)
{
	return c->w && c->w->stop && c->w->stop(c->w->arg);
}

static void tell(const struct run_ctx *c, struct store_migrate_step *st)
{
	st->line = c->line;
	st->seconds = (double)(sq_mono_ms() - c->t0_ms) / 1000.0;
	if (c->w && c->w->step)
		c->w->step(c->w->arg, c->m, st);
}

/* The first words of p[0..len): blanks made one space, "..." when cut (outlen >= 4). */
static void summary(const char *p, size_t len, char *out, size_t outlen)
{
	size_t k = 0, i = 0;
	bool blank = false;

	/* A statement made conditional ("IF @claimd_x THEN ...") is named by what it does. */
	if (len > 4 && !strncasecmp(p, "IF @", 4)) {
		const char *then = strstr(p, " THEN");
		if (then && (size_t)(then - p) < 40 && (size_t)(then - p) + 5 < len)
			i = (size_t)(then - p) + 5;
	}
	for (; i < len; i++) {
		if (p[i] == '-' && i + 2 < len && p[i + 1] == '-' && isspace((unsigned char)p[i + 2])) {
			while (i + 1 < len && p[i + 1] != '\n')
				i++;   /* a comment: to the end of its line */
			blank = k > 0;
			continue;
		}
		if (isspace((unsigned char)p[i])) {
			blank = k > 0;
			continue;
		}
		if (k + (blank ? 2 : 1) > outlen - 4)
			break;
		if (blank)
			out[k++] = ' ';
		blank = false;
		out[k++] = p[i];
	}
	if (i < len)
		memcpy(out + k, "...", 3), k += 3;
	out[k] = '\0';
}

/* The error of the session's last statement: err filled (naming the migration's statement),
 * the connection dropped when it is gone. Returns -ETIMEDOUT (1205), -EDEADLK (1213),
 * -ECANCELED (1317: killed), -EBUSY (SQLSTATE 55000, err: its message alone), -ENOTCONN, -EIO. */
static int map_error(const struct run_ctx *c, char *err, size_t errlen)
{
	MYSQL *conn = c->s->conn;
	unsigned e = mysql_errno(conn);
	int r;

	if (!strcmp(mysql_sqlstate(conn), "55000")) {
		sq_fail_msg(0, err, errlen, "%s", mysql_error(conn));
		return -EBUSY;
	}
	r = e == 1205 ? -ETIMEDOUT : e == 1213 ? -EDEADLK : e == 1317 ? -ECANCELED :
	    sq_conn_lost(e) ? -ENOTCONN : -EIO;
	sq_fail_msg(0, err, errlen, "migration %03u_%s, the statement at line %u: mysql error "
		    "%u: %s", c->m->version, c->m->name, c->line, e, mysql_error(conn));
	if (r == -ENOTCONN)
		sq_drop(c->s);
	return r;
}

/* Runs p[0..len) and reads every result it gives (a compound statement gives several).
 * Returns 0 or map_error's. */
static int exec_text(const struct run_ctx *c, const char *p, size_t len, char *err, size_t errlen)
{
	MYSQL *conn = c->s->conn;
	int status = 0;

	if (!conn)
		return sq_fail_msg(-ENOTCONN, err, errlen, "migration %03u_%s: not connected",
				   c->m->version, c->m->name);
	if (mysql_real_query(conn, p, (unsigned long)len) != 0)
		return map_error(c, err, errlen);
	do {
		MYSQL_RES *res = mysql_store_result(conn);
		if (!res && mysql_field_count(conn) != 0)
			return map_error(c, err, errlen);
		mysql_free_result(res);
		status = mysql_next_result(conn);
	} while (status == 0);
	return status > 0 ? map_error(c, err, errlen) : 0;
}

/* One row of a query of the session's own: its values as text into vals[0..n), "" for NULL,
 * nulls[i] saying which. Returns 0, map_error's errors, or -EIO when there is no row. */
static int query_row(const struct run_ctx *c, const char *sql, char vals[][72], bool *nulls,
		     unsigned n, char *err, size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int r = 0;

	if (!c->s->conn)
		return sq_fail_msg(-ENOTCONN, err, errlen, "not connected");
	if (mysql_real_query(c->s->conn, sql, (unsigned long)strlen(sql)) != 0)
		return map_error(c, err, errlen);
	res = mysql_store_result(c->s->conn);
	row = res && mysql_num_fields(res) >= n ? mysql_fetch_row(res) : NULL;
	if (!row)
		r = sq_fail_msg(-EIO, err, errlen, "migration %03u_%s, line %u: no answer to %.80s",
				c->m->version, c->m->name, c->line, sql);
	for (unsigned i = 0; row && i < n; i++) {
		nulls[i] = !row[i];
		snprintf(vals[i], sizeof(vals[i]), "%s", row[i] ? row[i] : "");
	}
	mysql_free_result(res);
	return r;
}

static void pause_ms(const struct run_ctx *c, unsigned ms)
{
	struct timespec ts = { 0, 100 * 1000000L };

	for (unsigned slept = 0; slept < ms && !stopped(c); slept += 100)
		nanosleep(&ts, NULL);
}

/* Why a lock wait ran out, as far as the server tells us: its oldest open transaction. */
static void who_holds(const struct run_ctx *c, char *out, size_t outlen, const char *why)
{
	char vals[3][72];
	bool nulls[3];
	char ignore[STORE_ERR_MAX];

	snprintf(out, outlen, "%s", why);
	if (query_row(c, "SELECT trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, trx_started, NOW()), "
		      "LEFT(IFNULL(trx_query, ''), 60) FROM information_schema.INNODB_TRX WHERE "
		      "trx_mysql_thread_id <> CONNECTION_ID() ORDER BY trx_started LIMIT 1",
		      vals, nulls, 3, ignore, sizeof(ignore)) == 0 && !nulls[0])
		snprintf(out + strlen(out), outlen - strlen(out), " (the oldest open transaction: "
			 "session %s, open for %s s%s%s)", vals[0], vals[1], vals[2][0] ? ", at: " : "",
			 vals[2]);
}

/* Runs p[0..len) until it is through, trying again after a lock wait that ran out or a
 * deadlock (a statement of a migration is idempotent, and one that failed changed nothing).
 * Returns 0 or a negative error as store_migrate. */
static int run_retrying(const struct run_ctx *c, const char *p, size_t len, char *err,
			size_t errlen)
{
	uint64_t t0 = sq_mono_ms();
	unsigned pause = PAUSE_FIRST_MS;
	char why[STORE_ERR_MAX + 200];
	int r;

	for (;;) {
		if (stopped(c))
			return sq_fail_msg(-EINTR, err, errlen, "migration %03u_%s: stopped before "
					   "the statement at line %u", c->m->version, c->m->name, c->line);
		r = exec_text(c, p, len, err, errlen);
		if (r == -ECANCELED)
			return stopped(c) ? -EINTR : -EIO;
		if (r != -ETIMEDOUT && r != -EDEADLK)
			return r;
		if (sq_mono_ms() - t0 > GIVE_UP_MS)
			return -EIO;   /* err: the last lock wait's */
		who_holds(c, why, sizeof(why), err);
		tell(c, &(struct store_migrate_step){ .what = STORE_MIGRATE_WAIT, .text = why });
		pause_ms(c, pause);
		pause = pause * 2 > PAUSE_MAX_MS ? PAUSE_MAX_MS : pause * 2;
	}
}

static bool name_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_';
}

/* Copies a name (letters, digits, '_') at *p into out (NAME_MAX_LEN + 1 bytes), past blanks
 * before it; false when there is none or it is too long. */
static bool take_name(const char **p, const char *end, char *out)
{
	const char *q = *p;
	size_t n = 0;

	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	while (q + n < end && name_char(q[n]))
		n++;
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	memcpy(out, q, n);
	out[n] = '\0';
	*p = q + n;
	return true;
}

/* A "-- claimd-batches: TABLE COLUMN [if @VAR]" line in gap[0..len) (the comments before a
 * statement). Returns 1 with *b, 0 when there is none, -EINVAL for one that does not parse. */
static int find_batches(const char *gap, size_t len, struct batches *b)
{
	const char *end = gap + len, *p = gap;
	size_t dl = strlen(DIRECTIVE);

	memset(b, 0, sizeof(*b));
	for (; p + dl <= end; p++)
		if (!memcmp(p, DIRECTIVE, dl))
			break;
	if (p + dl > end)
		return 0;
	p += dl;
	end = memchr(p, '\n', (size_t)(end - p)) ? memchr(p, '\n', (size_t)(end - p)) : end;
	if (!take_name(&p, end, b->table) || !take_name(&p, end, b->column))
		return -EINVAL;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p + 3 < end && !strncmp(p, "if @", 4)) {
		p += 4;
		b->cond[0] = '@';
		if (!take_name(&p, end, b->cond + 1))
			return -EINVAL;
	}
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p != end)
		return -EINVAL;
	b->on = true;
	return 1;
}

static bool mentions(const char *p, size_t len, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i + n <= len; i++)
		if (!strncasecmp(p + i, word, n))
			return true;
	return false;
}

/* Runs s->sql as built (retrying as a statement of the migration). The values it reads go
 * into user variables with SELECT ... INTO, never SET @v = (SELECT ...): MariaDB reads for the
 * latter with shared locks, and would wait for (and hold up) the rows claimd has locked. */
static int run_built(const struct run_ctx *c, char *err, size_t errlen)
{
	if (buf_failed(&c->s->sql))
		return sq_fail_msg(-ENOMEM, err, errlen, "out of memory");
	return run_retrying(c, c->s->sql.data, c->s->sql.len, err, errlen);
}

/* The statement p[0..len) once per span of b's column (see store_migrate). */
static int run_batches(const struct run_ctx *c, const struct batches *b, const char *p,
		       size_t len, char *err, size_t errlen)
{
	struct store *s = c->s;
	char q[512], vals[2][72];
	bool nulls[2];
	uint64_t done = 0, total, last_report = sq_mono_ms();
	unsigned n = BATCH_FIRST;
	int r;

	if (b->cond[0]) {
		snprintf(q, sizeof(q), "SELECT IFNULL(%s, 0) <> 0", b->cond);
		r = query_row(c, q, vals, nulls, 1, err, errlen);
		if (r < 0 || strcmp(vals[0], "1") != 0)
			return r;
	}
	sq_reset(s);
	sql_add(s, "SELECT MIN(%s), MAX(%s) INTO @claimd_lo, @claimd_end FROM %s", b->column,
		b->column, b->table);
	r = run_built(c, err, errlen);
	if (r < 0)
		return r;
	snprintf(q, sizeof(q), "SELECT @claimd_lo IS NULL, (SELECT TABLE_ROWS FROM "
		 "information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s')",
		 b->table);
	r = query_row(c, q, vals, nulls, 2, err, errlen);
	if (r < 0 || !strcmp(vals[0], "1"))
		goto out;   /* an empty table */
	total = strtoull(vals[1], NULL, 10);
	for (;;) {
		uint64_t t0;
		uint64_t span = n;
		/* The n-th row from lo on ends the span; with fewer left, the last row does. */
		sq_reset(s);
		sql_add(s, "SET @claimd_hi = NULL");
		r = run_built(c, err, errlen);
		if (r < 0)
			goto out;
		sq_reset(s);
		sql_add(s, "SELECT %s INTO @claimd_hi FROM %s WHERE %s >= @claimd_lo AND %s <= "
			"@claimd_end ORDER BY %s LIMIT %u, 1", b->column, b->table, b->column,
			b->column, b->column, n - 1);
		r = run_built(c, err, errlen);
		if (r == 0)
			r = query_row(c, "SELECT @claimd_hi IS NULL", vals, nulls, 1, err, errlen);
		if (r == 0 && !strcmp(vals[0], "1")) {
			sq_reset(s);
			sql_add(s, "SELECT COUNT(*) FROM %s WHERE %s >= @claimd_lo AND %s <= @claimd_end",
				b->table, b->column, b->column);
			r = query_row(c, s->sql.data, vals, nulls, 1, err, errlen);
			span = strtoull(vals[0], NULL, 10);
			if (r == 0 && mysql_query(s->conn, "SET @claimd_hi = @claimd_end") != 0)
				r = map_error(c, err, errlen);
		}
		if (r < 0)
			goto out;
		t0 = sq_mono_ms();
		r = run_retrying(c, p, len, err, errlen);
		if (r < 0)
			goto out;
		done += span;
		if (done > total)
			total = done;
		if (sq_mono_ms() - t0 < BATCH_FAST_MS && n < BATCH_MAX)
			n = n * 2 > BATCH_MAX ? BATCH_MAX : n * 2;
		else if (sq_mono_ms() - t0 > BATCH_SLOW_MS && n > BATCH_MIN)
			n = n / 2 < BATCH_MIN ? BATCH_MIN : n / 2;
		if (sq_mono_ms() - last_report >= REPORT_MS) {
			last_report = sq_mono_ms();
			tell(c, &(struct store_migrate_step){ .what = STORE_MIGRATE_BATCHES,
				.table = b->table, .done = done, .total = total });
		}
		sq_reset(s);
		sql_add(s, "SELECT MIN(%s) INTO @claimd_lo FROM %s WHERE %s > @claimd_hi AND %s <= "
			"@claimd_end", b->column, b->table, b->column, b->column);
		r = run_built(c, err, errlen);
		if (r < 0)
			goto out;
		r = query_row(c, "SELECT @claimd_lo IS NULL", vals, nulls, 1, err, errlen);
		if (r < 0 || !strcmp(vals[0], "1"))
			break;
	}
	if (r == 0)
		tell(c, &(struct store_migrate_step){ .what = STORE_MIGRATE_BATCHES,
			.table = b->table, .done = done, .total = done });
out:
	/* Loaded again by hand in this session, the statement would go over its last span. */
	if (s->conn)
		mysql_query(s->conn, "SET @claimd_lo = NULL, @claimd_hi = NULL, @claimd_end = NULL");
	return r;
}

int store_migrate(struct store *s, const struct store_migration *m,
		  const struct store_migrate_watch *w, char *err, size_t errlen)
{
	struct run_ctx c = { .s = s, .m = m, .w = w };
	struct sqlsplit sp;
	const char *p, *gap;
	char what[120];
	size_t len;
	unsigned line;
	int r = sq_check(s, "store_migrate", NULL, 0, NULL, err, errlen);

	if (r < 0)
		return r;
	sqlsplit_init(&sp, m->text, m->len);
	for (;;) {
		struct batches b;
		gap = sp.p;
		r = sqlsplit_next(&sp, &p, &len, &line);
		if (r <= 0)
			break;
		c.line = line;
		r = find_batches(gap, (size_t)(p - gap), &b);
		if (r < 0 || (r == 0 && mentions(p, len, "@claimd_lo")) ||
		    (r > 0 && (!mentions(p, len, "@claimd_lo") || !mentions(p, len, "@claimd_hi"))))
			return sq_fail_msg(-EINVAL, err, errlen, "migration %03u_%s, line %u: a "
					   "statement in batches needs a line '" DIRECTIVE " TABLE "
					   "COLUMN [if @VAR]' before it and @claimd_lo and @claimd_hi "
					   "in it", m->version, m->name, line);
		summary(p, len, what, sizeof(what));
		c.t0_ms = sq_mono_ms();
		tell(&c, &(struct store_migrate_step){ .what = STORE_MIGRATE_STATEMENT, .text = what });
		r = b.on ? run_batches(&c, &b, p, len, err, errlen) :
		    run_retrying(&c, p, len, err, errlen);
		if (r < 0)
			return r;
		tell(&c, &(struct store_migrate_step){ .what = STORE_MIGRATE_ENDED, .text = what });
	}
	if (r < 0)
		return sq_fail_msg(-EINVAL, err, errlen, "migration %03u_%s: an unterminated quote "
				   "or comment near line %u", m->version, m->name, sp.line);
	return 0;
}

/* ---- one migrating session per database ---- */

/* The first value of sql's first row into out ("" for NULL or no row). Returns 0 or -EIO. */
static int one_value(struct store *s, const char *sql, char *out, size_t outlen, char *err,
		     size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;

	if (!s->conn)
		return sq_fail_msg(-ENOTCONN, err, errlen, "not connected");
	if (mysql_query(s->conn, sql) != 0) {
		unsigned e = mysql_errno(s->conn);
		sq_fail_msg(0, err, errlen, "mysql error %u: %s", e, mysql_error(s->conn));
		if (sq_conn_lost(e)) {
			sq_drop(s);
			return -ENOTCONN;
		}
		return -EIO;
	}
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	snprintf(out, outlen, "%s", row && row[0] ? row[0] : "");
	mysql_free_result(res);
	return 0;
}

int store_migrate_lock(struct store *s, struct store *guard, char *note, size_t notelen,
		       char *err, size_t errlen)
{
	char v[256], holder[32], what[200];
	int r = sq_check(s, "store_migrate_lock", NULL, 0, NULL, err, errlen);

	note[0] = '\0';
	if (r == 0)
		r = sq_check(guard, "store_migrate_lock", NULL, 0, NULL, err, errlen);
	if (r == 0)
		r = one_value(guard, "SELECT GET_LOCK(" ALIVE_LOCK ", 0)", v, sizeof(v), err, errlen);
	if (r < 0)
		return r == -EIO ? -ENOTSUP : r;
	if (strcmp(v, "1") != 0) {
		r = one_value(guard, "SELECT CONCAT(IFNULL(IS_USED_LOCK(" MIGRATE_LOCK "), '?'), "
			      "', ', IFNULL(IS_USED_LOCK(" ALIVE_LOCK "), '?'))", v, sizeof(v), err,
			      errlen);
		return r < 0 ? r : sq_fail_msg(-EBUSY, err, errlen, "another claimd --migrate runs on "
					       "this database (sessions %s): wait for it to finish (if "
					       "its host or network died, the server may not know yet: "
					       "KILL those sessions)", v);
	}
	r = one_value(s, "SELECT GET_LOCK(" MIGRATE_LOCK ", 0)", v, sizeof(v), err, errlen);
	if (r < 0 || !strcmp(v, "1"))
		return r;
	/* Held, by a session whose process is gone (it held the other lock while it lived). */
	r = one_value(s, "SELECT IS_USED_LOCK(" MIGRATE_LOCK ")", holder, sizeof(holder), err, errlen);
	if (r < 0)
		return r;
	if (*holder) {
		char q[300];
		snprintf(q, sizeof(q), "SELECT CONCAT(LEFT(IFNULL(INFO, COMMAND), 120), ' (for ', "
			 "TIME, ' s)') FROM information_schema.PROCESSLIST WHERE ID = %s", holder);
		if (one_value(s, q, what, sizeof(what), err, errlen) < 0 || !*what)
			snprintf(what, sizeof(what), "?");
		snprintf(q, sizeof(q), "KILL %s", holder);
		if (one_value(s, q, v, sizeof(v), err, errlen) < 0)
			return sq_fail_msg(-EBUSY, err, errlen, "session %s, which a claimd --migrate "
					   "that is gone left behind, still runs `%s` and cannot be "
					   "ended from here (KILL %s: %s): end it, or wait for it", holder,
					   what, holder, err);
		snprintf(note, notelen, "ended session %s, which a claimd --migrate that is gone "
			 "left running: %s", holder, what);
	}
	/* A killed ALTER rolls back what it built before its session ends. */
	r = one_value(s, "SELECT GET_LOCK(" MIGRATE_LOCK ", 60)", v, sizeof(v), err, errlen);
	if (r == 0 && strcmp(v, "1") != 0)
		r = sq_fail_msg(-EBUSY, err, errlen, "the migration lock of this database is still "
				"held after 60 s (by session %s)", *holder ? holder : "?");
	return r;
}

int store_kill_query(struct store *guard, unsigned long id, char *err, size_t errlen)
{
	char q[64], v[8];

	snprintf(q, sizeof(q), "KILL QUERY %lu", id);
	return one_value(guard, q, v, sizeof(v), err, errlen);
}
