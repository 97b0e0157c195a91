/* outcomes — how the rows a worker ran ended, until the database has them. A success waits to
 * ride on the next claim's transaction (or OUTCOMES_FLUSH_MS at most, or until its results
 * grow past OUTCOMES_RESULT_BYTES); a failure, a release or a deferral is due at once
 * (outcomes_due): written on the worker's next turn, so a worker that dies loses at most
 * OUTCOMES_FLUSH_MS of finished work. Whether a
 * failed row goes back to ready or is dead is the store's to decide (store_fail), never the
 * worker's. Every outcome written is reported to the supervisor (FINISHED) through send. Does
 * not log. */
#ifndef CLAIMD_OUTCOMES_H
#define CLAIMD_OUTCOMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/jobset.h"
#include "common/proto.h"
#include "common/trace.h"
#include "store/store.h"

/* Twice what a worker may hold (items.h: ITEMS_MAX): room for every held row's outcome,
 * and as many more written meanwhile. */
#define OUTCOMES_MAX (2 * (256 + PROTO_MAX_ITEMS))
#define OUTCOMES_FLUSH_MS 20     /* a success waits at most this long */
#define OUTCOMES_RESULT_BYTES (256u * 1024) /* results waiting past this are due at once */

/* How a run ended, as the worker saw it. */
enum outcome_kind {
	OUTCOME_SUCCESS,
	OUTCOME_FAILURE,   /* retried after retry_ms, or dead: the store decides */
	OUTCOME_RELEASE,   /* not run (or cut short by a stop): back to ready, attempt given back */
	OUTCOME_DEFER,     /* the handler asked to run it again in retry_ms: not a failure */
};

struct outcome {
	struct store_ref ref;      /* its result and progress point to the two below */
	enum outcome_kind kind;
	unsigned retry_ms;
	char *error;
	unsigned char *result;     /* malloc'd, or NULL */
	char *progress;            /* malloc'd, or NULL */
	struct jobset *enqueue;    /* a success's follow-up jobs (malloc'd), or NULL */
	char *group;               /* a key run N at once: its key (malloc'd), for ref.group */
	/* for the supervisor's metrics (FINISHED) */
	uint8_t queue;             /* index into the --queue list */
	uint32_t run_us, wait_us;
	uint32_t attempt;          /* for the log */
	char trace[TRACE_LOG_FIELD]; /* for the log: " trace=<its trace id>", or "" */
};

struct outcomes {
	struct outcome list[OUTCOMES_MAX];
	size_t n;
	uint64_t since_ns;     /* when the oldest came (uv_hrtime) */
	size_t result_bytes;   /* of the results waiting */
	bool urgent;           /* one is due at once */
	size_t lost;           /* failures and deferrals refused since the caller last looked:
				* the row was no longer ours (its lease had ended) */
	void (*send)(void *data, struct proto_msg *m);
	/* Each outcome as it is reported, or NULL: x, and what became of its row
	 * (enum proto_outcome). */
	void (*finished)(void *data, const struct outcome *x, unsigned outcome);
	void *data;
};

void outcomes_init(struct outcomes *o, void (*send)(void *data, struct proto_msg *m),
		   void *data);

/* The run of it ended as kind. error is copied. Returns the outcome, for outcome_set_* and
 * its metrics fields (queue, run_us, wait_us: zero). The caller keeps o->n below
 * OUTCOMES_MAX (a worker holds at most half as many rows). */
struct outcome *outcomes_add(struct outcomes *o, const struct store_item *it,
			     enum outcome_kind kind, unsigned retry_ms, const char *error);

/* What x (a success) leaves in its row: result (len bytes of type, a static string) and the
 * last progress not written yet (JSON text), each NULL for none; copied. Results waiting
 * beyond OUTCOMES_RESULT_BYTES make them due. Returns 0 or -ENOMEM (x then has neither). */
int outcome_set_result(struct outcomes *o, struct outcome *x, const unsigned char *result,
		       size_t len, const char *type, const char *progress);

/* x (a success) adds the jobs of set, its handler's follow-up jobs (store_complete_adding:
 * in the transaction that writes x; x takes set, malloc'd): x is due at once. Should the
 * database refuse them, x is a failure after all, its row retried after retry_ms. */
void outcome_set_enqueue(struct outcomes *o, struct outcome *x, struct jobset *set,
			 unsigned retry_ms);

/* Whether to write them before going on: one is due at once, or the oldest waited
 * OUTCOMES_FLUSH_MS. */
bool outcomes_due(const struct outcomes *o);

/* Write every outcome but the successes, one statement each (they are rare), and the
 * successes that add jobs, a transaction each. Returns 0, or the store error: what was not
 * written stays. */
int outcomes_write_slow(struct outcomes *o, struct store *s, char *err, size_t errlen);

/* The successes (all that is left after outcomes_write_slow), for a claim to complete:
 * their refs into out (OUTCOMES_MAX room). Returns how many. */
size_t outcomes_done_refs(const struct outcomes *o, struct store_ref *out);

/* The claim wrote the first n (the refs outcomes_done_refs gave it): report and forget them;
 * those added since stay, and are due as the oldest of them would be. */
void outcomes_done_written(struct outcomes *o, size_t n);

/* The refs of every outcome not yet written into out, from index at; returns the new end. */
size_t outcomes_refs(const struct outcomes *o, struct store_ref *out, size_t at);

#endif
