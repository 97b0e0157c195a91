/* http_int — the insides of the HTTP server, shared by http.c (requests and answers),
 * http_listen.c (the listeners on the loop, HTTPS and its reload), http_conn.c (the
 * connections: counted per client, the idle ones closed when places run short),
 * http_stream.c (answers that come bit by bit) and http_mhd.c (loading libmicrohttpd). Not an
 * interface. */
#ifndef CLAIMD_HTTP_INT_H
#define CLAIMD_HTTP_INT_H

#include <microhttpd.h>
#include <stdbool.h>

#include "common/buf.h"
#include "console/http.h"
#include "console/http_peer.h"
#include "console/http_state.h"

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
	MHD_FN(get_connection_info);
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
	/* Run MHD on the loop's next turn (it takes a resumed connection up only then): how a
	 * request (http.c) tells the daemon that drives it (http_listen.c), which sets it. */
	void (*kick)(struct http_daemon *d);
	/* its connections (http_conn.c) */
	unsigned nconns;                /* open (as MHD counts them) */
	unsigned nshed;                 /* of them shut down, not yet closed */
	struct http_conn *idle_head, *idle_tail;   /* idle and not shut down, oldest first */
	uint64_t shed_at;               /* when the oldest idle one may be shed (0: none) */
	bool again;                     /* run MHD again at once (it was at its limit) */
};

/* One connection, from MHD's accept to its close (its socket context). */
struct http_conn {
	struct http_daemon *dmn;
	struct MHD_Connection *c;
	struct http_peer peer;
	bool counted;                   /* in http_server.peers */
	bool busy;                      /* a request on it, from its headers to its end */
	bool shed;                      /* shut down to make room: closing */
	uint64_t idle_since;            /* the loop's clock: its start, or its last request's end */
	struct http_conn *prev, *next;  /* in its daemon's idle list */
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
	struct http_peers peers;        /* connections per client, every daemon's */
	unsigned nstreams;              /* long-lived requests (http_long_lived) */
	uint64_t streams_refused, peers_refused, shed;   /* counters (http_stats) */
};

struct http_request {
	struct http_server *srv;
	struct http_daemon *dmn;            /* its connection's */
	struct http_request *prev, *next;   /* in http_daemon.requests */
	struct MHD_Connection *conn;
	struct http_conn *hc;               /* its connection's, until completed (or NULL) */
	char *method, *path;
	const char *tag;
	unsigned char *body;
	size_t len, cap;
	const char *names[HTTP_ARGS_MAX], *values[HTTP_ARGS_MAX];
	size_t nargs;
	bool args_overflow;          /* a fact about the query, not a step of its life */
	bool long_lived;             /* holds one of max_streams (http_long_lived) */
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

/* ---- http_conn.c ---- */

/* MHD's accept policy (cls: the http_daemon): a client (http_peer) that holds
 * max_conns_per_ip connections has the next closed at once. */
enum MHD_Result http_conn_accept(void *cls, const struct sockaddr *a, socklen_t len);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: the http_daemon): a connection is counted from its start
 * to its close, idle until a request comes. */
void http_conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
		      enum MHD_ConnectionNotificationCode code);
/* c's http_conn, or NULL (out of memory at its start). */
struct http_conn *http_conn_of(struct MHD_Connection *c);
/* A request on hc starts (busy) or ends. Accepts NULL. */
void http_conn_busy(struct http_conn *hc, bool busy);
/* After each run of d: while d is short of places, its connections idle for
 * HTTP_SHED_AFTER_MS are shut down, the oldest first; d->shed_at says when to look again. */
void http_conn_shed(struct http_daemon *d);

#endif
