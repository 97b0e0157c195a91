/* Waiting for a row: GET /v1/jobs/{id}?wait=DUR answers once the row is done or dead (or the
 * wait is over), and GET /v1/jobs/{id}/events streams the row as Server-Sent Events, one
 * event each time it changes, until it is done or dead; GET /v1/batches/{id}/events streams
 * a batch the same way ("event: batch"), until its members finished and its callback did. Both read the row again every
 * API_WAIT_CHECK_MS (one primary-key lookup on the supervisor's database queue), so they see
 * what any supervisor on any host did to it. */
#include "supervisor/api_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "supervisor/render.h"

#define KEEPALIVE_MS 15000   /* a comment line on a quiet stream, for proxies */

static void on_read(void *data, const struct ctl_request *req, const struct cmd_result *res);

static void call_free(struct api_call *call)
{
	free(call->last);
	free(call);
}

/* Every API_WAIT_CHECK_MS, each waiting call reads its row again; an event stream whose
 * client went away is dropped then. */
static void on_wait_timer(uv_timer_t *t)
{
	struct api_host *h = t->data;
	struct api_call *list = h->waiting;

	h->waiting = NULL;
	while (list) {
		struct api_call *call = list;
		list = call->next;
		call->next = NULL;
		if (!call->r) {
			call_free(call);
			continue;
		}
		cmd_run(h->cmds, &call->req, on_read, call);
	}
	if (!h->waiting)
		uv_timer_stop(&h->wait_timer);
}

static void wait_more(struct api_call *call)
{
	struct api_host *h = call->h;

	if (!h->timer_open) {
		uv_timer_init(h->loop, &h->wait_timer);
		h->wait_timer.data = h;
		h->timer_open = true;
	}
	call->next = h->waiting;
	h->waiting = call;
	if (!uv_is_active((uv_handle_t *)&h->wait_timer))
		uv_timer_start(&h->wait_timer, on_wait_timer, API_WAIT_CHECK_MS, API_WAIT_CHECK_MS);
}

static bool finished(const struct store_job *j)
{
	return !strcmp(j->state, "done") || !strcmp(j->state, "dead");
}

static bool batch_over(const struct store_batch *b)
{
	return b->finished && (!*b->callback_state || !strcmp(b->callback_state, "done") ||
			       !strcmp(b->callback_state, "dead"));
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

	call->last_sent = uv_now(call->h->loop);
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
	} else if (uv_now(call->h->loop) - call->last_sent >= KEEPALIVE_MS) {
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
	    uv_now(call->h->loop) >= call->deadline)
		return false;
	wait_more(call);
	return true;
}

void api_watch_stop(struct api_host *h)
{
	h->stopped = true;
	while (h->waiting) {
		struct api_call *call = h->waiting;
		h->waiting = call->next;
		if (call->r && call->events)
			http_stream_end(call->r);
		else if (call->r)
			http_respond_error(call->r, 503, "claimd is stopping");
		call_free(call);
	}
	if (h->timer_open) {
		uv_close((uv_handle_t *)&h->wait_timer, NULL);
		h->timer_open = false;
	}
}
