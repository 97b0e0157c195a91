/* surface — the one door between the supervisor and the operator's surface (src/console/: the
 * control socket, the HTTP API, the dashboard, /metrics). The surface reads the supervisor
 * through what this header names, and only that: a host (struct sup_host: the loop, the
 * settings, the database queues, the workers' counters, and calls that ask the supervisor
 * for something). The supervisor knows nothing of the surface but the calls of struct
 * surface_ops, which main gives it (as a libuv handle's owner gives it callbacks): it never
 * names a function of src/console/, and knows nothing of HTTP or JSON. */
#ifndef CLAIMD_SURFACE_H
#define CLAIMD_SURFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/config.h"
#include "supervisor/dbq.h"
#include "supervisor/history.h"
#include "supervisor/jobstats.h"
#include "supervisor/snapshot.h"

#define SUP_ADDS_PIPES 2   /* connections of their own for adds: transactions in flight at once */

/* What the supervisor offers the surface. Every call is made on the loop. */
struct sup_host {
	uv_loop_t *loop;
	const struct config *cfg;      /* the running settings (a reload changes them in place) */
	struct dbq *dbq;               /* the supervisor's database queue */
	/* Adds are written on these connections, each one transaction at a time; NULL: on dbq
	 * (the first) or not at all (the others). */
	struct dbq *adds_dbq[SUP_ADDS_PIPES];
	struct jobstats *stats;        /* what the workers reported */
	void *data;
	/* There is new work: wake a worker for it. */
	void (*wake)(void *data);
	/* The pool as it is now, into st (all but the queues' counts). Returns st->workers,
	 * malloc'd, for the caller to free (NULL when out of memory: then st has no workers). */
	struct status_worker *(*snapshot)(void *data, struct status *st);
	/* Milliseconds on the loop's clock. */
	uint64_t (*now_ms)(void *data);
	/* Read the settings again (SIGHUP): summary says what was done. Returns 0 or -EINVAL
	 * (bad settings: summary says why). */
	int (*reload)(void *data, char *summary, size_t len);
	/* Grow or shrink the pool to n workers. Returns 0 or -EINVAL (stopping). */
	int (*resize)(void *data, unsigned n);
	/* A schedule was added, changed or resumed: look at its next tick now. */
	void (*schedules_changed)(void *data);
	/* Whether this supervisor serves: false with why (stopping, the database unreachable,
	 * workers missing). */
	bool (*healthy)(void *data, char *why, size_t whylen);
	/* Whether the binary log tells of changes to rows (then surface_ops.rows_changed is
	 * called for each), and that requests wait for rows (want), or no longer. */
	bool (*pushed)(void *data);
	void (*follow_rows)(void *data, bool want);
};

struct surface;

/* What the supervisor asks of the surface. */
struct surface_ops {
	/* Open the control socket and, when cfg says so, the HTTP server; host is copied.
	 * Returns 0 or a negative errno (logged). */
	int (*open)(const struct sup_host *host, struct surface **ret);
	/* The address HTTP is served on ("" when none), for the supervisors table. */
	const char *(*address)(struct surface *s);
	/* A reload: the secret files of next checked before it applies (0, or -EPERM with why
	 * in err); then, once applied, what the surface reads again (the HTTPS certificate: a
	 * failure is said in tls, and the old one stays). */
	int (*check_secrets)(const struct config *next, char *err, size_t errlen);
	void (*reload)(struct surface *s, char *tls, size_t tlslen);
	/* The binary log says rows changed (when host.pushed). */
	void (*rows_changed)(struct surface *s);
	/* The stop: requests still waiting answered, nothing new taken, the control socket and
	 * the HTTP server closed. Accepts NULL. */
	void (*stop)(struct surface *s);
	/* Frees what is left, after the loop ran the close callbacks. Accepts NULL. */
	void (*free)(struct surface *s);
	/* The pool as the supervisors table's column `pool` holds it (JSON). */
	void (*pool_json)(const struct status *st, struct buf *b);
};

#endif
