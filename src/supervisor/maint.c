/* Maintenance, in the order of the table below. Each step is one statement, taking the place
 * of one idle poll: the database sees at most one statement per poll interval from an idle
 * supervisor, maintenance included. A step that is not finished (a whole chunk done, a sweep
 * not at its end) goes on at the next tick; what it changed is logged once, when it is. */
#include "supervisor/maint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store/store_graph.h"

#define CHUNK 5000u   /* rows (or ids, for the prune sweep) one statement goes through */

struct step;

struct maint {
	struct dbq_job job;
	struct dbq *dbq;
	const struct config *cfg;
	const char *queues[CONFIG_QUEUES_MAX];
	const struct step *running;   /* the step of job, while it runs */
	bool due[6];
	long long rows[6];            /* rows a step changed since it began */
	uint64_t prune_from;          /* where the sweep of done rows goes on (0: a new sweep) */
	uint64_t prune_next;          /* out of the prune step */
	uint64_t deps_from, deps_next; /* the check of waiting rows: where it goes on (0: anew) */
	unsigned heal_queue;          /* where the check of keys goes on: the queue, */
	char heal_after[STORE_GROUP_KEY_MAX + 1];   /* and the key after which ("" first) */
	unsigned heal_next_queue;     /* out of the keys' step */
	char heal_next[STORE_GROUP_KEY_MAX + 1];
	bool more;                    /* out: the step is not finished */
};

struct step {
	/* The statement, on a thread-pool thread: only m's job fields and the store. */
	int (*run)(struct maint *m, struct store *s, char *err, size_t errlen);
	bool needs_keep;     /* only with --keep-done > 0 (pruning: or --keep-dead > 0) */
	int level;           /* of the message when rows changed */
	const char *did;     /* after the number of rows it changed */
	const char *doing;   /* for a failure */
};

static int prune_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	/* Whole seconds, up: a window under one is one, not none (0 keeps the state). */
	int r = store_prune(s, (unsigned)((m->cfg->keep_done_ms + 999ull) / 1000),
			    (unsigned)((m->cfg->keep_dead_ms + 999ull) / 1000), m->prune_from, CHUNK,
			    &m->prune_next, err, errlen);

	m->more = r >= 0 && m->prune_next > 0;
	return r;
}

static int dedupe_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	int r = store_dedupe_expire(s, CHUNK, err, errlen);

	m->more = r == (int)CHUNK;
	return r;
}

/* A chunk of one queue's keys (store_group_heal), the next one at the next tick. */
static int groups_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	int r;

	if (m->heal_queue >= m->cfg->nqueues)
		m->heal_queue = 0, m->heal_after[0] = '\0';
	r = store_group_heal(s, m->queues[m->heal_queue], m->heal_after, m->heal_next, err,
			     errlen);
	m->heal_next_queue = m->heal_queue + (m->heal_next[0] == '\0');
	m->more = r >= 0 && m->heal_next_queue < m->cfg->nqueues;
	return r;
}

/* A chunk of the rows that wait for others (store_deps_heal), the sweep going on at the
 * next pass, not the next tick: it looks for what should never happen, and a chunk costs
 * up to 0.2 s of the server's time (5,000 child ids of 200,000 edges, measured), so a table of
 * many edges is gone through over many passes. */
static int deps_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	return store_deps_heal(s, m->deps_from, CHUNK, &m->deps_next, err, errlen);
}

static int prune_groups_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	int r = store_prune_groups(s, m->cfg->keep_done_ms / 1000, CHUNK, err, errlen);

	m->more = r == (int)CHUNK;
	return r;
}

/* The queues' history (queue_history), with --keep-history > 0. */
static int history_run(struct maint *m, struct store *s, char *err, size_t errlen)
{
	int r;

	if (m->cfg->keep_history_ms == 0)
		return 0;
	r = store_history_prune(s, (unsigned)((m->cfg->keep_history_ms + 999ull) / 1000), CHUNK,
				err, errlen);
	m->more = r == (int)CHUNK;
	return r;
}

static const struct step steps[] = {
	{ prune_run, true, LOG_INFO, "finished rows older than --keep-done (done) or --keep-dead "
	  "(dead) pruned", "pruning finished rows" },
	{ dedupe_run, false, LOG_DEBUG, "expired dedupe keys forgotten", "expiring dedupe keys" },
	{ groups_run, false, LOG_WARN, "rows of keys with fewer running than their limit (a "
	  "running row deleted by hand?) started", "checking the keys' limits" },
	{ deps_run, false, LOG_WARN, "rows that waited for parents that had finished (a missed "
	  "count-off) counted again", "checking the rows that wait for others" },
	{ prune_groups_run, true, LOG_DEBUG, "FIFO groups without rows forgotten",
	  "forgetting FIFO groups" },
	{ history_run, false, LOG_DEBUG, "rows of the queues' history older than --keep-history "
	  "deleted", "pruning the queues' history" },
};
#define NSTEPS (sizeof(steps) / sizeof(steps[0]))
_Static_assert(NSTEPS == sizeof(((struct maint *)0)->due) / sizeof(bool), "a due flag a step");

static int job_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct maint *m = container_of(j, struct maint, job);

	m->more = false;
	return m->running->run(m, s, err, errlen);
}

static void job_done(struct dbq_job *j)
{
	struct maint *m = container_of(j, struct maint, job);
	const struct step *st = m->running;
	size_t k = (size_t)(st - steps);

	m->running = NULL;
	if (j->rc > 0)
		m->rows[k] += j->rc;
	else if (j->rc < 0)
		log_warn("%s failed: %s; trying again later", st->doing, j->err);
	if (st->run == prune_run)
		m->prune_from = m->more ? m->prune_next : 0;
	if (st->run == deps_run && j->rc >= 0)
		m->deps_from = m->deps_next;
	if (st->run == groups_run) {
		m->heal_queue = m->more ? m->heal_next_queue : 0;
		memcpy(m->heal_after, m->more ? m->heal_next : "", m->more ? sizeof(m->heal_after) : 1);
	}
	if (m->more) {
		m->due[k] = true; /* the next tick goes on */
		return;
	}
	if (m->rows[k] > 0)
		log_msg(st->level, "maintenance: %lld %s", m->rows[k], st->did);
	m->rows[k] = 0;
}

int maint_new(struct dbq *dbq, const struct config *cfg, struct maint **ret)
{
	struct maint *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->dbq = dbq;
	m->cfg = cfg;
	for (unsigned i = 0; i < cfg->nqueues; i++)
		m->queues[i] = cfg->queues[i];
	m->job.run = job_run;
	m->job.done = job_done;
	*ret = m;
	return 0;
}

void maint_free(struct maint *m)
{
	free(m);
}

void maint_due(struct maint *m)
{
	for (size_t k = 0; k < NSTEPS; k++)
		m->due[k] = !steps[k].needs_keep || m->cfg->keep_done_ms > 0 ||
			    (steps[k].run == prune_run && m->cfg->keep_dead_ms > 0);
}

bool maint_tick(struct maint *m)
{
	size_t k = 0;

	if (m->running)
		return false;
	while (k < NSTEPS && !m->due[k])
		k++;
	if (k == NSTEPS)
		return false;
	m->due[k] = false;
	m->running = &steps[k];
	dbq_push(m->dbq, &m->job);
	return true;
}
