/* The commands. Each request in flight is a struct call; one that needs the database is a
 * job on the supervisor's database queue (the call embeds its struct dbq_job), run by the
 * verb's db function on a thread-pool thread, then finished on the loop by its after
 * function. Status, queues and jobs answer from readings (reading.h); adds are written in
 * batches (cmd_add.c). */
#include "console/cmd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "console/answers.h"
#include "console/entities.h"
#include "console/reading.h"
#include "console/render.h"

_Static_assert(CTL_QUEUE_MAX <= STORE_QUEUE_MAX, "a queue name the protocol takes fits the store");
_Static_assert(CTL_KEY_MAX <= STORE_DEDUPE_KEY_MAX && CTL_KEY_MAX <= STORE_GROUP_KEY_MAX,
	       "a key the protocol takes fits the store");
_Static_assert(CTL_PAYLOAD_MAX <= STORE_PAYLOAD_MAX, "a payload the protocol takes fits");

struct cmd_def {
	/* Answers on the loop without a database job (status); NULL for the others. */
	void (*now)(struct call *call);
	/* The database job, on a thread-pool thread: only call and the store are touched. */
	int (*db)(struct call *call, struct store *s, char *err, size_t errlen);
	/* On the loop after db succeeded: what follows (wake a worker, log). May be NULL. */
	void (*after)(struct call *call);
	/* The ok reply's body for claimctl. */
	void (*text)(const struct ctl_request *req, const struct cmd_result *res, struct buf *out);
};

/* ---- status, queues, jobs: from the readings ---- */

static void status_read(void *data, int rc, const char *err, const void *value, size_t n)
{
	struct call *call = data;
	struct cmds *c = call->cmds;
	struct status_worker *ws;
	struct status st;

	if (rc < 0 && rc != -ECANCELED)
		log_warn("cannot read queue counts: %s", err);
	memset(&st, 0, sizeof(st));
	ws = c->host.snapshot(c->host.data, &st);
	st.queues = rc < 0 ? NULL : value;
	st.nqueues = rc < 0 ? 0 : n;
	call->res.status = &st;
	cmd_finish(call);
	free(ws);
}

static void run_db(struct call *call);

/* With all: every supervisor's row (the supervisors verb's database job). */
static void status_now(struct call *call)
{
	if (call->req->all)
		run_db(call);
	else
		reading_get(call->cmds->queues, NULL, status_read, call);
}

static void queues_read(void *data, int rc, const char *err, const void *value, size_t n)
{
	struct call *call = data;

	call->res.rc = rc;
	snprintf(call->res.err, sizeof(call->res.err), "%s", err);
	call->res.queues = value;
	call->res.nqueues = n;
	call->res.queues_age_s = (double)reading_age_ms(call->cmds->queues) / 1000.0;
	cmd_finish(call);
}

static void queues_now(struct call *call)
{
	reading_get(call->cmds->queues, NULL, queues_read, call);
}

static int read_queues(struct store *s, const void *key, void **ret, size_t *ret_n, char *err,
		       size_t errlen)
{
	struct store_queue *qs;
	int r = store_queues(s, &qs, ret_n, err, errlen);

	if (r >= 0)
		*ret = qs;
	return r;
}

static void free_queues(void *value, size_t n)
{
	free(value);
}

static const struct reading_ops queues_ops = { read_queues, free_queues, 0 };

/* Which rows a jobs request lists (compared as bytes: zero it first); a text that is not
 * given is "" and its has_ bit clear. */
struct jobs_key {
	unsigned states;
	char queue[STORE_QUEUE_MAX + 1], group[CTL_KEY_MAX + 1], dedupe[CTL_KEY_MAX + 1];
	char error[CTL_ERROR_MAX + 1];
	bool has_queue, has_group, has_dedupe, has_error;
	uint64_t id, before;
	unsigned limit;
};

/* A page of rows and where the next one starts. */
struct jobs_page {
	struct store_job *jobs;
	uint64_t next;
};

static int read_jobs(struct store *s, const void *key, void **ret, size_t *ret_n, char *err,
		     size_t errlen)
{
	const struct jobs_key *k = key;
	struct store_filter f = { .states = k->states, .queue = k->has_queue ? k->queue : NULL,
				  .group = k->has_group ? k->group : NULL,
				  .dedupe = k->has_dedupe ? k->dedupe : NULL,
				  .error = k->has_error ? k->error : NULL, .id = k->id };
	struct jobs_page *p = calloc(1, sizeof(*p));
	int r;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = store_jobs_find(s, &f, k->before, k->limit, &p->jobs, ret_n, &p->next, err, errlen);
	if (r < 0)
		free(p);
	else
		*ret = p;
	return r;
}

static void free_jobs(void *value, size_t n)
{
	struct jobs_page *p = value;

	if (p)
		store_jobs_free(p->jobs, n);
	free(p);
}

static const struct reading_ops jobs_ops = { read_jobs, free_jobs, sizeof(struct jobs_key) };

static void jobs_read(void *data, int rc, const char *err, const void *value, size_t n)
{
	struct call *call = data;
	const struct jobs_page *p = value;

	call->res.rc = rc;
	snprintf(call->res.err, sizeof(call->res.err), "%s", err);
	call->res.jobs = p ? p->jobs : NULL;
	call->res.njobs = p ? n : 0;
	call->res.next = p ? p->next : 0;
	cmd_finish(call);
}

/* A text filter into the key: text[] and its has_ bit. */
#define KEY_TEXT(k, field, value) \
	do { \
		if (value) { \
			snprintf((k).field, sizeof((k).field), "%s", (value)); \
			(k).has_##field = true; \
		} \
	} while (0)

static void jobs_now(struct call *call)
{
	const struct ctl_request *q = call->req;
	struct store_filter f;
	struct jobs_key k;

	memset(&k, 0, sizeof(k));
	if (cmd_filter_of(q, &f) < 0) {
		call->res.rc = -EINVAL;
		snprintf(call->res.err, sizeof(call->res.err), "jobs: bad state");
		cmd_finish(call);
		return;
	}
	k.states = f.states;
	KEY_TEXT(k, queue, f.queue);
	KEY_TEXT(k, group, f.group);
	KEY_TEXT(k, dedupe, f.dedupe);
	KEY_TEXT(k, error, f.error);
	k.id = f.id;
	k.before = q->before;
	k.limit = cmd_page(q);
	reading_get(call->cmds->jobs, &k, jobs_read, call);
}

static void status_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out)
{
	if (req->all && req->json) {
		entity_dump(json_pack("{s:o?}", "supervisors",
				      entity_json_array(&supervisor_entity, res->supervisors,
							res->nsupervisors)), out);
	} else if (req->all) {
		render_pools_text(res->supervisors, res->nsupervisors, out);
	} else if (req->json) {
		status_render_json(res->status, out);
	} else {
		status_render_table(res->status, out);
	}
}

/* ---- retry ---- */

/* No such row: -ENOENT, with the message. */
static int no_row(const struct call *call, char *err, size_t errlen)
{
	snprintf(err, errlen, "no row %llu", (unsigned long long)call->req->id);
	return -ENOENT;
}

/* One row put back (with the rows its death cancelled), or why not: no such row (-ENOENT),
 * not dead (-EBUSY), waiting for a dead row (-ENOLINK, err names it). */
static int retry_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	int r = store_retry_dead(s, q->id, err, errlen);

	call->res.rows = r;
	if (r != 0)
		return r;
	r = store_job_get(s, q->id, &call->row, err, errlen);
	if (r == 0)
		return no_row(call, err, errlen);
	if (r > 0) {
		snprintf(err, errlen, "row %llu is %s: only a dead row can be retried",
			 (unsigned long long)q->id, row_state_name(call->row.state));
		r = -EBUSY;
	}
	return r;
}

/* A queue's dead rows: as a bulk retry, 500 rows a transaction, unconfirmed. */
static void retry_now(struct call *call)
{
	if (ctl_has(call->req, CTL_F_DEAD))
		cmd_bulk_retry_queue(call);
	else
		run_db(call);
}

static void retry_after(struct call *call)
{
	cmd_changed(call->cmds);
	if (call->res.rows > 0)
		call->cmds->host.wake(call->cmds->host.data);
}

static void rows_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	if (!req->json)
		buf_printf(out, "%lld\n", res->rows);
	else if (req->verb == CTL_RETRY)
		answer_json(&retried_entity, &(struct answer_retried){
			.retried = res->rows, .transactions = res->transactions,
			.whole_queue = ctl_has(req, CTL_F_DEAD) }, out);
	else
		answer_json(&deleted_entity, &(struct answer_deleted){ .id = req->id, .deleted = true },
			    out);
}

/* ---- pause, resume, limit ---- */

static int pause_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	if (ctl_has(call->req, CTL_F_SCHEDULE))
		return cmd_schedule_pause_db(call, s, err, errlen);
	return store_set_paused(s, call->req->queue, call->req->verb == CTL_PAUSE, err, errlen);
}

static void pause_after(struct call *call)
{
	bool pause = call->req->verb == CTL_PAUSE;

	if (ctl_has(call->req, CTL_F_SCHEDULE)) {
		cmd_schedule_pause_after(call);
		return;
	}
	cmd_changed(call->cmds);
	log_info("queue '%s': %s", call->req->queue, pause ? "paused" : "resumed");
	if (!pause)
		call->cmds->host.wake(call->cmds->host.data);
}

static void pause_text(const struct ctl_request *req, const struct cmd_result *res,
		       struct buf *out)
{
	if (ctl_has(req, CTL_F_SCHEDULE)) {
		cmd_schedule_pause_text(req, out);
		return;
	}
	if (!req->json) {
		buf_printf(out, "queue %s %s\n", req->queue,
			   req->verb == CTL_PAUSE ? "paused" : "resumed");
		return;
	}
	answer_json(&paused_entity, &(struct answer_paused){ .name = req->queue,
						  .paused = req->verb == CTL_PAUSE }, out);
}

static int backoff_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	struct store_backoff b = { q->base_ms, q->max_ms, ctl_has(q, CTL_F_JITTER) ?
				   (int)q->jitter_pct : -1 };
	unsigned set = q->reset ? 7u : (ctl_has(q, CTL_F_BASE) ? STORE_BACKOFF_BASE : 0u) |
		       (ctl_has(q, CTL_F_MAX) ? STORE_BACKOFF_MAX : 0u) |
		       (ctl_has(q, CTL_F_JITTER) ? STORE_BACKOFF_JITTER : 0u);

	return store_set_backoff(s, q->queue, &b, set, &call->res.backoff, err, errlen);
}

static void backoff_after(struct call *call)
{
	cmd_changed(call->cmds);
	log_info("queue '%s': retry back-off %s", call->req->queue,
		 call->req->reset ? "reset to claimd's" : "set");
}

static void backoff_text(const struct ctl_request *req, const struct cmd_result *res,
			 struct buf *out)
{
	if (req->json)
		render_backoff_json(req->queue, &res->backoff, out);
	else
		render_backoff_text(req->queue, &res->backoff, out);
}

/* ---- job, cancel, queues ---- */

static int job_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	int r = store_job_get(s, call->req->id, &call->row, err, errlen);

	if (r > 0)
		r = store_job_extra_get(s, call->req->id, &call->extra, err, errlen);
	return r == 0 ? no_row(call, err, errlen) : r;
}

static void job_after(struct call *call)
{
	call->res.job = &call->row;
	call->res.extra = &call->extra;
}

static void job_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	if (req->json)
		cmd_job_page_json(res->job, res->extra, out);
	else
		cmd_job_page_text(res->job, res->extra, out);
}

static int cancel_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	char host[64] = "", reason[160];
	int r;

	gethostname(host, sizeof(host) - 1);
	snprintf(reason, sizeof(reason), "cancelled (claimctl cancel or DELETE /v1/jobs, via %s)",
		 host);
	r = store_cancel(s, call->req->id, reason, call->res.state, call->res.summary, err,
			 errlen);
	if (r == -EBUSY)
		snprintf(err, errlen, "row %llu is %s: only a ready, dead or claimed row can be "
			 "cancelled", (unsigned long long)call->req->id, call->res.state);
	if (r == 0)
		return no_row(call, err, errlen);
	call->res.cancelling = r == 2;
	call->res.rows = r == 1;
	return r;
}

static void cancel_after(struct call *call)
{
	cmd_changed(call->cmds);
	if (call->res.rows)
		log_info("row %llu cancelled", (unsigned long long)call->req->id);
	else if (call->res.cancelling)
		log_info("row %llu cancelling: it runs on %s", (unsigned long long)call->req->id,
			 call->res.summary);
}

/* A deleted row as retry's count; a running one: it is cancelling, and where it runs. */
static void cancel_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out)
{
	if (!res->cancelling) {
		rows_text(req, res, out);
	} else if (!req->json) {
		buf_printf(out, "cancelling: row %llu runs on %s; it stops within a second\n",
			   (unsigned long long)req->id, res->summary[0] ? res->summary : "?");
	} else {
		answer_json(&cancelling_entity, &(struct answer_cancelling){
			.id = req->id, .state = ROW_CLAIMED, .cancelling = true,
			.claimed_by = res->summary }, out);
	}
}

static void queues_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out)
{
	if (req->json)
		render_queues_json(res->queues, res->nqueues, out);
	else
		render_queues_text(res->queues, res->nqueues, out);
}

static int supervisors_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return store_supervisors(s, &call->svs, &call->res.nsupervisors, err, errlen);
}

static void supervisors_after(struct call *call)
{
	call->res.supervisors = call->svs;
}

static void supervisors_text(const struct ctl_request *req, const struct cmd_result *res,
			     struct buf *out)
{
	if (req->json)
		render_supervisors_json(res->supervisors, res->nsupervisors, out);
	else
		render_supervisors_text(res->supervisors, res->nsupervisors, out);
}

/* ---- reload, workers ---- */

static void reload_now(struct call *call)
{
	struct cmds *c = call->cmds;

	call->res.rc = c->host.reload(c->host.data, call->res.summary, sizeof(call->res.summary));
	if (call->res.rc < 0)
		snprintf(call->res.err, sizeof(call->res.err), "%.500s", call->res.summary);
	cmd_finish(call);
}

static void workers_now(struct call *call)
{
	struct cmds *c = call->cmds;

	call->res.rc = c->host.resize(c->host.data, call->req->count);
	if (call->res.rc < 0)
		snprintf(call->res.err, sizeof(call->res.err), "claimd is stopping");
	snprintf(call->res.summary, sizeof(call->res.summary), "workers %u", call->req->count);
	cmd_finish(call);
}

static void summary_text(const struct ctl_request *req, const struct cmd_result *res,
			 struct buf *out)
{
	if (!req->json) {
		buf_printf(out, "%s\n", res->summary);
		return;
	}
	if (req->verb == CTL_WORKERS)
		entity_dump(json_pack("{s:I, s:o}", "workers", (json_int_t)req->count, "summary",
				      entity_string(res->summary)), out);
	else
		entity_dump(json_pack("{s:b, s:o}", "reloaded", 1, "summary",
				      entity_string(res->summary)), out);
}

static void jobs_text(const struct ctl_request *req, const struct cmd_result *res,
		      struct buf *out)
{
	if (req->json) {
		render_jobs_json(res->jobs, res->njobs, out);
		return;
	}
	render_jobs_text(res->jobs, res->njobs, out);
	if (res->next)
		buf_printf(out, "next: --before %llu\n", (unsigned long long)res->next);
}

/* ---- the table ---- */

static const struct cmd_def defs[CTL_VERB_COUNT] = {
	[CTL_STATUS] = { .now = status_now, .db = supervisors_db, .after = supervisors_after,
			 .text = status_text },
	[CTL_ADD] = { .now = cmd_add_now, .text = cmd_add_text },
	[CTL_RETRY] = { .now = retry_now, .db = retry_db, .after = retry_after, .text = rows_text },
	[CTL_PAUSE] = { .db = pause_db, .after = pause_after, .text = pause_text },
	[CTL_RESUME] = { .db = pause_db, .after = pause_after, .text = pause_text },
	[CTL_LIMIT] = { .db = cmd_limit_db, .after = cmd_limit_after, .text = cmd_limits_text },
	[CTL_LIMITS] = { .db = cmd_limits_db, .after = cmd_limits_after, .text = cmd_limits_text },
	[CTL_JOB] = { .db = job_db, .after = job_after, .text = job_text },
	[CTL_CANCEL] = { .db = cancel_db, .after = cancel_after, .text = cancel_text },
	[CTL_QUEUES] = { .now = queues_now, .text = queues_text },
	[CTL_SUPERVISORS] = { .db = supervisors_db, .after = supervisors_after,
			      .text = supervisors_text },
	[CTL_JOBS] = { .now = jobs_now, .text = jobs_text },
	[CTL_RELOAD] = { .now = reload_now, .text = summary_text },
	[CTL_WORKERS] = { .now = workers_now, .text = summary_text },
	[CTL_SCHEDULE] = { .db = cmd_schedule_db, .after = cmd_schedule_after,
			   .text = cmd_schedule_text },
	[CTL_SCHEDULES] = { .db = cmd_schedules_db, .after = cmd_schedules_after,
			    .text = cmd_schedules_text },
	[CTL_UNSCHEDULE] = { .db = cmd_unschedule_db, .after = cmd_unschedule_after,
			     .text = cmd_unschedule_text },
	[CTL_BATCH] = { .db = cmd_batch_db, .after = cmd_batch_after, .text = cmd_batch_text },
	[CTL_BATCHES] = { .db = cmd_batch_db, .after = cmd_batch_after, .text = cmd_batch_text },
	[CTL_BACKOFF] = { .db = backoff_db, .after = backoff_after, .text = backoff_text },
	[CTL_STATS] = { .now = cmd_stats_now, .text = cmd_stats_text },
	[CTL_BULK] = { .now = cmd_bulk_now, .text = cmd_bulk_text },
};

static int call_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct call *call = container_of(j, struct call, job);

	return defs[call->req->verb].db(call, s, err, errlen);
}

static void call_done(struct dbq_job *j)
{
	struct call *call = container_of(j, struct call, job);
	const struct cmd_def *d = &defs[call->req->verb];

	call->res.rc = j->rc;
	if (j->rc < 0)
		snprintf(call->res.err, sizeof(call->res.err), "%s", j->err);
	else if (d->after)
		d->after(call);
	cmd_finish(call);
}

void cmd_run(struct cmds *c, const struct ctl_request *req, cmd_done_cb done, void *data)
{
	struct call *call = calloc(1, sizeof(*call));
	const struct cmd_def *d = (unsigned)req->verb < CTL_VERB_COUNT ? &defs[req->verb] : NULL;

	if (!call || !d) {
		struct cmd_result res = { .rc = call ? -EINVAL : -ENOMEM };
		snprintf(res.err, sizeof(res.err), "%s", call ? "unknown request" : "out of memory");
		free(call);
		done(data, req, &res);
		return;
	}
	call->cmds = c;
	call->req = req;
	call->done = done;
	call->data = data;
	if (d->now)
		d->now(call);
	else
		run_db(call);
}

/* The verb's database job on the supervisor's queue. */
static void run_db(struct call *call)
{
	call->job.run = call_run;
	call->job.done = call_done;
	dbq_push(call->cmds->host.dbq, &call->job);
}

void cmd_render(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	defs[req->verb].text(req, res, out);
}

int cmds_new(const struct sup_host *host, struct cmds **ret)
{
	struct cmds *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->host = *host;
	if (reading_new(&queues_ops, host->dbq, host->loop, &c->queues) < 0 ||
	    reading_new(&jobs_ops, host->dbq, host->loop, &c->jobs) < 0 ||
	    reading_new(&cmd_history_ops, host->dbq, host->loop, &c->history) < 0) {
		cmds_free(c);
		return -ENOMEM;
	}
	if (cmd_adds_init(c) < 0) {
		cmds_free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void cmds_flush(struct cmds *c)
{
	if (!c)
		return;
	reading_flush(c->queues);
	reading_flush(c->jobs);
	reading_flush(c->history);
	cmd_adds_flush(c);
}

void cmds_free(struct cmds *c)
{
	if (!c)
		return;
	cmds_flush(c);
	reading_free(c->queues);
	reading_free(c->jobs);
	reading_free(c->history);
	cmd_adds_free(c);
	free(c);
}
