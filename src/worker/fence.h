/* fence — a worker never runs a row past its lease. A handler still running when the leases of
 * the rows the worker holds may have ended without a renewal (the database unreachable, or
 * too slow to answer) is killed: SIGKILL to the process group of every item running, as the
 * scoreboard lists them, or, when an in-process item (so:, noop) runs, the worker exits. It is
 * done from a signal (a POSIX timer), so that a worker blocked in a statement to a database
 * that does not answer still does it on time.
 *
 * The deadline is when the last claim or renewal of the rows was sent, plus the lease, less a
 * margin (batch.h): the server set the rows' visible_at from its clock after that send, so no
 * other worker can claim them before the deadline passes. Process-wide: one per worker. */
#ifndef CLAIMD_FENCE_H
#define CLAIMD_FENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/scoreboard.h"

#define FENCE_EXIT 75   /* the worker's exit code when an in-process handler outlived its lease */

/* Make the timer, over the worker's scoreboard slot. Returns 0 or -errno. */
int fence_init(const struct sb_slot *slot);

/* Kill what runs at deadline_ns (uv_hrtime's clock). Called again with a later deadline
 * after each renewal. */
void fence_arm(uint64_t deadline_ns);

/* Nothing is held. */
void fence_disarm(void);

/* When (uv_hrtime) the fence last killed something; 0: never. An item that started before
 * it and ended after it was killed by the fence. */
uint64_t fence_fired_ns(void);

#endif
