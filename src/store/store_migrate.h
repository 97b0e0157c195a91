/* store_migrate — applying migrations (sql/migrations) to a database that is in use: the
 * interface of store_migrate.c, beside store.h's (a struct store, the migrations built in).
 * Does not log. */
#ifndef CLAIMD_STORE_MIGRATE_H
#define CLAIMD_STORE_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* How long a statement of a migration waits for its table's metadata lock before it lets go
 * (and store_migrate tries it again): what it may hold up the table's other users for. */
#define STORE_MIGRATE_LOCK_WAIT_S 1

/* Make s's connections fit for migrating (from its next store_connect on): no read or write
 * timeout, as one statement may run for minutes (an index built online); TCP keepalive
 * instead, so that a server that vanished is noticed within about 35 s; and metadata lock
 * waits of STORE_MIGRATE_LOCK_WAIT_S. */
void store_set_migrating(struct store *s);

/* The server's id of s's session (what KILL takes), 0 when not connected. */
unsigned long store_session_id(const struct store *s);

/* What store_migrate is at, told to its caller as it goes (the store prints nothing). */
enum store_migrate_what {
	STORE_MIGRATE_STATEMENT,   /* a statement starts: text */
	STORE_MIGRATE_ENDED,       /* it ended (seconds: how long it took) */
	STORE_MIGRATE_BATCHES,     /* a statement run in batches went on: table, done of total */
	STORE_MIGRATE_WAIT,        /* a lock wait ran out or a deadlock hit: text says which;
				    * the statement (or batch) is tried again after a pause */
};

struct store_migrate_step {
	enum store_migrate_what what;
	unsigned line;             /* where the statement starts in the migration's file */
	const char *text;          /* STATEMENT: its first words, blanks made one; WAIT: why */
	const char *table;         /* BATCHES: the table it goes through */
	uint64_t done, total;      /* BATCHES: rows gone through of about total (the server's
				    * estimate); done == total on the last report */
	double seconds;            /* since the statement started */
};

struct store_migrate_watch {
	void (*step)(void *arg, const struct store_migration *m,
		     const struct store_migrate_step *st);   /* may be NULL */
	bool (*stop)(void *arg);   /* true: stop before the next statement or batch (NULL: never) */
	void *arg;
};

/* Apply m on s (a migrating store: store_set_migrating), statement by statement. Each
 * migration is idempotent and records itself as its last statement; one stopped anywhere is
 * applied again from its start, and what it had done is found done.
 *
 * A statement after a comment line "-- claimd-batches: TABLE COLUMN [if @VAR]" is run once
 * per span of COLUMN's values (COLUMN: NOT NULL and the first column of an index of TABLE):
 * with @claimd_lo and @claimd_hi set to the span's first and last value, a span of as many
 * rows as make a batch take 0.1 to 0.5 s, from the lowest value to the highest the table had
 * when it started (rows added later are the migration's triggers' to keep up); not at all
 * when @VAR is not true. Its text must use both variables, and a statement that uses them
 * must have the line. (Loaded by the mariadb client, the statement runs once, over the whole
 * table: it reads the variables as IFNULL(@claimd_lo, <the lowest value>).)
 * A statement that waits too long for a lock (1205) or hits a deadlock (1213) is tried again
 * after a pause, for up to 10 minutes.
 * Returns 0; -EINTR when w->stop said so (a statement the server ended because it was killed
 * counts as stopped when w->stop says true); -EBUSY when a statement of the migration refused
 * with SQLSTATE 55000 (a precondition: err is its message, which says what to do);
 * -ENOTCONN (the connection is gone); -EINVAL (the file: an unterminated quote, a batches line
 * that does not fit); -EIO (any other error). err names the migration and the statement's
 * line. */
int store_migrate(struct store *s, const struct store_migration *m,
		  const struct store_migrate_watch *w, char *err, size_t errlen);

/* Make s the database's only migrating session: named locks on the server, one held by s
 * while it migrates, one by guard (another connection of the same process, idle until it is
 * needed to stop s's statement: store_kill_query) while the process lives. When another
 * session holds the first and nobody the second, that session is what a migrating process
 * left behind when it died (a statement the server still runs for it): it is killed, and
 * note says so (else note is ""). Returns 0; -EBUSY when another migrating process is alive
 * (err says which session); -ENOTSUP when the server does not do named locks (a Galera
 * cluster: then nothing is taken); another negative error. */
int store_migrate_lock(struct store *s, struct store *guard, char *note, size_t notelen,
		       char *err, size_t errlen);

/* Stop the statement session id runs (KILL QUERY), from guard. Returns 0 or a negative error. */
int store_kill_query(struct store *guard, unsigned long id, char *err, size_t errlen);

#endif
