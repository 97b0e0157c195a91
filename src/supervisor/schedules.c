#include "supervisor/schedules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/backoff.h"
#include "common/cron.h"
#include "common/log.h"
#include "common/tzfile.h"
#include "store/store.h"

#define ZONES_KEPT 16

/* A zone read, or one whose file did not read for now (fail) and is not read again before
 * retry_at. */
struct zone {
	char name[TZFILE_NAME_MAX + 1];
	struct tzfile *z;
	int fail;
	uint64_t retry_at;             /* ms, uv_hrtime's clock */
	struct backoff backoff;
	char why[256];
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
	uint64_t retry_in_ms;          /* the job's: until a zone that failed is read again */
	char last_err[STORE_ERR_MAX];  /* the last failure logged, not repeated */
	char last_wait[sizeof(((struct store_fire *)0)->why)];   /* likewise, a zone's */
};

static uint64_t now_ms(void)
{
	return uv_hrtime() / 1000000u;
}

/* Reads slot's zone (again). A zone refused is not kept. */
static int zone_load(struct zone *slot, char *err, size_t errlen)
{
	int r = tzfile_load(slot->name, &slot->z, err, errlen);

	if (r == -EINVAL || r == -ENOENT) {
		slot->name[0] = '\0';
		return -EINVAL;   /* -ENOENT would say "never fires again" */
	}
	if (r < 0) {
		slot->fail = r;
		slot->retry_at = now_ms() + backoff_next(&slot->backoff);
		snprintf(slot->why, sizeof(slot->why), "%s", err);
		return r;
	}
	slot->fail = 0;
	backoff_reset(&slot->backoff);
	return 0;
}

/* On the pool thread: the zone named name, read once. A zone whose file did not read
 * (too many open files, an I/O error) is not read again before its retry time, which
 * doubles with each failure; until then, its error again. */
static int zone_of(struct schedules *s, const char *name, struct tzfile **ret, char *err,
		   size_t errlen)
{
	struct zone *slot = NULL;
	int r;

	for (unsigned i = 0; i < ZONES_KEPT && !slot; i++)
		if ((s->zones[i].z || s->zones[i].fail) && !strcmp(s->zones[i].name, name))
			slot = &s->zones[i];
	if (slot && slot->z) {
		*ret = slot->z;
		return 0;
	}
	if (slot && now_ms() < slot->retry_at) {
		snprintf(err, errlen, "%s", slot->why);
		return slot->fail;
	}
	if (!slot) {
		slot = &s->zones[s->next_zone++ % ZONES_KEPT];
		tzfile_free(slot->z);
		*slot = (struct zone){ .backoff = BACKOFF_INIT(SCHEDULES_ZONE_RETRY_MIN_MS,
							       SCHEDULES_ZONE_RETRY_MAX_MS) };
		snprintf(slot->name, sizeof(slot->name), "%s", name);
	}
	if ((r = zone_load(slot, err, errlen)) < 0)
		return r;
	*ret = slot->z;
	return 0;
}

/* On the pool thread: until the first zone that failed may be read again (UINT64_MAX: none). */
static uint64_t zone_retry_in(const struct schedules *s)
{
	uint64_t now = now_ms(), in = UINT64_MAX;

	for (unsigned i = 0; i < ZONES_KEPT; i++)
		if (s->zones[i].fail && !s->zones[i].z) {
			uint64_t at = s->zones[i].retry_at;
			uint64_t d = at > now ? at - now : 0;
			in = d < in ? d : in;
		}
	return in;
}

static int tick(void *data, const char *expr, const char *zone, int64_t after, int64_t *ret,
		char *err, size_t errlen)
{
	struct schedules *s = data;
	struct tzfile *z = NULL;
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
	int r = store_schedule_fire(st, tick, s, SCHEDULES_BATCH, &s->out, err, errlen);

	s->retry_in_ms = zone_retry_in(s);
	return r;
}

/* Schedules that wait for a zone: logged when why changes, and when none waits again. */
static void log_waiting(struct schedules *s, uint64_t wait)
{
	const struct store_fire *o = &s->out;

	if (!o->waiting) {
		if (s->last_wait[0])
			log_info("schedules: no schedule waits for its time zone any more");
		s->last_wait[0] = '\0';
		return;
	}
	if (strcmp(s->last_wait, o->why) != 0)
		log_warn("schedules: %u schedule%s cannot run now: %s; trying again in %.1f s "
			 "(then less and less often, up to every %u s)", o->waiting,
			 o->waiting == 1 ? "" : "s", o->why, (double)wait / 1000,
			 SCHEDULES_ZONE_RETRY_MAX_MS / 1000);
	snprintf(s->last_wait, sizeof(s->last_wait), "%s", o->why);
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
	if (s->out.waiting && s->retry_in_ms < wait)
		wait = s->retry_in_ms;
	log_waiting(s, wait);
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
