/* api_int — the insides of the HTTP API, shared by api.c (the routes), api_watch.c (waiting
 * for a row: ?wait and its event stream) and api_batch.c (jobs:batch). Not an interface. */
#ifndef CLAIMD_API_INT_H
#define CLAIMD_API_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "console/api.h"

/* A request on its way through a command. */
struct api_call {
	struct api_host *h;
	struct http_request *r;   /* NULL once an event stream's client went away */
	uint64_t deadline;        /* ?wait: until when (the loop's clock), 0 without */
	bool events;              /* /events: the answer is a stream of the row's changes */
	bool streaming;           /* the stream has started */
	bool marked;              /* a stream: mark is what the watch's last read saw */
	uint64_t mark;            /* (store_watch_row.mark) */
	char *last;               /* the last event sent (its data line) */
	uint64_t last_sent;       /* when something was last sent (the loop's clock) */
	struct api_call *next;    /* in the watch's list of calls waiting for a change */
	struct ctl_request req;   /* its strings point into path (or the request's query) */
	char path[512];
};

/* Whether s is UTF-8 (what goes into a text column must be). */
bool api_utf8_valid(const char *s);

/* The HTTP status for a command's error. */
unsigned api_status_of(int rc);

/* Answer r with b (application/json), or 500 if b failed; b is freed. */
void api_respond_buf(struct http_request *r, unsigned status, struct buf *b);

/* A job's reading came (req: CTL_JOB), for a call that waits (deadline) or streams (events).
 * Returns true when this took the call over (it waits for the next reading, or the stream
 * went on); false: answer it as usual. */
bool api_watch_job(struct api_call *call, const struct cmd_result *res);

/* Every call waiting or streaming ends: waits are answered 503, streams end; the watch is
 * freed once its read (if one runs) is over. At stop; again does nothing. */
void api_watch_stop(struct api_host *h);

/* POST /v1/queues/{queue}/jobs:batch. */
void api_batch(struct api_host *h, struct http_request *r, const char *queue);

/* An add's traceparent: the request's header (when it is a W3C traceparent), unless req has
 * one of its own. The header lives as long as r. */
void api_trace_default(struct http_request *r, struct ctl_request *req);

#endif
