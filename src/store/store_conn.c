/* store_conn — the store's connections and how its statements run: connecting (with the
 * client library's set-up), sending statements and reading their results, mapping errors,
 * retrying deadlocks and lock wait timeouts; and the small helpers every statement builder
 * uses (quoting, error texts, numbers). See store.h for the interface, store_int.h for the
 * helpers' contracts. */
#include "store/store.h"
#include "store/store_int.h"
#include "store/store_migrate.h"

#include "common/secret.h"
#include "common/utf8.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef CLAIMD_OPENSSL_PREINIT
#include <openssl/ssl.h>
#endif

#define RETRIES_DEADLOCK 5      /* tries in all for 1213 */
#define RETRIES_LOCK_WAIT 2     /* tries in all for 1205 */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* Fills err (if any) and returns code. */
int sq_fail_msg(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- building SQL ---- */

/* Writes str quoted and escaped to out (2 * len + 3 bytes); returns its length. */
size_t sq_quote(MYSQL *c, char *out, const char *str, size_t len)
{
	size_t n = mysql_real_escape_string(c, out + 1, str, (unsigned long)len);

	out[0] = '\'';
	memcpy(out + 1 + n, "'", 2);
	return n + 2;
}

/* Copies at most max bytes of src to dst (max + 1 bytes), never ending inside a UTF-8
 * sequence, with each byte that is not valid UTF-8 made '?': the columns are utf8mb4 and a
 * strict server would refuse the whole UPDATE. Returns the length written. */
size_t sq_utf8_sanitize(const char *src, char *dst, size_t max)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t in = 0, out = 0, n = strlen(src), k;

	while (in < n && out < max) {
		k = utf8_len(p + in, n - in);
		if (k == 0) {
			dst[out++] = '?';
			in++;
			continue;
		}
		if (out + k > max)
			break;
		memcpy(dst + out, p + in, k);
		out += k;
		in += k;
	}
	dst[out] = '\0';
	return out;
}

uint64_t sq_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool sq_parse_u64(const char *p, unsigned long len, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned long i;

	if (!p || len == 0)
		return false;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - (uint64_t)(p[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*ret = v;
	return true;
}


/* ---- running statements, errors, retries ---- */

/* 2002 CR_CONNECTION_ERROR, 2003 CR_CONN_HOST_ERROR, 2005 CR_UNKNOWN_HOST, 2006
 * CR_SERVER_GONE_ERROR, 2012 CR_SERVER_HANDSHAKE_ERR, 2013 CR_SERVER_LOST, 2014
 * CR_COMMANDS_OUT_OF_SYNC (the session's state is unknown: start over), 2055
 * CR_SERVER_LOST_EXTENDED, 1053 ER_SERVER_SHUTDOWN, 1927 ER_CONNECTION_KILLED, 4031
 * disconnected for inactivity. */
/* 1047 is what a Galera node out of the primary component answers ("WSREP has not yet
 * prepared node for application use"): a new connection goes to a node that is synced. */
bool sq_conn_lost(unsigned e)
{
	static const unsigned lost[] = { 2002, 2003, 2005, 2006, 2012, 2013, 2014, 2055,
					 1053, 1927, 4031, 1047 };
	size_t i;

	for (i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
		if (e == lost[i])
			return true;
	return false;
}

void sq_drop(struct store *s)
{
	if (s->conn)
		mysql_close(s->conn);
	s->conn = NULL;
}

/* 1264 out of range, 1292 a wrong date or number, 1366 a wrong string (bytes not of the
 * column's character set), 1406 too long, 4025 a CHECK constraint: the server refused a value
 * we sent. The column is the last name after "for column " (`db`.`t`.`c` or 'c'), or the
 * constraint's ("CONSTRAINT `priority_range` failed"). */
static bool bad_value(unsigned e, const char *msg, char *col, size_t len)
{
	const char *p = strstr(msg, "for column "), *end;

	if (e != 1264 && e != 1292 && e != 1366 && e != 1406 && e != 4025)
		return false;
	if (p) {
		end = p += 11;
		end += strcspn(end, " ");
		for (const char *q = p; q < end; q++)
			if (*q == '.')
				p = q + 1;
	} else if ((p = strstr(msg, "CONSTRAINT `"))) {
		end = p += 12;
		end += strcspn(end, "`");
	} else {
		p = end = msg;
	}
	while (p < end && (*p == '`' || *p == '\''))
		p++;
	while (end > p && (end[-1] == '`' || end[-1] == '\''))
		end--;
	snprintf(col, len, "%.*s", (int)(end - p), p);
	return true;
}

/* Fills err from the connection's last error and maps it: -ENOTCONN (the connection is
 * dropped), -EDEADLK for 1213 and -ETIMEDOUT for 1205 (retried by the callers), -EDOM for a
 * value the server refused (err starts with its column), -EINVAL for a rule of the schema's
 * triggers (1644, err: its message), or -EIO. */
static int db_error(struct store *s, const char *op, char *err, size_t errlen)
{
	unsigned e = mysql_errno(s->conn);
	char col[65];

	if (bad_value(e, mysql_error(s->conn), col, sizeof(col))) {
		sq_fail_msg(0, err, errlen, "%s: %s: mysql error %u: %s", col, op, e,
			    mysql_error(s->conn));
		return -EDOM;
	}
	if (e == 1644) {   /* a SIGNAL of the schema's triggers: one of its rules, in its words */
		sq_fail_msg(0, err, errlen, "%s", mysql_error(s->conn));
		return -EINVAL;
	}
	sq_fail_msg(0, err, errlen, "%s: mysql error %u: %s", op, e, mysql_error(s->conn));
	if (sq_conn_lost(e)) {
		sq_drop(s);
		return -ENOTCONN;
	}
	return e == 1213 ? -EDEADLK : e == 1205 ? -ETIMEDOUT : -EIO;
}

void sq_end(struct store *s)
{
	if (s->ncuts == s->cuts_cap) {
		size_t cap = s->cuts_cap ? 2 * s->cuts_cap : 16;
		size_t *p = realloc(s->cuts, cap * sizeof(*p));
		if (!p) {
			s->sql.failed = true;   /* sq_run says out of memory */
			return;
		}
		s->cuts = p;
		s->cuts_cap = cap;
	}
	s->cuts[s->ncuts++] = s->sql.len;
	sql_add(s, ";");
}

int sq_need_multi(struct store *s, char *err, size_t errlen)
{
	if (s->multi)
		return 0;
	if (mysql_set_server_option(s->conn, MYSQL_OPTION_MULTI_STATEMENTS_ON) != 0)
		return db_error(s, "store: multi-statements", err, errlen);
	s->multi = true;
	return 0;
}

/* Reads every result of the statements sent, into rr from its statement *i on. */
static int take_results(struct store *s, struct run *rr, unsigned *i)
{
	MYSQL_RES *res;
	int status;

	do {
		res = mysql_store_result(s->conn);
		if (!res && mysql_field_count(s->conn) != 0)
			return -1;
		if (*i < RUN_MAX_STMTS)
			rr->rows[(*i)++] = res ? mysql_num_rows(res) : mysql_affected_rows(s->conn);
		else
			(*i)++;
		if (res && !rr->res)
			rr->res = res;
		else if (res && !rr->res2)
			rr->res2 = res;
		else if (res && !rr->res3)
			rr->res3 = res;
		else if (res && !rr->res4)
			rr->res4 = res;
		else
			mysql_free_result(res);
		status = mysql_next_result(s->conn);
	} while (status == 0);
	return status > 0 ? -1 : 0;
}

/* Sends s->sql and reads every result: the row count of each statement into rr->rows, the
 * first four result sets into rr->res .. res4 (callers send at most four).
 * With multi-statements off, the statements go one by one, between the cuts of sq_end. */
int sq_run(struct store *s, const char *op, struct run *rr, char *err, size_t errlen)
{
	const char *text = s->sql.data;
	size_t from = 0, k = 0, n = s->multi ? 0 : s->ncuts;
	unsigned i = 0;
	int r;

	memset(rr, 0, sizeof(*rr));
	if (buf_failed(&s->sql))
		return sq_fail_msg(-ENOMEM, err, errlen, "%s: out of memory", op);
	for (;;) {
		size_t to = k < n ? s->cuts[k] : s->sql.len;
		if (to > from) {
			if (mysql_real_query(s->conn, text + from, (unsigned long)(to - from)) != 0 ||
			    take_results(s, rr, &i) < 0)
				goto fail;
		}
		if (k++ >= n)
			break;
		from = to + 1;   /* past the ';' */
	}
	return 0;
fail:
	r = db_error(s, op, err, errlen);
	mysql_free_result(rr->res);
	mysql_free_result(rr->res2);
	mysql_free_result(rr->res3);
	mysql_free_result(rr->res4);
	rr->res = rr->res2 = rr->res3 = rr->res4 = NULL;
	return r;
}

/* After a failed statement inside a transaction: leave none open. err keeps the first
 * error; a failed ROLLBACK matters only if the connection is gone (the server rolls back). */
void sq_abort(struct store *s)
{
	if (s->conn && mysql_real_query(s->conn, "ROLLBACK", 8) != 0 &&
	    sq_conn_lost(mysql_errno(s->conn)))
		sq_drop(s);
}

/* Whether to try again after r; sleeps 1-2 ms, 2-4 ms, 4-8 ms, ... first. */
bool sq_retry(struct store *s, int r, unsigned *attempt)
{
	unsigned max = r == -ETIMEDOUT ? RETRIES_LOCK_WAIT : RETRIES_DEADLOCK, base_us;
	struct timespec ts = { 0, 0 };

	if (r != -EDEADLK && r != -ETIMEDOUT)
		return false;
	sq_abort(s);
	if (++*attempt >= max || !s->conn)
		return false;
	base_us = 1000u << (*attempt - 1);
	ts.tv_nsec = (long)(base_us + (unsigned)rand_r(&s->seed) % base_us) * 1000;
	nanosleep(&ts, NULL);
	return true;
}

/* What callers see: retryable errors that ran out of tries are plain SQL errors. */
int sq_final(int r)
{
	return r == -EDEADLK || r == -ETIMEDOUT ? -EIO : r;
}

int sq_add_queue_in(struct store *s, const char *op, struct buf *b, const char *const *queues,
		    size_t n, char *err, size_t errlen)
{
	char q[QUOTED_QUEUE_MAX];
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++)
		r = sq_check(s, op, NULL, 0, queues[i], err, errlen);
	if (r < 0 || n == 0)
		return r < 0 ? r : sq_fail_msg(-EINVAL, err, errlen, "%s: no queue", op);
	buf_puts(b, "queue IN (");
	for (size_t i = 0; i < n; i++) {
		sq_quote(s->conn, q, queues[i], strlen(queues[i]));
		buf_printf(b, "%s%s", i ? "," : "", q);
	}
	buf_puts(b, ")");
	return 0;
}

int sq_run_retry(struct store *s, const char *op, struct run *rr, char *err, size_t errlen)
{
	unsigned attempt = 0;
	int r;

	do
		r = sq_run(s, op, rr, err, errlen);
	while (r < 0 && sq_retry(s, r, &attempt));
	if (r < 0)
		sq_abort(s);
	return sq_final(r);
}

/* Common argument checks: a store, a sane row list, a queue name if queue is not NULL,
 * a connection. */
int sq_check(struct store *s, const char *op, const struct store_ref *refs, size_t n,
		 const char *queue, char *err, size_t errlen)
{
	size_t qlen = queue ? strlen(queue) : 1;

	if (!s)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: no store", op);
	if (n > MAX_REFS || (n > 0 && !refs))
		return sq_fail_msg(-EINVAL, err, errlen, "%s: bad row list (%zu rows)", op, n);
	if (qlen == 0 || qlen > STORE_QUEUE_MAX)
		return sq_fail_msg(-EINVAL, err, errlen, "%s: queue name must be 1..%d bytes", op,
				STORE_QUEUE_MAX);
	if (!s->conn)
		return sq_fail_msg(-ENOTCONN, err, errlen, "%s: not connected", op);
	return 0;
}

/* ---- life cycle ---- */

/* Debian's Connector/C calls OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG) in
 * mysql_library_init() whether or not a connection will use TLS: openssl.cnf, every error
 * string and the name tables of all ciphers and digests. That is 1.6 MiB of RSS per process
 * (a worker: 6.2 -> 4.6 MiB), mostly libcrypto pages touched once. Without TLS the protocol
 * uses OpenSSL only in password authentication, through EVP_sha1()-style objects, never
 * by cipher or digest name (checked: mysql_native_password and ed25519 users log in).
 * OpenSSL runs each init step once, so the NO_ flags here make the library's own full call
 * find those steps done. With TLS, leave OpenSSL to the library: openssl.cnf (the system's
 * crypto policy) and error texts matter there, though a handshake works either way. */
static int openssl_init(bool tls)
{
#ifdef CLAIMD_OPENSSL_PREINIT
	const uint64_t lean = OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS |
			      OPENSSL_INIT_NO_LOAD_SSL_STRINGS | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
			      OPENSSL_INIT_NO_ADD_ALL_DIGESTS;

	if (!tls && !OPENSSL_init_ssl(lean, NULL))
		return -EIO;
#endif
	return 0;
}

int store_library_init(bool tls)
{
	int r = openssl_init(tls);

	if (r < 0)
		return r;
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
	/* claimed_by is VARCHAR(255): cut on a character boundary. */
	sq_utf8_sanitize(claimer ? claimer : "", s->claimer, 255);
	s->seed = (unsigned)getpid() ^ (unsigned)time(NULL) ^ (unsigned)(uintptr_t)s;
	s->dedupe_window_s = STORE_DEDUPE_WINDOW_S;
	*ret = s;
	return 0;
}

void store_set_migrating(struct store *s)
{
	s->migrating = true;
}

unsigned long store_session_id(const struct store *s)
{
	return s && s->conn ? mysql_thread_id(s->conn) : 0;
}

void store_set_dedupe_window(struct store *s, unsigned seconds)
{
	s->dedupe_window_s = seconds;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	sq_drop(s);
	free(s->scratch);  /* store_claim leaves no payload in it, whatever happened */
	free(s->cuts);
	buf_free(&s->sql);
	free(s);
}

bool store_connected(const struct store *s)
{
	return s && s->conn;
}

/* CLAIMD_DB_PASSWORD if set and not empty, else the first line of password_file. */
static int read_password(const struct dsn *d, char *pw, size_t pwlen, char *err, size_t errlen)
{
	const char *file = dsn_password_file(d);
	char why[600];

	pw[0] = '\0';
	if (!file) {
		const char *env = getenv("CLAIMD_DB_PASSWORD");
		snprintf(pw, pwlen, "%s", env ? env : "");
		return 0;
	}
	if (secret_read("password_file", file, pw, pwlen, why, sizeof(why)) < 0)
		return sq_fail_msg(-EPERM, err, errlen, "%s", why);
	return 0;
}

/* The DSN's TLS and option-file settings (common/dsn.h). Connector/C verifies the server's
 * certificate chain whenever a CA is given, and its name only with VERIFY_SERVER_CERT: that
 * is VERIFY_CA and VERIFY_IDENTITY. */
static void set_tls(MYSQL *c, const struct dsn *d)
{
	my_bool yes = 1, no = 0;

	if (d->option_file[0])
		mysql_options(c, MYSQL_READ_DEFAULT_FILE, d->option_file);
	if (d->option_group[0])
		mysql_options(c, MYSQL_READ_DEFAULT_GROUP, d->option_group);
	if (d->ssl_mode == DSN_SSL_DISABLED ||
	    (d->ssl_mode == DSN_SSL_DEFAULT && !d->ssl_ca[0] && !d->ssl_cert[0]))
		return;
	/* Any of these asks for TLS (PREFERRED: used when the server offers it). */
	mysql_ssl_set(c, d->ssl_key[0] ? d->ssl_key : NULL, d->ssl_cert[0] ? d->ssl_cert : NULL,
		      d->ssl_ca[0] ? d->ssl_ca : NULL, NULL, NULL);
	if (d->ssl_mode >= DSN_SSL_REQUIRED)
		mysql_options(c, MYSQL_OPT_SSL_ENFORCE, &yes);
	mysql_options(c, MYSQL_OPT_SSL_VERIFY_SERVER_CERT,
		      d->ssl_mode == DSN_SSL_VERIFY_IDENTITY ? &yes : &no);
}

static void set_options(MYSQL *c, bool migrating)
{
	unsigned connect_timeout = 3, rw_timeout = 10;
	my_bool off = 0;

	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
	/* A migration's statement may run for minutes (an index built online): it waits for the
	 * server as long as that takes, and TCP keepalive (set_keepalive) notices a server that
	 * vanished instead. */
	if (!migrating) {
		mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &rw_timeout);
		mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &rw_timeout);
	}
	mysql_options(c, MYSQL_OPT_RECONNECT, &off);
	mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(c, MYSQL_INIT_COMMAND, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	/* A lock wait must end (1205, retried) well before the 10 s read timeout drops us. A
	 * claim is two round trips in one transaction; if the network drops between them the
	 * server would keep that session, and the rows it locked, until wait_timeout (8 hours):
	 * MariaDB ends a session idle inside a transaction after idle_transaction_timeout. Our
	 * transactions are never idle for long, so 10 s (a versioned comment: a MySQL server,
	 * which has no such variable, still connects and --doctor can say it is unsupported).
	 * time_zone: every time claimd writes or compares (NOW(6), the TIMESTAMP columns, the
	 * claim cursor's text) is UTC, which never jumps; in the server's own zone a change of
	 * daylight saving time would move NOW(6) by an hour (sql/migrations/003_utc_times.sql).
	 * '+00:00' needs no time zone tables.
	 * max_recursive_iterations: the server stops a recursive query (the rows a dead row
	 * cancels, down its edges; the rows a retry puts back) after that many levels, 1,000
	 * by default, without an error; a chain of rows may be longer. */
	mysql_options(c, MYSQL_INIT_COMMAND, "SET SESSION autocommit = 1, innodb_lock_wait_timeout = 5, "
		      "time_zone = '+00:00', max_recursive_iterations = 4294967295 "
		      "/*M!100300 , idle_transaction_timeout = 10 */");
	/* A schema change waits for its table's metadata lock while every statement that comes
	 * to the table after it waits behind it: with the server's default (a day) one long
	 * transaction of an application would stop the table's inserts for as long. A second,
	 * then store_migrate tries again, after the queue behind it drained. */
	if (migrating)
		mysql_options(c, MYSQL_INIT_COMMAND, "SET SESSION lock_wait_timeout = "
			      STRINGIFY(STORE_MIGRATE_LOCK_WAIT_S));
}

/* A request the network swallows (a link cut, a host gone) fails once it has gone
 * unacknowledged for TCP_UNACKED_MS, not at the 10 s read timeout, so the next server of the
 * DSN is tried sooner. A server slow to answer (a lock wait, a long statement) has
 * acknowledged the request and is not hurried. Only TCP has the option. */
#define TCP_UNACKED_MS 4000u

static void set_tcp_user_timeout(MYSQL *c)
{
	unsigned ms = TCP_UNACKED_MS;
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	int fd = (int)mysql_get_socket(c);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
	    (sa.ss_family != AF_INET && sa.ss_family != AF_INET6))
		return;
	/* best effort: without it the read timeout still ends the wait */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

/* A migrating session has no read timeout: a server that vanished while it waits for a long
 * statement is noticed by keepalive probes instead, after KEEPALIVE_IDLE_S of silence and
 * (with TCP_USER_TIMEOUT) TCP_UNACKED_MS unanswered. */
#define KEEPALIVE_IDLE_S 30
#define KEEPALIVE_INTERVAL_S 5

static void set_keepalive(MYSQL *c)
{
	int on = 1, idle = KEEPALIVE_IDLE_S, intvl = KEEPALIVE_INTERVAL_S, cnt = 3;
	int fd = (int)mysql_get_socket(c);

	if (fd < 0)
		return;
	/* best effort, as set_tcp_user_timeout (a Unix socket has no such options) */
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0)
		return;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* A Galera node takes writes when synced (wsrep_local_state 4); a server without Galera
 * has no such status. Returns 0, or -EAGAIN with the reason. */
static int check_synced(struct store *s, char *err, size_t errlen)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	int r = 0;

	if (mysql_query(s->conn, "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'") != 0)
		return db_error(s, "store_connect", err, errlen);
	res = mysql_store_result(s->conn);
	row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[1] && strcmp(row[1], "4") != 0)
		r = sq_fail_msg(-EAGAIN, err, errlen, "a Galera node not synced "
				"(wsrep_local_state %s, not 4)", row[1]);
	mysql_free_result(res);
	return r;
}

/* Appends to err what a verifying ssl-mode checks, after a failed TLS handshake. */
static void tls_hint(const struct dsn *d, const char *host, char *err, size_t errlen)
{
	size_t n = strlen(err);

	if (d->ssl_mode == DSN_SSL_VERIFY_CA)
		snprintf(err + n, errlen - n, " (ssl-mode=VERIFY_CA: the server's certificate must be "
			 "signed by ssl-ca %s)", d->ssl_ca);
	else if (d->ssl_mode == DSN_SSL_VERIFY_IDENTITY)
		snprintf(err + n, errlen - n, " (ssl-mode=VERIFY_IDENTITY: the server's certificate "
			 "must be signed by ssl-ca %s and name the host '%s')", d->ssl_ca, host);
}

static int connect_one(struct store *s, const struct dsn_host *h, const char *pw, char *err,
		       size_t errlen)
{
	const struct dsn *d = &s->dsn;
	const char *host = h->host[0] ? h->host : "localhost";
	const char *sock = strcmp(host, "localhost") == 0 && d->socket[0] ? d->socket : NULL;
	int r;

	s->conn = mysql_init(NULL);
	if (!s->conn)
		return sq_fail_msg(-ENOMEM, err, errlen, "store_connect: out of memory");
	set_options(s->conn, s->migrating);
	set_tls(s->conn, d);
	/* No password of our own: NULL lets the client library take the option file's (an
	 * empty string would be a password, and override it). */
	if (!pw[0] && d->option_file[0])
		pw = NULL;
	/* Without multi-statements: only the claim turns them on (sq_need_multi). */
	s->multi = false;
	if (!mysql_real_connect(s->conn, host, d->user[0] ? d->user : NULL, pw, d->db, h->port,
				sock, CLIENT_MULTI_RESULTS | CLIENT_FOUND_ROWS)) {
		unsigned e = mysql_errno(s->conn);
		r = db_error(s, "store_connect", err, errlen);
		if (e == 2026)  /* CR_SSL_CONNECTION_ERROR: say what was checked */
			tls_hint(d, host, err, errlen);
		return r == -ENOTCONN ? r : -EIO;
	}
	set_tcp_user_timeout(s->conn);
	if (s->migrating)
		set_keepalive(s->conn);
	if (d->nhosts > 1 && (r = check_synced(s, err, errlen)) < 0)
		return r == -EAGAIN ? -ENOTCONN : r;
	return 0;
}

int store_connect(struct store *s, char *err, size_t errlen)
{
	const struct dsn *d = &s->dsn;
	unsigned n = d->nhosts;
	char pw[1024], one[STORE_ERR_MAX], name[DSN_FIELD_MAX + 8];
	struct buf why;
	int r;

	sq_drop(s);
	r = read_password(&s->dsn, pw, sizeof(pw), err, errlen);
	if (r < 0)
		return r;
	buf_init(&why);
	/* In the DSN's order every time: every claimd prefers the same server. */
	for (unsigned i = 0; i < n; i++) {
		const struct dsn_host *h = &d->hosts[i];

		s->host = i;
		one[0] = '\0';
		r = connect_one(s, h, pw, one, sizeof(one));
		if (r == 0) {
			sq_quote(s->conn, s->claimer_sql, s->claimer, strlen(s->claimer));
			explicit_bzero(pw, sizeof(pw));
			buf_free(&why);
			return 0;
		}
		sq_drop(s);
		if (n == 1 || r == -ENOMEM) {
			snprintf(err, errlen, "%s", one);
			break;
		}
		buf_printf(&why, "%s%s: %s", i ? "; " : "", store_server(s, name, sizeof(name)), one);
		if (i == n - 1) {
			snprintf(err, errlen, "no server of %u answers: %s", n, why.data ? why.data : "");
			r = -ENOTCONN;
		}
	}
	explicit_bzero(pw, sizeof(pw));
	buf_free(&why);
	return r;
}

const char *store_server(const struct store *s, char *buf, size_t len)
{
	const char *host = s->dsn.hosts[s->host].host;
	unsigned port = s->dsn.hosts[s->host].port;

	if (!host[0])
		host = "localhost";
	if (strchr(host, ':'))
		snprintf(buf, len, "[%s]:%u", host, port ? port : 3306);
	else
		snprintf(buf, len, "%s:%u", host, port ? port : 3306);
	return buf;
}

