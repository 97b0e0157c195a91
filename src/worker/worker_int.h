/* worker_int — the insides of a worker, shared by worker.c (its claiming life: the states, the
 * database), worker_items.c (the rows it holds: to the handler, through the rate-limit gate,
 * back from it as outcomes), worker_progress.c and worker_main.c (the supervisor's messages
 * and the set-up). Not an interface. */
#ifndef CLAIMD_WORKER_INT_H
#define CLAIMD_WORKER_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/backoff.h"
#include "common/chan.h"
#include "common/config.h"
#include "common/proc.h"
#include "common/proto.h"
#include "common/scoreboard.h"
#include "store/store.h"
#include "worker/batch.h"
#include "worker/handler.h"
#include "worker/items.h"
#include "worker/outcomes.h"
#include "worker/prefetch.h"

#define DB_BACKOFF_MIN_MS 100
#define DB_BACKOFF_MAX_MS 2000   /* a server back after an outage is used within 2 s */
#define PROGRESS_EVERY_MS 1000   /* a row's progress is written at most this often */

/* The worker's claiming life. The rows it holds run meanwhile, in every state but START:
 * how many it holds decides between FULL and WANT. */
enum wstate {
	WS_START,     /* connecting to the database for the first time */
	WS_CONNECT,   /* a database call failed: waiting for the back-off, then reconnecting */
	WS_FULL,      /* holding as many rows as it should (or its handler takes none yet, a
		       * pipe: co-process not ready): no claim wanted until that changes */
	WS_WANT,      /* room for more: a claim permit is asked for (WANT) */
	WS_SLEEP,     /* the last claim took every due row it could (`drained`): asleep until
		       * the supervisor wakes us; rows it took may run meanwhile */
	WS_CLAIM,     /* holding a permit: claim now, and answer it (CLAIMED) */
	WS_DRAIN,     /* stopping: rows not started go back, running ones end, outcomes written */
	WS_EXIT,      /* the loop stops */
	WS_COUNT,
};

/* What worker_items.c, which worker.c calls, tells the state machine back: through these,
 * set at start (worker_main.c) to worker.c's, the items' side never calls the machine by
 * name (as a libuv handle calls back its owner). */
struct worker;
struct worker_up {
	void (*kick)(struct worker *w);         /* step() on the next loop turn */
	void (*db_failed)(struct worker *w, int r, const char *what, const char *err);
	int (*write)(struct worker *w);          /* write the outcomes now (worker_write) */
};

struct worker {
	uv_loop_t loop;
	struct worker_up up;
	const struct config *cfg;
	struct chan *chan;
	struct store *store;
	struct handler *handler;
	struct sb_slot *board;    /* this worker's scoreboard slot */
	struct proc_user handler_as;   /* --handler-user, looked up (its name "": none) */
	char claimer[PROC_WORKER_NAME_MAX];
	enum wstate state;
	bool stopping;            /* a STOP came */
	bool asked;               /* a WANT is out, unanswered */
	bool drained;             /* the last claim took every due row it could lock (not
				   * full, or none): no claim until a WAKE says there is more */
	uint64_t asked_ns;        /* when the last WANT went out (uv_hrtime); 0: woken unasked */
	bool grace_over;          /* the stop's grace ended: running items were stopped */
	int exit_code;

	struct items items;       /* the rows held */
	struct batch b;           /* the claims and their statements */
	struct prefetch pf;       /* how many to hold (--batch auto) */
	unsigned conc;            /* items run at once (handler_concurrency) */
	uint64_t last_end_ns;     /* when an item last ended, or rows were last claimed */
	uint64_t last_done_ns;    /* when an item last ended */
	uint64_t overrun_polled_end; /* last_end_ns when an overrun was first seen (the loop
				      * has polled since): it counts if nothing ended since */
	struct outcomes out;

	/* The statements of a claim (or of outcomes alone) may run on a thread-pool thread, so
	 * that items that end meanwhile are answered and the rows held start: from db_start to
	 * on_db_done the store, job and b.rows are that thread's, and nothing else on the loop
	 * runs a statement (worker_db_busy). What came for them meanwhile waits here. */
	bool db_running;
	bool db_inline;             /* it runs on the loop (db_off_loop said no) */
	uv_work_t db_work;
	struct batch_job job;
	uv_async_t locked_async;    /* the claim hook's HOLDING, sent by the loop ... */
	uv_sem_t locked_sem;        /* ... before the thread lets the commit go out */
	struct proto_msg holding;
	bool lease_due;             /* the lease timer fired meanwhile */
	bool progress_due;          /* the progress timer fired meanwhile */
	bool hint_set;              /* a permit's cursor hint, for the next claim */
	struct place hint;
	struct proto_msg cancel_later; /* cancels of rows that may be the running claim's */

	struct backoff db_backoff;
	/* what the supervisor was last told (STATE, CLAIMED's state), or takes us to do (a WAKE
	 * accepted: busy) */
	uint8_t wire;
	bool wire_sent;
	bool report_held;         /* a CLAIMED about to go carries the state: no STATE */
	uv_timer_t kick_timer, db_timer, lease_timer, grace_timer, gate_timer, flush_timer;
	uv_timer_t progress_timer;
	uv_timer_t watch_timer;   /* rows waiting: a paused queue, or items running long */
};

/* ---- worker.c ---- */

/* The one place the state changes (what may follow what is in worker.c). */
void worker_enter(struct worker *w, enum wstate to);
/* step() on the next loop turn: do what the state asks for. */
void worker_kick(struct worker *w);
/* A database call failed with r: back off, then reconnect (WS_CONNECT). */
void worker_db_failed(struct worker *w, int r, const char *what, const char *err);
/* Whether a database call failed and the back-off runs. */
static inline bool worker_db_waiting(const struct worker *w)
{
	return uv_is_active((const uv_handle_t *)&w->db_timer);
}

/* Whether no statement may be made now: the back-off runs, or a claim or write does (its
 * end kicks the worker, and runs the lease renewal and progress that came due meanwhile). */
static inline bool worker_db_busy(const struct worker *w)
{
	return w->db_running || worker_db_waiting(w);
}
/* Write the outcomes (no claim), off the loop. Returns 0 (started, nothing to write, or a
 * statement runs already: the next turn after it writes them), or a negative error
 * (db_failed took over). */
int worker_write(struct worker *w);
/* Answer a claim permit (CLAIMED) with the last claim's first n rows. */
void worker_answer_permit(struct worker *w, size_t n);
/* The store's claim hook (store_set_claim_hook). */
void worker_on_locked(void *data, const struct store_item *items, size_t n);
/* The database back-off and the lease timer's callbacks. */
void worker_on_db_timer(uv_timer_t *t);
void worker_on_lease_timer(uv_timer_t *t);
/* The claim hook's HOLDING, on the loop (locked_async's callback). */
void worker_on_locked_async(uv_async_t *a);

/* ---- worker_items.c ---- */

/* The last claim's rows (w->b.rows) become items: to the handler, or the gate. */
void worker_take_claimed(struct worker *w);
/* How many rows a claim may bring now; 0 when none is wanted (not enough room). */
unsigned worker_room(struct worker *w, bool commit);
/* The rate-limit gate: pass what may go now. Returns 0, or a negative error (db_failed). */
int worker_gate(struct worker *w);
/* Every row not started goes back (release outcomes): stopping, or leases lapsed. */
void worker_release_unstarted(struct worker *w);
/* Whether anything is still running or waiting to run. */
bool worker_busy(const struct worker *w);
/* The handler's done hook. */
void worker_on_done(void *data, struct handler_job *job, const struct handler_result *res);
/* The rows of m (PROTO_CANCEL) an operator cancelled: one that waits ends at once, a running
 * one is stopped by its handler; whatever but a success they end with is a failure with no
 * retry (the store makes the row dead, its last_error the cancel's reason). Rows it does not
 * hold, or cancelled already, are ignored. */
void worker_cancel(struct worker *w, const struct proto_msg *m);
/* The watch timer (paused queues, items running long), set for what is due next. */
void worker_watch(struct worker *w);

/* ---- worker_progress.c ---- */

/* The handler's progress hook: a running item's progress, written at most once every
 * PROGRESS_EVERY_MS (the latest then); what is left at the end goes with a success. */
void worker_on_progress(void *data, struct handler_job *job, const char *json, size_t len);
/* Write the progress that is due now (the timer's work; after a statement that kept it). */
void worker_progress_write(struct worker *w);

/* ---- worker_wire.c ---- */

/* Tell the supervisor what we do (STATE), when it changed (not while report_held). */
void worker_report(struct worker *w);
/* What we do now, as the message about to go (CLAIMED) tells it: recorded as told. */
uint8_t worker_wire_now(struct worker *w);
/* wire, told by a message about to go (CLAIMED), recorded as told. */
void worker_wire_told(struct worker *w, uint8_t wire);
/* A WAKE accepted: the supervisor, which sent it, counts us busy (pool.c's grant) from here. */
void worker_wire_woken(struct worker *w);
void worker_send(struct worker *w, struct proto_msg *m);
/* worker_send for outcomes_init (data: the worker). */
void worker_send_out(void *data, struct proto_msg *m);
/* The log line of a finished item (--log-items): outcomes.finished. */
void worker_log_item(void *data, const struct outcome *x, unsigned outcome);

#endif
