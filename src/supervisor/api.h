/* api — the HTTP API's routes: each one a control-protocol request (common/ctl.h, made by
 * ctl_from_params from the path and the query) carried out by the same command functions as
 * the control socket (cmd.h), and its answer as JSON. Errors are {"error": "..."} with 400
 * (a bad request), 401, 404 (no such route or row), 405, 409 (a row in the wrong state),
 * 413 (body too large), 503 (the database or stopping).
 *
 *   GET    /healthz                       200 "ok", or 503 and why
 *   GET    /  and /ui/...                 the dashboard (supervisor/ui.h)
 *   POST   /v1/queues/{queue}/jobs        the body is the payload; query: run_at, delay,
 *                                         priority, group, dedupe, max_attempts, timeout,
 *                                         period. 202 + X-Job-Id + Location + {"id":N}; a
 *                                         dedupe key held: 200 {"id":N,"duplicate":true}
 *   GET    /v1/jobs/{id}                  the row (see supervisor/render.h); ?wait=DUR (at most
 *                                         API_WAIT_MAX_MS): answered once the row is done or
 *                                         dead, or when DUR is over, whichever comes first
 *   GET    /v1/jobs/{id}/events           Server-Sent Events: "job" with the row each time it
 *                                         changes, until it is done or dead ("gone" if it is
 *                                         deleted); a comment line every 15 s when quiet
 *   GET    /v1/jobs                       the newest rows in a state: state (dead), queue,
 *                                         limit (50, at most 200), before (an id)
 *   POST   /v1/jobs/{id}/retry            a dead row back to ready: {"retried":N}
 *   DELETE /v1/jobs/{id}                  cancel a ready row, discard a dead one
 *   GET    /v1/queues                     every queue's counts and settings
 *   POST   /v1/queues/{queue}/pause       and /resume
 *   GET    /v1/status                     this supervisor's pool (claimctl status --json)
 *   GET    /v1/stats                      its workers' items done and failed per second over
 *                                         the last ?seconds= (300, at most 600)
 *   GET    /v1/supervisors                every supervisor sharing the database, lost ones
 *                                         marked
 *   GET    /metrics                       Prometheus text format (supervisor/metrics.h)
 */
#ifndef CLAIMD_API_H
#define CLAIMD_API_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "supervisor/cmd.h"
#include "supervisor/http.h"
#include "supervisor/jobstats.h"
#include "supervisor/metrics.h"

#define API_WAIT_MAX_MS (5u * 60u * 1000u)
#define API_WAIT_CHECK_MS 100  /* how often a waited-for row is read again */

struct api_host {
	uv_loop_t *loop;
	struct cmds *cmds;
	/* Whether this supervisor serves: false with why (stopping, the database unreachable,
	 * workers missing). */
	bool (*healthy)(void *data, char *why, size_t whylen);
	/* The pool as it is now (cmd_host.snapshot). */
	struct status_worker *(*snapshot)(void *data, struct status *st);
	void *data;
	/* the api's own: requests waiting for a row to finish */
	struct api_call *waiting;
	uv_timer_t wait_timer;
	bool timer_open, stopped;
	/* /metrics: counters, and the last reading of the queues */
	struct jobstats *stats;     /* the workers' (the supervisor's) */
	struct metrics metrics;
	struct store_queue *queues;
	size_t nqueues;
	uint64_t queues_at;
	bool reading_queues;
};

/* Whether path needs no token (http_opts.is_open): /healthz and the dashboard's files. */
bool api_is_open(const char *path);

/* Counts an HTTP answer (http_opts.on_answer); data is the api_host. */
void api_count(void *data, const char *route, unsigned status);

/* Requests waiting (?wait) are answered 503 "claimd is stopping"; the timer is closed. At
 * stop, before the HTTP server closes. */
void api_stop(struct api_host *h);

/* The http_handler for the routes above; data is a struct api_host. */
void api_handle(void *data, struct http_request *r);

#endif
