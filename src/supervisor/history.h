/* history — the queues' history, per minute, as the supervisor keeps it before it is written
 * (history_flush.h) and as it is read back (GET /v1/stats, claimctl stats): what this
 * supervisor's workers finished (done, retried, dead) counted into the minute of the wall
 * clock (UTC) per queue, with the run and wait times as histograms of jobstats' buckets plus
 * one over the last bound; the window a request asks for; percentiles of summed buckets; the
 * answer as JSON and as a table. Pure: no I/O, does not log; history_add allocates. */
#ifndef CLAIMD_HISTORY_H
#define CLAIMD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"
#include "common/proto.h"
#include "store/store.h"

#define HISTORY_PENDING_MAX 4096    /* minutes kept unwritten (the database away): the oldest go */
#define HISTORY_POINTS_MAX 1440     /* steps one request may ask for */
#define HISTORY_SINCE_S 3600        /* the window when none is given: the last hour */
#define HISTORY_AUTO_POINTS 120     /* without a step: the smallest of history_steps within this */

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

/* The q-quantile (0 < q <= 1) of a histogram: the upper bound of the bucket that holds it
 * (exact to a bucket; in the last bucket, its lower bound: "over 300 s"). -1 when empty. */
double history_quantile(const uint64_t bucket[STORE_HISTORY_BUCKETS], double q);

/* Adds b's counts to a. */
void history_merge(struct store_history_row *a, const struct store_history_row *b);

/* What a request asks for: one queue or all, the steps' start from (a multiple of step) to
 * to (unix seconds), step seconds apart. */
struct history_window {
	char queue[STORE_QUEUE_MAX + 1];
	bool any_queue;
	int64_t from, to;
	unsigned step;
};

/* The window of a stats request at now_s: to (or now, up to its next whole minute), from (or
 * to - since, or the last hour), the step (or the smallest of 1m, 5m, 15m, 1h, 6h, 1d with at
 * most HISTORY_AUTO_POINTS steps); from down to a multiple of the step. Returns 0, or -EINVAL
 * with why in err (from not before to, before 1970, over HISTORY_POINTS_MAX steps). */
int history_window(const struct ctl_request *req, int64_t now_s, struct history_window *ret,
		   char *err, size_t errlen);

/* The answer: every step of w (steps[0..n): those with rows, in order, as
 * store_history_read gives them), and their total. JSON: {"queue","from","to","step",
 * "total","points"} (openapi.json's History); text: a table, a line per step and the total. */
void history_render_json(const struct history_window *w, const struct store_history_row *steps,
			 size_t n, struct buf *out);
void history_render_text(const struct history_window *w, const struct store_history_row *steps,
			 size_t n, struct buf *out);

#endif
