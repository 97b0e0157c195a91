/* metrics — /metrics in the Prometheus text format (version 0.0.4): this supervisor's pool
 * and HTTP requests from memory, the queues from a reading of the database at most every
 * METRICS_QUEUES_MS (a scrape never waits for the database, and many scrapes cost one
 * reading). Pure: renders from what it is given. */
#ifndef CLAIMD_METRICS_H
#define CLAIMD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/store.h"
#include "supervisor/status.h"

#define METRICS_QUEUES_MS 5000
#define METRICS_HTTP_MAX 128

struct metrics {
	struct {
		const char *route;
		unsigned code;
		uint64_t n;
	} http[METRICS_HTTP_MAX];
	size_t nhttp;
};

/* One HTTP answer. */
void metrics_count_http(struct metrics *m, const char *route, unsigned code);

/* Everything, into out. queues may be NULL (not read yet); queues_age_s is how old the
 * reading is. */
void metrics_render(const struct metrics *m, const struct status *st,
		    const struct store_queue *queues, size_t nqueues, double queues_age_s,
		    struct buf *out);

#endif
