/* http — the supervisor's HTTP server: libmicrohttpd (it parses every byte a client sends)
 * driven from the supervisor's libuv loop through its epoll descriptor, no thread of its
 * own. A request is handed over once its whole body is in; the answer may come later (a
 * database job): meanwhile the connection is suspended, and the loop goes on.
 *
 * Before any of a request's body is read (in libmicrohttpd's first call for it), its Host,
 * its origin and its token are checked (http_guard.h) and the handler's early check runs
 * (a route that does not exist, a method it does not take): a refusal is answered then, and
 * the body never read.
 *
 * Limits: at most max_conns connections (more wait in the kernel's queue) and
 * max_conns_per_ip from one client (more are closed at accept; a client is an IPv4 address or
 * an IPv6 /64, http_peer.h), a body of at most max_body bytes (413: at once when
 * Content-Length tells, else at the body's end, what passed the limit dropped; past twice the
 * limit the connection is closed without an answer), a connection idle for HTTP_TIMEOUT_S is
 * closed. At most max_streams requests are long-lived at once (http_long_lived: event streams
 * and long polls, suspended connections that never time out): the rest of max_conns is kept
 * for short requests, /healthz and /metrics. When fewer than an eighth of max_conns are left,
 * connections without a request for HTTP_SHED_AFTER_MS (between keep-alive requests, or that
 * never sent a whole one) are closed, the oldest first, so that a new one is taken in.
 *
 * HTTPS: a certificate and key (PEM files), read at open and again by http_reload_tls, which
 * starts a new listener on the same socket: new connections get the new certificate, open
 * ones stay on the old listener until they close, at most HTTP_DRAIN_S. */
#ifndef CLAIMD_HTTP_H
#define CLAIMD_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "console/http_guard.h"

#define HTTP_TIMEOUT_S 60
#define HTTP_SHED_AFTER_MS 1000  /* idle this long, a connection is closed when places run short */
#define HTTP_STREAMS_RETRY_S 5   /* Retry-After of a long-lived request refused */
#define HTTP_DRAIN_S 60      /* an old listener's connections after a reload, at most */
#define HTTP_TOKEN_MAX HTTP_GUARD_TOKEN_MAX
#define HTTP_ARGS_MAX 32
#define HTTP_STREAM_MAX (1024 * 1024)  /* bytes a stream may have unsent */

struct http_server;
struct http_request;

/* Called on the loop for each request, once its body is in. It must answer, now or later,
 * with http_respond (exactly once). */
typedef void (*http_handler)(void *data, struct http_request *r);

struct http_opts {
	uv_loop_t *loop;
	const struct sockaddr *addr;
	socklen_t addrlen;
	const char *token;          /* NULL: no authentication (copied) */
	const char *read_token;     /* a read-only token, or NULL (copied) */
	const char *hosts;          /* more names the Host may give (http_guard.hosts), or NULL */
	const char *tls_cert_file;  /* PEM files: HTTPS; NULL: plain HTTP (the strings copied) */
	const char *tls_key_file;
	unsigned max_conns;
	unsigned max_conns_per_ip;
	unsigned max_streams;       /* long-lived requests at once (under max_conns) */
	size_t max_body;
	http_handler handle;
	void *data;
	/* What a path needs (the token; not the token: the dashboard's files; not even its
	 * Host: /healthz). */
	enum http_path_access (*access_of)(const char *path);
	/* Called once the headers are in and the guard let the request through, before any of
	 * its body is read: answering r there (http_respond) refuses it without reading the body
	 * (no such route, a method the route does not take). NULL: none. */
	void (*early)(void *data, struct http_request *r);
	/* Each answer as it is given (for counting), or NULL: the request's tag (http_set_tag),
	 * and the status. */
	void (*on_answer)(void *data, const char *tag, unsigned status);
};

/* Listen. Returns 0, or a negative errno with err filled (the address in use, a certificate
 * that does not load, ...). */
int http_open(const struct http_opts *o, struct http_server **ret, char *err, size_t errlen);
/* The address it listens on, "127.0.0.1:8080" (the port the kernel chose for port 0). */
const char *http_address(const struct http_server *s);
/* "https" or "http". */
const char *http_scheme(const struct http_server *s);
/* HTTPS: read the certificate and key again and serve new connections with them (see the
 * top). Returns 0 (also without HTTPS: nothing to do), or a negative errno with err filled:
 * then the listener keeps its certificate. */
int http_reload_tls(struct http_server *s, char *err, size_t errlen);
/* Requests being handled (answered or not yet). */
unsigned http_in_flight(const struct http_server *s);

/* What the server counts, for /metrics. */
struct http_stats {
	unsigned connections;        /* open */
	unsigned streams;            /* long-lived requests now */
	unsigned max_streams;
	uint64_t streams_refused;    /* long-lived requests answered 503: max_streams reached */
	uint64_t peers_refused;      /* connections closed at accept: max_conns_per_ip reached */
	uint64_t shed;               /* idle connections closed: places ran short */
};
void http_stats(const struct http_server *s, struct http_stats *ret);
/* Stop listening and close every connection; requests waiting for an answer must have been
 * answered. Accepts NULL. The loop must run afterwards for the handles to close. */
void http_close(struct http_server *s);

/* ---- a request ---- */

const char *http_method(const struct http_request *r);
/* The path, percent-decoded, without the query. */
const char *http_path(const struct http_request *r);
/* The query's arguments, decoded, in order (at most HTTP_ARGS_MAX: more make
 * http_args_overflow true). A bare "?json" has the value "". */
size_t http_args(const struct http_request *r, const char *const **names,
		 const char *const **values);
bool http_args_overflow(const struct http_request *r);
/* A request header's value, or NULL. */
const char *http_header(const struct http_request *r, const char *name);
/* The body (NUL-terminated after len; NULL with len 0 when there is none). */
const unsigned char *http_body(const struct http_request *r, size_t *len);

/* A name for what the request is (a route, a static string), handed to on_answer. */
void http_set_tag(struct http_request *r, const char *tag);

/* r is long-lived (an event stream, a long poll): it holds one of max_streams places until
 * its connection is done with it. Returns 0, or -EBUSY when all are held: then r is answered,
 * 503 with Retry-After (HTTP_STREAMS_RETRY_S) and {"error": ...}, its connection closed after;
 * the caller forgets r. */
int http_long_lived(struct http_request *r);
/* Whether r's client went away before its answer: its connection closed, or, while r waits
 * (suspended, when MHD does not watch it), the client closed its side (looked at now, without
 * waiting). Its answer, when given, is dropped; give one (http_respond, http_stream_end) to
 * let go of r. */
bool http_gone(const struct http_request *r);

/* Add a header to the answer (before http_respond). */
void http_add_header(struct http_request *r, const char *name, const char *value);
/* The answer: status, content type and body (copied). Exactly once per request. */
void http_respond(struct http_request *r, unsigned status, const char *type, const void *body,
		  size_t len);
/* {"error": message} with status. */
void http_respond_error(struct http_request *r, unsigned status, const char *message);

/* An answer whose body comes bit by bit (Server-Sent Events): 200 with type and the headers
 * added, then what http_stream_write gives, until http_stream_end. Instead of http_respond.
 * on_gone(data) is called if the connection closes before the end (the client went away,
 * the server stops): r is gone then. Returns 0, -EINVAL (answered already) or -ENOMEM. */
int http_stream_start(struct http_request *r, const char *type, void (*on_gone)(void *data),
		      void *data);
/* Send data (copied). Returns 0, -ENOBUFS when more than HTTP_STREAM_MAX bytes wait for a
 * client that does not read (end it), or -ENOMEM. */
int http_stream_write(struct http_request *r, const void *data, size_t len);
/* The body is over: once sent, the request is done (on_gone is not called). */
void http_stream_end(struct http_request *r);

#endif
