/* store — everything claimd says to MariaDB/MySQL. The only module that includes mysql.h
 * (store.c, store_conn.c and store_admin.c, through their private store_int.h).
 *
 * A struct store is one connection, used by one thread at a time. Sessions run at READ
 * COMMITTED and in UTC (time_zone '+00:00'); every time comparison uses the database clock
 * (NOW(6)), and every time column is a TIMESTAMP(6): a point in time, whatever zone a session
 * reads it in, so a change of daylight saving time moves nothing. Claims take rows with
 * SELECT ... FOR UPDATE SKIP LOCKED over the claim index and update them by primary key in
 * the same short transaction; every later update of a claimed row (complete, fail, release,
 * extend) names the row's claim token and state 'claimed', so a worker whose claim was lost
 * (lease expired, released by the supervisor) can never overwrite the row's new owner.
 * Deadlock (1213) and lock wait timeout (1205) are retried inside the call.
 *
 * Errors: functions return >= 0 on success or a negative errno-style code, and fill the
 * caller's err buffer with the server's message and error number:
 *   -ENOTCONN  the connection is gone (2002, 2003, 2006, 2013, ...); call store_connect again
 *              (with back-off); nothing was committed by the failed call unless it says so.
 *   -EDOM      the server refused a value (1264, 1292, 1366, 1406, 4025: out of range, not
 *              a date, not of the column's character set, too long, a CHECK constraint); err
 *              starts with the column's name (or the constraint's) and a colon.
 *   -EIO       any other SQL error (missing table, bad privileges, ...).
 *   -EINVAL    bad arguments, or a rule of the schema's triggers refused the change (SQL
 *              error 1644: err is the trigger's message, "work_deps: ... a cycle").
 * The module does not log.
 */
#ifndef CLAIMD_STORE_H
#define CLAIMD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dsn.h"
#include "common/place.h"
#include "common/row_state.h"

#define STORE_QUEUE_MAX 64
#define STORE_ERR_MAX 512
#define STORE_PAYLOAD_MAX (16u * 1024 * 1024 - 1) /* MEDIUMBLOB */
#define STORE_DEDUPE_KEY_MAX 255
#define STORE_GROUP_KEY_MAX 255
#define STORE_PRIORITY_MIN (-10)  /* work_items.priority's range (a CHECK constraint) */
#define STORE_PRIORITY_MAX 10
#define STORE_DEDUPE_FOR_MAX_S 315360000u /* a row's own dedupe window: 10 years at most */
#define STORE_DEDUPE_WINDOW_S 300
#define STORE_RESULT_MAX (64u * 1024)   /* bytes of a row's result */
#define STORE_PROGRESS_MAX 1024          /* bytes of a row's progress (JSON text) */
#define STORE_TYPE_MAX 255               /* a content type */

struct store;

/* A claimed row, as the worker needs it. */
struct store_item {
	uint64_t id;
	uint64_t token;          /* the fencing token written by this claim */
	uint32_t attempt;        /* 1 for the first run */
	uint32_t max_attempts;
	bool spent;              /* claimed again after its last attempt, whose worker vanished
				  * (the lease ran out): it is not to run; store_fail makes it dead */
	bool cancelled;          /* claimed again after its lease ran out, with a live cancel
				  * request: it is not to run; store_fail makes it dead */
	char queue[STORE_QUEUE_MAX + 1];
	unsigned char *payload;  /* malloc'd, NUL-terminated for convenience; may be NULL */
	size_t payload_len;
	uint32_t timeout_ms;     /* the row's own time limit (timeout_s); 0 = none */
	int64_t enqueued_at_ms;  /* created_at, unix ms */
	uint32_t min_interval_ms; /* its queue's shared rate limit (queues.min_interval_ms), 0 = none */
	uint32_t retry_base_ms;  /* its retry back-off as the claim read it (its own, else its */
	uint32_t retry_max_ms;   /* queue's: queues.retry_*): base and max in ms, 0 = not set */
	int8_t retry_jitter_pct; /* jitter 0..100 percent, -1 = not set */
	int16_t priority;        /* smaller runs first */
	char *group;             /* FIFO group key, malloc'd; NULL when the row has none */
	uint64_t group_seq;      /* the row's number within its group (0 without one) */
	char *content_type;      /* the payload's type, malloc'd; NULL when the row has none */
	char *traceparent;       /* its W3C traceparent, malloc'd; NULL when the row has none */
	uint64_t waited_us;      /* how long it had been claimable when claimed (visible_at to
				  * the claim, by the database's clock) */
	bool has_dependents;     /* rows wait for it (work_deps): its finish counts it off */
	uint32_t key_concurrency; /* with a group: how many rows of its key may run at once
				   * (0: no limit; 1: a FIFO group) */
	uint32_t key_interval_ms; /* with a group: its key's rate, a start per interval (0: none) */
};

/* A reference to a claimed row for complete/release/extend. grouped: the row has a FIFO
 * group (store_item.group), so finishing it also starts the group's next row (set it from
 * the claimed item; store_release looks for itself). What a successful run leaves in the
 * row, for store_claim's done[] only (NULL: the column stays as it is): result (at most
 * STORE_RESULT_MAX bytes) and its type, and the last progress (JSON text, at most
 * STORE_PROGRESS_MAX bytes) that was not written yet. */
struct store_ref {
	uint64_t id;
	uint64_t token;
	bool grouped;
	bool dependents;         /* store_item.has_dependents: its completion counts it off the
				  * rows that wait for it (store_claim's done[]) */
	bool key_fill;           /* grouped, its key's limit not 1 (key_limit: as claimed, 0
				  * none): finishing it starts the key's waiting rows it allows now */
	uint32_t key_limit;
	/* With key_fill: the row's key (store_item.group, kept by the caller until the call
	 * returns) and its number in it (store_item.group_seq), from which store_claim finds
	 * the rows the key lets start next (NULL: it walks the key's live rows instead). */
	const char *group;
	uint64_t group_seq;
	const unsigned char *result;
	size_t result_len;
	const char *result_type;
	const char *progress;
};

/* Whether any of refs[0..n) has a FIFO group (finishing them starts their groups' next rows). */
bool store_refs_grouped(const struct store_ref *refs, size_t n);

struct store_count {
	char queue[STORE_QUEUE_MAX + 1];
	char state[16];
	uint64_t count;
};

/* ---- the schema (sql/migrations, built in) ---- */

struct store_migration {
	unsigned version;          /* 1, 2, ... */
	const char *name;          /* "base" */
	const char *text;          /* the SQL script, as the mariadb client would read it */
	size_t len;
};
extern const struct store_migration store_migrations[];
extern const unsigned store_nmigrations;   /* the schema version this claimd needs */

/* The database's schema version: the highest migration recorded in claimd_schema; 0 when
 * there is none (no claimd_schema table). Returns 0 or a negative error. */
int store_schema_version(struct store *s, unsigned *ret, char *err, size_t errlen);

/* Applying migrations: store_migrate.h. */

/* Which servers claimd supports: MariaDB 10.6 or later (and Galera clusters of it). Its SQL
 * uses MariaDB's own forms (INSERT ... RETURNING, ADD COLUMN IF NOT EXISTS, compound
 * statements outside stored programs, idle_transaction_timeout) and the binary log follower
 * MariaDB's replication protocol. */
#define STORE_MARIADB_MIN_MAJOR 10
#define STORE_MARIADB_MIN_MINOR 6

enum store_server_kind {
	STORE_SERVER_MARIADB,          /* MariaDB, new enough */
	STORE_SERVER_MARIADB_OLD,      /* MariaDB before 10.6 */
	STORE_SERVER_NOT_MARIADB,      /* no "MariaDB" in its version: MySQL, Percona, ... */
	STORE_SERVER_UNREADABLE,       /* "MariaDB", but no X.Y.Z version in it */
	STORE_SERVER_NKINDS
};
extern const char *const store_server_kind_names[STORE_SERVER_NKINDS];

/* Pure: the kind of server whose VERSION() is version ("10.11.6-MariaDB-log", "8.0.36"; a
 * "5.5.5-" prefix is skipped), and its version numbers into *ret_major, *ret_minor (0 when
 * not read; either may be NULL). */
enum store_server_kind store_server_classify(const char *version, unsigned *ret_major,
					     unsigned *ret_minor);

/* Pure: 0 when a server of that version is supported, else -ENOTSUP with why in err, naming
 * what it is (comment: its @@version_comment, which names MySQL's flavours; may be NULL). */
int store_server_supported(const char *version, const char *comment, char *err, size_t errlen);

/* The server's VERSION() and @@version_comment (one statement). Returns 0 or a negative
 * error. */
int store_server_version(struct store *s, char *version, size_t vlen, char *comment,
			 size_t clen, char *err, size_t errlen);

/* What claimd --doctor reads of the server, and which of claimd's statements it refuses. */
struct store_doctor {
	double server_time;            /* unix seconds, by the server's clock */
	char isolation[32];            /* of this session, as claimd sets it */
	long idle_trx_timeout;         /* s; -1: the server has no idle_transaction_timeout */
	bool log_bin;
	char binlog_format[16], binlog_row_image[16];
	char version[80];
	char missing[600];             /* "INSERT on queues (1142); ...", "" when none */
};

/* Fill *ret: the settings, then every kind of statement claimd uses, tried on each table in
 * a transaction that is rolled back. Returns 0 or a negative error. */
int store_doctor(struct store *s, struct store_doctor *ret, char *err, size_t errlen);
/* The TLS cipher of the store's connection, or NULL when it is not encrypted (or not open). */
const char *store_tls_cipher(struct store *s);

/* ---- the binary log (store_binlog.c) ---- */

struct store_binlog;

/* Follow the server's binary log on a connection of its own, as replica server_id, from the
 * GTID position from ("" or NULL: from now), with a heartbeat event every heartbeat_s when
 * nothing happens. Returns 0; -ENOTSUP when the server writes no row-based binary log,
 * -EACCES when the user may not read it (REPLICATION SLAVE), -ESPIPE when the server no
 * longer has the log from that position, -ENOTCONN or -EIO otherwise; err says why. */
int store_binlog_open(const struct dsn *dsn, const char *from, unsigned server_id,
		      unsigned heartbeat_s, struct store_binlog **ret, char *err, size_t errlen);
/* What an event changed (bits of *ret_changes), in the DSN's database: */
#define STORE_BINLOG_CLAIMABLE 1u  /* rows of work_items or queues, by a statement not marked
				    * quiet (it may have made a row claimable) */
#define STORE_BINLOG_ROWS 2u       /* rows of work_items, by any statement (claimd's quiet
				    * completions too): what requests waiting for a row ask */
/* Block for the next event. *ret_changes: what it changed (0: nothing). Returns 0, or a
 * negative error (the stream is gone: close it, open again). */
int store_binlog_read(struct store_binlog *b, unsigned *ret_changes, char *err, size_t errlen);
/* Where the stream got to (a GTID position), to open it again from. */
const char *store_binlog_position(const struct store_binlog *b);
/* From another thread: make a store_binlog_read that blocks return an error. */
void store_binlog_interrupt(struct store_binlog *b);
void store_binlog_close(struct store_binlog *b);

/* A thread of its own that uses a store: at its start and its end. */
void store_thread_init(void);
void store_thread_end(void);

/* Call once in main before any thread or store exists. tls: whether any connection of this
 * process may use TLS. Without it, and when the client library sits on OpenSSL, OpenSSL is
 * initialised without openssl.cnf, error strings and its cipher/digest name tables, which a
 * connection without TLS never uses: 1.6 MiB less RSS in every process. Returns 0 or -EIO. */
int store_library_init(bool tls);
void store_library_end(void);

/* Make a store for dsn. claimer is written to claimed_by ("host/slot:pid"); both are copied.
 * Does not connect. Returns 0 or -ENOMEM. */
int store_new(const struct dsn *dsn, const char *claimer, struct store **ret);
/* Closes the connection if any. Accepts NULL. */
void store_free(struct store *s);

/* (Re)connect: closes any old connection, connects with a 3 s connect timeout and 10 s
 * read/write timeouts, sets READ COMMITTED and UTC. The password is CLAIMD_DB_PASSWORD if
 * set (and not empty), else the first line of dsn->password_file if set, else the one of
 * dsn->option_file if it has one, else none.
 * -ENOTCONN: server unreachable (try again later); -EIO: refused (bad password, unknown
 * database); -EPERM: password_file refused (common/secret.h): retrying will not help. */
int store_connect(struct store *s, char *err, size_t errlen);
bool store_connected(const struct store *s);
/* "host:port" of the server connected to (the DSN's hosts, in their order: the first that
 * answers and, a Galera node, is synced), or "" before the first connection. */
const char *store_server(const struct store *s, char *buf, size_t len);

/* In one transaction: mark done[0..ndone) complete (fenced; state 'done', finished_at =
 * NOW(6), visible_at NULL), then claim up to max rows of queue whose visible_at <= NOW(6),
 * smallest priority first, then oldest visible, then smallest id, skipping rows other sessions
 * hold locked, and set them claimed with a new token each, claimed_by, claimed_at = NOW(6),
 * visible_at = NOW(6) + lease_ms, attempts + 1. max may be 0 (complete only). Fills
 * items[0..*ret_n) (caller frees payloads with store_items_clear) and *ret_completed with how
 * many of done[] were applied (the rest were fenced out). On error nothing is written to the
 * outputs and nothing is committed, except that after -ENOTCONN the COMMIT may have happened
 * unseen: rows claimed then stay claimed until their lease ends, and done[] may have been
 * applied (completing them again reports them fenced out). "Oldest first" is per store and
 * approximate: each store goes on from where its last claim ended (see store.c: it skips index
 * entries that earlier claims left behind) and rescans from the oldest row when that runs
 * short and at least once a second, so a row that becomes due behind the others (a backdated
 * run_at, a lease that ran out) may wait up to a second under load. */
int store_claim(struct store *s, const char *queue, unsigned max, unsigned lease_ms,
		const struct store_ref *done, size_t ndone,
		struct store_item *items, size_t *ret_n, size_t *ret_completed,
		char *err, size_t errlen);
/* Whether the last store_claim with done[] of a key made some of the keys' next rows visible
 * where it did not look for rows to claim: with max 0; in its commit's round trip, after its
 * scan (the next rows it did not hand on: counted); before a scan it skipped. A claim that
 * scanned after making them visible and came back short took every one it could (they are
 * its own locks): nothing of those keys waits for a claim then. A row of another queue than
 * the claim's is not looked at either: a worker of several queues claims again all the
 * same. */
bool store_claim_left_next(const struct store *s);

void store_items_clear(struct store_item *items, size_t n);

/* Called by store_claim between its round trips: the rows it locked, with the ids and tokens
 * its commit writes, before that commit is sent. Whoever must release them should this
 * process die is told here, for a death after the commit is sent and before its answer
 * would leave them claimed until their lease ends. (locked may be NULL: none.) */
void store_set_claim_hook(struct store *s,
			  void (*locked)(void *arg, const struct store_item *items, size_t n),
			  void *arg);

/* A failed run of a claimed row (fenced). If the row's attempts >= max_attempts, or it has a
 * live cancel request (store_cancel: then last_error is the cancel's reason, and a claim made
 * after the request, which never ran, gives its attempt back), it becomes
 * 'dead' (visible_at NULL, finished_at NOW(6)); otherwise 'ready', visible at
 * NOW(6) + retry_ms. error (may be NULL) is stored in last_error, cut to 4000 bytes on a
 * character boundary, bytes that are not UTF-8 replaced by '?'. A row that went dead with
 * ref.dependents (its claim's has_dependents) ends, or counts off, the rows that wait for it
 * in the same transaction; without, none is looked for.
 * Returns 1 if applied and the row is now ready, 2 if applied and the row is now dead,
 * 0 if fenced out, or a negative error. */
int store_fail(struct store *s, struct store_ref ref, unsigned retry_ms, const char *error,
	       char *err, size_t errlen);

/* A failed run for store_fail_many: store_fail's arguments and (out) result (-EIO: changed,
 * to another state; -EAGAIN: not written). Up to STORE_FAIL_MAX in one transaction (a commit
 * costs the server far more than the statements). Returns 0 with every result set; -EIO
 * when one is -EIO or none was written (every result -EAGAIN); another error: none was. */
struct store_failure { struct store_ref ref; unsigned retry_ms; const char *error; int result; };
#define STORE_FAIL_MAX 8
int store_fail_many(struct store *s, struct store_failure *f, size_t n, char *err, size_t errlen);

/* Put claimed rows back to 'ready', visible now (fenced). With count_attempt false the
 * attempt they were claimed for is given back (shutdown, prefetched and never started).
 * A row whose attempts reached max_attempts with count_attempt true goes 'dead' with
 * last_error = reason; a row with a live cancel request goes 'dead' either way, its attempt
 * counted, last_error the cancel's reason. claimer (a gone worker's, or NULL): only rows it
 * holds (claimed_by): one it locked, never committed, may be another's now with that token. */
int store_release(struct store *s, const struct store_ref *refs, size_t n, bool count_attempt,
		  const char *reason, const char *claimer, char *err, size_t errlen);

/* The handler asked for the row to run again in delay_ms, and that is not a failure: back to
 * 'ready', visible at NOW(6) + delay_ms, the attempt given back (fenced); 'dead' instead with
 * a live cancel request, as store_release. Returns 1 if applied, 0 if fenced out, or a
 * negative error. */
int store_defer(struct store *s, struct store_ref ref, unsigned delay_ms, char *err,
		size_t errlen);

/* Running rows' progress: refs[i].progress, JSON text of at most STORE_PROGRESS_MAX bytes
 * (fenced), in one statement. Returns how many rows were written (the others were fenced
 * out), or a negative error. */
int store_progress(struct store *s, const struct store_ref *refs, size_t n, char *err,
		   size_t errlen);

/* Push the lease of claimed rows to NOW(6) + lease_ms (fenced). Returns how many rows were
 * still ours, or a negative error. */
int store_extend(struct store *s, const struct store_ref *refs, size_t n, unsigned lease_ms,
		 char *err, size_t errlen);

/* Cheap, non-locking: is any row of queue claimable now? One statement. Returns 1, 0, or a
 * negative error. */
int store_poll(struct store *s, const char *queue, char *err, size_t errlen);
/* When a row of queues[0..n) (not paused) can next be claimed: a ready row's due time, a
 * claimed row's lease end, whichever is first. One statement of an index lookup per queue
 * and priority, however many rows there are. Returns 1 when a row is claimable now, 0 with
 * *ret_us the microseconds until one will be (-1: no row will be), or a negative error. */
int store_poll_next(struct store *s, const char *const *queues, size_t n, int64_t *ret_us,
		    char *err, size_t errlen);
/* The same for any of queues[0..n). */
int store_poll_any(struct store *s, const char *const *queues, size_t n, char *err,
		   size_t errlen);

/* Row counts per queue and state (all of work_items). *ret is malloc'd; caller frees.
 * A queue name longer than STORE_QUEUE_MAX bytes is cut (on a character boundary). */
int store_counts(struct store *s, struct store_count **ret, size_t *ret_n,
		 char *err, size_t errlen);

/* Whether a comes after b in claim order (a place that is none comes after nothing, any
 * other comes after none). Pure: no connection needed. */
bool store_place_after(const struct place *a, const struct place *b);

/* Where this store's next claim starts: after its last claimed row. Returns false when it
 * has no such place yet. */
bool store_cursor(const struct store *s, struct place *ret);

/* Move the cursor forward to at, a place a sibling claimer on this host reached, if it is
 * past this store's own: the next claim then skips rows the siblings took (their old index
 * entries wait for purge at the head of the range and each costs a lookup); priorities other
 * than the cursor's are scanned whole. With a hint, the host also schedules the scan from
 * the head that finds rows left behind: a place that is
 * none asks for it on the next claim, any other hint puts it off (one host-wide scan a second
 * instead of one per worker). */
void store_cursor_hint(struct store *s, const char *queue, const struct place *at);

/* What an add may set besides queue and payload; zero (and period_s -1) leaves the column's
 * default. */
struct store_add_opts {
	const char *run_at;      /* a time as utctime_parse reads it (UTC unless it says its
				  * offset), within the TIMESTAMP's range, or NULL */
	unsigned delay_ms;       /* run_at = NOW(6) + delay (when run_at is NULL) */
	long period_s;           /* recurring every period_s; -1 = not recurring */
	unsigned max_attempts;
	unsigned timeout_s;
	const char *dedupe_key;  /* at most STORE_DEDUPE_KEY_MAX bytes, or NULL */
	int priority;            /* STORE_PRIORITY_MIN..MAX; smaller runs first */
	const char *group_key;   /* FIFO group, at most STORE_GROUP_KEY_MAX bytes, or NULL */
	const char *content_type; /* the payload's type, at most STORE_TYPE_MAX bytes, or NULL */
	const char *traceparent;  /* a W3C traceparent (common/trace.h), or NULL */
	unsigned retry_base_ms;   /* its own retry back-off, 1..STORE_BACKOFF_MAX_MS (0: its */
	unsigned retry_max_ms;    /* queue's), the max not below the base */
	bool dedupe_for_set;      /* dedupe_for_s is its own dedupe window (else the store's) */
	unsigned dedupe_for_s;    /* 0..STORE_DEDUPE_FOR_MAX_S */
};

/* An add request's options (common/ctl.h: CTL_ADD) as an add's: durations the table keeps in
 * seconds rounded up. */
struct ctl_request;
void store_add_opts_from(const struct ctl_request *q, struct store_add_opts *o);

/* Insert one ready row of queue with payload (len bytes, at most STORE_PAYLOAD_MAX) and the
 * options (NULL: none), and write its id to *ret_id. With a dedupe key that a row of the
 * queue holds (ready, claimed, or finished less than the dedupe window ago), nothing is
 * inserted and *ret_id is that row's id. Returns 0 if a row was inserted, 1 if it was a
 * duplicate, or a negative error (-EMSGSIZE for a payload too large, -EDOM for a value the
 * database refuses). */
int store_add(struct store *s, const char *queue, const unsigned char *payload, size_t len,
	      const struct store_add_opts *opts, uint64_t *ret_id, char *err, size_t errlen);

/* One row of store_add_many: what store_add takes, and what became of it. */
struct store_add_row {
	const char *queue;
	const unsigned char *payload;
	size_t len;
	const struct store_add_opts *opts;   /* NULL: none */
	/* out */
	int rc;             /* 0 added, 1 a duplicate (id: the holder), < 0 refused (err) */
	uint64_t id;
	bool duplicate;
	char err[256];
};

/* The row of an add request (common/ctl.h: CTL_ADD), its options into *o
 * (store_add_opts_from); the row points into q and o. */
struct store_add_row store_add_row_from(const struct ctl_request *q, struct store_add_opts *o);

/* Insert rows[0..n) in one transaction and one round trip (one commit for them all). Rows
 * whose arguments are wrong are refused (their rc, err) and the others written. Returns 0
 * with every row's rc set, or a negative error when the transaction failed: then nothing
 * was written, and the caller may write the rows one by one (store_add) to learn which one
 * the database refused. */
int store_add_many(struct store *s, struct store_add_row *rows, size_t n, char *err,
		   size_t errlen);

/* A row finished (done or dead) keeps its dedupe_key for seconds (default
 * STORE_DEDUPE_WINDOW_S), so the same key is still refused meanwhile. */
void store_set_dedupe_window(struct store *s, unsigned seconds);

/* Forget the dedupe keys of rows whose window has passed, up to limit rows. Returns how
 * many, or a negative error. */
int store_dedupe_expire(struct store *s, unsigned limit, char *err, size_t errlen);

/* One row as an operator sees it (store_job_get). Times are RFC 3339 in UTC
 * ("2026-03-29T01:00:00.123456Z"), "" for NULL. */
#define STORE_PREVIEW_MAX 1024
struct store_job {
	uint64_t id;
	char queue[STORE_QUEUE_MAX + 1];
	enum row_state state;
	uint32_t attempts, max_attempts;
	int priority;
	int64_t period_s;           /* -1: not recurring */
	int64_t timeout_s;          /* -1: the supervisor's --timeout */
	char run_at[32], visible_at[32], created_at[32], claimed_at[32], finished_at[32];
	char claimed_by[256];       /* "" when never claimed */
	char group_key[STORE_GROUP_KEY_MAX + 1];   /* "" without one */
	uint64_t group_seq;
	char dedupe_key[STORE_DEDUPE_KEY_MAX + 1]; /* "" without one */
	char content_type[STORE_TYPE_MAX + 1];     /* "" without one */
	char traceparent[56];                      /* "" without one */
	char result_type[STORE_TYPE_MAX + 1];      /* "" without one */
	char *last_error;           /* malloc'd, or NULL */
	unsigned char *result;      /* malloc'd (NUL-terminated after result_len), or NULL */
	size_t result_len;
	char *progress;             /* malloc'd JSON text, or NULL */
	unsigned char *payload;     /* malloc'd: the first STORE_PREVIEW_MAX bytes; may be NULL */
	size_t payload_len;         /* bytes in payload */
	uint64_t payload_size;      /* bytes in the whole payload */
};

/* Row id into *ret. Returns 1, 0 when there is no such row, or a negative error. */
int store_job_get(struct store *s, uint64_t id, struct store_job *ret, char *err, size_t errlen);
/* Frees what a store_job holds. */
void store_job_clear(struct store_job *j);

/* The newest rows (highest id first) in state, of queue (NULL: every queue), after_id 0 or
 * only ids below it, at most limit (1..STORE_LIST_MAX), into a malloc'd array (free with
 * store_jobs_free): the payload preview is cut to STORE_LIST_PREVIEW bytes, last_error to
 * STORE_LIST_ERROR, no result. Reads every row of the state (no index on state): for the
 * dead rows an operator looks at, not for the bulk. Returns 0 or a negative error. */
#define STORE_LIST_MAX 200
#define STORE_LIST_PREVIEW 200
#define STORE_LIST_ERROR 500
int store_jobs_list(struct store *s, const char *state, const char *queue, uint64_t after_id,
		    unsigned limit, struct store_job **ret, size_t *ret_n, char *err,
		    size_t errlen);
void store_jobs_free(struct store_job *jobs, size_t n);

/* Deletes row id if it is ready or dead (a FIFO group's next row then starts); if it is
 * claimed, asks for its run to be cancelled instead (work_items.cancel_requested_at, with
 * reason, "cancelled" when NULL, for its last_error; a second request keeps the first's):
 * the supervisor running it stops it (store_cancels_live), and it ends dead with no retry,
 * unless its run succeeds first. *ret_state is the row's state after it ("" when gone),
 * ret_by its claimed_by. Returns 1 when it was deleted, 2 when a claimed row is cancelling,
 * 0 when there is no such row, -EBUSY when it is done, or a negative error. */
int store_cancel(struct store *s, uint64_t id, const char *reason, char ret_state[16],
		 char ret_by[256], char *err, size_t errlen);
/* Which of the claimed rows refs[0..n) (id and token; fenced) have a live cancel request:
 * into ret[0..*ret_n) (room for n; id and token only). One statement of primary-key lookups.
 * Returns 0 or a negative error. */
int store_cancels_live(struct store *s, const struct store_ref *refs, size_t n,
		       struct store_ref *ret, size_t *ret_n, char *err, size_t errlen);

/* A queue's own retry back-off (queues.retry_*, migration 009): base_ms and max_ms 0 = not
 * set (claimd's --retry-base; at most 1 h), jitter_pct -1 = not set (25 %). */
#define STORE_BACKOFF_MAX_MS 604800000u   /* 7 days, the columns' CHECK constraints */
struct store_backoff {
	uint32_t base_ms, max_ms;
	int jitter_pct;
};
enum { STORE_BACKOFF_BASE = 1, STORE_BACKOFF_MAX = 2, STORE_BACKOFF_JITTER = 4 };

/* Set the fields of queue's back-off that set names (STORE_BACKOFF_* bits) to b's (a 0 or -1
 * there: not set again), the others stay; the queue's row is made if it has none. The
 * settings it has now into *ret. Returns 0, -EDOM with why in err when the database refuses
 * them (out of range, a max below the base: "retry_max_range: ..."), or a negative error. */
int store_set_backoff(struct store *s, const char *queue, const struct store_backoff *b,
		      unsigned set, struct store_backoff *ret, char *err, size_t errlen);

/* Every queue that has rows or settings: rows per state, the oldest due row's wait, its
 * settings. */
struct store_queue {
	char name[STORE_QUEUE_MAX + 1];
	uint64_t rows[ROW_STATE_COUNT];  /* by enum row_state */
	double oldest_ready_s;      /* how long the oldest due row has waited; 0: none due */
	bool paused;
	uint32_t min_interval_ms;
	struct store_backoff backoff;
};

/* The queues, by name, into a malloc'd array. Returns 0 or a negative error. */
int store_queues(struct store *s, struct store_queue **ret, size_t *ret_n, char *err,
		 size_t errlen);

/* A supervisor as it says of itself (the supervisors table). */
#define STORE_SUPERVISOR_LOST_S 15   /* not refreshed for this long: lost */
struct store_supervisor {
	char id[129];
	char host[256];
	unsigned pid;
	char version[33];
	char queues[1101];
	char http[81];               /* "" when it serves no HTTP */
	char started_at[32], seen_at[32];
	double seen_ago_s;           /* by the database's clock */
	bool lost;
	char *workers;               /* JSON, malloc'd (store_supervisors' rows only) */
};

/* Insert or refresh sv's row (seen_at = now; started_at set on insert), workers_json its
 * pool; with sweep, also delete rows lost for over a day. Returns 0 or a negative error. */
int store_supervisor_seen(struct store *s, const struct store_supervisor *sv,
			  const char *workers_json, bool sweep, char *err, size_t errlen);
/* Delete row id (a clean stop). */
int store_supervisor_gone(struct store *s, const char *id, char *err, size_t errlen);
/* Every row, by host and pid, into a malloc'd array (free with store_supervisors_free). */
int store_supervisors(struct store *s, struct store_supervisor **ret, size_t *ret_n, char *err,
		      size_t errlen);
void store_supervisors_free(struct store_supervisor *svs, size_t n);

/* Keys of queue with fewer rows visible than their limit allows (the running row deleted
 * by hand, dead rows put back, a limit raised): their oldest parked rows start, as many as the
 * limit leaves room for. One chunk: the queue's keys after key after ("" from the first), at
 * most STORE_HEAL_KEYS of them in key order, read from the index alone; only those that may
 * need it (a limit other than 1, or an oldest live row not visible) have their rows read.
 * *ret_last (STORE_GROUP_KEY_MAX + 1 bytes; it may be after): the chunk's last key, "" when
 * the keys ran out. Returns how many rows started, or a negative error. */
#define STORE_HEAL_KEYS 500
int store_group_heal(struct store *s, const char *queue, const char *after, char *ret_last,
		     char *err, size_t errlen);

/* Is queue paused (queues.paused)? Returns 1, 0, or a negative error. Claims and polls skip
 * a paused queue's rows by themselves; a worker asks before starting a prefetched item. */
int store_paused(struct store *s, const char *queue, char *err, size_t errlen);

/* Pause or resume queue for every supervisor. Returns 0 or a negative error. */
int store_set_paused(struct store *s, const char *queue, bool paused, char *err, size_t errlen);

/* Take the next start of queue's rate limit (key NULL: queues.min_interval_ms and burst), or
 * of one key's of it (key_limits, or the queue's key_interval_ms and key_burst): a token
 * bucket shared by every claimer of every supervisor sharing the database. Returns 1 when a
 * start was taken, or there is no limit: *ret_wait_ms is how long to wait before starting (0:
 * now); 0 when the next start is more than hold_ms away, none taken: *ret_wait_ms is how long
 * until it is; or a negative error. */
int store_take_slot(struct store *s, const char *queue, const char *key, unsigned hold_ms,
		    unsigned *ret_wait_ms, char *err, size_t errlen);

/* A change of limits (sql/migrations/006_key_limits.sql): of one key of queue (key), of
 * every key without settings of its own (each_key), or of the queue's rate (neither); the
 * fields given (has_) are set, the others left as they are. A raised concurrency starts the
 * waiting rows it makes room for at once. Returns 0 or a negative error. */
struct store_limit_set {
	const char *queue;
	const char *key;
	bool each_key;
	bool has_concurrency, has_interval, has_burst;
	uint32_t concurrency;      /* a key's rows running at once; 0: no limit */
	uint32_t interval_ms;      /* a start per interval; 0: no rate limit */
	uint32_t burst;            /* starts at once after a quiet spell, 1.. */
};
int store_set_limit(struct store *s, const struct store_limit_set *set, char *err,
		    size_t errlen);

/* A queue's limits, and the keys with settings of their own (by key, at most
 * STORE_LIMIT_KEYS_MAX): -1 where a key takes the queue's. */
#define STORE_LIMIT_KEYS_MAX 200
struct store_key_limit {
	char key[STORE_GROUP_KEY_MAX + 1];
	int64_t concurrency, interval_ms, burst;
	uint64_t running;          /* its rows claimed now */
	uint64_t waiting;          /* its live rows waiting for their turn (parked) */
};
struct store_limits {
	char queue[STORE_QUEUE_MAX + 1];
	uint32_t interval_ms, burst;                          /* the queue's rate */
	uint32_t key_concurrency, key_interval_ms, key_burst; /* every key's */
	struct store_key_limit *keys;
	size_t nkeys;
};
int store_limits_get(struct store *s, const char *queue, struct store_limits *ret, char *err,
		     size_t errlen);
void store_limits_clear(struct store_limits *l);

/* One step of a sweep of the table in id order that deletes the rows in state 'done' which
 * finished, and were created, more than keep_done_s seconds ago, and those in state 'dead'
 * that did more than keep_dead_s ago (0: that state is kept; not both 0, -EINVAL): the ids
 * [from, from + span) in one round trip, if this session holds (or can take) the database's
 * prune lock (GET_LOCK, released with the connection): among supervisors sharing the
 * database one prunes. A deleted row's edges to the rows that waited for it (work_deps) go
 * with it. *ret_next is where the next step starts: the first id after the span, or 0 when
 * the sweep is over (no row after it, the row after it was created less than the shorter
 * window ago, so are the ones after it, or another session prunes). Start a sweep with
 * from = 0. No index on finished_at is needed (a completion would pay for one). Returns how
 * many rows went, or a negative error. */
int store_prune(struct store *s, unsigned keep_done_s, unsigned keep_dead_s, uint64_t from,
		unsigned span, uint64_t *ret_next, char *err, size_t errlen);

/* Forget up to limit FIFO groups (work_groups rows) that have no live rows and had no insert
 * for keep_s seconds, under the same prune lock; a later row of such a group is numbered from
 * 1 again. Returns how many, or a negative error. */
int store_prune_groups(struct store *s, unsigned keep_s, unsigned limit, char *err, size_t errlen);

/* ---- schedules (store_schedules.c; sql/migrations/004_schedules.sql) ---- */

#define STORE_SCHEDULE_NAME_MAX 128
#define STORE_CRON_MAX 255
#define STORE_ZONE_MAX 64
#define STORE_SCHEDULE_MISSED_S 60     /* catch_up 'none': a tick later than this is missed */
#define STORE_SCHEDULE_ALL_MAX 1000    /* catch_up 'all': rows one transaction adds */

/* What a schedule does with ticks missed while no supervisor ran. */
enum store_catch_up {
	STORE_CATCH_UP_ONE,     /* one row for all of them */
	STORE_CATCH_UP_ALL,     /* a row each */
	STORE_CATCH_UP_NONE,    /* none */
	STORE_CATCH_UP_COUNT,
};
/* The names, as the column's ENUM has them: "one", "all", "none". */
extern const char *const store_catch_up_names[STORE_CATCH_UP_COUNT];

/* A schedule as store_schedule_put writes it. NULL strings and zero numbers take the
 * column's default (time_zone UTC, queue default, max_attempts 5, no timeout). */
struct store_schedule_def {
	const char *name;            /* 1..STORE_SCHEDULE_NAME_MAX bytes */
	const char *cron;            /* checked by the caller (common/cron.h) */
	const char *time_zone;       /* checked by the caller (common/tzfile.h) */
	const char *queue;
	const unsigned char *payload;
	size_t len;
	const char *content_type, *group_key;
	int priority;
	unsigned max_attempts, timeout_s;
	enum store_catch_up catch_up;
	bool paused;
};

/* A schedule as an operator sees it. Times are RFC 3339 in UTC ("" when NULL). */
struct store_schedule {
	char name[STORE_SCHEDULE_NAME_MAX + 1];
	char cron[STORE_CRON_MAX + 1];
	char time_zone[STORE_ZONE_MAX + 1];
	char queue[STORE_QUEUE_MAX + 1];
	char payload[STORE_PREVIEW_MAX + 1];   /* the first bytes, as text */
	size_t payload_len;
	bool payload_null;
	char content_type[STORE_TYPE_MAX + 1], group_key[STORE_GROUP_KEY_MAX + 1];
	int priority;
	unsigned max_attempts, timeout_s;            /* timeout_s 0: none */
	enum store_catch_up catch_up;
	bool paused;
	char next_tick_at[32], last_tick_at[32], created_at[32], updated_at[32];
	uint64_t last_item_id, ticks;
	char error[256];                             /* "" when it runs */
};

/* Insert or replace schedule d by its name. A changed cron or time_zone (or a resume) has the
 * next tick read again from now, and clears the error. Returns 0 when it was added, 1 when
 * it replaced one, or a negative error (-EDOM: a value the database refuses). */
int store_schedule_put(struct store *s, const struct store_schedule_def *d, char *err,
		       size_t errlen);
/* Delete schedule name (the rows it added stay). Returns 1, 0 when there is none, or a
 * negative error. */
int store_schedule_delete(struct store *s, const char *name, char *err, size_t errlen);
/* Pause or resume schedule name. Returns 1, 0 when there is none, or a negative error. */
int store_schedule_set_paused(struct store *s, const char *name, bool paused, char *err,
			      size_t errlen);
/* Schedule name, or (name NULL) the schedules by name after after (NULL: from the first), at
 * most limit (0: every one), into a malloc'd array. Returns 0 or a negative error. */
int store_schedules(struct store *s, const char *name, const char *after, unsigned limit,
		    struct store_schedule **ret, size_t *ret_n, char *err, size_t errlen);

/* The tick arithmetic, which the store does not know: the first tick of expression cron in
 * zone strictly after after (UTC seconds) into *ret. Returns 0, -ENOENT when it never fires
 * again, -EINVAL with why in err (an expression or zone refused), or another negative error
 * with why in err when it cannot tell now (a zone file that did not read: the schedule
 * waits). Runs on the store's thread. */
typedef int (*store_tick_fn)(void *data, const char *cron, const char *zone, int64_t after,
			     int64_t *ret, char *err, size_t errlen);

/* What store_schedule_fire did. */
struct store_fire {
	unsigned schedules;     /* schedules it went through */
	unsigned rows;          /* rows it added */
	unsigned refused;       /* schedules it found cannot run (their error set) */
	unsigned waiting;       /* schedules tick could not compute now, left due as they were */
	char why[256];          /* tick's error for the first of them */
	bool more;              /* due schedules left: call again */
	int64_t due_in_ms;      /* until the next tick of a schedule that runs (database clock);
				 * -1: none */
};

/* Add the rows of due schedules. When none is due and every one is read (the usual case),
 * that is one statement and no transaction. Else for each (at most max, each in a
 * transaction of its own, the schedule's row locked FOR UPDATE SKIP LOCKED), the rows of its
 * due ticks by its catch_up, and its next tick, in the same transaction; a schedule not read
 * yet (next_tick_at NULL) gets its first tick after now. A tick after 2038-01-19 (the
 * TIMESTAMP's end) counts as never. A schedule tick cannot compute now is rolled back and
 * passed by for the rest of the call (at most max of them); due_in_ms leaves them aside. Returns
 * 0 with *ret filled, or a negative error (what committed stays). */
int store_schedule_fire(struct store *s, store_tick_fn tick, void *data, unsigned max,
			struct store_fire *ret, char *err, size_t errlen);

/* Dependencies and batches, and a run's outcome with the rows it adds: store_graph.h. */

/* ---- what waiting requests wait for (store_watch.c) ---- */

#define STORE_WATCH_MAX 500   /* ids one statement reads at most */
struct store_watch_row {
	uint64_t id;
	enum row_state state;   /* a row's; ROW_NONE for a batch */
	uint64_t mark;    /* changes when anything store_job_get (store_batch_get) reads does */
};
/* The rows ids[0..n) (1..STORE_WATCH_MAX of them) that exist, in one statement, into
 * ret (room for n; any order; *ret_n of them). Returns 0 or a negative error. */
int store_watch_jobs(struct store *s, const uint64_t *ids, size_t n, struct store_watch_row *ret,
		     size_t *ret_n, char *err, size_t errlen);
/* The same for batches: the mark changes when a row of the batch (or its callback) changes
 * state, or a row is added or removed. */
int store_watch_batches(struct store *s, const uint64_t *ids, size_t n,
			struct store_watch_row *ret, size_t *ret_n, char *err, size_t errlen);

/* ---- the queues' history (store_history.c; sql/migrations/010_history.sql) ---- */

#define STORE_HISTORY_BUCKETS 18         /* run0..run17, wait0..wait17: the last, the rest */
#define STORE_HISTORY_ROWS_MAX 1000      /* rows one store_history_add writes */

/* One queue's minute (as a supervisor counted it), or a step of the history (the sums of
 * every supervisor's rows, of one queue or all). */
struct store_history_row {
	char queue[STORE_QUEUE_MAX + 1];     /* "" in a step */
	int64_t minute;                      /* unix seconds: the minute's (the step's) start */
	uint64_t done, retried, dead;
	uint64_t run_sum_us, wait_sum_us;
	uint64_t run[STORE_HISTORY_BUCKETS], wait[STORE_HISTORY_BUCKETS];
};

/* Add rows[0..n) (at most STORE_HISTORY_ROWS_MAX) to supervisor's rows, in one statement:
 * a row is added to only if its flush_seq is below seq, so the same rows sent again with the
 * same seq (the answer was lost) add nothing. seq goes up with each new set of rows. Returns
 * 0 or a negative error. */
int store_history_add(struct store *s, const char *supervisor, uint64_t seq,
		      const struct store_history_row *rows, size_t n, char *err, size_t errlen);
/* The sums of every supervisor's rows from from to to (unix seconds; minutes from <= m < to)
 * of queue (NULL: every queue) per step seconds (a step's minute: from + k * step), the steps
 * with rows only, in order, into a malloc'd array. Returns 0 or a negative error. */
int store_history_read(struct store *s, const char *queue, int64_t from, int64_t to,
		       unsigned step, struct store_history_row **ret, size_t *ret_n, char *err,
		       size_t errlen);
/* Delete up to limit rows of minutes older than keep_s seconds. Returns how many. */
int store_history_prune(struct store *s, unsigned keep_s, unsigned limit, char *err,
			size_t errlen);

#endif
