/* fence — a worker never runs a row past its lease. A handler still running when its row's
 * lease may have ended without a renewal (the database unreachable, or too slow to answer) is
 * killed: SIGKILL to its process group, or, for an in-process so: handler, the worker exits.
 * It is done from a signal (a POSIX timer), so that a worker blocked in a statement to a
 * database that does not answer still does it on time.
 *
 * The deadline is when the last claim or renewal of the row was sent, plus the lease, less a
 * margin (batch.h): the server set the row's visible_at from its clock after that send, so no
 * other worker can claim the row before the deadline passes. Process-wide: one per worker. */
#ifndef CLAIMD_FENCE_H
#define CLAIMD_FENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define FENCE_EXIT 75   /* the worker's exit code when an in-process handler outlived its lease */

/* Make the timer. Returns 0 or -errno. */
int fence_init(void);

/* A handler runs: kill it at deadline_ns (uv_hrtime's clock): its process group pgid, or the
 * worker itself when pgid is 0. Called again with a later deadline after each renewal. */
void fence_arm(uint64_t deadline_ns, pid_t pgid);

/* The handler is done. */
void fence_disarm(void);

/* Whether the fence killed the handler since the last call (and reset). */
bool fence_fired(void);

#endif
