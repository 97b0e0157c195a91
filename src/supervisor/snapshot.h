/* snapshot — the supervisor and its pool as they are at one moment: what claimctl status, the
 * dashboard, /metrics and the supervisors table show of them (the operator's surface renders
 * it). Data only. */
#ifndef CLAIMD_SNAPSHOT_H
#define CLAIMD_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* A worker slot (pool_snapshot fills one per slot). */
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
	const struct store_queue *queues;  /* every queue's rows per state, by name (the surface's
					    * reading; the supervisor leaves it empty) */
	size_t nqueues;
};

#endif
