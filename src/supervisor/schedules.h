/* schedules — the supervisor's part in schedules: at a poll tick when a schedule's next tick has
 * come (or at each maintenance pass, for schedules added or changed by plain SQL, or at once
 * after schedules_kick), a job on the supervisor's database queue adds the due schedules' rows
 * (store_schedule_fire). Every supervisor does this; the store makes sure each tick gets its
 * rows once. The cron arithmetic (common/cron.h) and the zones (common/tzfile.h, kept once
 * read) run on the database queue's thread. A zone file that does not read for a reason that
 * may pass (too many open files, an I/O error) refuses nothing: its schedules wait, and it
 * is read again after a wait that doubles. Logs the rows added, what it refused and what
 * waits, once. */
#ifndef CLAIMD_SCHEDULES_H
#define CLAIMD_SCHEDULES_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "supervisor/dbq.h"

#define SCHEDULES_RETRY_MS 10000u   /* after a failure */
#define SCHEDULES_ZONE_RETRY_MIN_MS 1000u    /* a zone file that did not read: read again */
#define SCHEDULES_ZONE_RETRY_MAX_MS 60000u   /* after 1 s, 2 s, 4 s, ... at most this */
#define SCHEDULES_BATCH 50u           /* schedules one job goes through */

struct schedules;

/* loop and dbq are borrowed. Returns 0 or -ENOMEM. */
int schedules_new(uv_loop_t *loop, struct dbq *dbq, struct schedules **ret);
/* The job, if one runs, must be over (dbq idle). Accepts NULL. */
void schedules_free(struct schedules *s);

/* At a poll tick: start a job if one is due and none runs. Returns true if it took the
 * tick's place. */
bool schedules_tick(struct schedules *s);

/* A schedule was added, changed or resumed here, or a maintenance pass is due: look at the
 * schedules at the next poll tick. */
void schedules_kick(struct schedules *s);

#endif
