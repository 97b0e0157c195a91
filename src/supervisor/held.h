/* held — the rows one worker reported claimed (CLAIMED) and not yet finished (FINISHED): what
 * the supervisor releases, fenced, when that worker dies, so they run again at once instead of
 * after their lease. Logs what it released. */
#ifndef CLAIMD_HELD_H
#define CLAIMD_HELD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "supervisor/dbq.h"

struct held {
	struct store_ref *refs;
	size_t n, cap;
};

/* Out of memory: the row is not tracked (logged; it comes back after its lease). */
void held_add(struct held *h, uint64_t id, uint64_t token);
void held_remove(struct held *h, uint64_t id, uint64_t token);

/* A row to blame for its worker's death, and why (its last_error if it goes dead). */
struct held_blame {
	uint64_t id;
	char reason[160];
};

/* Release every row in h (h is empty after) that the worker named claimer (proc_worker_name)
 * still holds: a database job that must not be lost. The rows
 * in blame[0..nblame) count their attempt, and go dead if it was their last: they may be what
 * killed the worker. The others get theirs back: not started, cut short, or finished with
 * their outcome not yet written, they run again. done(data, rc) follows on the loop, rc the
 * rows released (< 0: given up). Returns whether it will be: nothing to release (or no
 * memory), nothing is done and done is not called. */
bool held_release(struct held *h, const char *claimer, const struct held_blame *blame,
		  size_t nblame, struct dbq *dbq, void (*done)(void *data, int rc), void *data);

void held_free(struct held *h);

#endif
