/* The commands. Each request in flight is a struct call; one that needs the database is a
 * job on the supervisor's database queue (the call embeds its struct dbq_job), run by the
 * verb's db function on a thread-pool thread, then finished on the loop by its after
 * function. Status reads the queue counts at most once a second and answers every request
 * that came meanwhile from the same reading. */
#include "supervisor/cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "supervisor/render.h"

#define COUNTS_FRESH_MS 1000

_Static_assert(CTL_QUEUE_MAX <= STORE_QUEUE_MAX, "a queue name the protocol takes fits the store");
_Static_assert(CTL_KEY_MAX <= STORE_DEDUPE_KEY_MAX && CTL_KEY_MAX <= STORE_GROUP_KEY_MAX,
	       "a key the protocol takes fits the store");
_Static_assert(CTL_PAYLOAD_MAX <= STORE_PAYLOAD_MAX, "a payload the protocol takes fits");

struct cmds {
	struct cmd_host host;
	/* status */
	struct store_count *counts;
	size_t ncounts;
	uint64_t counts_at;        /* 0: never read */
	struct call **waiting;     /* status requests waiting for the counts being read */
	size_t nwaiting, capwaiting;
	struct dbq_job counts_job;
	bool counting;
	struct store_count *read;  /* what the counts job read, for the loop to take */
	size_t nread;
	/* add: requests waiting, and the ones the adds job is writing */
	struct call **adds, **adding;
	size_t nadds, capadds, nadding;
	struct dbq_job adds_job;
	struct store_add_row *rows;
};

#define ADDS_MAX 256  /* rows per transaction */

/* One request in flight. */
struct call {
	struct dbq_job job;        /* used when the verb needs the database */
	struct cmds *cmds;
	const struct ctl_request *req;
	cmd_done_cb done;
	void *data;
	struct cmd_result res;
	struct store_add_opts add;
	struct store_job row;          /* job */
	struct store_queue *queues;    /* queues */
	struct store_supervisor *svs;  /* supervisors */
	struct store_job *jobs;        /* jobs */
};

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

static void finish(struct call *call)
{
	call->done(call->data, call->req, &call->res);
	store_job_clear(&call->row);
	free(call->queues);
	store_supervisors_free(call->svs, call->res.nsupervisors);
	store_jobs_free(call->jobs, call->res.njobs);
	free(call);
}

/* ---- status ---- */

static void answer_status(struct call *call)
{
	struct cmds *c = call->cmds;
	struct status_worker *ws;
	struct status st;

	memset(&st, 0, sizeof(st));
	ws = c->host.snapshot(c->host.data, &st);
	st.counts = c->counts;
	st.ncounts = c->ncounts;
	call->res.status = &st;
	finish(call);
	free(ws);
}

static void answer_waiting(struct cmds *c)
{
	size_t n = c->nwaiting;

	c->nwaiting = 0;
	for (size_t i = 0; i < n; i++)
		answer_status(c->waiting[i]);
}

static int counts_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct cmds *c = container_of(j, struct cmds, counts_job);

	return store_counts(s, &c->read, &c->nread, err, errlen);
}

static void counts_done(struct dbq_job *j)
{
	struct cmds *c = container_of(j, struct cmds, counts_job);

	c->counting = false;
	c->counts_at = c->host.now_ms(c->host.data);
	free(c->counts);
	c->counts = j->rc >= 0 ? c->read : NULL;
	c->ncounts = j->rc >= 0 ? c->nread : 0;
	c->read = NULL;
	c->nread = 0;
	if (j->rc < 0)
		log_warn("cannot read queue counts: %s", j->err);
	answer_waiting(c);
}

static void status_now(struct call *call)
{
	struct cmds *c = call->cmds;
	uint64_t now = c->host.now_ms(c->host.data);

	if (c->counts_at && now - c->counts_at < COUNTS_FRESH_MS) {
		answer_status(call);
		return;
	}
	if (c->nwaiting == c->capwaiting) {
		size_t cap = c->capwaiting ? c->capwaiting * 2 : 8;
		void *p = realloc(c->waiting, cap * sizeof(*c->waiting));
		if (!p) {
			answer_status(call);  /* with the counts there are */
			return;
		}
		c->waiting = p;
		c->capwaiting = cap;
	}
	c->waiting[c->nwaiting++] = call;
	if (!c->counting) {
		c->counting = true;
		c->counts_job.run = counts_run;
		c->counts_job.done = counts_done;
		dbq_push(c->host.dbq, &c->counts_job);
	}
}

static void status_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out)
{
	if (req->json)
		status_render_json(res->status, out);
	else
		status_render_table(res->status, out);
}

/* ---- add ---- */

/* The row's options from the request: durations the table keeps in seconds are rounded up. */
static void add_options(const struct ctl_request *q, struct store_add_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->run_at = ctl_has(q, CTL_F_RUN_AT) ? q->run_at : NULL;
	o->delay_ms = q->delay_ms;
	o->period_s = ctl_has(q, CTL_F_PERIOD) ? (long)(q->period_ms / 1000u) : -1;
	o->max_attempts = q->max_attempts;
	o->timeout_s = (unsigned)(((uint64_t)q->timeout_ms + 999) / 1000);
	o->dedupe_key = ctl_has(q, CTL_F_DEDUPE) ? q->dedupe : NULL;
	o->priority = q->priority;
	o->group_key = ctl_has(q, CTL_F_GROUP) ? q->group : NULL;
	o->content_type = ctl_has(q, CTL_F_CONTENT_TYPE) ? q->content_type : NULL;
}

static void add_after(struct call *call)
{
	if (!call->res.duplicate)
		call->cmds->host.wake(call->cmds->host.data);
}

/* Adds are written together: the requests that came while the database was busy go in one
 * transaction (store_add_many), so that many clients get one commit (one fsync) between
 * them. When that transaction fails, each row is written on its own, and each request
 * gets its own answer. */
static void adds_start(struct cmds *c);

static int adds_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct cmds *c = container_of(j, struct cmds, adds_job);
	int r;

	for (size_t i = 0; i < c->nadding; i++) {
		const struct ctl_request *q = c->adding[i]->req;
		c->rows[i] = (struct store_add_row){ .queue = q->queue, .payload = q->payload,
						     .len = q->payload_len, .opts = &c->adding[i]->add };
	}
	r = store_add_many(s, c->rows, c->nadding, err, errlen);
	if (r == -ENOTCONN || r == -ENOMEM)
		return r;
	if (r < 0 && c->nadding > 1) {
		for (size_t i = 0; i < c->nadding; i++) {
			struct store_add_row *row = &c->rows[i];
			row->rc = store_add(s, row->queue, row->payload, row->len, row->opts, &row->id,
					    row->err, sizeof(row->err));
			row->duplicate = row->rc == 1;
			if (row->rc == -ENOTCONN)
				return row->rc;
		}
		return 0;
	}
	if (r < 0) {
		c->rows[0] = (struct store_add_row){ .rc = r };
		snprintf(c->rows[0].err, sizeof(c->rows[0].err), "%s", err);
	}
	return 0;
}

static void adds_done(struct dbq_job *j)
{
	struct cmds *c = container_of(j, struct cmds, adds_job);
	size_t n = c->nadding;

	c->nadding = 0;
	for (size_t i = 0; i < n; i++) {
		struct call *call = c->adding[i];
		const struct store_add_row *row = &c->rows[i];
		if (j->rc < 0) {
			call->res.rc = j->rc;
			snprintf(call->res.err, sizeof(call->res.err), "%s", j->err);
		} else if (row->rc < 0) {
			call->res.rc = row->rc == -EMSGSIZE ? -EINVAL : row->rc;
			snprintf(call->res.err, sizeof(call->res.err), "%s", row->err);
		} else {
			call->res.id = row->id;
			call->res.duplicate = row->duplicate;
			add_after(call);
		}
		finish(call);
	}
	adds_start(c);
}

static void adds_start(struct cmds *c)
{
	size_t n;

	if (c->nadding || !c->nadds)
		return;
	n = c->nadds < ADDS_MAX ? c->nadds : ADDS_MAX;
	memcpy(c->adding, c->adds, n * sizeof(*c->adds));
	memmove(c->adds, c->adds + n, (c->nadds - n) * sizeof(*c->adds));
	c->nadds -= n;
	c->nadding = n;
	c->adds_job.run = adds_run;
	c->adds_job.done = adds_done;
	dbq_push(c->host.dbq, &c->adds_job);
}

static void add_now(struct call *call)
{
	struct cmds *c = call->cmds;

	if (c->nadds == c->capadds) {
		size_t cap = c->capadds ? c->capadds * 2 : 64;
		void *p = realloc(c->adds, cap * sizeof(*c->adds));
		if (!p) {
			call->res.rc = -ENOMEM;
			snprintf(call->res.err, sizeof(call->res.err), "out of memory");
			finish(call);
			return;
		}
		c->adds = p;
		c->capadds = cap;
	}
	add_options(call->req, &call->add);
	c->adds[c->nadds++] = call;
	adds_start(c);
}

static void add_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	buf_printf(out, "%llu\n", (unsigned long long)res->id);
}

/* ---- retry ---- */

static int retry_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	int r = store_retry_dead(s, q->id, ctl_has(q, CTL_F_DEAD) ? q->queue : NULL, err, errlen);

	call->res.rows = r;
	return r;
}

static void retry_after(struct call *call)
{
	if (call->res.rows > 0)
		call->cmds->host.wake(call->cmds->host.data);
}

static void rows_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	buf_printf(out, "%lld\n", res->rows);
}

/* ---- pause, resume, limit ---- */

static int pause_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return store_set_paused(s, call->req->queue, call->req->verb == CTL_PAUSE, err, errlen);
}

static void pause_after(struct call *call)
{
	bool pause = call->req->verb == CTL_PAUSE;

	log_info("queue '%s': %s", call->req->queue, pause ? "paused" : "resumed");
	if (!pause)
		call->cmds->host.wake(call->cmds->host.data);
}

static void pause_text(const struct ctl_request *req, const struct cmd_result *res,
		       struct buf *out)
{
	buf_printf(out, "queue %s %s\n", req->queue, req->verb == CTL_PAUSE ? "paused" : "resumed");
}

static int limit_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return store_set_interval(s, call->req->queue, call->req->interval_ms, err, errlen);
}

static void limit_after(struct call *call)
{
	log_info("queue '%s': rate limit set", call->req->queue);
}

static void limit_text(const struct ctl_request *req, const struct cmd_result *res,
		       struct buf *out)
{
	buf_printf(out, "queue %s min_interval_ms %u\n", req->queue, req->interval_ms);
}

/* ---- job, cancel, queues ---- */

/* No such row: -ENOENT, with the message. */
static int no_row(const struct call *call, char *err, size_t errlen)
{
	snprintf(err, errlen, "no row %llu", (unsigned long long)call->req->id);
	return -ENOENT;
}

static int job_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	int r = store_job_get(s, call->req->id, &call->row, err, errlen);

	return r == 0 ? no_row(call, err, errlen) : r;
}

static void job_after(struct call *call)
{
	call->res.job = &call->row;
}

static void job_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	if (req->json)
		render_job_json(res->job, out);
	else
		render_job_text(res->job, out);
}

static int cancel_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	int r = store_cancel(s, call->req->id, call->res.state, err, errlen);

	if (r == -EBUSY)
		snprintf(err, errlen, "row %llu is %s: only a ready or dead row can be cancelled",
			 (unsigned long long)call->req->id, call->res.state);
	if (r == 0)
		return no_row(call, err, errlen);
	call->res.rows = r > 0 ? r : 0;
	return r;
}

static void cancel_after(struct call *call)
{
	if (call->res.rows)
		log_info("row %llu cancelled", (unsigned long long)call->req->id);
}

static int queues_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return store_queues(s, &call->queues, &call->res.nqueues, err, errlen);
}

static void queues_after(struct call *call)
{
	call->res.queues = call->queues;
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

static int jobs_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;

	return store_jobs_list(s, ctl_has(q, CTL_F_STATE) ? q->state : "dead",
			       ctl_has(q, CTL_F_QUEUE) ? q->queue : NULL, q->before,
			       ctl_has(q, CTL_F_LIMIT) ? q->limit : 50, &call->jobs,
			       &call->res.njobs, err, errlen);
}

static void jobs_after(struct call *call)
{
	call->res.jobs = call->jobs;
}

static void jobs_text(const struct ctl_request *req, const struct cmd_result *res,
		      struct buf *out)
{
	if (req->json)
		render_jobs_json(res->jobs, res->njobs, out);
	else
		render_jobs_text(res->jobs, res->njobs, out);
}

/* ---- the table ---- */

static const struct cmd_def defs[CTL_VERB_COUNT] = {
	[CTL_STATUS] = { .now = status_now, .text = status_text },
	[CTL_ADD] = { .now = add_now, .text = add_text },
	[CTL_RETRY] = { .db = retry_db, .after = retry_after, .text = rows_text },
	[CTL_PAUSE] = { .db = pause_db, .after = pause_after, .text = pause_text },
	[CTL_RESUME] = { .db = pause_db, .after = pause_after, .text = pause_text },
	[CTL_LIMIT] = { .db = limit_db, .after = limit_after, .text = limit_text },
	[CTL_JOB] = { .db = job_db, .after = job_after, .text = job_text },
	[CTL_CANCEL] = { .db = cancel_db, .after = cancel_after, .text = rows_text },
	[CTL_QUEUES] = { .db = queues_db, .after = queues_after, .text = queues_text },
	[CTL_SUPERVISORS] = { .db = supervisors_db, .after = supervisors_after,
			      .text = supervisors_text },
	[CTL_JOBS] = { .db = jobs_db, .after = jobs_after, .text = jobs_text },
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
	finish(call);
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
	if (d->now) {
		d->now(call);
		return;
	}
	call->job.run = call_run;
	call->job.done = call_done;
	dbq_push(c->host.dbq, &call->job);
}

void cmd_render_text(const struct ctl_request *req, const struct cmd_result *res,
		     struct buf *out)
{
	defs[req->verb].text(req, res, out);
}

int cmds_new(const struct cmd_host *host, struct cmds **ret)
{
	struct cmds *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->adding = calloc(ADDS_MAX, sizeof(*c->adding));
	c->rows = calloc(ADDS_MAX, sizeof(*c->rows));
	if (!c->adding || !c->rows) {
		free(c->adding);
		free(c->rows);
		free(c);
		return -ENOMEM;
	}
	c->host = *host;
	*ret = c;
	return 0;
}

void cmds_flush(struct cmds *c)
{
	size_t n;

	if (!c)
		return;
	answer_waiting(c);
	/* Adds not yet given to the database: refused (the one being written is answered when
	 * it is over). */
	n = c->nadds;
	c->nadds = 0;
	for (size_t i = 0; i < n; i++) {
		c->adds[i]->res.rc = -ECANCELED;
		snprintf(c->adds[i]->res.err, sizeof(c->adds[i]->res.err), "claimd is stopping");
		finish(c->adds[i]);
	}
}

void cmds_free(struct cmds *c)
{
	if (!c)
		return;
	cmds_flush(c);
	free(c->counts);
	free(c->waiting);
	free(c->adds);
	free(c->adding);
	free(c->rows);
	free(c);
}
