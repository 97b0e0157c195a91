#include "supervisor/schedules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cron.h"
#include "common/log.h"
#include "common/tzfile.h"
#include "store/store.h"

#define ZONES_KEPT 16

struct zone {
	char name[TZFILE_NAME_MAX + 1];
	struct tzfile *z;
};

struct schedules {
	struct dbq_job job;
	uv_loop_t *loop;
	struct dbq *dbq;
	bool running;
	uint64_t due_at;               /* the loop's clock: the next job */
	struct store_fire out;         /* the job's */
	struct zone zones[ZONES_KEPT]; /* the job's: zones read, the oldest replaced first */
	unsigned next_zone;
	char last_err[STORE_ERR_MAX];  /* the last failure logged, not repeated */
};

/* On the pool thread: the zone named name, read once. */
static int zone_of(struct schedules *s, const char *name, struct tzfile **ret, char *err,
		   size_t errlen)
{
	struct zone *slot;
	int r;

	for (unsigned i = 0; i < ZONES_KEPT; i++)
		if (s->zones[i].z && !strcmp(s->zones[i].name, name)) {
			*ret = s->zones[i].z;
			return 0;
		}
	slot = &s->zones[s->next_zone++ % ZONES_KEPT];
	tzfile_free(slot->z);
	slot->z = NULL;
	if ((r = tzfile_load(name, &slot->z, err, errlen)) < 0)
		return r == -ENOMEM ? r : -EINVAL;
	snprintf(slot->name, sizeof(slot->name), "%s", name);
	*ret = slot->z;
	return 0;
}

static int tick(void *data, const char *expr, const char *zone, int64_t after, int64_t *ret,
		char *err, size_t errlen)
{
	struct schedules *s = data;
	struct tzfile *z;
	struct cron c;
	int r;

	if ((r = cron_parse(expr, &c, err, errlen)) < 0 ||
	    (r = zone_of(s, zone, &z, err, errlen)) < 0)
		return r;
	return cron_next(&c, z, after, ret);
}

static int job_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct schedules *s = container_of(j, struct schedules, job);

	return store_schedule_fire(st, tick, s, SCHEDULES_BATCH, &s->out, err, errlen);
}

static void job_done(struct dbq_job *j)
{
	struct schedules *s = container_of(j, struct schedules, job);
	uint64_t now = uv_now(s->loop), wait = UINT64_MAX / 2;

	s->running = false;
	if (j->rc < 0) {
		if (strcmp(s->last_err, j->err) != 0)
			log_warn("schedules: %s; trying again in %u s", j->err, SCHEDULES_RETRY_MS / 1000);
		snprintf(s->last_err, sizeof(s->last_err), "%s", j->err);
		s->due_at = now + SCHEDULES_RETRY_MS;
		return;
	}
	s->last_err[0] = '\0';
	if (s->out.rows)
		log_info("schedules: %u row%s added for %u schedule%s", s->out.rows,
			 s->out.rows == 1 ? "" : "s", s->out.schedules, s->out.schedules == 1 ? "" : "s");
	if (s->out.refused)
		log_warn("schedules: %u schedule%s cannot run (claimctl schedules shows why)",
			 s->out.refused, s->out.refused == 1 ? "" : "s");
	if (s->out.more)
		wait = 0;
	else if (s->out.due_in_ms >= 0)
		wait = (uint64_t)s->out.due_in_ms;
	s->due_at = now + wait;
}

int schedules_new(uv_loop_t *loop, struct dbq *dbq, struct schedules **ret)
{
	struct schedules *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->dbq = dbq;
	s->job.run = job_run;
	s->job.done = job_done;
	*ret = s;
	return 0;
}

void schedules_free(struct schedules *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < ZONES_KEPT; i++)
		tzfile_free(s->zones[i].z);
	free(s);
}

bool schedules_tick(struct schedules *s)
{
	if (s->running || uv_now(s->loop) < s->due_at)
		return false;
	s->running = true;
	dbq_push(s->dbq, &s->job);
	return true;
}

void schedules_kick(struct schedules *s)
{
	s->due_at = 0;
}

int schedules_check(const char *cron, const char *zone, char *err, size_t errlen)
{
	struct tzfile *z = NULL;
	struct cron c;
	int64_t t;
	int r;

	if ((r = cron_parse(cron, &c, err, errlen)) < 0)
		return r;
	if ((r = tzfile_load(zone ? zone : "UTC", &z, err, errlen)) < 0)
		return r == -ENOMEM ? r : -EINVAL;
	r = cron_next(&c, z, 0, &t);
	tzfile_free(z);
	if (r == -ENOENT) {
		snprintf(err, errlen, "'%s' never fires (a day that no month has?)", cron);
		return -EINVAL;
	}
	return 0;
}
