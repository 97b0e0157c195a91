/* http_int — the insides of the HTTP server, shared by http.c (the server, requests and
 * answers), http_stream.c (answers that come bit by bit) and http_mhd.c (loading
 * libmicrohttpd). Not an interface. */
#ifndef CLAIMD_HTTP_INT_H
#define CLAIMD_HTTP_INT_H

#include <microhttpd.h>
#include <stdbool.h>

#include "common/buf.h"
#include "supervisor/http.h"

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
};
extern struct mhd_fns mhd;

/* Load libmicrohttpd (once). Returns 0 or -ENOENT with err filled. */
int http_load_mhd(char *err, size_t errlen);

struct http_server {
	struct http_opts o;
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer;
	int open_handles;
	unsigned in_flight;
	struct http_request *requests;      /* every request MHD has given us, until completed */
	char token[HTTP_TOKEN_MAX + 1];
	bool has_token;
	char address[80];
};

struct http_request {
	struct http_server *srv;
	struct http_request *prev, *next;   /* in http_server.requests */
	struct MHD_Connection *conn;
	char *method, *path;
	const char *tag;
	unsigned char *body;
	size_t len, cap;
	const char *names[HTTP_ARGS_MAX], *values[HTTP_ARGS_MAX];
	size_t nargs;
	bool args_overflow;
	char *hdr_names[HEADERS_MAX], *hdr_values[HEADERS_MAX];
	size_t nhdrs;
	struct MHD_Response *resp;   /* the answer, until queued */
	unsigned status;
	bool dispatched, in_handler, suspended, queued;
	bool too_big;                /* the body went over max_body: read and dropped, then 413 */
	size_t dropped;
	bool owed;                   /* answered at close while its command still runs */
	bool orphan;                 /* its connection was closed (the server stopped) while
				      * the command ran: the answer is dropped */
	/* a stream answer (http_stream_start): what is written and not yet sent */
	bool streaming, stream_ended, stream_waiting;
	struct buf stream;
	size_t stream_sent;          /* of stream */
	void (*on_gone)(void *data); /* the client went away */
	void *gone_data;
};


/* Run MHD on the loop's next turn (it takes a resumed connection up only then). */
void http_kick(struct http_server *s);

#endif
