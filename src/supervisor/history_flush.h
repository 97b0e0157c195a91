/* history_flush — this supervisor's part of the queues' history (history.h) written to the
 * database (queue_history, store_history_add): every --history-flush a job on the database
 * queue adds the minutes counted since the last flush, and once more at a clean stop after
 * the last worker is gone. A flush that fails is sent again at the next one, the same rows
 * with the same number (rows it did write are not added twice; rows the database refuses for
 * their values are dropped); what is counted meanwhile
 * waits, the oldest minutes dropped past HISTORY_PENDING_MAX. Nothing of this is on the claim
 * path: workers report to the pool, which counts into memory. Logs a failed flush (once until
 * one succeeds) and dropped minutes. */
#ifndef CLAIMD_HISTORY_FLUSH_H
#define CLAIMD_HISTORY_FLUSH_H

#include <stdbool.h>
#include <uv.h>

#include "common/config.h"
#include "supervisor/dbq.h"
#include "supervisor/history.h"

struct history_flush_opts {
	uv_loop_t *loop;
	struct dbq *dbq;
	const struct config *cfg;     /* the queues, --history-flush */
	const char *supervisor_id;    /* the registry's (outlives the flusher) */
};

struct history_flush;

/* Returns 0 or -ENOMEM. */
int history_flush_new(const struct history_flush_opts *o, struct history_flush **ret);
/* Where the pool counts (pool_opts.history). */
struct history *history_flush_history(struct history_flush *f);
/* Flush every --history-flush from now on (again after a reload). */
void history_flush_start(struct history_flush *f);
/* No more flushes by the timer (stopping: the loop is to end). Accepts NULL. */
void history_flush_stop(struct history_flush *f);
/* At a clean stop, once every worker is gone: the last flush, once. Returns true if a job
 * was pushed (the stop waits for the database queue). The timer is stopped. */
bool history_flush_last(struct history_flush *f);
/* The job must be over (dbq idle); the timer is closed and f freed in its close callback.
 * Accepts NULL. */
void history_flush_free(struct history_flush *f);

#endif
