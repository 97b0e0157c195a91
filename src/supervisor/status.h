/* status — renders the supervisor's view of its pool for claimctl: a table for people and a JSON
 * object for programs. Pure: fills a buf from a snapshot, no I/O. */
#ifndef CLAIMD_STATUS_H
#define CLAIMD_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/store.h"

/* A worker slot as status shows it (the worker table in status.c). */
struct status_worker {
	int slot;
	int pid;              /* 0 = no process */
	const char *state;
	size_t inflight;      /* items it runs now */
	uint64_t item;        /* the item it has run longest now; 0 = none */
	int64_t item_ms;      /* for how long; -1 when none */
	size_t claims;
	uint64_t done, failed;  /* failed: retried or dead */
	uint64_t dead;
	unsigned restarts;
	double rtt_ms;        /* the last heartbeat's round trip; -1 when none yet */
	int64_t heartbeat_age_ms;  /* -1 when no heartbeat yet */
};

struct status {
	int pid;
	int fork_server_pid;  /* 0: not running */
	const char *host;
	const char *queue;
	uint64_t uptime_ms;
	bool stopping;
	bool db_up;
	const char *wake;     /* how idle workers learn of work (idle_mode); NULL: not said */
	const struct status_worker *workers;
	size_t nworkers;
	const struct store_queue *queues;  /* every queue's rows per state, by name */
	size_t nqueues;
};

void status_render_json(const struct status *st, struct buf *b);
void status_render_table(const struct status *st, struct buf *b);

/* The worker table's text head and a row from a worker's JSON (as status_render_json writes
 * it, by any claimd): claimctl status --all's pools. */
void status_worker_head(const char *indent, struct buf *b);
void status_worker_row_json(json_t *w, const char *indent, struct buf *b);

#endif
