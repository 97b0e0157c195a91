/* dbq — the supervisor's database work, run one job at a time on libuv's thread pool so the
 * supervisor's loop never blocks on the database. Jobs that must not be lost (releasing a dead
 * worker's claims) are retried after a pause until they succeed; the others report their
 * error. Does not log. */
#ifndef CLAIMD_DBQ_H
#define CLAIMD_DBQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/store.h"

#define DBQ_RETRY_MS 1000
#define DBQ_PRUNE_CHUNK 5000u

enum dbq_kind {
	DBQ_RELEASE,  /* in: refs, n, reason. out: rc = rows released. Retried until done. */
	DBQ_COUNTS,   /* out: counts, ncounts (caller frees counts) */
	DBQ_POLL,     /* in: queues, nqueues. out: rc = 1 if a row is claimable now */
	DBQ_ADD,      /* in: queue, payload, len, add. out: id; rc = 1 for a duplicate */
	DBQ_PRUNE,    /* in: keep_s, from (0: a new sweep). out: rc = rows deleted, from_next (see
		       * store_prune), more */
	DBQ_RETRY,    /* in: id, or queue with all_dead. out: rc = rows put back */
	DBQ_DEDUPE,   /* out: rc = rows whose dedupe key expired, more */
	DBQ_GROUPS,   /* in: queues, nqueues. out: rc = FIFO groups started again */
	DBQ_PRUNE_GROUPS, /* in: keep_s. out: rc = FIFO groups forgotten, more */
	DBQ_PAUSE,    /* in: queue, pause */
	DBQ_LIMIT,    /* in: queue, interval_ms */
};

struct dbq_job {
	enum dbq_kind kind;
	/* in */
	struct store_ref *refs;   /* owned by the job's creator */
	size_t n;                 /* refs, or queues */
	const char *reason;
	char queue[STORE_QUEUE_MAX + 1];
	unsigned char *payload;
	size_t payload_len;
	unsigned keep_s;
	bool all_dead;
	bool pause;
	unsigned interval_ms;
	const char *const *queues;
	struct store_add_opts add;     /* its strings point into run_at and dedupe_key below */
	char run_at[65];
	char dedupe_key[STORE_DEDUPE_KEY_MAX + 1];
	char group_key[STORE_GROUP_KEY_MAX + 1];
	/* out */
	int rc;
	char err[STORE_ERR_MAX];
	struct store_count *counts;
	size_t ncounts;
	uint64_t id;              /* out for ADD, in for RETRY */
	uint64_t from, from_next; /* PRUNE: where this step of the sweep starts, the next one */
	bool more;                /* maintenance: not finished, run again at the next tick */
	/* called on the loop thread when the job is over; it may free the job */
	void (*done)(struct dbq_job *j);
	void *data;
	void *data2;
	struct dbq_job *next;
};

struct dbq;

/* store is borrowed; connected on demand from the worker thread. on_idle(data), if not NULL,
 * is called on the loop thread each time the last queued job is over. Returns 0 or -ENOMEM. */
int dbq_new(uv_loop_t *loop, struct store *store, void (*on_idle)(void *data), void *data,
	    struct dbq **ret);
void dbq_push(struct dbq *q, struct dbq_job *j);
/* True while a job runs or waits. */
bool dbq_pending(const struct dbq *q);
/* False after a job failed to reach the database, true again after one succeeded. */
bool dbq_db_up(const struct dbq *q);
/* Give up waiting for the database: jobs still queued are completed with -ECANCELED. */
void dbq_cancel_waiting(struct dbq *q);
/* Frees the queue; the loop must have finished running its jobs (dbq_pending false). */
void dbq_free(struct dbq *q);

#endif
