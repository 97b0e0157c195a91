/* store_graph — rows that wait for each other (work_deps, sql/migrations/005_dependencies.sql)
 * and batches, added together; a run's outcome with the rows its handler adds (follow-up
 * jobs), in one transaction; batches as an operator reads them. In store.h's terms: one
 * struct store is one connection, used by one thread at a time; errors are returned, never
 * logged. */
#ifndef CLAIMD_STORE_GRAPH_H
#define CLAIMD_STORE_GRAPH_H

#include "store/store.h"

#define STORE_GRAPH_MAX 1000             /* rows in one graph */
#define STORE_BATCH_DESC_MAX 255

/* An edge of a graph: rows[child] waits for rows[parent]; on_dead_run: a dead parent counts
 * as done for it (else it cancels it). */
struct store_edge {
	size_t parent, child;
	bool on_dead_run;
};

/* A batch of a graph's rows: every row is a member, but callback (an index, or -1 for
 * none), which waits for every member (on_dead_run edges) and so runs once they all
 * finished, done or dead. */
struct store_batch_def {
	const char *description;         /* NULL or at most STORE_BATCH_DESC_MAX bytes */
	long callback;
};

/* Insert rows[0..n) (at most STORE_GRAPH_MAX; no dedupe keys) and their edges in one
 * transaction, with a batch of them if batch is not NULL (its id into *ret_batch_id): all
 * or nothing. On success every row's id is set (rc 0). Returns 0, or a negative error and
 * nothing is written: -EINVAL (a row's arguments, with its index in err; an edge out of
 * range; a cycle or another rule of work_deps, in its words), -EDOM (a value the database
 * refuses), or the database's. */
int store_add_graph(struct store *s, struct store_add_row *rows, size_t n,
		    const struct store_edge *edges, size_t nedges,
		    const struct store_batch_def *batch, uint64_t *ret_batch_id, char *err,
		    size_t errlen);

/* A batch as an operator sees it: the members' states counted, the callback's state. */
struct store_batch {
	uint64_t id;
	char queue[STORE_QUEUE_MAX + 1];
	char description[STORE_BATCH_DESC_MAX + 1];
	unsigned size;                       /* members */
	uint64_t members[ROW_STATE_COUNT];   /* by enum row_state (a deleted one: in none) */
	uint64_t callback_id;                /* 0: none */
	enum row_state callback_state;       /* ROW_NONE when none (or deleted) */
	bool finished;                       /* every member done or dead (or deleted) */
	char created_at[32];
};

/* Batch id into *ret. Returns 1, 0 when there is none, or a negative error. */
int store_batch_get(struct store *s, uint64_t id, struct store_batch *ret, char *err,
		    size_t errlen);

/* The newest batches (id below before, 0: any), at most limit (1..STORE_LIST_MAX), into a
 * malloc'd array. Returns 0 or a negative error. */
int store_batches(struct store *s, uint64_t before, unsigned limit, struct store_batch **ret,
		  size_t *ret_n, char *err, size_t errlen);

/* A successful run of done (fenced, as store_claim's done[]: its result, its FIFO group's
 * next row, the rows that wait for it) and the rows its handler added, rows[0..n) (1 to
 * STORE_GRAPH_MAX; with edges or a batch, a graph as store_add_graph takes it; else each may
 * have a dedupe key, a group and a period, as store_add_many's), in one transaction: the rows
 * are written only if the outcome is, and the outcome only with them. Returns 1 (both
 * written), 2 (the row was cancelled while it ran: it is dead now, its rows not added), 0
 * (fenced out: nothing written), or a negative error and nothing is written (as
 * store_add_graph's: -EINVAL and -EDOM name the row; after -ENOTCONN the commit may have
 * happened unseen: completing again then reports it fenced out). */
int store_complete_adding(struct store *s, const struct store_ref *done,
			  struct store_add_row *rows, size_t n, const struct store_edge *edges,
			  size_t nedges, const struct store_batch_def *batch, char *err,
			  size_t errlen);

/* Ready rows of up to span children after from (work_deps) waiting for more parents than hold
 * them back get that count, parents locked; *ret_next: the last child, 0 at the end. */
int store_deps_heal(struct store *s, uint64_t from, unsigned span, uint64_t *ret_next,
		    char *err, size_t errlen);

#endif
