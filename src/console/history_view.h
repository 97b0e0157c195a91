/* history_view — the queues' history as it is read back (GET /v1/stats, claimctl stats): the
 * window a request asks for, percentiles of summed buckets, the answer as JSON and as a table.
 * Pure: no I/O, does not log. */
#ifndef CLAIMD_HISTORY_VIEW_H
#define CLAIMD_HISTORY_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ctl.h"
#include "store/store.h"
#include "supervisor/surface.h"

#define HISTORY_POINTS_MAX 1440     /* steps one request may ask for */
#define HISTORY_SINCE_S 3600        /* the window when none is given: the last hour */
#define HISTORY_AUTO_POINTS 120     /* without a step: the smallest of the steps within this */

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
