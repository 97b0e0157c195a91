/* status — renders the supervisor's view of its pool for claimctl: a table for people and a JSON
 * object for programs. Pure: fills a buf from a snapshot, no I/O. */
#ifndef CLAIMD_STATUS_H
#define CLAIMD_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/store.h"

struct status_worker {
	int slot;
	int pid;              /* 0 = no process */
	const char *state;
	uint64_t item;        /* the item it has run longest now; 0 = none */
	uint64_t item_ms;     /* for how long */
	size_t inflight;      /* items it runs now */
	size_t claims;
	uint64_t done, failed;  /* failed: retried or dead */
	uint64_t dead;
	unsigned restarts;
	bool rtt_valid;
	double rtt_ms;
	uint64_t heartbeat_age_ms;
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
	const struct store_count *counts;  /* sorted by queue */
	size_t ncounts;
};

void status_render_json(const struct status *st, struct buf *b);
void status_render_table(const struct status *st, struct buf *b);

#endif
