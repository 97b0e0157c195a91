/* batch — the statements about the rows a worker holds: writing the outcomes and claiming more
 * in one transaction (from the worker's queues in turn), a row's rate-limit start slot,
 * whether a queue was paused meanwhile, and the rows' leases. Knows nothing of the worker's
 * states: every call returns the store's error for the worker to act on. Logs only outcomes
 * that had lost their claim. */
#ifndef CLAIMD_BATCH_H
#define CLAIMD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proto.h"
#include "store/store.h"
#include "worker/items.h"
#include "worker/outcomes.h"

struct batch {
	struct store_item rows[PROTO_MAX_ITEMS];   /* the last claim's, until the worker takes them */
	size_t n;
	unsigned qi;              /* the queue (cfg->queues[qi]) that had work last: the batch's */
	uint64_t claimed_ns;      /* when the last claim ended (uv_hrtime) */
	uint32_t claim_us;        /* how long it took */
	uint64_t pause_seen_ns;   /* when a claim or a check last saw the queues not paused */
	/* Until when (uv_hrtime) the leases of every row held are surely ours: when the last
	 * renewal of them all (or the claim of the oldest) was sent, plus the lease less
	 * BATCH_LEASE_MARGIN of it; 0 once some were found no longer ours. Read by the
	 * handler's threads (handler_opts.lease_ok_ns). */
	uint64_t lease_ok_ns;
};

/* A tenth of the lease: a worker stops using its rows this much before the server may let
 * another worker claim them (clocks run at slightly different rates). */
#define BATCH_LEASE_MARGIN(lease_ms) ((uint64_t)(lease_ms) / 10u)

/* Whether the leases of the rows held may have ended (fence.h). */
static inline bool batch_lease_lapsed(const struct batch *b, uint64_t now_ns)
{
	return now_ns >= __atomic_load_n(&b->lease_ok_ns, __ATOMIC_ACQUIRE);
}

/* One claim (or write of outcomes) in three steps, so that its statements may run off the
 * loop: batch_claim_begin and batch_claim_end on the loop, batch_claim_run anywhere (a
 * thread-pool thread), touching only the store, the job and b->rows meanwhile. */
struct batch_job {
	struct store_ref done[OUTCOMES_MAX];   /* the successes the claim completes */
	size_t ndone;
	unsigned max;          /* rows to claim; 0: write the outcomes alone */
	bool holding;          /* rows were held already (their lease clock stays) */
	uint64_t t0;           /* when its statements went out (uv_hrtime) */
	unsigned qi;           /* the queue its rows came from */
	size_t n, completed;   /* rows claimed, successes the store applied */
	bool grouped;          /* a success it completes has a key (a FIFO group, a limit):
				* its finish may make the key's next rows due */
	bool left_next;        /* and the claim did not look for those rows
				* (store_claim_left_next) */
	int r;                 /* batch_claim_run's answer */
	char err[STORE_ERR_MAX];
};

/* Write every outcome of o but the successes (one statement each: they are rare), then take
 * the successes' refs into j, for a claim of up to max rows. Returns 1 when the job has
 * something to do (run it, then end it), 0 when not (nothing to write, max 0), or the
 * store's error with err (what was not written stays in o). */
int batch_claim_begin(struct batch *b, struct store *s, struct outcomes *o, unsigned max,
		      bool holding, struct batch_job *j, char *err, size_t errlen);

/* The job's statements: the successes completed and, with max > 0, up to max rows claimed in
 * the same transaction, from the queue that had work last, then the others in turn, into
 * b->rows[0..j->n). Sets j->r: 0 or the store's error (with j->err; rows none). */
void batch_claim_run(struct batch *b, struct store *s, const struct config *cfg,
		     struct batch_job *j);

/* On the loop, after the run: when it succeeded, the successes written are reported and
 * forgotten (outcomes added since stay) and, for a claim, b holds its j->n rows. Returns
 * j->r. */
int batch_claim_end(struct batch *b, struct outcomes *o, struct batch_job *j);

/* Rows held at the gate at most this long for their key's start; one whose start is
 * further off goes back until then (store_take_slot's hold_ms). */
#define BATCH_KEY_HOLD_MS 1000u

/* Take x's start of its key's rate (key_slot true) or else of its queue's, when it has that
 * limit: store_take_slot's answer (1: taken or none, with how long to wait; 0: its key's next
 * start is more than BATCH_KEY_HOLD_MS off, and how long until it is), or its error. */
int batch_take_slot(struct store *s, const struct item *x, bool key_slot, unsigned *ret_wait_ms,
		    char *err, size_t errlen);

/* Is queue paused? Asked at most every 50 ms (since a claim or the last check saw it not
 * paused: then 0 without a statement). Returns 1, 0, or the store's error. */
int batch_paused(struct batch *b, struct store *s, const char *queue, char *err,
		 size_t errlen);

/* Extend the leases of every row held and of those whose outcome is not written yet;
 * lease_ok_ns follows (0 when some were no longer ours). Returns 0 or the store's error. */
int batch_extend(struct batch *b, const struct items *t, const struct outcomes *o,
		 struct store *s, unsigned lease_ms, char *err, size_t errlen);

#endif
