/* jobstats — what this supervisor's workers did, counted as they report it (CLAIMED and
 * FINISHED): per queue, items by outcome, how long handlers ran and how long rows waited
 * from when they could run to their start (histograms); claims and how long they took; and
 * the items done and failed in each of the last JOBSTATS_SECONDS seconds, for the
 * dashboard's chart. Pure: no I/O, no allocation, does not log. */
#ifndef CLAIMD_JOBSTATS_H
#define CLAIMD_JOBSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/proto.h"

#define JOBSTATS_SECONDS 600                 /* the chart's window */
#define JOBSTATS_DURATION_BUCKETS 17
#define JOBSTATS_CLAIM_BUCKETS 12

/* Upper bounds of the buckets, in seconds (Prometheus "le"). */
extern const double jobstats_duration_le[JOBSTATS_DURATION_BUCKETS];
extern const double jobstats_claim_le[JOBSTATS_CLAIM_BUCKETS];

struct jobstats_hist {
	uint64_t bucket[JOBSTATS_DURATION_BUCKETS];  /* not cumulative; the claim's use fewer */
	uint64_t count;
	double sum;                                   /* seconds */
};

struct jobstats_queue {
	uint64_t outcome[PROTO_OUT_MAX + 1];          /* by enum proto_outcome */
	struct jobstats_hist run, wait;               /* items that ran */
};

struct jobstats {
	const struct config *cfg;                     /* the queue names */
	struct jobstats_queue queue[CONFIG_QUEUES_MAX];
	uint64_t claims, claims_empty;                /* claims, and those that found no row */
	uint64_t msgs_to, msgs_from;                  /* messages sent to workers, and theirs */
	uint64_t idle_asked;                          /* idle.h's statements: polls, next due */
	struct jobstats_hist claim;
	/* per second: done, and failed (retried or dead), of the last JOBSTATS_SECONDS */
	uint32_t done[JOBSTATS_SECONDS], failed[JOBSTATS_SECONDS];
	uint64_t second;                              /* the second the ring's newest slot is */
};

void jobstats_init(struct jobstats *js, const struct config *cfg);

/* A worker's CLAIMED or FINISHED; now_s: the loop's clock in seconds. */
void jobstats_add(struct jobstats *js, const struct proto_msg *m, uint64_t now_s);

/* The items done and failed in each of the last n seconds (at most JOBSTATS_SECONDS, and
 * none before second 0) up to now_s, oldest first, into done[] and failed[] (room for n
 * each). Returns how many seconds that is. */
unsigned jobstats_series(struct jobstats *js, uint64_t now_s, unsigned n, uint32_t *done,
			 uint32_t *failed);

#endif
