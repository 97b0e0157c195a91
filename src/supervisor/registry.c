#include "supervisor/registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "store/store.h"

struct registry {
	struct registry_opts o;
	struct dbq_job job;
	struct store_supervisor me;
	char *pool_json;           /* what the running job writes */
	bool running, gone, delete_pushed;
	uint64_t due_at;           /* the loop's clock */
	unsigned interval_ms;      /* 0: REGISTRY_MS */
	unsigned refreshes;        /* read on the thread pool, by the job only */
	bool warned;
};

#define REGISTRY_SWEEP_EVERY 30   /* refreshes */

static void push(struct registry *r);

static int seen_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct registry *r = container_of(j, struct registry, job);

	if (r->gone)
		return store_supervisor_gone(s, r->me.id, err, errlen);
	bool sweep = r->refreshes++ % REGISTRY_SWEEP_EVERY == 0;

	/* Rows lost for a day go now and then, not at every refresh (idle load). */
	return store_supervisor_seen(s, &r->me, r->pool_json, sweep, err, errlen);
}

static void seen_done(struct dbq_job *j)
{
	struct registry *r = container_of(j, struct registry, job);

	r->running = false;
	free(r->pool_json);
	r->pool_json = NULL;
	if (r->gone && !r->delete_pushed) {
		/* A refresh was running when the stop came: the delete follows it. */
		r->delete_pushed = true;
		r->job.rc = 0;
		push(r);
		return;
	}
	if (j->rc < 0 && !r->warned) {
		log_warn("cannot write this supervisor's row in the supervisors table (load "
			 "claimd --migrate?): %s", j->err);
		r->warned = true;
	} else if (j->rc >= 0) {
		r->warned = false;
	}
}

static void push(struct registry *r)
{
	r->running = true;
	r->job.run = seen_run;
	r->job.done = seen_done;
	dbq_push(r->o.dbq, &r->job);
}

int registry_new(const struct registry_opts *o, struct registry **ret)
{
	struct registry *r = calloc(1, sizeof(*r));
	struct timespec ts;

	if (!r)
		return -ENOMEM;
	r->o = *o;
	gethostname(r->me.host, sizeof(r->me.host) - 1);
	r->me.pid = (unsigned)getpid();
	clock_gettime(CLOCK_REALTIME, &ts);
	/* host, pid and start time: unique while a host's pids are not reused within a ms */
	snprintf(r->me.id, sizeof(r->me.id), "%.80s:%u:%lld%03ld", r->me.host, r->me.pid,
		 (long long)ts.tv_sec, ts.tv_nsec / 1000000);
	snprintf(r->me.version, sizeof(r->me.version), "%s", o->version);
	snprintf(r->me.queues, sizeof(r->me.queues), "%s", o->cfg->queue_list);
	*ret = r;
	return 0;
}

const char *registry_id(const struct registry *r)
{
	return r->me.id;
}

void registry_set_http(struct registry *r, const char *address)
{
	snprintf(r->me.http, sizeof(r->me.http), "%s", address ? address : "");
}

bool registry_tick(struct registry *r)
{
	uint64_t now = uv_now(r->o.loop);
	struct status_worker *ws;
	struct status st;
	struct buf b;

	if (r->running || r->gone || now < r->due_at)
		return false;
	memset(&st, 0, sizeof(st));
	ws = r->o.snapshot(r->o.data, &st);
	buf_init(&b);
	r->o.pool_json(&st, &b);
	free(ws);
	if (buf_failed(&b)) {
		buf_free(&b);
		return false;
	}
	while (b.len && b.data[b.len - 1] == '\n')
		b.data[--b.len] = '\0';
	r->pool_json = b.data;   /* the job's now */
	r->due_at = now + (r->interval_ms ? r->interval_ms : REGISTRY_MS);
	push(r);
	return true;
}

void registry_set_interval(struct registry *r, unsigned ms)
{
	r->interval_ms = ms;
}

void registry_stop(struct registry *r)
{
	if (!r || r->gone)
		return;
	r->gone = true;
	if (!r->running) {
		r->delete_pushed = true;
		push(r);
	}
}

void registry_free(struct registry *r)
{
	if (!r)
		return;
	free(r->pool_json);
	free(r);
}
