/* registry — this supervisor's row in the supervisors table: written at start, refreshed
 * every REGISTRY_MS with its pool, deleted at a clean stop. Each statement takes an idle
 * poll's place (the idle load stays one statement per poll interval). Logs failures. */
#ifndef CLAIMD_REGISTRY_H
#define CLAIMD_REGISTRY_H

#include <stdbool.h>
#include <uv.h>

#include "common/config.h"
#include "supervisor/dbq.h"
#include "common/buf.h"
#include "supervisor/snapshot.h"

#define REGISTRY_MS 5000
#define REGISTRY_PUSH_MS 10000   /* woken by the binary log, the supervisor polls no more */

struct registry_opts {
	uv_loop_t *loop;
	struct dbq *dbq;
	const struct config *cfg;
	const char *version;
	/* The pool as it is now (sup_host.snapshot), and as the column `pool` holds it
	 * (surface_ops.pool_json). */
	struct status_worker *(*snapshot)(void *data, struct status *st);
	void (*pool_json)(const struct status *st, struct buf *b);
	void *data;
};

struct registry;

int registry_new(const struct registry_opts *o, struct registry **ret);
/* This supervisor's id (host:pid:start), valid as long as r. */
const char *registry_id(const struct registry *r);
/* The HTTP address it serves, for the others to see ("" or NULL: none). */
void registry_set_http(struct registry *r, const char *address);
/* Refresh the row every ms from the next refresh on (REGISTRY_MS at first). */
void registry_set_interval(struct registry *r, unsigned ms);
/* At a poll tick: refresh the row when it is due. Returns true if that took the tick. */
bool registry_tick(struct registry *r);
/* A clean stop: delete the row (a database job; the stop waits for it like for the others). */
void registry_stop(struct registry *r);
/* The job must be over (dbq idle). Accepts NULL. */
void registry_free(struct registry *r);

#endif
