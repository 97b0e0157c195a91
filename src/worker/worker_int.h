/* worker_int — the insides of a worker, shared by worker.c (its life: the states, what each
 * does, the database) and worker_main.c (the supervisor's messages and the set-up), which
 * only calls into worker.c. Not an interface. */
#ifndef CLAIMD_WORKER_INT_H
#define CLAIMD_WORKER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/backoff.h"
#include "common/chan.h"
#include "common/config.h"
#include "common/proto.h"
#include "store/store.h"
#include "worker/batch.h"
#include "worker/handler.h"
#include "worker/outcomes.h"
#include "worker/prefetch.h"

#define DB_BACKOFF_MIN_MS 100
#define DB_BACKOFF_MAX_MS 5000
#define PROGRESS_EVERY_MS 1000   /* a row's progress is written at most this often */

enum wstate {
	WS_START,     /* connecting to the database for the first time */
	WS_CONNECT,   /* a database call failed: waiting for the back-off, then reconnecting */
	WS_WANT,      /* ready for more: a claim permit is asked for (WANT) */
	WS_SLEEP,     /* the last claim found nothing: asleep until the supervisor wakes us */
	WS_CLAIM,     /* holding a permit: claim now, and answer it (CLAIMED) */
	WS_BATCH,     /* holding claimed rows: start the next, or the batch is over */
	WS_SLOT,      /* the next row waits for its rate-limit start slot (the slot timer) */
	WS_RUN,       /* a handler runs a row */
	WS_DRAIN,     /* stopping: rows not started go back, outcomes are written */
	WS_EXIT,      /* the loop stops */
	WS_COUNT,
};

struct worker {
	uv_loop_t loop;
	const struct config *cfg;
	struct chan *chan;
	struct store *store;
	struct handler *handler;
	char claimer[160];
	enum wstate state;
	bool stopping;            /* a STOP came */
	bool asked;               /* a WANT is out, unanswered */
	int exit_code;

	struct batch b;           /* the rows claimed */
	struct prefetch pf;       /* how many to claim next (--batch auto) */
	uint64_t item_started_ns;
	struct outcomes out;

	/* the running row's progress: the latest, whether it is written, and when one was */
	char progress[HANDLER_PROGRESS_MAX + 1];
	bool progress_dirty;
	uint64_t progress_at;     /* uv_now() of the last write; 0: none for this row */

	struct backoff db_backoff;
	/* what the supervisor was last told (STATE) */
	uint8_t wire;
	uint64_t wire_item;
	uint32_t wire_hpid;
	bool wire_sent;
	uv_timer_t kick_timer, db_timer, lease_timer, grace_timer, slot_timer, flush_timer;
	uv_timer_t progress_timer;
	uv_timer_t overrun_timer; /* --batch auto: the running item outlasts its batch's estimate */
};


/* The one place the state changes (what may follow what is in worker.c). */
void worker_enter(struct worker *w, enum wstate to);
/* step() on the next loop turn: do what the state asks for. */
void worker_kick(struct worker *w);
/* Tell the supervisor what we do (STATE), when it changed. */
void worker_report(struct worker *w, uint8_t wire, uint64_t item);
void worker_send(struct worker *w, struct proto_msg *m);
/* worker_send for outcomes_init (data: the worker). */
void worker_send_out(void *data, struct proto_msg *m);
/* The store's claim hook (store_set_claim_hook). */
void worker_on_locked(void *data, const struct store_item *items, size_t n);
/* The handler's on_progress (worker_progress.c). */
void worker_on_progress(void *data, const char *json, size_t len);
/* The log line of a finished item (--log-items): outcomes.finished. */
void worker_log_item(void *data, const struct outcome *x, unsigned outcome);
/* Answer a claim permit (CLAIMED) with the first n rows of the batch. */
void worker_answer_permit(struct worker *w, size_t n);
/* The running row's id, 0 when none runs. */
uint64_t worker_running_id(const struct worker *w);
/* Whether a database call failed and the back-off runs. */
bool worker_db_waiting(const struct worker *w);
/* The database back-off and the lease timer's callbacks. */
void worker_on_db_timer(uv_timer_t *t);
void worker_on_lease_timer(uv_timer_t *t);

#endif
