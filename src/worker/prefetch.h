/* prefetch — how many rows a worker claims at once when --batch is auto: sized from what its
 * items have cost, so that a claim brings about PREFETCH_BUDGET_NS of work. Items that take
 * microseconds are claimed by the hundred (the claim's round trips are then shared by many);
 * an item that takes longer than the budget is claimed alone, so no row waits in one worker's
 * hands while a sibling could run it. A batch can still be wrong (fast items, then a slow
 * one): when the running item has run for prefetch_overrun_ns, the worker gives the rest of
 * its batch back. Pure: no I/O, no clock of its own. */
#ifndef CLAIMD_PREFETCH_H
#define CLAIMD_PREFETCH_H

#include <stdint.h>

#define PREFETCH_BUDGET_NS 10000000u   /* 10 ms of work per claim */
#define PREFETCH_MAX 256u              /* the most rows one claim may bring (PROTO_MAX_ITEMS) */

struct prefetch {
	uint64_t avg_ns;   /* moving average of an item's run time; 0: none ran yet */
	unsigned last;     /* the size of the last claim */
};

/* The size of the next claim: fixed when not 0 (--batch N), else from the average: the
 * budget's worth, growing at most twofold from one claim to the next (a few quick items
 * do not bring 256 rows at once), 1 before any item ran. */
unsigned prefetch_size(struct prefetch *p, unsigned fixed);

/* An item ran for ns. */
void prefetch_ran(struct prefetch *p, uint64_t ns);

/* How long an item may run before the rows claimed with it and not started go back: the
 * batch was sized for items far shorter. */
uint64_t prefetch_overrun_ns(const struct prefetch *p);

#endif
