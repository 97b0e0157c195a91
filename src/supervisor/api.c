#include "supervisor/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"
#include "common/jobline.h"
#include "common/log.h"

#define JSON "application/json"

/* A request on its way through a command. */
struct api_call {
	struct api_host *h;
	struct http_request *r;
	uint64_t deadline;        /* ?wait: until when (the loop's clock), 0 without */
	struct api_call *next;    /* in api_host.waiting */
	struct ctl_request req;   /* its strings point into path (or the request's query) */
	char path[512];
};

static unsigned status_of(int rc)
{
	switch (rc) {
	case -EINVAL: return 400;
	case -ENOENT: return 404;
	case -EBUSY: return 409;
	case -ENOMEM: return 500;
	default: return 503;  /* the database, or stopping */
	}
}

static void respond_buf(struct http_request *r, unsigned status, struct buf *b)
{
	if (buf_failed(b))
		http_respond_error(r, 500, "out of memory");
	else
		http_respond(r, status, JSON, b->data ? b->data : "", b->len);
	buf_free(b);
}

/* ---- ?wait ---- */

static void on_done(void *data, const struct ctl_request *req, const struct cmd_result *res);

/* Every API_WAIT_CHECK_MS, each waiting request reads its row again (one statement each, on
 * the supervisor's database queue). */
static void on_wait_timer(uv_timer_t *t)
{
	struct api_host *h = t->data;
	struct api_call *list = h->waiting;

	h->waiting = NULL;
	while (list) {
		struct api_call *call = list;
		list = call->next;
		call->next = NULL;
		cmd_run(h->cmds, &call->req, on_done, call);
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

/* ---- /metrics ---- */

void api_count(void *data, const char *route, unsigned status)
{
	struct api_host *h = data;

	metrics_count_http(&h->metrics, route, status);
}

static void on_queues_read(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct api_call *call = data;
	struct api_host *h = call->h;

	(void)req;
	h->reading_queues = false;
	if (res->rc >= 0) {
		struct store_queue *q = malloc((res->nqueues ? res->nqueues : 1) * sizeof(*q));
		if (q) {
			memcpy(q, res->queues, res->nqueues * sizeof(*q));
			free(h->queues);
			h->queues = q;
			h->nqueues = res->nqueues;
			h->queues_at = uv_now(h->loop);
		}
	} else {
		log_warn("metrics: cannot read the queues: %s", res->err);
	}
	free(call);
}

/* The scrape is answered at once, from memory; a reading of the queues older than
 * METRICS_QUEUES_MS starts one for the next scrape (never two at a time). */
static void metrics(struct api_host *h, struct http_request *r)
{
	uint64_t now = uv_now(h->loop);
	struct status_worker *ws;
	struct status st;
	struct buf b;

	if (!h->reading_queues && (!h->queues || now - h->queues_at >= METRICS_QUEUES_MS)) {
		struct api_call *call = calloc(1, sizeof(*call));
		if (call) {
			call->h = h;
			call->req.verb = CTL_QUEUES;
			h->reading_queues = true;
			cmd_run(h->cmds, &call->req, on_queues_read, call);
		}
	}
	memset(&st, 0, sizeof(st));
	ws = h->snapshot(h->data, &st);
	buf_init(&b);
	metrics_render(&h->metrics, &st, h->queues, h->nqueues,
		       h->queues ? (double)(uv_now(h->loop) - h->queues_at) / 1000.0 : 0, &b);
	free(ws);
	if (buf_failed(&b))
		http_respond_error(r, 500, "out of memory");
	else
		http_respond(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
	buf_free(&b);
}

void api_stop(struct api_host *h)
{
	h->stopped = true;
	while (h->waiting) {
		struct api_call *call = h->waiting;
		h->waiting = call->next;
		http_respond_error(call->r, 503, "claimd is stopping");
		free(call);
	}
	if (h->timer_open) {
		uv_close((uv_handle_t *)&h->wait_timer, NULL);
		h->timer_open = false;
	}
	free(h->queues);
	h->queues = NULL;
}

static void on_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct api_call *call = data;
	struct http_request *r = call->r;
	unsigned status = 200;
	char head[64];
	struct buf b;

	buf_init(&b);
	if (res->rc < 0) {
		http_respond_error(r, status_of(res->rc), res->err);
		free(call);
		return;
	}
	if (req->verb == CTL_JOB && call->deadline && !call->h->stopped &&
	    strcmp(res->job->state, "done") != 0 && strcmp(res->job->state, "dead") != 0 &&
	    uv_now(call->h->loop) < call->deadline) {
		wait_more(call);
		return;
	}
	switch (req->verb) {
	case CTL_ADD:
		buf_printf(&b, "{\"id\":%llu%s}\n", (unsigned long long)res->id,
			   res->duplicate ? ",\"duplicate\":true" : "");
		snprintf(head, sizeof(head), "%llu", (unsigned long long)res->id);
		http_add_header(r, "X-Job-Id", head);
		snprintf(head, sizeof(head), "/v1/jobs/%llu", (unsigned long long)res->id);
		http_add_header(r, "Location", head);
		status = res->duplicate ? 200 : 202;
		break;
	case CTL_RETRY:
		buf_printf(&b, "{\"retried\":%lld}\n", res->rows);
		break;
	case CTL_CANCEL:
		buf_printf(&b, "{\"id\":%llu,\"deleted\":true}\n", (unsigned long long)req->id);
		break;
	case CTL_PAUSE:
	case CTL_RESUME:
		buf_puts(&b, "{\"queue\":");
		buf_json_str(&b, req->queue);
		buf_printf(&b, ",\"paused\":%s}\n", req->verb == CTL_PAUSE ? "true" : "false");
		break;
	default:  /* job, queues, status: their JSON form */
		cmd_render_text(req, res, &b);
		break;
	}
	respond_buf(r, status, &b);
	free(call);
}

/* Run verb with the query's arguments plus the ones the path gave (names[0..npath)). */
static void run(struct api_host *h, struct api_call *call, enum ctl_verb verb,
		const char *const *pnames, const char *const *pvalues, size_t npath, bool payload)
{
	struct http_request *r = call->r;
	const char *names[HTTP_ARGS_MAX + 4], *values[HTTP_ARGS_MAX + 4];
	const char *const *qn, *const *qv;
	size_t n = http_args(r, &qn, &qv), len = 0;
	const unsigned char *body = payload ? http_body(r, &len) : NULL;
	char err[256];

	if (http_args_overflow(r)) {
		http_respond_error(r, 400, "too many query arguments");
		free(call);
		return;
	}
	for (size_t i = 0; i < npath; i++) {
		names[i] = pnames[i];
		values[i] = pvalues[i];
	}
	size_t k = npath;
	for (size_t i = 0; i < n; i++) {
		if (verb == CTL_JOB && !strcmp(qn[i], "wait")) {
			unsigned ms;
			if (call->deadline || config_parse_duration(qv[i], &ms) < 0 || ms > API_WAIT_MAX_MS) {
				snprintf(err, sizeof(err), "wait: '%.40s' is not a duration up to %u s (e.g. "
					 "30s)", qv[i], API_WAIT_MAX_MS / 1000);
				http_respond_error(r, 400, err);
				free(call);
				return;
			}
			call->deadline = uv_now(h->loop) + ms;
			continue;
		}
		names[k] = qn[i];
		values[k++] = qv[i];
	}
	if (payload && !body)
		body = (const unsigned char *)"";
	if (ctl_from_params(verb, names, values, k, body, len, &call->req, err,
			    sizeof(err)) < 0) {
		http_respond_error(r, 400, err);
		free(call);
		return;
	}
	cmd_run(h->cmds, &call->req, on_done, call);
}

/* ---- jobs:batch ---- */

#define BATCH_LINES_MAX 1000

/* A batch on its way: every line's request, and what became of each. */
struct batch {
	struct http_request *r;
	char queue[CTL_QUEUE_MAX + 1];
	size_t n, pending;
	struct jobline *lines;
	struct ctl_request *reqs;
	struct cmd_result *res;     /* rc, id, duplicate, err of each */
};

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		jobline_free(&b->lines[i]);
	free(b->lines);
	free(b->reqs);
	free(b->res);
	free(b);
}

static void batch_answer(struct batch *b)
{
	bool all = true;
	struct buf out;

	buf_init(&out);
	buf_puts(&out, "{\"jobs\":[");
	for (size_t i = 0; i < b->n; i++) {
		const struct cmd_result *res = &b->res[i];
		buf_puts(&out, i ? ",{" : "{");
		if (res->rc < 0) {
			all = false;
			buf_puts(&out, "\"error\":");
			buf_json_str(&out, res->err);
		} else {
			buf_printf(&out, "\"id\":%llu%s", (unsigned long long)res->id,
				   res->duplicate ? ",\"duplicate\":true" : "");
		}
		buf_puts(&out, "}");
	}
	buf_puts(&out, "]}\n");
	/* 202 when every line was added (or was a duplicate); 422 when the database refused
	 * some: the others are written, with their ids. */
	respond_buf(b->r, all ? 202 : 422, &out);
	batch_free(b);
}

static void on_line_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct batch *b = data;
	size_t i = (size_t)(req - b->reqs);

	b->res[i].rc = res->rc;
	b->res[i].id = res->id;
	b->res[i].duplicate = res->duplicate;
	snprintf(b->res[i].err, sizeof(b->res[i].err), "%s", res->err);
	if (--b->pending == 0)
		batch_answer(b);
}

/* Every line is read and checked first: one that is not a valid job makes the answer 400,
 * naming its line, and nothing is written. Then each is an add; the adds go to the database
 * together (cmd.c writes up to 256 rows per transaction). */
static void batch(struct api_host *h, struct http_request *r, const char *queue)
{
	size_t len, n = 0;
	const unsigned char *body = http_body(r, &len);
	const char *p = (const char *)body, *end = p + len;
	struct batch *b = calloc(1, sizeof(*b));
	char err[300], lerr[256];

	if (!b)
		goto oom;
	b->r = r;
	snprintf(b->queue, sizeof(b->queue), "%s", queue);
	if (strlen(queue) > CTL_QUEUE_MAX) {
		http_respond_error(r, 400, "add: queue must be 1 to 64 bytes");
		batch_free(b);
		return;
	}
	for (const char *q = p; q < end; q++)
		n += *q == '\n';
	n += len && end[-1] != '\n';
	if (n > BATCH_LINES_MAX) {
		snprintf(err, sizeof(err), "at most %d lines per batch", BATCH_LINES_MAX);
		http_respond_error(r, 413, err);
		batch_free(b);
		return;
	}
	b->lines = calloc(n ? n : 1, sizeof(*b->lines));
	b->reqs = calloc(n ? n : 1, sizeof(*b->reqs));
	b->res = calloc(n ? n : 1, sizeof(*b->res));
	if (!b->lines || !b->reqs || !b->res)
		goto oom;
	for (size_t line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *names[JOBLINE_PARAMS_MAX + 1], *values[JOBLINE_PARAMS_MAX + 1];
		struct jobline *jl = &b->lines[b->n];
		if (l && p[l - 1] == '\r')
			l--;
		if (l == 0) {
			p = nl ? nl + 1 : end;
			continue;  /* blank lines are allowed */
		}
		if (jobline_parse(p, l, jl, lerr, sizeof(lerr)) < 0) {
			snprintf(err, sizeof(err), "line %zu: %s", line, lerr);
			goto bad;
		}
		b->n++;
		names[0] = "queue";
		values[0] = b->queue;
		memcpy(names + 1, jl->names, jl->n * sizeof(*names));
		memcpy(values + 1, jl->values, jl->n * sizeof(*values));
		if (ctl_from_params(CTL_ADD, names, values, jl->n + 1, jl->payload, jl->payload_len,
				    &b->reqs[b->n - 1], lerr, sizeof(lerr)) < 0) {
			snprintf(err, sizeof(err), "line %zu: %s", line, lerr);
			goto bad;
		}
		p = nl ? nl + 1 : end;
	}
	if (b->n == 0) {
		http_respond_error(r, 400, "the batch has no jobs (one JSON object per line)");
		batch_free(b);
		return;
	}
	/* One more than the lines, so that answers given at once cannot end it mid-loop. */
	b->pending = b->n + 1;
	for (size_t i = 0; i < b->n; i++)
		cmd_run(h->cmds, &b->reqs[i], on_line_done, b);
	if (--b->pending == 0)
		batch_answer(b);
	return;
bad:
	http_respond_error(r, 400, err);
	batch_free(b);
	return;
oom:
	http_respond_error(r, 500, "out of memory");
	if (b)
		batch_free(b);
}

/* The path's segments after the leading '/', at most max; returns how many, or -1 when
 * there are more or one is empty. */
static int split(char *path, char **seg, int max)
{
	int n = 0;

	if (*path != '/')
		return -1;
	for (char *p = path + 1; *p;) {
		char *slash = strchr(p, '/');
		if (n == max || slash == p)
			return -1;
		seg[n++] = p;
		if (!slash)
			break;
		*slash = '\0';
		p = slash + 1;
		if (!*p)
			return -1;  /* a trailing '/' */
	}
	return n;
}

static void healthz(struct api_host *h, struct http_request *r)
{
	char why[256] = "";

	if (h->healthy(h->data, why, sizeof(why)))
		http_respond(r, 200, "text/plain; charset=utf-8", "ok\n", 3);
	else {
		size_t n = strlen(why);
		why[n < sizeof(why) - 1 ? n : n - 1] = '\n';
		http_respond(r, 503, "text/plain; charset=utf-8", why, n + 1 < sizeof(why) ? n + 1 : n);
	}
}

void api_handle(void *data, struct http_request *r)
{
	struct api_host *h = data;
	const char *m = http_method(r);
	bool get = !strcmp(m, "GET") || !strcmp(m, "HEAD"), post = !strcmp(m, "POST");
	bool del = !strcmp(m, "DELETE");
	struct api_call *call;
	const char *pn[2], *pv[2];
	char *seg[5];
	int n;

	if (strlen(http_path(r)) >= sizeof(call->path)) {
		http_respond_error(r, 404, "no such route");
		return;
	}
	call = calloc(1, sizeof(*call));
	if (!call) {
		http_respond_error(r, 500, "out of memory");
		return;
	}
	call->r = r;
	call->h = h;
	snprintf(call->path, sizeof(call->path), "%s", http_path(r));
	n = split(call->path, seg, 5);
	if (n == 1 && !strcmp(seg[0], "healthz")) {
		http_set_tag(r, "healthz");
		if (!get)
			goto method;
		healthz(h, r);
		free(call);
		return;
	}
	if (n == 1 && !strcmp(seg[0], "metrics")) {
		http_set_tag(r, "metrics");
		if (!get)
			goto method;
		metrics(h, r);
		free(call);
		return;
	}
	if (n < 2 || strcmp(seg[0], "v1") != 0)
		goto not_found;
	if (n == 2 && !strcmp(seg[1], "supervisors")) {
		http_set_tag(r, "supervisors");
		if (!get)
			goto method;
		pn[0] = "json";
		pv[0] = "1";
		run(h, call, CTL_SUPERVISORS, pn, pv, 1, false);
		return;
	}
	if (n == 2 && !strcmp(seg[1], "status")) {
		http_set_tag(r, "status");
		if (!get)
			goto method;
		pn[0] = "json";
		pv[0] = "1";
		run(h, call, CTL_STATUS, pn, pv, 1, false);
		return;
	}
	if (!strcmp(seg[1], "queues")) {
		if (n == 2) {
			http_set_tag(r, "queues");
			if (!get)
				goto method;
			pn[0] = "json";
			pv[0] = "1";
			run(h, call, CTL_QUEUES, pn, pv, 1, false);
			return;
		}
		if (n != 4)
			goto not_found;
		pn[0] = "queue";
		pv[0] = seg[2];
		if (!strcmp(seg[3], "jobs")) {
			http_set_tag(r, "jobs.add");
			if (!post)
				goto method;
			run(h, call, CTL_ADD, pn, pv, 1, true);
		} else if (!strcmp(seg[3], "jobs:batch")) {
			http_set_tag(r, "jobs.batch");
			if (!post)
				goto method;
			batch(h, r, seg[2]);
			free(call);
		} else if (!strcmp(seg[3], "pause") || !strcmp(seg[3], "resume")) {
			http_set_tag(r, "queue.pause");
			if (!post)
				goto method;
			run(h, call, seg[3][0] == 'p' ? CTL_PAUSE : CTL_RESUME, pn, pv, 1, false);
		} else {
			goto not_found;
		}
		return;
	}
	if (!strcmp(seg[1], "jobs") && (n == 3 || n == 4)) {
		pn[0] = "id";
		pv[0] = seg[2];
		http_set_tag(r, n == 4 ? "job.retry" : "job");
		if (n == 4) {
			if (strcmp(seg[3], "retry") != 0)
				goto not_found;
			if (!post)
				goto method;
			run(h, call, CTL_RETRY, pn, pv, 1, false);
		} else if (get) {
			pn[1] = "json";
			pv[1] = "1";
			run(h, call, CTL_JOB, pn, pv, 2, false);
		} else if (del) {
			run(h, call, CTL_CANCEL, pn, pv, 1, false);
		} else {
			goto method;
		}
		return;
	}
not_found:
	http_respond_error(r, 404, "no such route");
	free(call);
	return;
method:
	http_respond_error(r, 405, "method not allowed on this route");
	free(call);
}
