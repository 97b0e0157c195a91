/* supmaint — the supervisor's maintenance: pruning done rows, expiring dedupe keys, restarting
 * stuck FIFO groups, forgetting idle ones; one statement at a time in place of an idle poll. */
#include <stdlib.h>

#include "supervisor/dbq.h"
#include "common/log.h"
#include "supervisor/sup.h"

/* Maintenance, in this order. Each step is one statement, taking the place of one idle poll:
 * the database sees at most one statement per poll interval from an idle supervisor,
 * maintenance included. A step that is not finished (a whole chunk done, a sweep not at its
 * end) goes on at the next tick; what it changed is logged once, when it is. */
static const struct maint_step {
	enum dbq_kind kind;
	bool needs_keep;     /* only with --keep-done > 0 */
	int level;           /* of the message when rows changed */
	const char *did;     /* after the number of rows it changed */
	const char *doing;   /* for a failure */
} maint_steps[SUP_MAINT_STEPS] = {
	{ DBQ_PRUNE, true, LOG_INFO, "done rows older than --keep-done pruned",
	  "pruning done rows" },
	{ DBQ_DEDUPE, false, LOG_DEBUG, "expired dedupe keys forgotten",
	  "expiring dedupe keys" },
	{ DBQ_GROUPS, false, LOG_WARN, "FIFO groups with waiting rows but none running (a "
	  "running row deleted by hand?) started again", "checking FIFO groups" },
	{ DBQ_PRUNE_GROUPS, true, LOG_DEBUG, "FIFO groups without rows forgotten",
	  "forgetting FIFO groups" },
};

static void on_maintained(struct dbq_job *j)
{
	struct sup *s = j->data;
	unsigned k = 0;

	while (k + 1 < SUP_MAINT_STEPS && maint_steps[k].kind != j->kind)
		k++;
	s->maint_inflight = false;
	if (j->rc > 0)
		s->maint_rows[k] += j->rc;
	else if (j->rc < 0)
		log_warn("%s failed: %s; trying again later", maint_steps[k].doing, j->err);
	if (j->kind == DBQ_PRUNE)
		s->prune_from = j->more ? j->from_next : 0;
	if (j->more) {
		s->maint_due[k] = true; /* the next tick goes on */
	} else {
		if (s->maint_rows[k] > 0)
			log_msg(maint_steps[k].level, "maintenance: %lld %s", s->maint_rows[k],
				maint_steps[k].did);
		s->maint_rows[k] = 0;
	}
	free(j);
}

void sup_maint_due(struct sup *s)
{
	for (unsigned k = 0; k < SUP_MAINT_STEPS; k++)
		s->maint_due[k] = !maint_steps[k].needs_keep || s->cfg->keep_done_ms > 0;
}

bool sup_maintain_now(struct sup *s)
{
	struct dbq_job *j;
	unsigned k = 0;

	if (s->maint_inflight)
		return false;
	while (k < SUP_MAINT_STEPS && !s->maint_due[k])
		k++;
	if (k == SUP_MAINT_STEPS || !(j = sup_new_job(s, maint_steps[k].kind, on_maintained)))
		return false;
	s->maint_due[k] = false;
	j->keep_s = s->cfg->keep_done_ms / 1000;
	j->from = s->prune_from;
	j->queues = s->queue_ptrs;
	j->n = s->cfg->nqueues;
	s->maint_inflight = true;
	dbq_push(s->dbq, j);
	return true;
}
