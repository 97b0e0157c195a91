/* api — the HTTP API's routes: each one a control-protocol request (common/ctl.h, made by
 * ctl_from_params from the path and the query) carried out by the same command functions as
 * the control socket (cmd.h), and its answer as JSON. Errors are {"error": "..."} with 400
 * (a bad request, or a value the database refuses: the parameter named), 401 (no or a wrong
 * token), 403 (the read-only token asking for a change; a change from another origin), 404
 * (no such route or row), 405 (with Allow), 409 (a row in the wrong state), 413 (body too
 * large), 421 (a Host that is not this server's), 503 (the database or stopping; for an event
 * stream or a ?wait also --http-max-streams open already: with Retry-After). Every
 * route but /healthz needs the token (http.h, http_guard.h); the dashboard's files do not.
 *
 *   GET    /healthz                       200 "ok", or 503 and why
 *   GET    /  and /ui/...                 the dashboard (console/ui.h)
 *   POST   /v1/queues/{queue}/jobs        the body is the payload; query: run_at, delay,
 *                                         priority, group, dedupe, max_attempts, timeout,
 *                                         period. 202 + X-Job-Id + Location + {"id":N}; a
 *                                         dedupe key held: 200 {"id":N,"duplicate":true}
 *   GET    /v1/jobs/{id}                  the row (see console/render.h); ?wait=DUR (at most
 *                                         API_WAIT_MAX_MS): answered once the row is done or
 *                                         dead, or when DUR is over, whichever comes first
 *   GET    /v1/jobs/{id}/events           Server-Sent Events: "job" with the row each time it
 *                                         changes, until it is done or dead ("gone" if it is
 *                                         deleted); a comment line every 15 s when quiet
 *   GET    /v1/jobs                       the newest rows in a state: state (dead), queue,
 *                                         limit (50, at most 200), before (an id)
 *   POST   /v1/jobs/{id}/retry            a dead row back to ready: {"retried":N}
 *   DELETE /v1/jobs/{id}                  cancel a ready row, discard a dead one; a claimed
 *                                         one: 202 {"id","state":"claimed","cancelling":true},
 *                                         its run stopped wherever it runs
 *   GET    /v1/queues                     every queue's counts and settings
 *   POST   /v1/queues/{queue}/pause       and /resume
 *   GET    /v1/status                     this supervisor's pool (claimctl status --json)
 *   GET    /v1/stats                      the queues' history over every supervisor, per step:
 *                                         queue, from, to (RFC 3339), since, step (whole
 *                                         minutes) as claimctl stats takes them; with
 *                                         ?seconds= (at most 600) instead, this supervisor's
 *                                         items done and failed per second (the chart)
 *   GET    /v1/supervisors                every supervisor sharing the database, lost ones
 *                                         marked
 *   GET    /metrics                       Prometheus text format (console/metrics.h)
 */
#ifndef CLAIMD_API_H
#define CLAIMD_API_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "console/cmd.h"
#include "console/http.h"
#include "supervisor/surface.h"
#include "console/metrics.h"

#define API_WAIT_MAX_MS (5u * 60u * 1000u)
#define API_WAIT_CHECK_MS 100   /* how often waited-for rows are read without the binary log */
#define API_WAIT_SLOW_MS 1000   /* ... and with it (a change it tells of is read at once) */

struct api_host {
	struct sup_host host;       /* the supervisor (console.c's copy) */
	struct http_server *http;   /* api_serve_open's */
	char token_file[4200];      /* the token file api_serve_open wrote, "" when none */
	struct cmds *cmds;
	/* the api's own: requests waiting for a row to change (api_watch.c: one read per tick
	 * on host.dbq; host.pushed says whether api_watch_changed tells of changes) */
	struct api_watch *watch;
	bool stopped;
	/* /metrics: counters (the workers' are host.stats; the queues are cmd's reading) */
	struct metrics metrics;
};

/* What path needs (http_opts.access_of): /healthz nothing, the dashboard's files no token,
 * the rest the token. */
enum http_path_access api_access_of(const char *path);

/* http_opts.early: a path that is no route is answered 404, a method its route does not
 * take 405 with Allow, before the body is read. */
void api_early(void *data, struct http_request *r);

/* ---- api_serve.c: the server as the settings say ---- */

/* Before the supervisor starts (claimd's main, before the user changes): the token files
 * cfg names read into cfg (http_token, http_read_token), the TLS files checked readable
 * and the key as a secret (common/secret.h). Returns 0 or -EINVAL with err filled (claimd
 * exits 2). */
int api_serve_prepare(struct config *cfg, char *err, size_t errlen);

/* At a reload: the secret files cfg names (the token files, the TLS key, when it serves
 * HTTP) still each its owner's alone (secret_check; one not there is left to what reads
 * it). Returns 0 or -EPERM with err naming the file, its mode and the fix. */
int api_serve_check_secrets(const struct config *cfg, char *err, size_t errlen);

/* Serve the API on cfg's --http address with h (whose loop, cmds, callbacks and data are
 * set): without a token file (and without --http-insecure-no-auth) a token is made and
 * written 0600 beside the control socket (http_token.h), owned by --user when one is given.
 * Logs where it listens and where the token file is (never the token). Returns 0 or a
 * negative errno (logged). */
int api_serve_open(struct api_host *h, const struct config *cfg);

/* SIGHUP: the HTTPS certificate and key read again (new connections get them). Returns 0
 * or a negative errno with why in err (logged; the old certificate stays). */
int api_serve_reload(struct api_host *h, char *err, size_t errlen);

/* Stop serving: every connection closed (http_close), the token file made at open removed.
 * Accepts a host that never opened. */
void api_serve_close(struct api_host *h);

/* Counts an HTTP answer (http_opts.on_answer); data is the api_host. */
void api_count(void *data, const char *route, unsigned status);

/* Requests waiting (?wait) are answered 503 "claimd is stopping"; the timer is closed. At
 * stop, before the HTTP server closes. */
void api_stop(struct api_host *h);

/* The binary log says rows of work_items changed: the rows requests wait for are read (one
 * statement for all of them) at once, and again a few times after (the change is in the
 * log before others see its commit). */
void api_watch_changed(struct api_host *h);

/* The http_handler for the routes above; data is a struct api_host. */
void api_handle(void *data, struct http_request *r);

#endif
