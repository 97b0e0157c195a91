#include "console/api_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"
#include "common/log.h"
#include "console/answers.h"
#include "console/entity.h"
#include "console/ui.h"

/* src/console/openapi.json, built in (embed.py --symbol). */
extern const unsigned char openapi_json[];
extern const size_t openapi_json_len;

/* ---- /metrics ---- */

enum http_path_access api_access_of(const char *path)
{
	if (!strcmp(path, "/healthz"))
		return HTTP_PATH_PUBLIC;
	return ui_path(path) ? HTTP_PATH_OPEN : HTTP_PATH_TOKEN;
}

void api_count(void *data, const char *route, unsigned status)
{
	struct api_host *h = data;

	metrics_count_http(&h->metrics, route, status);
}

/* The scrape, once the queues' reading (shared with claimctl queues, status and the
 * dashboard) answers: at once from the last one, only the first is waited for. */
static void on_metrics_queues(void *data, const struct ctl_request *req,
			      const struct cmd_result *res)
{
	struct api_call *call = data;
	struct api_host *h = call->h;
	struct status_worker *ws;
	struct status st;
	struct buf b;

	(void)req;
	if (res->rc < 0 && res->rc != -ECANCELED)
		log_warn("metrics: cannot read the queues: %s", res->err);
	memset(&st, 0, sizeof(st));
	ws = h->host.snapshot(h->host.data, &st);
	if (h->http)
		http_stats(h->http, &h->metrics.server);
	buf_init(&b);
	metrics_render(&h->metrics, &st, h->host.stats, res->rc < 0 ? NULL : res->queues,
		       res->rc < 0 ? 0 : res->nqueues, res->queues_age_s, &b);
	free(ws);
	if (buf_failed(&b))
		http_respond_error(call->r, 500, "out of memory");
	else
		http_respond(call->r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data,
			     b.len);
	buf_free(&b);
	free(call);
}

static void metrics(struct api_host *h, struct http_request *r)
{
	struct api_call *call = calloc(1, sizeof(*call));

	if (!call) {
		http_respond_error(r, 500, "out of memory");
		return;
	}
	call->h = h;
	call->r = r;
	call->req.verb = CTL_QUEUES;
	cmd_run(h->cmds, &call->req, on_metrics_queues, call);
}

void api_stop(struct api_host *h)
{
	api_watch_stop(h);
}

/* s percent-encoded for a query value (RFC 3986: all but the unreserved characters). */
static void query_value(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~')
			buf_printf(b, "%c", c);
		else
			buf_printf(b, "%%%02X", c);
	}
}

/* The job browser's filters of a jobs request, as its query has them ("&group=..."). */
static void jobs_filter_query(struct buf *b, const struct ctl_request *req)
{
	static const struct { enum ctl_field f; const char *name; } texts[] = {
		{ CTL_F_GROUP, "group" }, { CTL_F_DEDUPE, "dedupe" }, { CTL_F_ERROR, "error" },
	};
	const char *const values[] = { req->group, req->dedupe, req->error };

	if (ctl_has(req, CTL_F_ID))
		buf_printf(b, "&id=%llu", (unsigned long long)req->id);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (!ctl_has(req, texts[i].f))
			continue;
		buf_printf(b, "&%s=", texts[i].name);
		query_value(b, values[i]);
	}
}

/* A full page of a list (jobs, batches: the newest first; schedules: by name) has a next
 * one: a Link header (RFC 8288) to it, the same request with before= the last id of this
 * one (schedules: after= its last name). */
static void link_next(struct http_request *r, const struct ctl_request *req,
		      const struct cmd_result *res)
{
	unsigned limit = cmd_page(req);
	uint64_t last;
	struct buf b;

	buf_init(&b);
	if (req->verb == CTL_SCHEDULES && !ctl_has(req, CTL_F_NAME)) {
		if (res->nschedules == 0 || res->nschedules < limit)
			return;
		buf_printf(&b, "</v1/schedules?limit=%u&after=", limit);
		query_value(&b, res->schedules[res->nschedules - 1].name);
		buf_puts(&b, ">; rel=\"next\"");
		goto add;
	}
	if (req->verb == CTL_JOBS && res->next > 0)
		last = res->next;   /* a full page, or a span that ran out first */
	else if (req->verb == CTL_BATCHES && res->nbatches > 0 && res->nbatches >= limit)
		last = res->batches[res->nbatches - 1].id;
	else
		return;
	buf_puts(&b, req->verb == CTL_JOBS ? "</v1/jobs?" : "</v1/batches?");
	if (req->verb == CTL_JOBS) {
		bool finds = ctl_has(req, CTL_F_ID) || ctl_has(req, CTL_F_GROUP) ||
			     ctl_has(req, CTL_F_DEDUPE) || ctl_has(req, CTL_F_ERROR);
		buf_puts(&b, "state=");
		query_value(&b, ctl_has(req, CTL_F_STATE) ? req->state : finds ? "any" : "dead");
		if (ctl_has(req, CTL_F_QUEUE)) {
			buf_puts(&b, "&queue=");
			query_value(&b, req->queue);
		}
		jobs_filter_query(&b, req);
		buf_puts(&b, "&");
	}
	buf_printf(&b, "limit=%u&before=%llu>; rel=\"next\"", limit, (unsigned long long)last);
add:
	if (!buf_failed(&b))
		http_add_header(r, "Link", b.data);
	buf_free(&b);
}

static void on_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct api_call *call = data;
	struct http_request *r = call->r;
	unsigned status = 200;
	char head[64];
	struct buf b;

	if ((req->verb == CTL_JOB || req->verb == CTL_BATCH) && api_watch_job(call, res))
		return;
	buf_init(&b);
	if (req->verb == CTL_BULK && res->rc == -ESTALE) {
		/* A confirm that is not the count: the count now, to confirm again. */
		answer_json(&mismatch_entity, &(struct answer_mismatch){ .error = res->err,
							     .count = res->count }, &b);
		api_respond_buf(r, 409, &b);
		free(call);
		return;
	}
	if (res->rc < 0) {
		http_respond_error(r, api_status_of(res->rc), res->err);
		free(call);
		return;
	}
	if (req->verb == CTL_ADD) {
		snprintf(head, sizeof(head), "%llu", (unsigned long long)res->id);
		http_add_header(r, "X-Job-Id", head);
		snprintf(head, sizeof(head), "/v1/jobs/%llu", (unsigned long long)res->id);
		http_add_header(r, "Location", head);
		status = res->duplicate ? 200 : 202;
	}
	if (req->verb == CTL_SCHEDULE)
		status = res->replaced ? 200 : 201;
	if (req->verb == CTL_CANCEL && res->cancelling)
		status = 202;
	link_next(r, req, res);
	cmd_render(req, res, &b);   /* the request has json set: its JSON form */
	api_respond_buf(r, status, &b);
	free(call);
}

/* Text goes into text columns: the first of the path's values, the query's names and values
 * and the payload's Content-Type that is not UTF-8 is refused, 400 by name. Returns whether
 * r was answered so. */
static bool text_refused(struct http_request *r, const char *const *pnames,
			 const char *const *pvalues, size_t npath, bool payload)
{
	const char *const *qn, *const *qv;
	size_t n = http_args(r, &qn, &qv);
	const char *type = payload ? http_header(r, "Content-Type") : NULL, *bad = NULL;
	char err[96];

	for (size_t i = 0; !bad && i < npath; i++)
		bad = api_utf8_valid(pvalues[i]) ? NULL : pnames[i];
	for (size_t i = 0; !bad && i < n; i++)
		bad = !api_utf8_valid(qn[i]) ? "a query parameter's name" :
		      !api_utf8_valid(qv[i]) ? qn[i] : NULL;
	if (!bad && type && !api_utf8_valid(type))
		bad = "content_type";
	if (!bad)
		return false;
	snprintf(err, sizeof(err), "%.64s: not UTF-8", bad);
	http_respond_error(r, 400, err);
	return true;
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
	if (text_refused(r, pnames, pvalues, npath, payload)) {
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
			call->deadline = uv_now(h->host.loop) + ms;
			continue;
		}
		names[k] = qn[i];
		values[k++] = qv[i];
	}
	if (payload && !body)
		body = (const unsigned char *)"";
	/* The payload's type is kept with the row (a query parameter says it otherwise). */
	const char *type = payload ? http_header(r, "Content-Type") : NULL;
	for (size_t i = npath; type && i < k; i++)
		if (!strcmp(names[i], "content_type"))
			type = NULL;
	if (type) {
		names[k] = "content_type";
		values[k++] = type;
	}
	/* An add's Idempotency-Key header is its dedupe key (unless the query gives one): the
	 * same key again answers the row it made (200, "duplicate"), for the dedupe window. */
	const char *idem = verb == CTL_ADD ? http_header(r, "Idempotency-Key") : NULL;
	for (size_t i = npath; idem && i < k; i++)
		if (!strcmp(names[i], "dedupe"))
			idem = NULL;
	if (idem) {
		names[k] = "dedupe";
		values[k++] = idem;
	}
	if (ctl_from_params(verb, names, values, k, body, len, &call->req, err,
			    sizeof(err)) < 0) {
		http_respond_error(r, 400, err);
		free(call);
		return;
	}
	if (verb == CTL_ADD)
		api_trace_default(r, &call->req);
	/* An event stream, a ?wait: its connection is held, one of --http-max-streams. */
	if ((call->events || call->deadline) && http_long_lived(r) < 0) {
		free(call);
		return;
	}
	cmd_run(h->cmds, &call->req, on_done, call);
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

	if (h->host.healthy(h->host.data, why, sizeof(why)))
		http_respond(r, 200, "text/plain; charset=utf-8", "ok\n", 3);
	else {
		size_t n = strlen(why);
		why[n < sizeof(why) - 1 ? n : n - 1] = '\n';
		http_respond(r, 503, "text/plain; charset=utf-8", why, n + 1 < sizeof(why) ? n + 1 : n);
	}
}

/* GET /v1/stats?seconds=N: the items this supervisor's workers finished per second
 * (jobstats), the dashboard's chart. Without seconds, the cluster's history (CTL_STATS). */
static bool per_second(struct http_request *r)
{
	const char *const *qn, *const *qv;
	size_t n = http_args(r, &qn, &qv);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(qn[i], "seconds"))
			return true;
	return false;
}

static void stats(struct api_host *h, struct http_request *r)
{
	const char *const *qn, *const *qv;
	size_t n = http_args(r, &qn, &qv);
	unsigned seconds = 300;
	uint32_t done[JOBSTATS_SECONDS], failed[JOBSTATS_SECONDS];
	struct buf b;

	for (size_t i = 0; i < n; i++) {
		char *end;
		unsigned long v = strtoul(qv[i], &end, 10);
		if (strcmp(qn[i], "seconds") != 0 || !*qv[i] || *end || v < 1 ||
		    v > JOBSTATS_SECONDS) {
			http_respond_error(r, 400, "stats takes seconds=1..600 only");
			return;
		}
		seconds = (unsigned)v;
	}
	uint64_t now_s = uv_now(h->host.loop) / 1000u;
	seconds = jobstats_series(h->host.stats, now_s, seconds, done, failed);
	json_t *o = json_pack("{s:I, s:I}", "now", (json_int_t)now_s, "seconds",
			      (json_int_t)seconds);
	json_t *d = json_array(), *f = json_array();

	for (unsigned i = 0; i < seconds; i++) {
		json_array_append_new(d, json_integer(done[i]));
		json_array_append_new(f, json_integer(failed[i]));
	}
	json_object_set_new(o, "done", d);
	json_object_set_new(o, "failed", f);
	buf_init(&b);
	entity_dump(o, &b);
	api_respond_buf(r, 200, &b);
}

/* A route: the path's segments, the methods it answers, and what it runs. */
enum route_kind { R_HEALTHZ, R_METRICS, R_STATS, R_BATCH, R_STATUS, R_SUPERVISORS, R_QUEUES,
		  R_JOBS, R_ADD, R_PAUSE, R_RESUME, R_JOB, R_EVENTS, R_RETRY, R_SCHEDULES,
		  R_SCHEDULE, R_SCHEDULE_PAUSE, R_SCHEDULE_RESUME, R_BATCH_LIST, R_BATCH_GET,
		  R_BATCH_EVENTS, R_LIMIT, R_LIMITS, R_OPENAPI, R_BACKOFF, R_BULK };

#define READ "GET, HEAD"

struct route {
	const char *path[4];      /* segments; "*" is a value (a queue name, an id) */
	const char *allow;        /* its methods, as the Allow header lists them */
	const char *tag;
	enum route_kind kind;
};

static const struct route routes[] = {
	{ { "healthz" }, READ, "healthz", R_HEALTHZ },
	{ { "metrics" }, READ, "metrics", R_METRICS },
	{ { "v1", "openapi.json" }, READ, "openapi", R_OPENAPI },
	{ { "v1", "status" }, READ, "status", R_STATUS },
	{ { "v1", "supervisors" }, READ, "supervisors", R_SUPERVISORS },
	{ { "v1", "stats" }, READ, "stats", R_STATS },
	{ { "v1", "queues" }, READ, "queues", R_QUEUES },
	{ { "v1", "queues", "*", "jobs" }, "POST", "jobs.add", R_ADD },
	{ { "v1", "queues", "*", "jobs:batch" }, "POST", "jobs.batch", R_BATCH },
	{ { "v1", "queues", "*", "pause" }, "POST", "queue.pause", R_PAUSE },
	{ { "v1", "queues", "*", "resume" }, "POST", "queue.resume", R_RESUME },
	{ { "v1", "queues", "*", "limit" }, "POST", "queue.limit", R_LIMIT },
	{ { "v1", "queues", "*", "limits" }, READ, "queue.limits", R_LIMITS },
	{ { "v1", "queues", "*", "backoff" }, "POST", "queue.backoff", R_BACKOFF },
	{ { "v1", "jobs" }, READ, "jobs", R_JOBS },
	{ { "v1", "jobs", "bulk" }, "POST", "jobs.bulk", R_BULK },
	{ { "v1", "jobs", "*" }, READ ", DELETE", "job", R_JOB },
	{ { "v1", "jobs", "*", "events" }, READ, "job.events", R_EVENTS },
	{ { "v1", "jobs", "*", "retry" }, "POST", "job.retry", R_RETRY },
	{ { "v1", "schedules" }, READ, "schedules", R_SCHEDULES },
	{ { "v1", "schedules", "*" }, READ ", PUT, DELETE", "schedule", R_SCHEDULE },
	{ { "v1", "schedules", "*", "pause" }, "POST", "schedule.pause", R_SCHEDULE_PAUSE },
	{ { "v1", "schedules", "*", "resume" }, "POST", "schedule.pause", R_SCHEDULE_RESUME },
	{ { "v1", "batches" }, READ, "batches", R_BATCH_LIST },
	{ { "v1", "batches", "*" }, READ, "batch", R_BATCH_GET },
	{ { "v1", "batches", "*", "events" }, READ, "batch.events", R_BATCH_EVENTS },
};

static const struct route *find_route(char **seg, int n, const char **ret_arg)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *rt = &routes[i];
		int k = 0;
		for (; k < n && k < 4 && rt->path[k]; k++)
			if (strcmp(rt->path[k], "*") != 0 && strcmp(rt->path[k], seg[k]) != 0)
				break;
		if (k != n || (k < 4 && rt->path[k]))
			continue;
		*ret_arg = n >= 3 ? seg[2] : NULL;
		return rt;
	}
	return NULL;
}

/* Whether m is one of the methods allow lists. */
static bool method_ok(const char *allow, const char *m)
{
	size_t n = strlen(m);

	for (const char *p = allow; *p; p += strspn(p, ", ")) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, m, n))
			return true;
		p += k;
	}
	return false;
}

static void not_allowed(struct http_request *r, const char *allow)
{
	http_add_header(r, "Allow", allow);
	http_respond_error(r, 405, "method not allowed on this route");
}

/* The route of r's path (copied into path, which its segments and *ret_arg point into), or
 * NULL: r is answered then (404, or 405 with Allow). */
static const struct route *route_of(struct http_request *r, char *path, size_t len,
				    const char **ret_arg)
{
	const struct route *rt = NULL;
	char *seg[5];
	int n = -1;

	if (strlen(http_path(r)) < len) {
		snprintf(path, len, "%s", http_path(r));
		n = split(path, seg, 5);
	}
	rt = n > 0 ? find_route(seg, n, ret_arg) : NULL;
	if (!rt) {
		http_respond_error(r, 404, "no such route");
		return NULL;
	}
	http_set_tag(r, rt->tag);
	if (!method_ok(rt->allow, http_method(r))) {
		not_allowed(r, rt->allow);
		return NULL;
	}
	return rt;
}

void api_early(void *data, struct http_request *r)
{
	char path[sizeof(((struct api_call *)0)->path)];
	const char *arg;

	(void)data;
	if (ui_path(http_path(r))) {
		http_set_tag(r, "ui");
		if (!method_ok(READ, http_method(r)))
			not_allowed(r, READ);
		return;
	}
	route_of(r, path, sizeof(path), &arg);
}

void api_handle(void *data, struct http_request *r)
{
	struct api_host *h = data;
	const char *m = http_method(r), *arg = NULL, *pn[2], *pv[2];
	const struct route *rt;
	struct api_call *call;

	if (ui_serve(r))
		return;
	call = calloc(1, sizeof(*call));
	if (!call) {
		http_respond_error(r, 500, "out of memory");
		return;
	}
	call->r = r;
	call->h = h;
	rt = route_of(r, call->path, sizeof(call->path), &arg);
	if (!rt) {
		free(call);
		return;
	}
	pn[0] = "json";
	pv[0] = "1";
	pn[1] = rt->kind == R_ADD || rt->kind == R_PAUSE || rt->kind == R_RESUME ||
		rt->kind == R_LIMIT || rt->kind == R_LIMITS || rt->kind == R_BACKOFF ? "queue" :
		rt->kind == R_SCHEDULE ? "name" :
		rt->kind == R_SCHEDULE_PAUSE || rt->kind == R_SCHEDULE_RESUME ? "schedule" : "id";
	pv[1] = arg;
	switch (rt->kind) {
	/* answered here */
	case R_HEALTHZ: healthz(h, r); free(call); break;
	case R_METRICS: metrics(h, r); free(call); break;
	case R_STATS:
		if (per_second(r)) {
			stats(h, r);
			free(call);
		} else {
			run(h, call, CTL_STATS, pn, pv, 1, false);
		}
		break;
	case R_OPENAPI:
		http_respond(r, 200, "application/json", openapi_json, openapi_json_len);
		free(call);
		break;
	case R_BATCH: api_batch(h, r, arg); free(call); break;
	/* commands answered in JSON */
	case R_STATUS: run(h, call, CTL_STATUS, pn, pv, 1, false); break;
	case R_SUPERVISORS: run(h, call, CTL_SUPERVISORS, pn, pv, 1, false); break;
	case R_QUEUES: run(h, call, CTL_QUEUES, pn, pv, 1, false); break;
	case R_JOBS: run(h, call, CTL_JOBS, pn, pv, 1, false); break;
	case R_BULK: run(h, call, CTL_BULK, pn, pv, 1, false); break;
	/* with a queue or an id in the path */
	case R_ADD: run(h, call, CTL_ADD, pn, pv, 2, true); break;
	case R_PAUSE: run(h, call, CTL_PAUSE, pn, pv, 2, false); break;
	case R_RESUME: run(h, call, CTL_RESUME, pn, pv, 2, false); break;
	case R_BACKOFF: run(h, call, CTL_BACKOFF, pn, pv, 2, false); break;
	case R_RETRY: run(h, call, CTL_RETRY, pn, pv, 2, false); break;
	case R_LIMIT: run(h, call, CTL_LIMIT, pn, pv, 2, false); break;
	case R_LIMITS: run(h, call, CTL_LIMITS, pn, pv, 2, false); break;
	case R_SCHEDULES: run(h, call, CTL_SCHEDULES, pn, pv, 1, false); break;
	case R_BATCH_LIST: run(h, call, CTL_BATCHES, pn, pv, 1, false); break;
	case R_BATCH_GET: run(h, call, CTL_BATCH, pn, pv, 2, false); break;
	case R_BATCH_EVENTS:
		call->events = true;
		run(h, call, CTL_BATCH, pn, pv, 2, false);
		break;
	case R_SCHEDULE_PAUSE: run(h, call, CTL_PAUSE, pn, pv, 2, false); break;
	case R_SCHEDULE_RESUME: run(h, call, CTL_RESUME, pn, pv, 2, false); break;
	case R_SCHEDULE:
		if (!strcmp(m, "PUT"))
			run(h, call, CTL_SCHEDULE, pn, pv, 2, true);
		else if (!strcmp(m, "DELETE"))
			run(h, call, CTL_UNSCHEDULE, pn, pv, 2, false);
		else
			run(h, call, CTL_SCHEDULES, pn, pv, 2, false);
		break;
	case R_EVENTS:
		call->events = true;
		run(h, call, CTL_JOB, pn, pv, 2, false);
		break;
	default:  /* R_JOB */
		if (!strcmp(m, "DELETE"))
			run(h, call, CTL_CANCEL, pn, pv, 2, false);
		else
			run(h, call, CTL_JOB, pn, pv, 2, false);
	}
}
