#include "console/status.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "console/entities.h"

/* ---- a worker ---- */

#define WF(name, head, width, type, none, member, prec) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct status_worker, member), \
	  prec, NULL, NULL, 0 }

static const struct entity_field worker_fields[] = {
	WF("slot", "SLOT", -4, INT, ALWAYS, slot, 0),
	WF("pid", "PID", -8, INT, ZERO, pid, 0),
	WF("state", "STATE", -13, PSTR, NEVER, state, 0),
	WF("inflight", "RUNNING", 7, SIZE, ALWAYS, inflight, 0),
	WF("item", "OLDEST", -12, U64, ZERO, item, 0),
	WF("item_ms", "FOR_MS", 9, I64, NEG, item_ms, 0),
	WF("claims", NULL, 0, SIZE, ALWAYS, claims, 0),
	WF("done", "DONE", 8, U64, ALWAYS, done, 0),
	WF("failed", "FAILED", 7, U64, ALWAYS, failed, 0),
	WF("restarts", "RESTARTS", 8, U32, ALWAYS, restarts, 0),
	WF("rtt_ms", "RTT_MS", 9, REAL, NEG, rtt_ms, 3),
	WF("heartbeat_age_ms", NULL, 0, I64, NEG, heartbeat_age_ms, 0),
};
const struct entity worker_entity = ENTITY(worker_fields, struct status_worker, "Worker", NULL);

void status_worker_head(const char *indent, struct buf *b)
{
	entity_text_head(&worker_entity, indent, b);
}

void status_worker_row_json(json_t *w, const char *indent, struct buf *b)
{
	entity_text_row_json(&worker_entity, w, indent, b);
}

/* {"queue": {"ready": n, "claimed": n, "done": n, "dead": n}, ...}: every state, zeros too, for
 * every queue the store has and for the queue served. */
static json_t *json_counts(const struct status *st)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i <= st->nqueues; i++) {
		static const struct store_queue none;
		const struct store_queue *q = i < st->nqueues ? &st->queues[i] : &none;
		const char *name = i < st->nqueues ? q->name : st->queue;
		json_t *c = json_object();

		if (i == st->nqueues && json_object_get(o, name)) {
			json_decref(c);
			break;
		}
		for (unsigned k = 0; c && k < ROW_STATE_COUNT; k++)
			json_object_set_new(c, row_state_name(k), json_integer((json_int_t)q->rows[k]));
		json_object_set_new(o, name, c);
	}
	return o;
}

/* ---- the pool ---- */

/* What status shows of the supervisor itself, from its snapshot. */
struct status_view {
	int pid;
	int fork_server_pid;        /* 0: not running */
	const char *host, *queue;
	uint64_t uptime_ms;
	bool stopping;
	const char *db;             /* "up" or "down" */
	const char *wake;           /* NULL: not said */
};

#define VF(name, type, none, member) \
	{ name, NULL, 0, ENTITY_##type, ENTITY_##none, offsetof(struct status_view, member), 0, \
	  NULL, NULL, 0 }

static const struct entity_field status_fields[] = {
	VF("pid", INT, ALWAYS, pid),
	VF("fork_server_pid", INT, ZERO, fork_server_pid),
	VF("host", PSTR, NEVER, host),
	VF("queue", PSTR, NEVER, queue),
	VF("uptime_ms", U64, ALWAYS, uptime_ms),
	VF("stopping", BOOL, ALWAYS, stopping),
	VF("db", PSTR, NEVER, db),
	VF("wake", PSTR, ALWAYS, wake),
};
const struct entity status_entity = ENTITY(status_fields, struct status_view, "Status",
					   "workers,counts");

void status_render_json(const struct status *st, struct buf *b)
{
	struct status_view v = {
		.pid = st->pid, .fork_server_pid = st->fork_server_pid > 0 ? st->fork_server_pid : 0,
		.host = st->host, .queue = st->queue, .uptime_ms = st->uptime_ms,
		.stopping = st->stopping, .db = st->db_up ? "up" : "down", .wake = st->wake,
	};
	json_t *o = entity_json(&status_entity, &v);

	if (o) {
		json_object_set_new(o, "workers", entity_json_array(&worker_entity, st->workers,
								    st->nworkers));
		json_object_set_new(o, "counts", json_counts(st));
	}
	entity_dump(o, b);
}

void status_render_table(const struct status *st, struct buf *b)
{
	char fsrv[32] = "none";
	size_t rows = 0;

	if (st->fork_server_pid > 0)
		snprintf(fsrv, sizeof(fsrv), "%d", st->fork_server_pid);
	buf_printf(b, "claimd pid %d on %s, queue %s, up %llu s, database %s%s; fork server %s\n",
		   st->pid, st->host, st->queue, (unsigned long long)(st->uptime_ms / 1000),
		   st->db_up ? "up" : "DOWN", st->stopping ? ", STOPPING" : "", fsrv);
	buf_printf(b, "idle workers are woken by: %s\n\n", st->wake ? st->wake : "poll");
	entity_text_table(&worker_entity, st->workers, st->nworkers, "", b);
	buf_puts(b, "\nQUEUE            STATE         COUNT\n");
	for (size_t i = 0; i < st->nqueues; i++) {
		for (unsigned k = 0; k < ROW_STATE_COUNT; k++) {
			if (!st->queues[i].rows[k])
				continue;
			buf_printf(b, "%-16s %-8s %10llu\n", st->queues[i].name, row_state_name(k),
				   (unsigned long long)st->queues[i].rows[k]);
			rows++;
		}
	}
	if (rows == 0)
		buf_puts(b, "(no rows, or the database could not be read)\n");
}
