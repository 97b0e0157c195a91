/* metrics — /metrics in the Prometheus text format (version 0.0.4): this supervisor's pool
 * and HTTP requests from memory, the queues from the reading claimctl queues, status and the
 * dashboard share (reading.c: many scrapes and clients cost one reading, its share of the
 * database bounded). Pure: renders from what it is given. */
#ifndef CLAIMD_METRICS_H
#define CLAIMD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/store.h"
#include "console/http.h"
#include "supervisor/surface.h"
#include "console/status.h"

#define METRICS_HTTP_MAX 128

struct metrics {
	struct {
		const char *route;
		unsigned code;
		uint64_t n;
	} http[METRICS_HTTP_MAX];
	size_t nhttp;
	struct http_stats server;   /* the HTTP server's, as they are (set before a render) */
	unsigned max_conns;         /* --http-max-connections */
};

/* One HTTP answer. */
void metrics_count_http(struct metrics *m, const char *route, unsigned code);

/* Everything, into out: the pool (st), what its workers did (js), the HTTP counters, and the
 * queues. queues may be NULL (not read yet); queues_age_s is how old the reading is. Names:
 *   claimd_jobs_finished_total{queue,outcome}   counter: done, retried, dead, released,
 *                                                 lost, deferred
 *   claimd_job_duration_seconds{queue}           histogram: how long handlers ran
 *   claimd_job_wait_seconds{queue}               histogram: from when a row could run (its
 *                                                 insert, or run_at, or a retry's back-off
 *                                                 end) to its start
 *   claimd_claims_total, claimd_claims_empty_total, claimd_claim_duration_seconds
 *   claimd_worker_messages_total{direction}      counter: to_worker, from_worker
 *   claimd_idle_statements_total                 counter: idle.h's statements
 * and the gauges and counters listed in metrics.c. */
void metrics_render(const struct metrics *m, const struct status *st,
		    const struct jobstats *js, const struct store_queue *queues, size_t nqueues,
		    double queues_age_s, struct buf *out);

#endif
