/* libmicrohttpd in "external epoll" mode: its epoll descriptor is one uv_poll on our loop,
 * and its timeouts one uv_timer; MHD_run does the work of both. A request waiting for its
 * answer is a suspended connection (MHD stops watching it); http_respond resumes it, which
 * wakes MHD's epoll through its inter-thread channel. */
#include "supervisor/http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/log.h"
#include "common/secret.h"

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

/* ---- the loop ---- */

static void schedule(struct http_server *s);

static void run(struct http_server *s)
{
	mhd.run(s->d);
	schedule(s);
}

static void on_timer(uv_timer_t *t)
{
	run(t->data);
}

void http_kick(struct http_server *s)
{
	uv_timer_start(&s->timer, on_timer, 0, 0);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	run(p->data);
}

static void schedule(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (mhd.get_timeout(s->d, &ms) == MHD_YES)
		uv_timer_start(&s->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&s->timer);
}

/* ---- answers ---- */

static enum MHD_Result queue(struct http_request *r)
{
	enum MHD_Result ok = mhd.queue_response(r->conn, r->status, r->resp);

	mhd.destroy_response(r->resp);
	r->resp = NULL;
	r->queued = true;
	return ok;
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
	if (r->orphan) {
		free_request(r);
		return;
	}
	if (r->owed)
		return;  /* answered at close already */
	if (r->resp || r->queued)
		return;
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
	mhd.add_response_header(r->resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (size_t i = 0; i < r->nhdrs; i++)
		mhd.add_response_header(r->resp, r->hdr_names[i], r->hdr_values[i]);
	if (r->suspended) {
		/* In external polling mode MHD takes a resumed connection up in its next MHD_run,
		 * which nothing else may cause soon: run it on the loop's next turn. */
		r->suspended = false;
		mhd.resume_connection(r->conn);
		uv_timer_start(&r->srv->timer, on_timer, 0, 0);
	}
}

void http_respond_error(struct http_request *r, unsigned status, const char *message)
{
	struct buf b;

	buf_init(&b);
	buf_puts(&b, "{\"error\":");
	buf_json_str(&b, message);
	buf_puts(&b, "}\n");
	if (buf_failed(&b))
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

/* The token, compared in time that does not depend on where it differs. */
static bool authorized(const struct http_request *r)
{
	const struct http_server *s = r->srv;
	const char *h = http_header(r, MHD_HTTP_HEADER_AUTHORIZATION);
	size_t n = strlen(s->token), m;
	unsigned char diff = 0;

	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	m = strlen(h);
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(s->token[i] ^ (i < m ? h[i] : 0));
	return diff == 0 && m == n;
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

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_request *r = *con_cls;
	const char *cl;

	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->srv = s;
		r->conn = c;
		r->next = s->requests;
		if (s->requests)
			s->requests->prev = r;
		s->requests = r;
		r->method = strdup(method);
		r->path = strdup(url);
		*con_cls = r;
		s->in_flight++;
		if (!r->method || !r->path)
			return MHD_NO;
		cl = mhd.lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > s->o.max_body) {
			too_large(r);
			return queue(r);
		}
		return MHD_YES;
	}
	if (r->queued)
		return MHD_YES;
	if (*upload_size) {
		/* MHD takes no answer while a body comes in: what is over the limit is read and
		 * dropped, and the 413 sent at its end; a body over 16 times the limit is not worth
		 * reading to its end, and its connection is closed. */
		if (r->too_big || r->len + *upload_size > s->o.max_body) {
			r->too_big = true;
			r->dropped += *upload_size;
			*upload_size = 0;
			return r->dropped / 16 > s->o.max_body ? MHD_NO : MHD_YES;
		}
		if (!append_body(r, upload, *upload_size))
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->resp)
		return queue(r);
	if (r->dispatched)
		return MHD_YES;
	if (r->too_big) {
		too_large(r);
		return queue(r);
	}
	r->dispatched = true;
	mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, take_arg, r);
	if (s->has_token && !s->o.is_open(r->path) && !authorized(r)) {
		http_add_header(r, "WWW-Authenticate", "Bearer");
		http_respond_error(r, 401, "this needs Authorization: Bearer <token>");
	} else {
		r->in_handler = true;
		s->o.handle(s->o.data, r);
		r->in_handler = false;
	}
	if (r->resp)
		return queue(r);
	r->suspended = true;
	mhd.suspend_connection(c);
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct http_server *s = cls;
	struct http_request *r = *con_cls;

	(void)c;
	(void)why;
	if (!r)
		return;
	*con_cls = NULL;
	if (r->prev)
		r->prev->next = r->next;
	else
		s->requests = r->next;
	if (r->next)
		r->next->prev = r->prev;
	s->in_flight--;
	if (r->streaming && r->on_gone)
		r->on_gone(r->gone_data);  /* the client went (or the server stops) mid-stream */
	if (r->owed || (r->dispatched && !r->resp && !r->queued)) {
		/* A command still holds r: it frees r when it answers. */
		r->orphan = true;
		r->conn = NULL;
		return;
	}
	free_request(r);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_debug("http: %s", msg);
}

/* ---- the server ---- */

int http_read_token(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char line[HTTP_TOKEN_MAX + 1], why[300];
	size_t n;

	if (secret_read("--http-token-file", path, line, sizeof(line), why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -EINVAL;
	}
	n = strlen(line);
	for (size_t i = 0; i < n; i++)
		if (line[i] <= ' ' || line[i] > '~') {
			snprintf(err, errlen, "--http-token-file %s: the token has a character that is "
				 "not printable ASCII (or a space)", path);
			return -EINVAL;
		}
	if (n < 16 || n >= outlen) {
		snprintf(err, errlen, "--http-token-file %s: the token (its first line) must be 16 "
			 "to %d characters", path, HTTP_TOKEN_MAX);
		return -EINVAL;
	}
	memcpy(out, line, n + 1);
	return 0;
}

static void format_address(struct http_server *s, unsigned port)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (s->o.addr->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)s->o.addr)->sin6_addr, host,
			  sizeof(host));
		snprintf(s->address, sizeof(s->address), "[%s]:%u", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)s->o.addr)->sin_addr, host,
			  sizeof(host));
		snprintf(s->address, sizeof(s->address), "%s:%u", host, port);
	}
}

int http_open(const struct http_opts *o, struct http_server **ret, char *err, size_t errlen)
{
	struct http_server *s = calloc(1, sizeof(*s));
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int r;

	if (!s)
		return -ENOMEM;
	r = http_load_mhd(err, errlen);
	if (r < 0) {
		free(s);
		return r;
	}
	s->o = *o;
	if (o->token) {
		snprintf(s->token, sizeof(s->token), "%s", o->token);
		s->has_token = true;
	}
	if (o->addr->sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = mhd.start_daemon(flags, 0, NULL, NULL, on_access, s,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				MHD_OPTION_SOCK_ADDR, o->addr,
				MHD_OPTION_CONNECTION_LIMIT, o->max_conns,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_END);
	if (!s->d) {
		r = errno ? -errno : -EIO;
		format_address(s, ntohs(o->addr->sa_family == AF_INET6 ?
					((const struct sockaddr_in6 *)o->addr)->sin6_port :
					((const struct sockaddr_in *)o->addr)->sin_port));
		snprintf(err, errlen, "http: cannot listen on %s: %s", s->address, strerror(-r));
		free(s);
		return r;
	}
	info = mhd.get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	format_address(s, info ? info->port : 0);
	info = mhd.get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);
	uv_timer_init(o->loop, &s->timer);
	s->timer.data = s;
	s->open_handles = 1;
	r = info ? uv_poll_init(o->loop, &s->poll, info->epoll_fd) : -EIO;
	if (r < 0) {
		snprintf(err, errlen, "http: cannot watch the server: %s", uv_strerror(r));
		http_close(s);
		return r;
	}
	s->open_handles++;
	s->poll.data = s;
	uv_poll_start(&s->poll, UV_READABLE, on_poll);
	schedule(s);
	*ret = s;
	return 0;
}

const char *http_address(const struct http_server *s)
{
	return s->address;
}

unsigned http_in_flight(const struct http_server *s)
{
	return s->in_flight;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct http_server *s = h->data;

	if (--s->open_handles == 0)
		free(s);
}

void http_close(struct http_server *s)
{
	if (!s)
		return;
	if (s->open_handles > 1)
		uv_poll_stop(&s->poll);
	/* MHD stops only with no connection suspended. A request whose command has not answered
	 * yet is answered 503 now; the command's answer, when it comes, frees it (orphan). */
	bool resumed = false;
	for (struct http_request *r = s->requests; r; r = r->next) {
		if (r->dispatched && !r->resp && !r->queued) {
			http_respond_error(r, 503, "claimd is stopping");
			r->owed = true;
		}
		resumed |= r->resp && !r->queued;
	}
	/* Answers given but not yet taken up by MHD: a few turns to send them, best effort. */
	for (int i = 0; resumed && s->d && i < 3; i++)
		mhd.run(s->d);
	if (s->d) {
		mhd.stop_daemon(s->d);
		s->d = NULL;
	}
	if (s->open_handles > 1)
		uv_close((uv_handle_t *)&s->poll, on_handle_closed);
	uv_close((uv_handle_t *)&s->timer, on_handle_closed);
}
