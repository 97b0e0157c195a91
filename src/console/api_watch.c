/* Waiting for a row: GET /v1/jobs/{id}?wait=DUR answers once the row is done or dead (or the
 * wait is over), and GET /v1/jobs/{id}/events streams the row as Server-Sent Events, one
 * event each time it changes, until it is done or dead; GET /v1/batches/{id}/events streams
 * a batch the same way ("event: batch"), until its members finished and its callback did.
 *
 * The calls waiting for a change are one watch list: one read (store_watch: one statement
 * for every row and one for every batch waited for, by primary key) tells which of them
 * changed, and only those are read again whole (cmd_run, as at their start) and answered.
 * That read runs when the binary log says rows of work_items changed (at once, at most one
 * every GAP_MS, and again RECHECK_MS after: the change is in the log before its commit is
 * seen), else every API_WAIT_SLOW_MS; without the binary log, every API_WAIT_CHECK_MS. So
 * the waits see what any supervisor on any host did to a row, at one statement a tick
 * however many wait. */
#include "console/api_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "supervisor/surface.h"
#include "console/render.h"

#define KEEPALIVE_MS 15000   /* a comment line on a quiet stream, for proxies */
#define GAP_MS 25            /* between two reads the binary log asks for, at least */
#define GONE_MS 500          /* between two looks for clients that went away, at least */
static const unsigned RECHECK_MS[] = { 25, 100, 400 };   /* after a change */

struct api_watch {
	struct api_host *h;
	struct api_call *waiting;       /* calls waiting for a change */
	uv_timer_t tick;                /* the next read */
	uv_timer_t deadline;            /* the earliest ?wait that is over */
	unsigned open_timers;           /* freed once both closed and no read runs */
	bool stopped;
	bool following;                 /* follow_rows(true) was said */
	uint64_t read_at;               /* when the last read started (the loop's clock) */
	uint64_t gone_at;               /* when drop_gone last looked */
	uint64_t changed_at;            /* the binary log's last change; 0: none */
	/* the read: the ids sorted, then what store_watch found */
	struct dbq_job job;
	bool inflight, again;
	uint64_t *ids[2];               /* [0] rows, [1] batches */
	size_t nids[2], cap;
	struct store_watch_row *rows[2];
	size_t nrows[2];
};

static void on_read(void *data, const struct ctl_request *req, const struct cmd_result *res);
static void schedule(struct api_watch *w, uint64_t delay);

static void call_free(struct api_call *call)
{
	free(call->last);
	free(call);
}

static uint64_t now_ms(const struct api_watch *w)
{
	return uv_now(w->h->host.loop);
}

/* Read each call of list (linked by next) again, whole: each answer comes to on_read (which
 * may put the call back on the watch list, even before cmd_run returns: hence a list of
 * their own). Streams whose client went away are dropped. */
static void reread(struct api_call *list)
{
	while (list) {
		struct api_call *call = list;
		list = call->next;
		call->next = NULL;
		if (call->r)
			cmd_run(call->h->cmds, &call->req, on_read, call);
		else
			call_free(call);
	}
}

/* ---- the read ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_row(const void *a, const void *b)
{
	return cmp_u64(&((const struct store_watch_row *)a)->id,
		       &((const struct store_watch_row *)b)->id);
}

static bool is_batch(const struct api_call *call)
{
	return call->req.verb == CTL_BATCH;
}

/* On the thread pool: every id, STORE_WATCH_MAX a statement. */
static int job_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct api_watch *w = container_of(j, struct api_watch, job);

	for (int k = 0; k < 2; k++) {
		w->nrows[k] = 0;
		for (size_t at = 0; at < w->nids[k]; at += STORE_WATCH_MAX) {
			size_t n = w->nids[k] - at < STORE_WATCH_MAX ? w->nids[k] - at :
				   STORE_WATCH_MAX, got = 0;
			int r = (k ? store_watch_batches : store_watch_jobs)(st, w->ids[k] + at, n,
									      w->rows[k] + w->nrows[k],
									      &got, err, errlen);
			if (r < 0)
				return r;
			w->nrows[k] += got;
		}
	}
	return 0;
}

static bool sent(const struct api_watch *w, const struct api_call *call)
{
	int k = is_batch(call);

	return bsearch(&call->req.id, w->ids[k], w->nids[k], sizeof(uint64_t), cmp_u64) != NULL;
}

static const struct store_watch_row *found(const struct api_watch *w, const struct api_call *call)
{
	struct store_watch_row key = { .id = call->req.id };
	int k = is_batch(call);

	return bsearch(&key, w->rows[k], w->nrows[k], sizeof(key), cmp_row);
}

static bool over(enum row_state state)
{
	return state != ROW_NONE && row_state_final(state);
}

static int send_text(struct api_call *call, const char *s, size_t n);

/* A comment line on a stream nothing was sent on for KEEPALIVE_MS. */
static void keepalive(struct api_call *call)
{
	if (call->streaming && uv_now(call->h->host.loop) - call->last_sent >= KEEPALIVE_MS)
		send_text(call, ": keepalive\n\n", 13);   /* a client that does not read: cut at
							  * its next event */
}

/* Whether what the read saw of call's row means it is to be read again: gone, finished (a
 * wait), changed (a stream; the first read of a stream counts as a change: its row may have
 * changed between its start and this read). */
static bool changed(struct api_call *call, const struct store_watch_row *row)
{
	if (!row)
		return true;
	if (!call->events)
		return over(row->state);
	if (call->marked && call->mark == row->mark)
		return false;
	call->marked = true;
	call->mark = row->mark;
	return true;
}

/* The read is over: the calls whose row changed are read again (and leave the list until
 * they wait again); streams whose client went away are dropped. */
static void take_reading(struct api_watch *w)
{
	struct api_call **p = &w->waiting, *again = NULL;

	for (int k = 0; k < 2; k++)
		qsort(w->rows[k], w->nrows[k], sizeof(*w->rows[k]), cmp_row);
	while (*p) {
		struct api_call *call = *p;
		if (call->r && (!sent(w, call) || !changed(call, found(w, call)))) {
			keepalive(call);
			p = &call->next;
			continue;
		}
		*p = call->next;
		call->next = again;
		again = call;
	}
	reread(again);
}

static void maybe_free(struct api_watch *w)
{
	if (w->open_timers || w->inflight)
		return;
	for (int k = 0; k < 2; k++) {
		free(w->ids[k]);
		free(w->rows[k]);
	}
	free(w);
}

/* When the next read is due: at once after a change told meanwhile, at the next recheck
 * after one, else the slow tick. */
static void next_read(struct api_watch *w)
{
	uint64_t now = now_ms(w), slow;

	if (w->again) {
		w->again = false;
		schedule(w, w->read_at + GAP_MS > now ? w->read_at + GAP_MS - now : 0);
		return;
	}
	for (size_t i = 0; w->changed_at && i < sizeof(RECHECK_MS) / sizeof(RECHECK_MS[0]); i++) {
		uint64_t at = w->changed_at + RECHECK_MS[i];
		if (at > w->read_at) {
			schedule(w, at > now ? at - now : 0);
			return;
		}
	}
	slow = w->h->host.pushed && w->h->host.pushed(w->h->host.data) ? API_WAIT_SLOW_MS : API_WAIT_CHECK_MS;
	schedule(w, w->read_at + slow > now ? w->read_at + slow - now : 0);
}

static void job_done(struct dbq_job *j)
{
	struct api_watch *w = container_of(j, struct api_watch, job);

	w->inflight = false;
	if (w->stopped) {
		maybe_free(w);
		return;
	}
	if (j->rc < 0)
		log_debug("http: reading the rows requests wait for failed: %s", j->err);
	else
		take_reading(w);
	next_read(w);   /* (with none waiting, the tick says so: follow_rows(false)) */
}

/* The ids of the calls that wait, sorted, each once. Returns false when out of memory. */
static bool collect(struct api_watch *w)
{
	size_t n = 0;

	for (struct api_call *c = w->waiting; c; c = c->next)
		n++;
	if (n > w->cap) {
		for (int k = 0; k < 2; k++) {
			void *ids = realloc(w->ids[k], n * sizeof(uint64_t));
			if (ids)
				w->ids[k] = ids;
			void *rows = realloc(w->rows[k], n * sizeof(struct store_watch_row));
			if (rows)
				w->rows[k] = rows;
			if (!ids || !rows)
				return false;
		}
		w->cap = n;
	}
	w->nids[0] = w->nids[1] = 0;
	for (struct api_call *c = w->waiting; c; c = c->next)
		if (c->r)
			w->ids[is_batch(c)][w->nids[is_batch(c)]++] = c->req.id;
	for (int k = 0; k < 2; k++) {
		size_t u = 0;
		qsort(w->ids[k], w->nids[k], sizeof(uint64_t), cmp_u64);
		for (size_t i = 0; i < w->nids[k]; i++)
			if (!u || w->ids[k][u - 1] != w->ids[k][i])
				w->ids[k][u++] = w->ids[k][i];
		w->nids[k] = u;
	}
	return true;
}

/* Calls whose client went away leave the list before their rows are read for nothing: a
 * stream's (on_gone said so, or its client closed while the stream waited for news), a
 * wait's (MHD does not watch a suspended connection: http_gone looks, a poll() each). Their
 * places among --http-max-streams are free once their connections are. At most every
 * GONE_MS: reads come every 100 ms without the binary log, every 25 ms while it tells of
 * changes, and a look is a syscall per waiting call. */
static void drop_gone(struct api_watch *w)
{
	struct api_call **p = &w->waiting;
	uint64_t now = now_ms(w);

	if (w->gone_at && now - w->gone_at < GONE_MS)
		return;
	w->gone_at = now;
	while (*p) {
		struct api_call *call = *p;
		if (call->r && !http_gone(call->r)) {
			p = &call->next;
			continue;
		}
		*p = call->next;
		if (call->r && call->streaming)
			http_stream_end(call->r);
		else if (call->r)   /* 499 as nginx logs it: never sent, counted in /metrics */
			http_respond_error(call->r, 499, "the client went away");
		call_free(call);
	}
}

static void start_read(struct api_watch *w)
{
	if (w->inflight) {
		w->again = true;
		return;
	}
	drop_gone(w);
	if (!w->waiting) {
		if (w->following) {
			w->following = false;
			w->h->host.follow_rows(w->h->host.data, false);
		}
		return;
	}
	if (!collect(w)) {
		log_warn("http: out of memory for the rows requests wait for; reading them later");
		schedule(w, API_WAIT_SLOW_MS);
		return;
	}
	w->inflight = true;
	w->read_at = now_ms(w);
	w->job.run = job_run;
	w->job.done = job_done;
	dbq_push(w->h->host.dbq, &w->job);
}

static void on_tick(uv_timer_t *t)
{
	start_read(t->data);
}

static void schedule(struct api_watch *w, uint64_t delay)
{
	uv_timer_start(&w->tick, on_tick, delay, 0);
}

/* ---- ?wait's deadlines ---- */

static void on_deadline(uv_timer_t *t);

static void arm_deadline(struct api_watch *w)
{
	uint64_t first = 0, now = now_ms(w);

	for (struct api_call *c = w->waiting; c; c = c->next)
		if (c->deadline && (!first || c->deadline < first))
			first = c->deadline;
	if (first)
		uv_timer_start(&w->deadline, on_deadline, first > now ? first - now : 0, 0);
}

/* The waits that are over are read once more, and answered with what that finds. */
static void on_deadline(uv_timer_t *t)
{
	struct api_watch *w = t->data;
	struct api_call **p = &w->waiting, *ended = NULL;
	uint64_t now = now_ms(w);

	while (*p) {
		struct api_call *call = *p;
		if (!call->deadline || call->deadline > now) {
			p = &call->next;
			continue;
		}
		*p = call->next;
		call->next = ended;
		ended = call;
	}
	reread(ended);
	arm_deadline(w);
}

/* ---- the list ---- */

static struct api_watch *watch_of(struct api_host *h)
{
	struct api_watch *w = h->watch;

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->h = h;
	uv_timer_init(h->host.loop, &w->tick);
	uv_timer_init(h->host.loop, &w->deadline);
	w->tick.data = w->deadline.data = w;
	w->open_timers = 2;
	h->watch = w;
	return w;
}

static void wait_more(struct api_call *call)
{
	struct api_watch *w = watch_of(call->h);

	if (!w) {
		http_respond_error(call->r, 500, "out of memory");   /* (a stream: ends it) */
		call_free(call);
		return;
	}
	call->next = w->waiting;
	w->waiting = call;
	if (!w->following && w->h->host.follow_rows) {
		w->following = true;
		w->h->host.follow_rows(w->h->host.data, true);
	}
	if (!uv_is_active((uv_handle_t *)&w->tick) && !w->inflight)
		next_read(w);
	if (call->deadline)
		arm_deadline(w);
}

void api_watch_changed(struct api_host *h)
{
	struct api_watch *w = h->watch;
	uint64_t now;

	if (!w || !w->waiting || w->stopped)
		return;
	now = now_ms(w);
	w->changed_at = now ? now : 1;
	if (w->inflight) {
		w->again = true;
		return;
	}
	schedule(w, w->read_at + GAP_MS > now ? w->read_at + GAP_MS - now : 0);
}

static bool finished(const struct store_job *j)
{
	return row_state_final(j->state);
}

static bool batch_over(const struct store_batch *b)
{
	return b->finished && (b->callback_state == ROW_NONE || over(b->callback_state));
}

/* Whether what res read is over: the row finished, or the batch with its callback. */
static bool reading_over(const struct ctl_request *req, const struct cmd_result *res)
{
	if (req->verb == CTL_BATCH)
		return res->nbatches && batch_over(&res->batches[0]);
	return finished(res->job);
}

/* ---- event streams ---- */

static void on_gone(void *data)
{
	struct api_call *call = data;

	call->r = NULL;   /* freed at its next turn (waiting) or when its reading comes */
}

static int send_text(struct api_call *call, const char *s, size_t n)
{
	int r = http_stream_write(call->r, s, n);

	call->last_sent = uv_now(call->h->host.loop);
	return r;
}

/* The row (or the batch) as an event, if it changed since the last one: "event: job" (or
 * "event: batch") and its JSON. */
static int send_event(struct api_call *call, const struct cmd_result *res)
{
	bool batch = call->req.verb == CTL_BATCH;
	struct buf b;
	int r = 0;

	buf_init(&b);
	if (batch && res->nbatches)
		cmd_batch_json(&res->batches[0], &b);   /* one line */
	else
		render_job_json(res->job, &b);   /* one line */
	if (buf_failed(&b)) {
		buf_free(&b);
		return -ENOMEM;
	}
	if (!call->last || strcmp(call->last, b.data) != 0) {
		free(call->last);
		call->last = strdup(b.data);
		r = batch ? send_text(call, "event: batch\ndata: ", 19) :
			    send_text(call, "event: job\ndata: ", 17);
		if (r == 0)
			r = send_text(call, b.data, b.len);   /* ends with its line feed */
		if (r == 0)
			r = send_text(call, "\n", 1);
	} else if (uv_now(call->h->host.loop) - call->last_sent >= KEEPALIVE_MS) {
		r = send_text(call, ": keepalive\n\n", 13);
	}
	buf_free(&b);
	return r;
}

/* A reading for a stream: start it (or answer the error), send what changed, end it once
 * the row is done or dead (or gone, or the client does not read). */
static void stream_reading(struct api_call *call, const struct cmd_result *res)
{
	struct api_host *h = call->h;

	if (!call->r) {
		call_free(call);
		return;
	}
	if (res->rc < 0 && !call->streaming) {
		http_respond_error(call->r, api_status_of(res->rc), res->err);
		call_free(call);
		return;
	}
	if (!call->streaming) {
		if (http_stream_start(call->r, "text/event-stream", on_gone, call) < 0) {
			http_respond_error(call->r, 500, "out of memory");
			call_free(call);
			return;
		}
		call->streaming = true;
		send_text(call, "retry: 2000\n\n", 13);
	}
	if (res->rc == -ENOENT) {
		send_text(call, "event: gone\ndata: {}\n\n", 22);   /* cancelled, or pruned */
		goto end;
	}
	if (res->rc >= 0 && send_event(call, res) < 0) {
		log_warn("http: an event stream's client does not read; ending it");
		goto end;
	}
	if (h->stopped || (res->rc >= 0 && reading_over(&call->req, res)))
		goto end;
	wait_more(call);   /* a database error: the next reading may do better */
	return;
end:
	http_stream_end(call->r);
	call_free(call);
}

/* ---- ?wait ---- */

static void on_read(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct api_call *call = data;

	(void)req;
	if (call->events) {
		stream_reading(call, res);
		return;
	}
	if (api_watch_job(call, res))
		return;
	if (res->rc < 0)
		http_respond_error(call->r, api_status_of(res->rc), res->err);
	else {
		struct buf b;
		buf_init(&b);
		render_job_json(res->job, &b);
		api_respond_buf(call->r, 200, &b);
	}
	call_free(call);
}

bool api_watch_job(struct api_call *call, const struct cmd_result *res)
{
	if (call->events) {
		stream_reading(call, res);
		return true;
	}
	if (res->rc < 0 || !call->deadline || call->h->stopped || finished(res->job) ||
	    uv_now(call->h->host.loop) >= call->deadline)
		return false;
	wait_more(call);
	return true;
}

static void on_timer_closed(uv_handle_t *t)
{
	struct api_watch *w = t->data;

	w->open_timers--;
	maybe_free(w);
}

void api_watch_stop(struct api_host *h)
{
	struct api_watch *w = h->watch;

	h->stopped = true;
	if (!w)
		return;
	h->watch = NULL;
	w->stopped = true;
	while (w->waiting) {
		struct api_call *call = w->waiting;
		w->waiting = call->next;
		if (call->r && call->events)
			http_stream_end(call->r);
		else if (call->r)
			http_respond_error(call->r, 503, "claimd is stopping");
		call_free(call);
	}
	uv_close((uv_handle_t *)&w->tick, on_timer_closed);
	uv_close((uv_handle_t *)&w->deadline, on_timer_closed);
}
