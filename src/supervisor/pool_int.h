/* pool_int — the insides of the pool, shared by pool.c (a slot's life: starting, health,
 * heartbeats, messages, replacing the dead), pool_size.c (how many slots: growing,
 * retiring, replacing every worker after a reload), pool_cancel.c and pool_base.c (what
 * they all use). Not an interface. */
#ifndef CLAIMD_POOL_INT_H
#define CLAIMD_POOL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/chan.h"
#include "common/child.h"
#include "common/proto.h"
#include "common/scoreboard.h"
#include "supervisor/forker.h"
#include "supervisor/held.h"
#include "supervisor/permits.h"
#include "supervisor/pool.h"
#include "supervisor/restart.h"

#define DRAIN_MS 1000         /* after a worker's exit: how long its channel may take to EOF */
#define POOL_CANCEL_CHECK_MS 400  /* how often held rows' cancel requests are looked up */
#define POOL_CANCEL_TOLD 64       /* cancelled rows remembered as told (logged once) */

struct pool;

/* A slot's place in the pool, apart from its health: a spare (made before, no worker wanted
 * in it), one of the pool's, one of the pool's whose worker is to be replaced by one of the
 * new fork server (after a reload), or one whose worker stops for good after its item.
 * pool_size.c decides it, and changes it only through one function (with the table of what
 * may follow what); the rest of the pool reads it. */
enum slot_role { ROLE_SPARE, ROLE_ACTIVE, ROLE_REPLACE, ROLE_RETIRING };

/* One of the pool's (replaced or not), not retiring: counts towards --workers. */
static inline bool slot_role_counts(enum slot_role r)
{
	return r == ROLE_ACTIVE || r == ROLE_REPLACE;
}

struct slot {
	struct pool *pool;
	unsigned idx;
	enum slot_role role;
	enum slot_health health;
	uint8_t wstate;          /* what it last reported (enum proto_wstate), while UP */
	pid_t pid;               /* 0: none */
	struct child *child;
	struct chan *chan;
	struct sb_slot *board;   /* what its worker runs (the pool's scoreboard, this slot's) */
	uint64_t done, failed, dead;
	uint64_t finished_before;  /* done + failed when its process started */
	unsigned restarts, quick_deaths;
	double rtt_ms;
	bool rtt_valid;
	uint64_t last_ack, started, exited_at;
	uv_timer_t respawn_timer;
	uv_os_sock_t fork_fd;    /* SLOT_FORKING: our end of its socketpair; else -1 */
	struct held held;        /* the rows it reported claimed and not finished */
};

struct pool {
	struct pool_opts o;
	const struct config *cfg;
	char host[64];
	struct slot **slots;        /* every slot made, active or retired; POOL_SLOTS_MAX room */
	unsigned nslots;
	struct slot *replacing;     /* the worker being replaced now, if any */
	struct permits permits;
	struct forker forker;       /* the fork server the workers come from */
	struct sb_slot *board;      /* the scoreboard: a slot per worker slot */
	int board_fd;
	struct child_reaper *reaper;
	uv_timer_t hb_timer;
	uv_timer_t cancel_timer;    /* pool_cancel.c: held rows' cancel requests */
	bool cancel_busy;           /* its lookup runs */
	struct store_ref cancel_told[POOL_CANCEL_TOLD];   /* found by the last lookup */
	size_t ncancel_told;
	int open_handles;           /* hb_timer, cancel_timer, the respawn timers, the releases
				     * and the lookup running */
	void (*spawn)(struct slot *sl);  /* pool.c's: start sl's worker (pool_size.c asks) */
	bool freeing;               /* pool_free was called */
	bool stopping;
};

void pool_slot_set(struct slot *sl, enum slot_health to);

/* ---- pool_base.c ---- */

/* A message to sl's worker (logged when it cannot go). */
void pool_send(struct slot *sl, struct proto_msg *m);

static inline uint64_t pool_now_ms(const struct pool *p)
{
	return uv_now(p->o.loop);
}

/* What sl's worker runs now (the scoreboard), oldest first, up to max. */
size_t pool_running(const struct slot *sl, struct sb_item *out, size_t max);

/* One reference less: the pool is freed with the last (pool_free, then its handles closed
 * and its database jobs over). */
void pool_unref(struct pool *p);

/* ---- pool_cancel.c ---- */

/* Look for cancelled rows the workers hold, from now on (pool_start). */
void pool_cancel_start(struct pool *p);

/* ---- pool_size.c ---- */

/* sl's worker is gone (its rows released): true when pool_size took over (a retired slot
 * is put away; a replaced one starts again at once). */
bool pool_size_gone(struct slot *sl);
/* sl's worker started: a rolling replacement goes on with the next. */
void pool_size_started(struct slot *sl);

#endif
