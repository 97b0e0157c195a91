/* prefetch — how many rows a worker holds beyond those it runs, when --batch is auto: sized
 * from what its items have cost, so that what waits is about PREFETCH_BUDGET_NS of work for
 * each of the items it runs at once. Items that take microseconds are claimed by the
 * hundred (the claim's round trips are then shared by many, and the next claim is made while
 * they run); items that take longer than the budget are not held beyond those running (one
 * worker running one at a time claims one row at a time, so no row waits in its hands while
 * a sibling could run it). A guess can still be wrong (fast items, then slow ones): when no
 * item has ended for prefetch_overrun_ns while rows wait, the worker gives them back. Pure:
 * no I/O, no clock of its own. */
#ifndef CLAIMD_PREFETCH_H
#define CLAIMD_PREFETCH_H

#include <stdint.h>

#define PREFETCH_BUDGET_NS 10000000u   /* 10 ms of work waiting, per item running at once */
#define PREFETCH_MAX 256u              /* the most rows one claim may bring (PROTO_MAX_ITEMS) */
#define PREFETCH_CYCLES 3u             /* claim cycles' worth of work held, at least */

struct prefetch {
	uint64_t avg_ns;   /* moving average of an item's run time; 0: none ran yet */
	uint64_t cycle_ns; /* moving average of a claim's cycle: asking for it to its rows */
	unsigned last;     /* the last extra claimed for */
};

/* How many rows to hold beyond the conc running: fixed - 1 when fixed is not 0 (--batch N:
 * claims of N rows), else the budget's worth for conc items at the average, or what conc
 * items use up in PREFETCH_CYCLES claim cycles if that is more (the next rows are then in
 * hand before these run out), at most
 * PREFETCH_MAX, growing at most about twofold from one claim to the next (a few quick items
 * do not bring 256 rows at once), 0 before any item ran. Remembers it (for the growth). */
unsigned prefetch_extra(struct prefetch *p, unsigned fixed, unsigned conc);

/* The same without remembering it: for deciding whether to claim. */
unsigned prefetch_peek(const struct prefetch *p, unsigned fixed, unsigned conc);

/* How few rows of room make a claim worth it, with extra rows held beyond the conc running:
 * a whole --batch when fixed; else half of extra, so that the next rows come while the last
 * half runs, unless the rows held run out within one claim cycle anyway (items far quicker
 * than a claim: conc * cycle / average >= extra): claiming early would then keep nothing
 * fed and only halve every claim, so the claim waits for room for them all. At least 1. */
unsigned prefetch_low(const struct prefetch *p, unsigned fixed, unsigned conc, unsigned extra);

/* An item ran for ns. */
void prefetch_ran(struct prefetch *p, uint64_t ns);

/* The items running have run ns already, with no end: the average is at least that (rows
 * waiting went back; no more are held until the estimate says so). */
void prefetch_overran(struct prefetch *p, uint64_t ns);

/* A claim took ns from the worker asking for it (WANT) to its rows in hand. */
void prefetch_claimed(struct prefetch *p, uint64_t ns);

/* How long the worker may go without an item ending, while rows wait, before it gives them
 * back: the batch was sized for items far shorter. */
uint64_t prefetch_overrun_ns(const struct prefetch *p);

#endif
