/* sup — the supervisor's internal state, shared by its two halves: supervisor.c (the pool:
 * processes, heartbeats, permits, database jobs, stopping) and supctl.c (requests on the
 * control socket). Not a public interface. */
#ifndef CLAIMD_SUP_H
#define CLAIMD_SUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/config.h"
#include "supervisor/cmd.h"
#include "supervisor/control.h"
#include "supervisor/dbq.h"
#include "supervisor/maint.h"
#include "common/proc.h"
#include "common/proto.h"
#include "store/store.h"

#define SLOT_UNRESPONSIVE 100  /* beyond enum proto_wstate: our own verdict */
#define SLOT_DOWN 101          /* no process: waiting to be started */

struct sup;

struct slot {
	struct sup *sup;
	int idx;
	pid_t pid;
	struct chan *chan;
	int state;               /* enum proto_wstate, SLOT_UNRESPONSIVE or SLOT_DOWN */
	uint64_t item, item_since;
	pid_t handler_pid;       /* its handler's process group, 0 = none */
	bool granted;            /* holds a claim permit */
	uint64_t done, failed;
	unsigned restarts, quick_deaths;
	double rtt_ms;
	bool rtt_valid;
	uint64_t last_ack, started;
	bool term_sent, kill_sent;
	uint64_t term_at;
	bool exited;             /* the process is gone, its channel not yet drained */
	uint64_t exited_at;
	uv_timer_t respawn_timer;
	struct store_ref *claims;
	size_t nclaims, capclaims;
};

struct sup {
	uv_loop_t *loop;
	const struct config *cfg;
	int argc;
	char **argv;
	char exe[PATH_MAX];
	char host[64];
	struct slot *slots;
	uv_timer_t hb_timer, poll_timer, stop_timer;
	uv_signal_t sigterm, sigint, sigchld;
	struct proc_forker forker;  /* the fork server the workers come from */
	struct control *control;
	bool stopping, stopped;
	uint64_t started;
	unsigned poll_rr;
	unsigned claiming;       /* permits out */
	bool inline_handler;     /* --handler noop: a worker's batch takes no time */
	struct place cursor;      /* the furthest place in claim order any worker reached */
	uint64_t head_scan_at;      /* when a claimer was last told to scan from the head */
	int *want;               /* slots waiting for a permit, oldest first */
	size_t nwant;
	/* database */
	struct store *store;
	struct dbq *dbq;
	const char *queue_ptrs[CONFIG_QUEUES_MAX]; /* cfg->queues[i], for the poll */
	struct dbq_job poll_job;
	bool poll_inflight;
	struct maint *maint;
	uv_timer_t prune_timer;
	struct cmds *cmds;
};

static inline uint64_t sup_now(const struct sup *s)
{
	return uv_now(s->loop);
}

/* supervisor.c */
const char *sup_slot_state_name(int state);
/* There is work: hand a claim permit to a waiting or an idle worker, if one is free. */
void sup_wake_one(struct sup *s, const struct slot *except);

#endif
