/* dbq — the supervisor's database work, run one job at a time on libuv's thread pool so the
 * supervisor's loop never blocks on the database, over the supervisor's own connection.
 *
 * A job is self-contained: whoever makes it embeds a struct dbq_job in its own struct, with
 * its own data, and names the function that runs on the pool thread and the one that runs on
 * the loop when it is over. Jobs that must not be lost (releasing a dead worker's claims) are
 * retried after a pause until they succeed; the others report their error. Does not log. */
#ifndef CLAIMD_DBQ_H
#define CLAIMD_DBQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/store.h"

#define DBQ_RETRY_MS 1000

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct dbq_job {
	/* On a thread-pool thread, connected: touch only the job (and what it owns) and the
	 * store. Returns >= 0 or a negative store error with err filled; that is j->rc. */
	int (*run)(struct dbq_job *j, struct store *s, char *err, size_t errlen);
	/* On the loop thread once the job is over (j->rc, j->err); it may free the job. */
	void (*done)(struct dbq_job *j);
	/* Retry after DBQ_RETRY_MS until it succeeds (or dbq_cancel_waiting); -EINVAL is final. */
	bool must_finish;
	/* out */
	int rc;
	char err[STORE_ERR_MAX];
	/* the queue's */
	struct dbq_job *next;
};

struct dbq;

/* store is borrowed; connected on demand from the pool thread. on_idle(data), if not NULL,
 * is called on the loop thread each time the last queued job is over. Returns 0 or -ENOMEM. */
int dbq_new(uv_loop_t *loop, struct store *store, void (*on_idle)(void *data), void *data,
	    struct dbq **ret);
/* Queue j (run and done set). */
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
