/* Requests and answers. A request's life is one enum (http_state.h) changed only by
 * http_enter. A request waiting for its answer (HTTP_S_WAITING, HTTP_S_STREAM_IDLE) is a
 * suspended connection (MHD stops watching it); leaving that state resumes it, which MHD
 * takes up in its next run. */
#include "console/http_int.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "console/answers.h"

static void free_request(struct http_request *r)
{
	if (r->resp)
		mhd.destroy_response(r->resp);
	for (size_t i = 0; i < r->nhdrs; i++) {
		free(r->hdr_names[i]);
		free(r->hdr_values[i]);
	}
	free(r->method);
	free(r->path);
	free(r->body);
	buf_free(&r->stream);
	free(r);
}

static bool suspended_in(enum http_state s)
{
	return s == HTTP_S_WAITING || s == HTTP_S_STREAM_IDLE;
}

void http_enter(struct http_request *r, enum http_state to)
{
	enum http_state from = r->state;

	if (!http_state_may_follow(from, to)) {
		log_error("http: a request may not go from %s to %s", http_state_name(from),
			  http_state_name(to));
		assert(!"an HTTP request's illegal transition");
	}
	log_debug("http: request %s -> %s", http_state_name(from), http_state_name(to));
	r->state = to;
	if (r->long_lived && (to == HTTP_S_ORPHAN || to == HTTP_S_DONE)) {
		r->long_lived = false;   /* its connection is done with it */
		r->srv->nstreams--;
	}
	if (to == HTTP_S_DONE) {
		free_request(r);
		return;
	}
	if (suspended_in(to)) {
		mhd.suspend_connection(r->conn);
	} else if (suspended_in(from) && to != HTTP_S_ORPHAN) {
		/* In external polling mode MHD takes a resumed connection up in its next MHD_run,
		 * which nothing else may cause soon: run it on the loop's next turn. */
		mhd.resume_connection(r->conn);
		r->dmn->kick(r->dmn);
	}
}

/* ---- answers ---- */

/* Give MHD the answer made (r->resp). */
static enum MHD_Result queue(struct http_request *r)
{
	enum MHD_Result ok = mhd.queue_response(r->conn, r->status, r->resp);

	mhd.destroy_response(r->resp);
	r->resp = NULL;
	if (r->state == HTTP_S_ANSWERED)
		http_enter(r, HTTP_S_SENT);
	return ok;
}

void http_add_common_headers(struct MHD_Response *resp)
{
	static const char *const headers[][2] = {
		{ MHD_HTTP_HEADER_CACHE_CONTROL, "no-store" },
		{ "X-Content-Type-Options", "nosniff" },
		{ "X-Frame-Options", "DENY" },
		{ "Referrer-Policy", "no-referrer" },
		{ "Content-Security-Policy", "default-src 'none'; script-src 'self'; "
		  "style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; "
		  "base-uri 'none'; frame-ancestors 'none'" },
	};

	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++)
		mhd.add_response_header(resp, headers[i][0], headers[i][1]);
}

void http_add_header(struct http_request *r, const char *name, const char *value)
{
	if (r->nhdrs == HEADERS_MAX)
		return;
	r->hdr_names[r->nhdrs] = strdup(name);
	r->hdr_values[r->nhdrs] = strdup(value);
	if (r->hdr_names[r->nhdrs] && r->hdr_values[r->nhdrs])
		r->nhdrs++;
	else {
		free(r->hdr_names[r->nhdrs]);
		free(r->hdr_values[r->nhdrs]);
	}
}

void http_respond(struct http_request *r, unsigned status, const char *type, const void *body,
		  size_t len)
{
	switch (r->state) {
	case HTTP_S_HEADERS:
	case HTTP_S_TOO_BIG:
	case HTTP_S_HANDLER:
	case HTTP_S_WAITING:
		break;
	case HTTP_S_ORPHAN:
		http_enter(r, HTTP_S_DONE);   /* its connection is gone: the answer too */
		return;
	case HTTP_S_OWED:
		/* Answered at close already: this answer is dropped, and nothing holds r now. */
		http_enter(r, r->resp ? HTTP_S_ANSWERED : HTTP_S_SENT);
		return;
	default:
		return;   /* answered already */
	}
	/* MHD takes a void * but with MUST_COPY only reads it. */
	void *copy_from;

	memcpy(&copy_from, &body, sizeof(copy_from));
	r->resp = mhd.create_response_from_buffer(len, copy_from, MHD_RESPMEM_MUST_COPY);
	if (!r->resp) {
		/* Out of memory: the connection is closed without an answer. */
		r->resp = mhd.create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		status = 500;
	}
	r->status = status;
	if (r->srv->o.on_answer)
		r->srv->o.on_answer(r->srv->o.data, r->tag ? r->tag : "other", status);
	if (type)
		mhd.add_response_header(r->resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	http_add_common_headers(r->resp);
	for (size_t i = 0; i < r->nhdrs; i++)
		mhd.add_response_header(r->resp, r->hdr_names[i], r->hdr_values[i]);
	http_enter(r, HTTP_S_ANSWERED);
}

void http_respond_error(struct http_request *r, unsigned status, const char *message)
{
	struct buf b;

	buf_init(&b);
	answer_json(&error_entity, &(struct answer_error){ .error = message }, &b);
	if (buf_failed(&b) || !b.len || b.data[0] != '{')   /* out of memory: "null" */
		http_respond(r, status, "application/json", "{\"error\":\"out of memory\"}\n", 26);
	else
		http_respond(r, status, "application/json", b.data, b.len);
	buf_free(&b);
}

/* ---- requests ---- */

void http_set_tag(struct http_request *r, const char *tag)
{
	r->tag = tag;
}

int http_long_lived(struct http_request *r)
{
	struct http_server *s = r->srv;
	char msg[160], retry[16];

	if (r->long_lived)
		return 0;
	if (s->nstreams < s->o.max_streams) {
		s->nstreams++;
		r->long_lived = true;
		return 0;
	}
	s->streams_refused++;
	snprintf(retry, sizeof(retry), "%d", HTTP_STREAMS_RETRY_S);
	snprintf(msg, sizeof(msg), "%u event streams and waiting requests at once already "
		 "(--http-max-streams): try again later", s->o.max_streams);
	http_add_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	/* A client that ignores Retry-After holds no idle connection. */
	http_add_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	http_respond_error(r, 503, msg);
	return -EBUSY;
}

bool http_gone(const struct http_request *r)
{
	const union MHD_ConnectionInfo *info;
	struct pollfd p;

	if (r->state == HTTP_S_ORPHAN || r->state == HTTP_S_OWED)
		return true;
	if (!suspended_in(r->state) || !r->conn)
		return false;   /* MHD watches it: it tells when it closes */
	info = mhd.get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return false;
	p = (struct pollfd){ .fd = info->connect_fd, .events = POLLRDHUP };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

const char *http_method(const struct http_request *r)
{
	return r->method;
}

const char *http_path(const struct http_request *r)
{
	return r->path;
}

size_t http_args(const struct http_request *r, const char *const **names,
		 const char *const **values)
{
	*names = r->names;
	*values = r->values;
	return r->nargs;
}

bool http_args_overflow(const struct http_request *r)
{
	return r->args_overflow;
}

const char *http_header(const struct http_request *r, const char *name)
{
	return mhd.lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const unsigned char *http_body(const struct http_request *r, size_t *len)
{
	*len = r->len;
	return r->body;
}

static enum MHD_Result take_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	struct http_request *r = cls;

	(void)kind;
	if (r->nargs == HTTP_ARGS_MAX) {
		r->args_overflow = true;
		return MHD_NO;
	}
	r->names[r->nargs] = key;
	r->values[r->nargs++] = value ? value : "";
	return MHD_YES;
}

static bool append_body(struct http_request *r, const char *data, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		void *p = realloc(r->body, cap);
		if (!p)
			return false;
		r->body = p;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return true;
}

static void too_large(struct http_request *r)
{
	char msg[96];

	snprintf(msg, sizeof(msg), "the body is over %zu bytes", r->srv->o.max_body);
	http_respond_error(r, 413, msg);
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return mhd.lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The first call for a request: its headers are in, none of its body is read. */
static struct http_request *new_request(struct http_daemon *d, struct MHD_Connection *c,
					const char *url, const char *method)
{
	struct http_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->srv = d->srv;
	r->dmn = d;
	r->conn = c;
	r->next = d->requests;
	if (d->requests)
		d->requests->prev = r;
	d->requests = r;
	r->method = strdup(method);
	r->path = strdup(url);
	r->hc = http_conn_of(c);
	http_conn_busy(r->hc, true);
	d->srv->in_flight++;
	return r;
}

/* Whether the request may go on, decided before its body is read: its Host, origin and
 * token (http_guard), the handler's early check, a Content-Length over the limit. A refusal
 * is queued now: MHD then reads none of the body and closes the connection after the
 * answer. */
static enum MHD_Result first_call(struct http_request *r)
{
	struct http_server *s = r->srv;
	struct MHD_Connection *c = r->conn;
	struct http_guard_request q = {
		.method = r->method, .host = header(c, MHD_HTTP_HEADER_HOST),
		.origin = header(c, MHD_HTTP_HEADER_ORIGIN), .fetch_site = header(c, "Sec-Fetch-Site"),
		.authorization = header(c, MHD_HTTP_HEADER_AUTHORIZATION),
		.access = s->o.access_of ? s->o.access_of(r->path) : HTTP_PATH_TOKEN,
	};
	enum http_verdict v = http_guard_check(&s->guard, &q);
	const char *cl = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (v != HTTP_ALLOW) {
		http_set_tag(r, "refused");
		if (v == HTTP_NO_TOKEN)
			http_add_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
		http_respond_error(r, http_verdict_status(v), http_verdict_message(v));
		return queue(r);
	}
	if (s->o.early) {
		s->o.early(s->o.data, r);
		if (r->state == HTTP_S_ANSWERED)
			return queue(r);
	}
	if (cl && strtoull(cl, NULL, 10) > s->o.max_body) {
		too_large(r);
		return queue(r);
	}
	http_enter(r, HTTP_S_BODY);
	return MHD_YES;
}

/* A piece of the body. What is over the limit is dropped (MHD takes no answer while a body
 * comes in), and the 413 sent at its end; a body over twice the limit is not worth reading
 * to its end: its connection is closed. */
static enum MHD_Result take_body(struct http_request *r, const char *upload, size_t *upload_size)
{
	size_t max = r->srv->o.max_body;

	if (r->state == HTTP_S_TOO_BIG || r->len + *upload_size > max) {
		if (r->state == HTTP_S_BODY)
			http_enter(r, HTTP_S_TOO_BIG);
		r->dropped += *upload_size;
		*upload_size = 0;
		return r->dropped > max ? MHD_NO : MHD_YES;
	}
	if (!append_body(r, upload, *upload_size))
		return MHD_NO;
	*upload_size = 0;
	return MHD_YES;
}

/* The whole request is in: hand it over. */
static enum MHD_Result dispatch(struct http_request *r)
{
	struct http_server *s = r->srv;

	mhd.get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, take_arg, r);
	http_enter(r, HTTP_S_HANDLER);
	s->o.handle(s->o.data, r);
	if (r->resp)
		return queue(r);   /* answered, or a stream started */
	http_enter(r, HTTP_S_WAITING);
	return MHD_YES;
}

enum MHD_Result http_on_access(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct http_request *r = *con_cls;

	(void)version;
	if (!r) {
		r = new_request(cls, c, url, method);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		if (!r->method || !r->path)
			return MHD_NO;
		return first_call(r);
	}
	if (r->resp)
		return queue(r);   /* an answer made while the connection was suspended */
	switch (r->state) {
	case HTTP_S_BODY:
		return *upload_size ? take_body(r, upload, upload_size) : dispatch(r);
	case HTTP_S_TOO_BIG:
		if (*upload_size)
			return take_body(r, upload, upload_size);
		too_large(r);
		return queue(r);
	default:
		return MHD_YES;
	}
}
void http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		       enum MHD_RequestTerminationCode why)
{
	struct http_daemon *d = cls;
	struct http_request *r = *con_cls;

	(void)c;
	(void)why;
	if (!r)
		return;
	*con_cls = NULL;
	if (r->prev)
		r->prev->next = r->next;
	else
		d->requests = r->next;
	if (r->next)
		r->next->prev = r->prev;
	d->srv->in_flight--;
	http_conn_busy(r->hc, false);
	r->hc = NULL;
	switch (r->state) {
	case HTTP_S_STREAM:
	case HTTP_S_STREAM_IDLE:
		if (r->on_gone)
			r->on_gone(r->gone_data);  /* the client went (or the server stops) mid-stream */
		break;
	case HTTP_S_HANDLER:
	case HTTP_S_WAITING:
	case HTTP_S_OWED:
		/* A command still holds r: it frees r when it answers. */
		r->conn = NULL;
		http_enter(r, HTTP_S_ORPHAN);
		return;
	default:
		break;
	}
	http_enter(r, HTTP_S_DONE);
}
