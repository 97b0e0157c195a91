/* batch — the rows a worker claimed and the statements about them: writing the outcomes and
 * claiming the next batch in one transaction (from the worker's queues in turn), a row's
 * rate-limit start slot, whether its queue was paused meanwhile, and their leases. Knows
 * nothing of the worker's states: every call returns the store's error for the worker to act
 * on. Logs only outcomes that had lost their claim. */
#ifndef CLAIMD_BATCH_H
#define CLAIMD_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proto.h"
#include "store/store.h"
#include "worker/outcomes.h"

struct batch {
	struct store_item items[PROTO_MAX_ITEMS];
	size_t n;
	size_t next;              /* the index of the next row to start */
	unsigned qi;              /* the queue (cfg->queues[qi]) that had work last: the batch's */
	uint64_t claimed_ns;      /* when the claim of the batch ended (uv_hrtime) */
	uint32_t claim_us;        /* how long it took */
	uint64_t pause_seen_ns;   /* when a claim or a check last saw the queues not paused */
	/* Until when (uv_hrtime) the rows' leases are surely ours: when the last claim or
	 * renewal was sent, plus the lease less BATCH_LEASE_MARGIN of it. */
	uint64_t lease_ok_ns;
};

/* A tenth of the lease: a worker stops using its rows this much before the server may let
 * another worker claim them (clocks run at slightly different rates). */
#define BATCH_LEASE_MARGIN(lease_ms) ((uint64_t)(lease_ms) / 10u)

/* Whether the leases of the batch's rows may have ended (fence.h). */
static inline bool batch_lease_lapsed(const struct batch *b, uint64_t now_ns)
{
	return now_ns >= b->lease_ok_ns;
}

/* Write every outcome of o (the slow ones one by one, then the successes with the claim);
 * with max > 0 also claim up to max rows in the same transaction, from the queue that had
 * work last, then the others in turn: they replace the batch. *ret_n: rows claimed. Returns
 * 0, or the store's error (outcomes not written stay in o; the batch is empty after a failed
 * claim). */
int batch_claim(struct batch *b, struct store *s, const struct config *cfg,
		struct outcomes *o, unsigned max, size_t *ret_n, char *err, size_t errlen);

/* Every row not started yet goes back (a release outcome each), attempts given back. */
void batch_release_unstarted(struct batch *b, struct outcomes *o);

/* While a row runs: the rows after it go back (a release outcome each) and leave the batch,
 * which ends with the running row. */
void batch_give_back_rest(struct batch *b, struct outcomes *o);

/* The next row's rate-limit start slot (its queue's min_interval_ms; none: *ret_wait_ms 0).
 * Returns 0 with how long to wait before starting it, or the store's error. */
int batch_take_slot(struct batch *b, struct store *s, unsigned *ret_wait_ms, char *err,
		    size_t errlen);

/* Before the next row of the batch (not its first): was its queue paused meanwhile? Asked
 * at most every 50 ms. Returns 1 when it was (the rest of the batch went back into o), 0,
 * or the store's error. */
int batch_paused(struct batch *b, struct store *s, struct outcomes *o, char *err,
		 size_t errlen);

/* Extend the leases of every row held: from the running one (running) or the next one on,
 * and those whose outcome is not written yet; lease_ok_ns follows (0 when some were no
 * longer ours). Returns 0 or the store's error. */
int batch_extend(struct batch *b, bool running, const struct outcomes *o, struct store *s,
		 unsigned lease_ms, char *err, size_t errlen);

void batch_clear(struct batch *b);

#endif
