/* store_browse — the job browser's reads and bulk actions (store_jobs.c's finder,
 * store_browse.c; sql/migrations/011_job_browser.sql), in store.h's terms: one struct store
 * is one connection, used by one thread at a time; errors are returned, never logged. */
#ifndef CLAIMD_STORE_BROWSE_H
#define CLAIMD_STORE_BROWSE_H

#include "store/store.h"
#include "store/store_graph.h"

/* Which rows an operator picks: every field that is 0 or NULL picks any. */
#define STORE_FILTER_ERROR_MAX 200   /* bytes of the text looked for in last_error */
struct store_filter {
	unsigned states;            /* ROW_STATE_BIT()s (common/row_state.h); 0: every state */
	const char *queue;          /* at most STORE_QUEUE_MAX bytes */
	const char *group;          /* group_key, at most STORE_GROUP_KEY_MAX bytes */
	const char *dedupe;         /* dedupe_key, at most STORE_DEDUPE_KEY_MAX bytes */
	const char *error;          /* in last_error (a substring, as the column's collation
				     * compares: case-insensitive), 1..STORE_FILTER_ERROR_MAX bytes */
	uint64_t id;                /* 0: any */
};

/* There is no index on state, group_key (a finished row's), last_error: a list or a bulk
 * action reads the table by primary key, the highest ids first, at most this many ids a
 * statement (a span of the id range, whatever it holds): a page of a list looks at one span
 * and may come back short with a cursor to the next; a bulk action counts and acts span by
 * span. A filter on id, or on dedupe with queue (dedupe_idx), is a lookup instead. */
#define STORE_BROWSE_SPAN 100000u

/* The newest rows f picks (highest id first) with ids below before (0: any), at most limit
 * (1..STORE_LIST_MAX), from one span of ids at most (STORE_BROWSE_SPAN), into a malloc'd
 * array as store_jobs_list gives it. *ret_next: where the next page starts (its before): the
 * last row's id on a full page, the bottom of the span when the span ran out first, 0 when
 * there is nothing below. Returns 0, -EINVAL with err filled for a bad filter, or a negative
 * error. */
int store_jobs_find(struct store *s, const struct store_filter *f, uint64_t before,
		    unsigned limit, struct store_job **ret, size_t *ret_n, uint64_t *ret_next,
		    char *err, size_t errlen);

/* A job page's more distant parts: each failed attempt's error (attempt_errors), the rows it
 * waits for and those that wait for it (work_deps, with their states: "" for a row that is
 * gone), and its batch. */
#define STORE_JOB_LINKS_MAX 100      /* parents, and children, shown at most */
struct store_attempt_error {
	uint32_t attempt;
	char failed_at[32];
	char *error;                 /* malloc'd, or NULL */
};
struct store_job_link {
	uint64_t id;
	char state[16];
	bool on_dead_run;            /* the edge's on_dead is 'run' */
};
struct store_job_extra {
	struct store_attempt_error *errors;  /* oldest first; malloc'd */
	size_t nerrors;
	struct store_job_link *parents, *children;  /* by id; malloc'd */
	size_t nparents, nchildren;
	bool more_parents, more_children;    /* over STORE_JOB_LINKS_MAX */
	uint32_t waiting_for;                /* parents not finished yet */
	bool has_batch;
	struct store_batch batch;            /* when has_batch */
};
/* Row id's extra parts into *ret (cleared first). Returns 1, 0 when there is no such row,
 * or a negative error. */
int store_job_extra_get(struct store *s, uint64_t id, struct store_job_extra *ret, char *err,
			size_t errlen);
void store_job_extra_clear(struct store_job_extra *x);

/* Put dead row id back (claimd-workflows(7), RETRYING): ready with attempts 0 (last_error
 * stays until the next failure), waiting for its parents that are not finished, with the
 * rows its death cancelled; a grouped row waits behind its group's running row, if any.
 * (A queue's dead rows go back through store_bulk_chunk, 500 a transaction.) Returns how
 * many rows went back (0: row id is not dead), or -ENOLINK with err naming the dead row it
 * waits for on a 'cancel' edge (it stays dead), or another negative error. */
int store_retry_dead(struct store *s, uint64_t id, char *err, size_t errlen);

/* Bulk actions on the rows a filter picks: retry (dead rows back to ready, attempts 0, as
 * store_retry_dead), discard (ready and dead rows deleted, as store_cancel deletes them),
 * cancel (discard, and claimed rows asked to stop, as store_cancel). */
enum store_bulk_action { STORE_BULK_RETRY, STORE_BULK_DISCARD, STORE_BULK_CANCEL };
#define STORE_BULK_CHUNK 500u        /* rows one transaction acts on at most */
/* The states an action acts on (ROW_STATE_BIT()s). */
unsigned store_bulk_states(enum store_bulk_action a);
/* One past the highest id now (0 when the table is empty). Returns 0 or a negative error. */
int store_jobs_top(struct store *s, uint64_t *ret, char *err, size_t errlen);
/* How many rows f picks among the ids [lo, hi) (at most STORE_BROWSE_SPAN of them: one
 * primary-key range), into *ret. Returns 0, -EINVAL for a bad filter, or a negative error. */
int store_bulk_count(struct store *s, const struct store_filter *f, uint64_t lo, uint64_t hi,
		     uint64_t *ret, char *err, size_t errlen);
/* Act on the rows f picks (among those in the action's states) in ids [lo, hi) (at most
 * STORE_BROWSE_SPAN of them), the highest first, at most STORE_BULK_CHUNK of them, in one
 * transaction (the filter is checked again under the rows' locks). reason: a cancel's (as
 * store_cancel's). *ret_hi: where the next chunk ends (its hi; lo when the span is done).
 * Returns the rows acted on, -EINVAL for a bad filter, or a negative error. */
int store_bulk_chunk(struct store *s, enum store_bulk_action a, const struct store_filter *f,
		     const char *reason, uint64_t lo, uint64_t hi, uint64_t *ret_hi, char *err,
		     size_t errlen);

#endif
