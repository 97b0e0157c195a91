/* store — all SQL of claimd, over MariaDB Connector/C's text protocol.
 *
 * Why text protocol with multi-statements and not prepared statements: the claim is the
 * hot path and its cost is round trips, not parsing. "START TRANSACTION; complete; SELECT
 * ... FOR UPDATE SKIP LOCKED" goes in one round trip and "UPDATE by id; COMMIT" in a
 * second; prepared statements cannot be batched like that (one per round trip) and the
 * IN lists vary in length anyway. Every string goes through mysql_real_escape_string on
 * a utf8mb4 connection; integers are formatted directly.
 *
 * Why FORCE INDEX (claim_idx) in the claim query: with ORDER BY ... LIMIT, MariaDB 10.11
 * picks "ref" access on (queue) alone and walks, through index condition pushdown, every
 * entry of the queue whose visible_at is NULL (all done and dead rows sort first) before
 * the first claimable one: 5 ms per claim with 40,000 done rows. The hint makes it the
 * range (queue, NULL < visible_at <= NOW(6)) it should be. tests/integration/
 * test_schema.py runs EXPLAIN on the exact text of CLAIM_SELECT below.
 *
 * Why the fence is "id IN (...) AND claim_token = CASE id ...": a one-element
 * "(id, claim_token) IN ((x, y))" is not range-optimised (full index scan on 10.11).
 *
 * UPDATE assignments here never read a column the same statement assigns, so they mean
 * the same with and without SIMULTANEOUS_ASSIGNMENT in sql_mode.
 */
#include "store.h"

#include <errno.h>
#include <errmsg.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLAIM_SELECT \
	"SELECT id, claim_token, attempts, max_attempts, payload FROM work_items " \
	"FORCE INDEX (claim_idx) WHERE queue = %s AND visible_at <= NOW(6) " \
	"ORDER BY visible_at, id LIMIT %u FOR UPDATE SKIP LOCKED"

#define STORE_RETRIES 5          /* tries for deadlock (1213) */
#define STORE_RETRIES_TIMEOUT 2  /* tries for lock wait timeout (1205) */
#define STORE_MAX_REFS 65536     /* bound on one call's rows: keeps statements small */
#define STORE_ERROR_MAX 4000     /* bytes of last_error */
#define RUN_MAX_STMTS 4

struct store {
	MYSQL *conn;
	struct dsn dsn;
	char claimer[256];
	char *claimer_sql;           /* quoted and escaped; set while connected */
	char *sql;                   /* the statement(s) being built */
	size_t len, cap;
	bool oom;
	struct store_item *scratch;  /* rows of a claim until its COMMIT succeeded */
	size_t scratch_cap;
	unsigned seed;
};

/* Outcome of run(): affected (or returned) rows per statement, and the result set. */
struct run {
	uint64_t rows[RUN_MAX_STMTS];
	unsigned n;
	MYSQL_RES *res;
};

static int set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void sql_add(struct store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return 0;
}

/* ---- building SQL ---- */

static bool sql_reserve(struct store *s, size_t more)
{
	size_t cap = s->cap ? s->cap : 1024;
	char *p;

	if (s->oom)
		return false;
	if (s->len + more + 1 <= s->cap)
		return true;
	while (cap < s->len + more + 1)
		cap *= 2;
	p = realloc(s->sql, cap);
	if (!p) {
		s->oom = true;
		return false;
	}
	s->sql = p;
	s->cap = cap;
	return true;
}

static void sql_reset(struct store *s)
{
	s->len = 0;
	s->oom = false;
	if (sql_reserve(s, 0))
		s->sql[0] = '\0';
}

static void sql_add(struct store *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !sql_reserve(s, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(s->sql + s->len, s->cap - s->len, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

/* Appends 'str' quoted and escaped, or NULL. */
static void sql_add_str(struct store *s, const char *str, size_t len)
{
	if (!str) {
		sql_add(s, "NULL");
		return;
	}
	if (!sql_reserve(s, 2 * len + 2))
		return;
	s->sql[s->len++] = '\'';
	s->len += mysql_real_escape_string(s->conn, s->sql + s->len, str, (unsigned long)len);
	s->sql[s->len++] = '\'';
	s->sql[s->len] = '\0';
}

/* "state = 'claimed' AND id IN (..) AND claim_token = CASE id WHEN .. THEN .. END" */
static void sql_add_fence(struct store *s, const struct store_ref *refs, size_t n)
{
	size_t i;

	sql_add(s, "state = 'claimed' AND id IN (");
	for (i = 0; i < n; i++)
		sql_add(s, "%s%llu", i ? "," : "", (unsigned long long)refs[i].id);
	sql_add(s, ") AND claim_token = CASE id");
	for (i = 0; i < n; i++)
		sql_add(s, " WHEN %llu THEN %llu", (unsigned long long)refs[i].id,
			(unsigned long long)refs[i].token);
	sql_add(s, " END");
}

/* Copies at most max bytes of src, backing off so as not to end inside a UTF-8 sequence,
 * and replaces bytes that are not valid UTF-8 with '?' (the column is utf8mb4 and a
 * strict server would refuse the whole UPDATE). Returns the length written. */
static size_t utf8_sanitize(const char *src, char *dst, size_t max)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t in = 0, out = 0, k, n;

	while (p[in] && out < max) {
		unsigned char c = p[in];
		unsigned cp;

		n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
		    (c & 0xf8) == 0xf0 ? 4 : 0;
		cp = n == 1 ? c : n == 2 ? c & 0x1fu : n == 3 ? c & 0x0fu : c & 0x07u;
		for (k = 1; k < n; k++) {
			if ((p[in + k] & 0xc0) != 0x80)
				break;
			cp = (cp << 6) | (p[in + k] & 0x3fu);
		}
		if (n == 0 || k < n || (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
			dst[out++] = '?';
			in++;
			continue;
		}
		if (out + n > max)
			break;
		memcpy(dst + out, p + in, n);
		out += n;
		in += n;
	}
	dst[out] = '\0';
	return out;
}

static void sql_add_error_text(struct store *s, const char *text)
{
	char buf[STORE_ERROR_MAX + 1];

	if (!text) {
		sql_add(s, "NULL");
		return;
	}
	sql_add_str(s, buf, utf8_sanitize(text, buf, STORE_ERROR_MAX));
}

/* ---- errors and running ---- */

static bool conn_lost(unsigned e)
{
	switch (e) {
	case CR_CONNECTION_ERROR:   /* 2002 */
	case CR_CONN_HOST_ERROR:    /* 2003 */
	case CR_UNKNOWN_HOST:       /* 2005 */
	case CR_SERVER_GONE_ERROR:  /* 2006 */
	case CR_SERVER_HANDSHAKE_ERR: /* 2012 */
	case CR_SERVER_LOST:        /* 2013 */
	case CR_COMMANDS_OUT_OF_SYNC: /* 2014: the session's state is unknown, start over */
	case 2055:                  /* CR_SERVER_LOST_EXTENDED */
	case 1053:                  /* ER_SERVER_SHUTDOWN */
	case 1927:                  /* ER_CONNECTION_KILLED */
	case 4031:                  /* disconnected by the server for inactivity */
		return true;
	default:
		return false;
	}
}

static void drop(struct store *s)
{
	if (s->conn)
		mysql_close(s->conn);
	s->conn = NULL;
	free(s->claimer_sql);
	s->claimer_sql = NULL;
}

/* Fills err from the connection's last error and maps it: -ENOTCONN (and the connection
 * is dropped), -EDEADLK for 1213, -ETIMEDOUT for 1205 (both retried by the callers), or
 * -EIO. */
static int db_error(struct store *s, const char *op, char *err, size_t errlen)
{
	unsigned e = mysql_errno(s->conn);

	set_err(err, errlen, "%s: mysql error %u: %s", op, e, mysql_error(s->conn));
	if (conn_lost(e)) {
		drop(s);
		return -ENOTCONN;
	}
	if (e == 1213)
		return -EDEADLK;
	if (e == 1205)
		return -ETIMEDOUT;
	return -EIO;
}

static int not_connected(const char *op, char *err, size_t errlen)
{
	set_err(err, errlen, "%s: not connected", op);
	return -ENOTCONN;
}

/* Sends s->sql (one or more statements) and reads every result: the row count of each
 * statement into rr->rows, the one result set (if any) into rr->res. */
static int run(struct store *s, const char *op, struct run *rr, char *err, size_t errlen)
{
	MYSQL_RES *res;
	int status, r;

	memset(rr, 0, sizeof(*rr));
	if (s->oom) {
		set_err(err, errlen, "%s: out of memory building the statement", op);
		return -ENOMEM;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (mysql_real_query(s->conn, s->sql, (unsigned long)s->len) != 0)
		return db_error(s, op, err, errlen);
	do {
		res = mysql_store_result(s->conn);
		if (!res && mysql_field_count(s->conn) != 0)
			goto fail;
		if (rr->n < RUN_MAX_STMTS)
			rr->rows[rr->n] = res ? mysql_num_rows(res) : mysql_affected_rows(s->conn);
		rr->n++;
		if (res && !rr->res)
			rr->res = res;
		else if (res)
			mysql_free_result(res); /* not reached: callers send one SELECT */
		{ struct timespec tx; clock_gettime(CLOCK_MONOTONIC, &tx); if (getenv("PROF")) fprintf(stderr, "STMT%u %.3f\n", rr->n, (tx.tv_sec-t0.tv_sec)*1e3+(tx.tv_nsec-t0.tv_nsec)/1e6); }
		status = mysql_next_result(s->conn);
	} while (status == 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (getenv("PROF")) fprintf(stderr, "PROF %.3f ms %.40s\n", (t1.tv_sec-t0.tv_sec)*1e3+(t1.tv_nsec-t0.tv_nsec)/1e6, s->sql);
	if (status > 0)
		goto fail;
	return 0;
fail:
	r = db_error(s, op, err, errlen);
	mysql_free_result(rr->res);
	rr->res = NULL;
	return r;
}

static int run_sql(struct store *s, const char *op, const char *sql, struct run *rr,
		   char *err, size_t errlen)
{
	sql_reset(s);
	sql_add(s, "%s", sql);
	return run(s, op, rr, err, errlen);
}

/* After a failed statement inside a transaction: leave no transaction open. The caller's
 * err already holds the first error; a failing ROLLBACK only matters if it shows that the
 * connection is gone (then the server rolls back for us). */
static void abort_trx(struct store *s)
{
	if (!s->conn)
		return;
	if (mysql_real_query(s->conn, "ROLLBACK", 8) != 0 && conn_lost(mysql_errno(s->conn)))
		drop(s);
}

/* Before retry number 'attempt' (1, 2, ...): 1-2 ms, 2-4 ms, 4-8 ms, ... */
static void backoff(struct store *s, unsigned attempt)
{
	unsigned base_us = 1000u << (attempt - 1);
	unsigned us = base_us + (unsigned)rand_r(&s->seed) % base_us;
	struct timespec ts = { 0, (long)us * 1000 };

	nanosleep(&ts, NULL);
}

static bool retry(struct store *s, int r, unsigned *attempt)
{
	unsigned max = r == -ETIMEDOUT ? STORE_RETRIES_TIMEOUT : STORE_RETRIES;

	if ((r != -EDEADLK && r != -ETIMEDOUT) || !s->conn)
		return false;
	abort_trx(s);
	if (++*attempt >= max || !s->conn)
		return false;
	backoff(s, *attempt);
	return true;
}

/* What callers see: retryable errors that ran out of tries are plain SQL errors. */
static int final(int r)
{
	return r == -EDEADLK || r == -ETIMEDOUT ? -EIO : r;
}

static int check_refs(const char *op, const struct store_ref *refs, size_t n,
		      char *err, size_t errlen)
{
	if (n > STORE_MAX_REFS || (n > 0 && !refs)) {
		set_err(err, errlen, "%s: bad row list (%zu rows)", op, n);
		return -EINVAL;
	}
	return 0;
}

static int check_queue(const char *op, const char *queue, char *err, size_t errlen)
{
	size_t len = queue ? strlen(queue) : 0;

	if (len == 0 || len > STORE_QUEUE_MAX) {
		set_err(err, errlen, "%s: queue name must be 1..%d bytes", op, STORE_QUEUE_MAX);
		return -EINVAL;
	}
	return 0;
}

/* ---- life cycle ---- */

int store_library_init(void)
{
	return mysql_library_init(0, NULL, NULL) == 0 ? 0 : -EIO;
}

void store_library_end(void)
{
	mysql_library_end();
}

int store_new(const struct dsn *dsn, const char *claimer, struct store **ret)
{
	struct store *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->dsn = *dsn;
	/* claimed_by is VARCHAR(255): cut on a character boundary, invalid bytes made '?'. */
	utf8_sanitize(claimer ? claimer : "", s->claimer, sizeof(s->claimer) - 1);
	s->seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)(uintptr_t)s;
	*ret = s;
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	drop(s);
	store_items_clear(s->scratch, s->scratch_cap);
	free(s->scratch);
	free(s->sql);
	free(s);
}

bool store_connected(const struct store *s)
{
	return s && s->conn;
}

/* CLAIMD_DB_PASSWORD if set and not empty, else the first line of password_file. */
static int read_password(const struct store *s, char *pw, size_t pwlen, char *err, size_t errlen)
{
	const char *env = getenv("CLAIMD_DB_PASSWORD");
	FILE *f;

	pw[0] = '\0';
	if (env && *env) {
		snprintf(pw, pwlen, "%s", env);
		return 0;
	}
	if (!s->dsn.password_file[0])
		return 0;
	f = fopen(s->dsn.password_file, "re");
	if (!f) {
		set_err(err, errlen, "store_connect: cannot open password_file \"%s\": %s",
			s->dsn.password_file, strerror(errno));
		return -EIO;
	}
	if (!fgets(pw, (int)pwlen, f))
		pw[0] = '\0';
	fclose(f);
	pw[strcspn(pw, "\r\n")] = '\0';
	return 0;
}

static void set_options(MYSQL *c)
{
	unsigned connect_timeout = 3, rw_timeout = 10;
	my_bool off = 0;

	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
	mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
	mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
	mysql_options(c, MYSQL_OPT_RECONNECT, &off);
	mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* A lock wait must end (1205, retried) before the 10 s read timeout drops us. */
	mysql_options(c, MYSQL_INIT_COMMAND, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	mysql_options(c, MYSQL_INIT_COMMAND, "SET SESSION autocommit = 1, innodb_lock_wait_timeout = 5");
}

int store_connect(struct store *s, char *err, size_t errlen)
{
	const struct dsn *d = &s->dsn;
	const char *host = d->host[0] ? d->host : "localhost";
	const char *sock = NULL;
	char pw[1024];
	size_t n;
	int r;

	drop(s);
	r = read_password(s, pw, sizeof(pw), err, errlen);
	if (r < 0)
		return r;
	if (strcmp(host, "localhost") == 0 && d->socket[0])
		sock = d->socket;
	s->conn = mysql_init(NULL);
	if (!s->conn) {
		set_err(err, errlen, "store_connect: out of memory");
		r = -ENOMEM;
		goto fail;
	}
	set_options(s->conn);
	if (!mysql_real_connect(s->conn, host, d->user[0] ? d->user : NULL, pw, d->db, d->port,
				sock, CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS)) {
		r = db_error(s, "store_connect", err, errlen);
		r = r == -ENOTCONN ? r : -EIO;
		goto fail;
	}
	n = strlen(s->claimer);
	s->claimer_sql = malloc(2 * n + 3);
	if (!s->claimer_sql) {
		set_err(err, errlen, "store_connect: out of memory");
		r = -ENOMEM;
		goto fail;
	}
	s->claimer_sql[0] = '\'';
	n = mysql_real_escape_string(s->conn, s->claimer_sql + 1, s->claimer, (unsigned long)n);
	memcpy(s->claimer_sql + 1 + n, "'", 2);
	explicit_bzero(pw, sizeof(pw));
	return 0;
fail:
	explicit_bzero(pw, sizeof(pw));
	drop(s);
	return r;
}

/* ---- claim ---- */

struct claim_args {
	const char *queue;
	unsigned max, lease_ms;
	const struct store_ref *done;
	size_t ndone;
};

void store_items_clear(struct store_item *items, size_t n)
{
	size_t i;

	if (!items)
		return;
	for (i = 0; i < n; i++) {
		free(items[i].payload);
		items[i].payload = NULL;
		items[i].payload_len = 0;
	}
}

static void sql_add_complete(struct store *s, const struct store_ref *done, size_t n)
{
	sql_add(s, "UPDATE work_items SET state = 'done', finished_at = NOW(6), visible_at = NULL "
		"WHERE ");
	sql_add_fence(s, done, n);
}

static bool parse_u64(const char *p, unsigned long len, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned long i;

	if (!p || len == 0 || len > 20)
		return false;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*ret = v;
	return true;
}

/* One row of CLAIM_SELECT into it; the attempt and token are the values the claim's
 * UPDATE writes (the row is locked by us until COMMIT, so old + 1 is exact). */
static int parse_row(MYSQL_ROW row, unsigned long *lens, const char *queue,
		     struct store_item *it)
{
	uint64_t attempts, max_attempts;

	if (!parse_u64(row[0], lens[0], &it->id) || !parse_u64(row[1], lens[1], &it->token) ||
	    !parse_u64(row[2], lens[2], &attempts) || !parse_u64(row[3], lens[3], &max_attempts) ||
	    attempts >= UINT32_MAX || max_attempts > UINT32_MAX)
		return -EIO;
	it->token++;
	it->attempt = (uint32_t)attempts + 1;
	it->max_attempts = (uint32_t)max_attempts;
	snprintf(it->queue, sizeof(it->queue), "%s", queue);
	it->payload = NULL;
	it->payload_len = 0;
	if (row[4]) {
		it->payload = malloc(lens[4] + 1);
		if (!it->payload)
			return -ENOMEM;
		memcpy(it->payload, row[4], lens[4]);
		it->payload[lens[4]] = '\0';
		it->payload_len = lens[4];
	}
	return 0;
}

static int take_rows(struct store *s, MYSQL_RES *res, const char *queue, size_t *ret_n,
		     char *err, size_t errlen)
{
	size_t n = 0;
	MYSQL_ROW row;
	int r = 0;

	if (mysql_num_fields(res) != 5) {
		set_err(err, errlen, "store_claim: unexpected result shape");
		return -EIO;
	}
	while (n < s->scratch_cap && (row = mysql_fetch_row(res))) {
		r = parse_row(row, mysql_fetch_lengths(res), queue, &s->scratch[n]);
		if (r < 0) {
			store_items_clear(s->scratch, n + 1);
			set_err(err, errlen, "store_claim: %s", r == -ENOMEM ? "out of memory" :
				"bad value in a claimed row");
			return r;
		}
		n++;
	}
	*ret_n = n;
	return 0;
}

/* queue quoted and escaped for this connection; q holds 2 * STORE_QUEUE_MAX + 3 bytes. */
#define QUOTED_QUEUE_MAX (2 * STORE_QUEUE_MAX + 3)

static const char *quote_queue(struct store *s, const char *queue, char *q)
{
	unsigned long n;

	q[0] = '\'';
	n = mysql_real_escape_string(s->conn, q + 1, queue, (unsigned long)strlen(queue));
	memcpy(q + 1 + n, "'", 2);
	return q;
}

/* Round trip 1: open the transaction, complete done[], lock up to max rows. */
static int claim_lock_rows(struct store *s, const struct claim_args *a, size_t *ret_n,
			   size_t *ret_completed, char *err, size_t errlen)
{
	char q[QUOTED_QUEUE_MAX];
	struct run rr;
	int r;

	sql_reset(s);
	sql_add(s, "START TRANSACTION;");
	if (a->ndone) {
		sql_add_complete(s, a->done, a->ndone);
		sql_add(s, ";");
	}
	sql_add(s, CLAIM_SELECT, quote_queue(s, a->queue, q), a->max);
	r = run(s, "store_claim", &rr, err, errlen);
	if (r < 0)
		return r;
	*ret_completed = a->ndone ? (size_t)rr.rows[1] : 0;
	if (!rr.res) {
		set_err(err, errlen, "store_claim: no result from the claim query");
		return -EIO;
	}
	r = take_rows(s, rr.res, a->queue, ret_n, err, errlen);
	mysql_free_result(rr.res);
	return r;
}

/* Round trip 2: mark the locked rows claimed, by primary key, and commit. */
static int claim_commit(struct store *s, const struct claim_args *a, size_t n,
			char *err, size_t errlen)
{
	struct run rr;
	size_t i;
	int r;

	sql_reset(s);
	if (n > 0) {
		sql_add(s, "UPDATE work_items SET state = 'claimed', claim_token = claim_token + 1, "
			"attempts = attempts + 1, claimed_by = %s, claimed_at = NOW(6), "
			"visible_at = NOW(6) + INTERVAL %llu MICROSECOND WHERE id IN (",
			s->claimer_sql, (unsigned long long)a->lease_ms * 1000u);
		for (i = 0; i < n; i++)
			sql_add(s, "%s%llu", i ? "," : "", (unsigned long long)s->scratch[i].id);
		sql_add(s, ");");
	}
	sql_add(s, "COMMIT");
	r = run(s, "store_claim", &rr, err, errlen);
	if (r < 0)
		return r;
	if (n > 0 && rr.rows[0] != n) {
		/* Cannot happen while we hold the row locks; refuse rather than hand out rows
		 * whose token we do not know. The COMMIT already went through: the rows stay
		 * claimed until their lease ends. */
		set_err(err, errlen, "store_claim: claimed %zu rows but updated %llu", n,
			(unsigned long long)rr.rows[0]);
		return -EIO;
	}
	return 0;
}

static int claim_once(struct store *s, const struct claim_args *a, size_t *ret_n,
		      size_t *ret_completed, char *err, size_t errlen)
{
	size_t n = 0, completed = 0;
	struct run rr;
	int r;

	if (a->max == 0) {
		/* Complete only: one autocommit statement. */
		sql_reset(s);
		sql_add_complete(s, a->done, a->ndone);
		r = run(s, "store_claim", &rr, err, errlen);
		if (r < 0)
			return r;
		*ret_n = 0;
		*ret_completed = (size_t)rr.rows[0];
		return 0;
	}
	r = claim_lock_rows(s, a, &n, &completed, err, errlen);
	if (r < 0)
		goto fail;
	r = claim_commit(s, a, n, err, errlen);
	if (r < 0)
		goto fail;
	*ret_n = n;
	*ret_completed = completed;
	return 0;
fail:
	store_items_clear(s->scratch, n);
	abort_trx(s);
	return r;
}

static int scratch_reserve(struct store *s, size_t n)
{
	struct store_item *p;

	if (n <= s->scratch_cap)
		return 0;
	p = realloc(s->scratch, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + s->scratch_cap, 0, (n - s->scratch_cap) * sizeof(*p));
	s->scratch = p;
	s->scratch_cap = n;
	return 0;
}

int store_claim(struct store *s, const char *queue, unsigned max, unsigned lease_ms,
		const struct store_ref *done, size_t ndone,
		struct store_item *items, size_t *ret_n, size_t *ret_completed,
		char *err, size_t errlen)
{
	struct claim_args a = { queue, max, lease_ms, done, ndone };
	size_t n = 0, completed = 0;
	unsigned attempt = 0;
	int r;

	if (!s || !ret_n || !ret_completed || (max > 0 && !items) || max > STORE_MAX_REFS) {
		set_err(err, errlen, "store_claim: bad arguments");
		return -EINVAL;
	}
	r = check_queue("store_claim", queue, err, errlen);
	if (r == 0)
		r = check_refs("store_claim", done, ndone, err, errlen);
	if (r < 0)
		return r;
	if (!s->conn)
		return not_connected("store_claim", err, errlen);
	if (max == 0 && ndone == 0) {
		*ret_n = 0;
		*ret_completed = 0;
		return 0;
	}
	if (scratch_reserve(s, max) < 0) {
		set_err(err, errlen, "store_claim: out of memory");
		return -ENOMEM;
	}
	do
		r = claim_once(s, &a, &n, &completed, err, errlen);
	while (r < 0 && retry(s, r, &attempt));
	if (r < 0)
		return final(r);
	memcpy(items, s->scratch, n * sizeof(*items));
	memset(s->scratch, 0, n * sizeof(*items));
	*ret_n = n;
	*ret_completed = completed;
	return 0;
}

/* ---- fail, release, extend ---- */

/* One transaction, one round trip: the fenced UPDATE decides dead or ready in SQL; the
 * SELECT after it (the row is still locked by us) tells which it decided. */
static int fail_once(struct store *s, struct store_ref ref, unsigned retry_ms, const char *error,
		     char *err, size_t errlen)
{
	const char *dead = "attempts >= max_attempts";
	struct run rr;
	MYSQL_ROW row;
	int r;

	sql_reset(s);
	sql_add(s, "START TRANSACTION;UPDATE work_items SET state = IF(%s, 'dead', 'ready'), "
		"visible_at = IF(%s, NULL, NOW(6) + INTERVAL %llu MICROSECOND), "
		"finished_at = IF(%s, NOW(6), NULL), last_error = ", dead, dead,
		(unsigned long long)retry_ms * 1000u, dead);
	sql_add_error_text(s, error);
	sql_add(s, " WHERE ");
	sql_add_fence(s, &ref, 1);
	sql_add(s, ";SELECT state FROM work_items WHERE id = %llu;COMMIT",
		(unsigned long long)ref.id);
	r = run(s, "store_fail", &rr, err, errlen);
	if (r < 0) {
		abort_trx(s);
		return r;
	}
	/* Statements: 0 START, 1 UPDATE, 2 SELECT, 3 COMMIT. */
	r = 0;
	if (rr.rows[1] > 0) {
		row = rr.res ? mysql_fetch_row(rr.res) : NULL;
		if (row && row[0] && strcmp(row[0], "dead") == 0)
			r = 2;
		else if (row && row[0] && strcmp(row[0], "ready") == 0)
			r = 1;
		else
			r = -EIO;
	}
	mysql_free_result(rr.res);
	if (r == -EIO)
		set_err(err, errlen, "store_fail: row %llu applied but its state is unexpected",
			(unsigned long long)ref.id);
	return r;
}

int store_fail(struct store *s, struct store_ref ref, unsigned retry_ms, const char *error,
	       char *err, size_t errlen)
{
	unsigned attempt = 0;
	int r;

	if (!s) {
		set_err(err, errlen, "store_fail: bad arguments");
		return -EINVAL;
	}
	if (!s->conn)
		return not_connected("store_fail", err, errlen);
	do
		r = fail_once(s, ref, retry_ms, error, err, errlen);
	while (r < 0 && retry(s, r, &attempt));
	return final(r);
}

static int update_refs(struct store *s, const char *op, const struct store_ref *refs, size_t n,
		       char *err, size_t errlen)
{
	unsigned attempt = 0;
	struct run rr;
	int r;

	do
		r = run(s, op, &rr, err, errlen);
	while (r < 0 && retry(s, r, &attempt));
	if (r < 0)
		return final(r);
	mysql_free_result(rr.res);
	return rr.rows[0] > (uint64_t)n ? (int)n : (int)rr.rows[0];
}

static int check_update(struct store *s, const char *op, const struct store_ref *refs, size_t n,
			char *err, size_t errlen)
{
	int r;

	if (!s) {
		set_err(err, errlen, "%s: bad arguments", op);
		return -EINVAL;
	}
	r = check_refs(op, refs, n, err, errlen);
	if (r < 0)
		return r;
	if (!s->conn)
		return not_connected(op, err, errlen);
	return 0;
}

int store_release(struct store *s, const struct store_ref *refs, size_t n, bool count_attempt,
		  const char *reason, char *err, size_t errlen)
{
	const char *dead = "attempts >= max_attempts";
	int r = check_update(s, "store_release", refs, n, err, errlen);

	if (r < 0 || n == 0)
		return r;
	sql_reset(s);
	if (count_attempt) {
		sql_add(s, "UPDATE work_items SET state = IF(%s, 'dead', 'ready'), "
			"visible_at = IF(%s, NULL, NOW(6)), finished_at = IF(%s, NOW(6), NULL), "
			"last_error = IF(%s, ", dead, dead, dead, dead);
		sql_add_error_text(s, reason);
		sql_add(s, ", last_error) WHERE ");
	} else {
		sql_add(s, "UPDATE work_items SET state = 'ready', visible_at = NOW(6), "
			"attempts = IF(attempts > 0, attempts - 1, 0) WHERE ");
	}
	sql_add_fence(s, refs, n);
	return update_refs(s, "store_release", refs, n, err, errlen);
}

int store_extend(struct store *s, const struct store_ref *refs, size_t n, unsigned lease_ms,
		 char *err, size_t errlen)
{
	int r = check_update(s, "store_extend", refs, n, err, errlen);

	if (r < 0 || n == 0)
		return r;
	sql_reset(s);
	sql_add(s, "UPDATE work_items SET visible_at = NOW(6) + INTERVAL %llu MICROSECOND WHERE ",
		(unsigned long long)lease_ms * 1000u);
	sql_add_fence(s, refs, n);
	return update_refs(s, "store_extend", refs, n, err, errlen);
}

/* ---- reading ---- */

int store_poll(struct store *s, const char *queue, char *err, size_t errlen)
{
	char q[QUOTED_QUEUE_MAX];
	struct run rr;
	int r;

	if (!s) {
		set_err(err, errlen, "store_poll: bad arguments");
		return -EINVAL;
	}
	r = check_queue("store_poll", queue, err, errlen);
	if (r < 0)
		return r;
	if (!s->conn)
		return not_connected("store_poll", err, errlen);
	sql_reset(s);
	sql_add(s, "SELECT 1 FROM work_items FORCE INDEX (claim_idx) WHERE queue = %s "
		"AND visible_at <= NOW(6) LIMIT 1", quote_queue(s, queue, q));
	r = run(s, "store_poll", &rr, err, errlen);
	if (r < 0)
		return final(r);
	mysql_free_result(rr.res);
	return rr.rows[0] > 0 ? 1 : 0;
}

static int take_counts(MYSQL_RES *res, struct store_count **ret, size_t *ret_n,
		       char *err, size_t errlen)
{
	size_t n = (size_t)mysql_num_rows(res), i = 0;
	struct store_count *c = calloc(n ? n : 1, sizeof(*c));
	MYSQL_ROW row;

	if (!c) {
		set_err(err, errlen, "store_counts: out of memory");
		return -ENOMEM;
	}
	while (i < n && (row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);

		if (!row[0] || !row[1] || !parse_u64(row[2], lens[2], &c[i].count)) {
			free(c);
			set_err(err, errlen, "store_counts: bad value in the result");
			return -EIO;
		}
		/* A queue name may be up to 64 characters, more bytes than fit: cut it on a
		 * character boundary. */
		utf8_sanitize(row[0], c[i].queue, STORE_QUEUE_MAX);
		snprintf(c[i].state, sizeof(c[i].state), "%s", row[1]);
		i++;
	}
	*ret = c;
	*ret_n = i;
	return 0;
}

int store_counts(struct store *s, struct store_count **ret, size_t *ret_n,
		 char *err, size_t errlen)
{
	struct run rr;
	int r;

	if (!s || !ret || !ret_n) {
		set_err(err, errlen, "store_counts: bad arguments");
		return -EINVAL;
	}
	if (!s->conn)
		return not_connected("store_counts", err, errlen);
	r = run_sql(s, "store_counts", "SELECT queue, state, COUNT(*) FROM work_items "
		    "GROUP BY queue, state ORDER BY queue, state", &rr, err, errlen);
	if (r < 0)
		return final(r);
	if (!rr.res) {
		set_err(err, errlen, "store_counts: no result");
		return -EIO;
	}
	r = take_counts(rr.res, ret, ret_n, err, errlen);
	mysql_free_result(rr.res);
	return r;
}
