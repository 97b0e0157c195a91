/* maint — the supervisor's maintenance: pruning done rows (and dead ones with --keep-dead),
 * forgetting expired dedupe keys, starting FIFO groups left with no running row, forgetting
 * idle groups, deleting the queues' history older than --keep-history. One statement at a
 * time, each in place of an idle poll, on the supervisor's database queue. Logs what it changed, once a step is through, and its failures. */
#ifndef CLAIMD_MAINT_H
#define CLAIMD_MAINT_H

#include <stdbool.h>

#include "common/config.h"
#include "supervisor/dbq.h"

struct maint;

/* dbq and cfg are borrowed. Returns 0 or -ENOMEM. */
int maint_new(struct dbq *dbq, const struct config *cfg, struct maint **ret);
/* The step running, if any, must be over (dbq idle). Accepts NULL. */
void maint_free(struct maint *m);

/* Every step is due (each --maintenance-interval). */
void maint_due(struct maint *m);

/* At a poll tick: start the next due step, unless one is running. Returns true if it took
 * the tick's place (no idle poll then). */
bool maint_tick(struct maint *m);

#endif
