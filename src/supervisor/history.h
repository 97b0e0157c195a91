/* history — the queues' history, per minute, as the supervisor keeps it before it is written
 * (history_flush.h) and as it is read back (GET /v1/stats, claimctl stats): what this
 * supervisor's workers finished (done, retried, dead) counted into the minute of the wall
 * clock (UTC) per queue, with the run and wait times as histograms of jobstats' buckets plus
 * one over the last bound. Reading it back is console/history_view's. Pure: no I/O, does not
 * log; history_add allocates. */
#ifndef CLAIMD_HISTORY_H
#define CLAIMD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proto.h"
#include "store/store.h"

#define HISTORY_PENDING_MAX 4096    /* minutes kept unwritten (the database away): the oldest go */

/* The minutes counted and not yet taken, oldest first (a queue's minute once). */
struct history {
	const struct config *cfg;       /* the queue names */
	struct store_history_row *row;
	size_t n, cap, max;
	uint64_t dropped;               /* minutes dropped past max, since history_dropped */
	uint64_t lost;                  /* items not counted: out of memory */
};

/* max: the minutes kept at most (HISTORY_PENDING_MAX; at least 1). */
void history_init(struct history *h, const struct config *cfg, size_t max);
/* Frees what is kept. Accepts a zeroed one. */
void history_free(struct history *h);

/* A worker's FINISHED: its items that ended done, retried or dead, counted into now_s's
 * minute (unix seconds, the wall clock; a clock set back counts in the newest minute kept).
 * Other messages and outcomes are not counted. */
void history_add(struct history *h, const struct proto_msg *m, int64_t now_s);

/* Moves the oldest minutes, at most max, into *ret (malloc'd, the caller's). Returns how
 * many; 0 when there are none (or out of memory: they stay). */
size_t history_take(struct history *h, size_t max, struct store_history_row **ret);

/* Minutes dropped (the oldest, past max) since the last call. */
uint64_t history_dropped(struct history *h);

/* The bucket the run or wait of us microseconds falls in (0..STORE_HISTORY_BUCKETS-1). */
unsigned history_bucket(uint64_t us);
/* The upper bound of bucket b in seconds; the last has none: the bound before it. */
double history_bucket_le(unsigned b);

#endif
