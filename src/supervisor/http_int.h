/* http_int — the insides of the HTTP server, shared by http.c (requests and answers),
 * http_listen.c (the listeners on the loop, HTTPS and its reload), http_stream.c (answers
 * that come bit by bit) and http_mhd.c (loading libmicrohttpd). Not an interface. */
#ifndef CLAIMD_HTTP_INT_H
#define CLAIMD_HTTP_INT_H

#include <microhttpd.h>
#include <stdbool.h>

#include "common/buf.h"
#include "supervisor/http.h"
#include "supervisor/http_state.h"

#define HEADERS_MAX 8

/* libmicrohttpd is loaded by a supervisor that opens its HTTP server, not linked into the
 * binary: it brings GnuTLS and nine more libraries, which every worker (the same binary)
 * would otherwise map: 572 kB more RSS and 230 kB more Pss per worker, measured. */
#define MHD_FN(name) __typeof__(&MHD_##name) name
struct mhd_fns {
	void *lib;
	MHD_FN(start_daemon);
	MHD_FN(stop_daemon);
	MHD_FN(run);
	MHD_FN(get_timeout);
	MHD_FN(get_daemon_info);
	MHD_FN(queue_response);
	MHD_FN(destroy_response);
	MHD_FN(create_response_from_buffer);
	MHD_FN(create_response_from_callback);
	MHD_FN(add_response_header);
	MHD_FN(resume_connection);
	MHD_FN(suspend_connection);
	MHD_FN(lookup_connection_value);
	MHD_FN(get_connection_values);
	MHD_FN(quiesce_daemon);
	MHD_FN(is_feature_supported);
};
extern struct mhd_fns mhd;

/* Load libmicrohttpd (once). Returns 0 or -ENOENT with err filled. */
int http_load_mhd(char *err, size_t errlen);

/* One libmicrohttpd daemon on the loop: the listener (it takes new connections), or one that
 * stopped taking them at a TLS reload and serves its open ones until they end, at most
 * HTTP_DRAIN_S (draining). */
struct http_daemon {
	struct http_server *srv;
	struct MHD_Daemon *d;           /* NULL once stopped */
	uv_poll_t poll;
	uv_timer_t timer;
	int open_handles;               /* freed when both are closed */
	bool draining;
	uint64_t drain_until;           /* the loop's clock */
	struct http_request *requests;  /* every request it gave us, until completed */
	struct http_daemon *next;       /* in http_server.old */
};

struct http_server {
	struct http_opts o;             /* its strings point into the copies below */
	struct http_guard guard;
	struct sockaddr_storage addr;
	struct http_daemon *cur;        /* the listener */
	struct http_daemon *old;        /* draining */
	unsigned ndaemons;              /* not yet freed; the server is freed after the last */
	bool closing;
	unsigned in_flight;
	char token[HTTP_TOKEN_MAX + 1], read_token[HTTP_TOKEN_MAX + 1];
	char *hosts, *cert_file, *key_file;
	char address[80];
	char mhd_said[512];             /* what libmicrohttpd said since a start (why it failed) */
};

struct http_request {
	struct http_server *srv;
	struct http_daemon *dmn;            /* its connection's */
	struct http_request *prev, *next;   /* in http_daemon.requests */
	struct MHD_Connection *conn;
	char *method, *path;
	const char *tag;
	unsigned char *body;
	size_t len, cap;
	const char *names[HTTP_ARGS_MAX], *values[HTTP_ARGS_MAX];
	size_t nargs;
	bool args_overflow;          /* a fact about the query, not a step of its life */
	char *hdr_names[HEADERS_MAX], *hdr_values[HEADERS_MAX];
	size_t nhdrs;
	enum http_state state;       /* changed only by http_enter */
	struct MHD_Response *resp;   /* the answer, until MHD is given it */
	unsigned status;
	size_t dropped;              /* HTTP_S_TOO_BIG: bytes of the body dropped */
	/* a stream answer (http_stream_start): what is written and not yet sent */
	struct buf stream;
	size_t stream_sent;          /* of stream */
	void (*on_gone)(void *data); /* the client went away */
	void *gone_data;
};

/* ---- http.c ---- */

/* The one place a request's state changes: the step must be one http_state_may_follow
 * allows (anything else is a bug here: logged, and the assertion fails). Entering
 * HTTP_S_DONE frees r. */
void http_enter(struct http_request *r, enum http_state to);

/* libmicrohttpd's callbacks (cls: the http_daemon). */
enum MHD_Result http_on_access(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls);
void http_on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		       enum MHD_RequestTerminationCode why);
/* The headers every answer carries: no caching, no sniffing, no framing, no referrer, and a
 * Content-Security-Policy that lets a page run only the server's own files. */
void http_add_common_headers(struct MHD_Response *resp);

/* ---- http_listen.c ---- */

/* Run MHD on the loop's next turn (it takes a resumed connection up only then). */
void http_kick(struct http_daemon *d);

#endif
