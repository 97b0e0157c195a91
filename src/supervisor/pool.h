/* pool — the supervisor's worker slots: starting each worker from the fork server, the
 * worker's health (a state machine of its own, beside what the worker reports on the wire),
 * heartbeats and hang detection, replacing the dead (with back-off when one keeps dying), the
 * rows each worker holds (released through the database queue when it dies), the messages
 * workers send, and the claim permits they get. Logs every start, exit and verdict. */
#ifndef CLAIMD_POOL_H
#define CLAIMD_POOL_H

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#include "common/config.h"
#include "supervisor/dbq.h"
#include "supervisor/jobstats.h"
#include "supervisor/slot_health.h"
#include "supervisor/snapshot.h"

struct history;

struct pool_opts {
	uv_loop_t *loop;
	const struct config *cfg;
	struct dbq *dbq;          /* for releasing the rows of dead workers */
	int argc;                 /* the supervisor's command line, for the fork server */
	char **argv;
	struct jobstats *stats;   /* what the workers report is counted here */
	struct history *history;  /* and what they finished, per minute (NULL: not) */
	/* A worker is gone for good while stopping (or its rows were released): whether the
	 * supervisor can exit is worth asking again. */
	void (*on_change)(void *data);
	/* A worker's claim took every due row it could, some (found) or none. May be NULL. */
	void (*claimed_short)(void *data, bool found);
	/* A worker says it is idle, and was not. May be NULL. */
	void (*worker_idle)(void *data);
	void *data;
};

#define POOL_SLOTS_MAX 1024

struct pool;

/* Becomes a subreaper and starts the fork server; no worker yet. Returns 0 or -errno
 * (logged). */
int pool_new(const struct pool_opts *o, struct pool **ret);
/* After pool_stop and once every slot is down. Accepts NULL. */
void pool_free(struct pool *p);

/* Start every worker and the heartbeat. */
void pool_start(struct pool *p);

/* There is work: a claim permit to a waiting or an idle worker, if one is free. */
void pool_wake_one(struct pool *p);
/* Rows behind the claim cursor may be due: the next permit scans from the head. */
void pool_rewind(struct pool *p);

/* Whether an idle poll could wake anybody: an idle worker, and a permit free. */
bool pool_wants_poll(const struct pool *p);
/* permits_claims of the pool's permits. */
uint64_t pool_claims(const struct pool *p);

/* Grow to n workers (new ones start) or shrink (the idlest retire after their item). */
void pool_resize(struct pool *p, unsigned n);
/* Workers in the pool (not counting those retiring). */
unsigned pool_size(const struct pool *p);

/* After a reload whose new settings the workers must have: a new fork server (it reads them
 * again), then every worker replaced by one of it, one at a time, each after its item. */
void pool_replace_all(struct pool *p);

/* The settings changed (heartbeat, claimers): applied from now on. */
void pool_retime(struct pool *p);

/* Stop: no more permits or restarts; every worker is told to finish within grace_ms. */
void pool_stop(struct pool *p, unsigned grace_ms);

/* SIGKILL every worker process still there (the grace is over). */
void pool_kill(struct pool *p);

/* Whether every slot is down (no worker process, nothing left to release from one). */
bool pool_empty(const struct pool *p);
/* Workers that are up (answering, and past starting: connected once, their handler ready);
 * *ret_db_down of them report that they cannot reach the database. */
unsigned pool_up(const struct pool *p, unsigned *ret_db_down);

/* The slots as they are now, into st's workers (malloc'd, returned for the caller to free;
 * NULL when out of memory) and fork_server_pid. */
struct status_worker *pool_snapshot(const struct pool *p, struct status *st);

#endif
