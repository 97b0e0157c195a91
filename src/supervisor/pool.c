/* A slot's life is its health (pool.h), changed only by slot_set, which says what may follow
 * what: DOWN -> UP (started) -> UNRESPONSIVE (heartbeat overdue) -> EXITED (waited for) ->
 * DOWN (its channel drained: rows released, restart scheduled), UP -> EXITED too. Its process
 * is a child (common/child.h): the pool's reaper waits for every child and orphan of the
 * supervisor (a subreaper), SIGTERM -> SIGKILL after the kill grace is child's, and the child
 * counts as gone once it has exited and its channel is closed (a hold), or a second after. */
#include "supervisor/pool_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/chan.h"
#include "common/child.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/proto.h"
#include "store/store.h"
#include "supervisor/forker.h"
#include "supervisor/held.h"
#include "supervisor/history.h"
#include "supervisor/permits.h"
#include "worker/handler.h"


static void spawn(struct slot *sl);

/* ---- health ---- */

void pool_slot_set(struct slot *sl, enum slot_health to)
{
	assert(slot_health_may_follow(sl->health, to));
	log_debug("worker slot=%u: %s -> %s", sl->idx, slot_health_name(sl->health),
		  slot_health_name(to));
	sl->health = to;
}

/* For claimctl status: the health, or what an up worker says it does. */
static const char *slot_state_name(const struct slot *sl)
{
	return sl->health == SLOT_UP ? proto_wstate_name(sl->wstate) : slot_health_name(sl->health);
}

/* ---- the rows a worker holds ---- */


static void on_released(void *data, int rc)
{
	struct pool *p = data;

	if (rc > 0 && !p->freeing) {
		permits_rewind(&p->permits);  /* they are behind the cursor */
		pool_wake_one(p);
	}
	if (!p->freeing)
		p->o.on_change(p->o.data);
	pool_unref(p);
}

/* ---- messages from workers ---- */

static void set_wstate(struct slot *sl, uint8_t state);

static void on_items(struct slot *sl, const struct proto_msg *m)
{
	struct pool *p = sl->pool;
	size_t n = m->u.items.n;

	/* The rows of a claim, before its commit (CLAIMED follows it). A failed commit leaves
	 * them here: releasing them later is fenced, and does nothing. */
	if (m->type == PROTO_HOLDING) {
		for (size_t i = 0; i < n; i++)
			held_add(&sl->held, m->u.items.items[i].id, m->u.items.items[i].token);
		return;
	}
	jobstats_add(p->o.stats, m, pool_now_ms(p) / 1000u);
	if (p->o.history && m->type == PROTO_FINISHED)
		history_add(p->o.history, m, (int64_t)time(NULL));
	for (size_t i = 0; i < n && m->type == PROTO_FINISHED; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		held_remove(&sl->held, it->id, it->token);
		if (it->outcome == PROTO_OUT_DONE)
			sl->done++;
		else if (it->outcome == PROTO_OUT_RETRY || it->outcome == PROTO_OUT_DEAD)
			sl->failed++, sl->dead += it->outcome == PROTO_OUT_DEAD;
	}
	if (m->type != PROTO_CLAIMED)
		return;
	/* CLAIMED answers a permit, and says what the worker does now. One that took every due
	 * row it could (not more) sleeps until woken, its rows running: when the next row is due
	 * is asked of the database, as for a claim that found none. A worker with room for more
	 * asks again at once (WANT after its CLAIMED); its finished items do not wait for a
	 * permit (the worker's flush timer). The permit comes back first: the statement that
	 * asks is not to take this claim for one that still runs (idle.h's claims). */
	set_wstate(sl, m->u.items.state);
	permits_claimed(&p->permits, sl->idx, &m->u.items.cursor, m->u.items.more);
	if (!m->u.items.more && p->o.claimed_short)
		p->o.claimed_short(p->o.data, m->u.items.n > 0);
}

/* What the worker says it does (STATE, or CLAIMED's state). */
static void set_wstate(struct slot *sl, uint8_t state)
{
	struct pool *p = sl->pool;
	uint8_t was = sl->wstate;

	if (sl->health != SLOT_UP)
		return;  /* unresponsive: our verdict stands until it is gone */
	if (state == PROTO_W_DB_DOWN && was != PROTO_W_DB_DOWN)
		log_warn("worker slot=%u pid=%d reports the database down", sl->idx, (int)sl->pid);
	sl->wstate = state;
	if (sl->wstate == PROTO_W_IDLE && was != PROTO_W_IDLE && p->o.worker_idle)
		p->o.worker_idle(p->o.data);
}

static void slot_on_msg(void *data, const struct proto_msg *m)
{
	struct slot *sl = data;

	sl->pool->o.stats->msgs_from++;
	switch (m->type) {
	case PROTO_HELLO:
		log_debug("worker slot=%u pid=%u says hello", sl->idx, m->u.hello.pid);
		break;
	case PROTO_STATE:
		set_wstate(sl, m->u.state.state);
		break;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
	case PROTO_HOLDING:
		on_items(sl, m);
		break;
	case PROTO_WANT:
		permits_want(&sl->pool->permits, sl->idx);
		break;
	default:
		log_warn("worker slot=%u pid=%d sent an unexpected %s message, ignored", sl->idx,
			 (int)sl->pid, proto_type_name(m->type));
	}
}

static void slot_on_ack(void *data, uint8_t type, double rtt_ms)
{
	struct slot *sl = data;

	if (type != PROTO_PING)
		return;
	sl->rtt_ms = rtt_ms;
	sl->rtt_valid = true;
	sl->last_ack = pool_now_ms(sl->pool);
}

static void slot_on_close(void *data, int reason)
{
	struct slot *sl = data;

	sl->chan = NULL;
	if (reason == -EBADMSG || reason == -EMSGSIZE || reason == -EPROTONOSUPPORT) {
		log_error("worker slot=%u pid=%d broke the protocol (%s); killing it", sl->idx,
			  (int)sl->pid, strerror(-reason));
		child_kill(sl->child);
	}
	/* EOF: the process is exiting; once it has, and this was its last word, it is gone. */
	child_release(sl->child);
}

static const struct chan_ops slot_chan_ops = {
	.on_msg = slot_on_msg,
	.on_ack = slot_on_ack,
	.on_close = slot_on_close,
};

/* ---- claim permits: what permits.c asks of the slots ---- */

static bool can_take(void *data, unsigned i)
{
	const struct slot *sl = ((struct pool *)data)->slots[i];

	return sl->role != ROLE_SPARE && sl->health == SLOT_UP && sl->chan;
}

static bool is_idle(void *data, unsigned i)
{
	const struct slot *sl = ((struct pool *)data)->slots[i];

	return can_take(data, i) && sl->wstate == PROTO_W_IDLE;
}

static void grant(void *data, unsigned i, const struct place *cursor)
{
	struct slot *sl = ((struct pool *)data)->slots[i];
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_WAKE;
	m.u.wake.cursor = *cursor;
	pool_send(sl, &m);
	/* It claims now: busy, without a STATE to say so (worker_wire_woken, the same rule). */
	if (sl->wstate == PROTO_W_IDLE || sl->wstate == PROTO_W_STARTING)
		sl->wstate = PROTO_W_BUSY;
}

static uint64_t permits_now(void *data)
{
	return pool_now_ms(data);
}

static const struct permits_ops permit_ops = {
	.can_take = can_take, .idle = is_idle, .grant = grant, .now_ms = permits_now,
};

void pool_rewind(struct pool *p)
{
	permits_rewind(&p->permits);
}

void pool_wake_one(struct pool *p)
{
	permits_wake_one(&p->permits, -1);
}

uint64_t pool_claims(const struct pool *p)
{
	return permits_claims(&p->permits);
}

bool pool_wants_poll(const struct pool *p)
{
	/* With every permit out, finding work would wake nobody: the workers holding them are
	 * claiming already, and one gives its permit back when a claim finds nothing. */
	if (p->stopping || permits_all_out(&p->permits))
		return false;
	for (unsigned i = 0; i < p->nslots; i++)
		if (is_idle((void *)(uintptr_t)p, i))
			return true;
	return false;
}

/* ---- process lifecycle ---- */

static void on_respawn(uv_timer_t *t)
{
	struct slot *sl = t->data;

	if (!sl->pool->stopping && sl->role != ROLE_SPARE)
		spawn(sl);
}

/* The process groups of the handlers a dead worker was running, as its scoreboard says.
 * That is memory the worker (and an so: handler in it) writes: a group is killed only if
 * its processes descend from us (a handler's, orphaned to us, the subreaper), never 1 (that
 * would be kill(-1)) nor our own. */
static void kill_groups_left(struct slot *sl)
{
	struct sb_item run[SCOREBOARD_ENTRIES];
	size_t n = pool_running(sl, run, SCOREBOARD_ENTRIES);

	for (size_t i = 0; i < n; i++) {
		int r;
		if (run[i].pgid == 0)
			continue;   /* in-process */
		r = proc_group_ours(run[i].pgid);
		if (r > 0)
			proc_kill_group(run[i].pgid, SIGKILL);
		else if (r < 0)
			log_warn("worker slot=%u pid=%d: its scoreboard names process group %d for "
				 "row %llu, %s: not killed", sl->idx, (int)sl->pid, (int)run[i].pgid,
				 (unsigned long long)run[i].id, r == -EPERM ?
				 "which is not one of its handlers' (corrupted memory?)" :
				 "which cannot be checked");
	}
}

/* Waited for: log how it ended, and take down what its handler left if it died. */
static void on_worker_exit(struct child *c)
{
	struct slot *sl = child_data(c);
	struct pool *p = sl->pool;
	int status = child_status(c);
	bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	char how[64];

	proc_describe_status(status, how, sizeof(how));
	if (failed || !p->stopping)
		log_warn("worker slot=%u pid=%d ended after %llu ms: %s", sl->idx, (int)sl->pid,
			 (unsigned long long)(pool_now_ms(p) - sl->started), how);
	else
		log_info("worker slot=%u pid=%d stopped", sl->idx, (int)sl->pid);
	/* A handler outlives a killed worker only by the children it started itself (the
	 * handler gets SIGKILL with its parent): take each running one's process group down. */
	if (failed)
		kill_groups_left(sl);
	sl->exited_at = pool_now_ms(p);
	pool_slot_set(sl, SLOT_EXITED);
}

/* Which of the items a dead worker was running are to blame for its death (their attempt
 * counts, and the last one makes the row dead), and why; the others go back with their
 * attempt given back. A crash (a signal a fault raises) may have been any running item's
 * doing: all of them. An in-process handler stuck past its deadline: the items it marked.
 * Killed from outside (SIGKILL, SIGTERM: a kill storm, the OOM killer, a hang verdict) or
 * ended by the lease fence: none. */
static size_t blame(int status, const struct sb_item *run, size_t n, struct held_blame *out)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP };
	bool crashed = false;
	size_t k = 0;

	for (size_t i = 0; WIFSIGNALED(status) && i < sizeof(faults) / sizeof(faults[0]); i++)
		crashed |= WTERMSIG(status) == faults[i];
	for (size_t i = 0; i < n; i++) {
		if (crashed) {
			out[k].id = run[i].id;
			snprintf(out[k++].reason, sizeof(out[0].reason), "its worker crashed (%s) "
				 "while running it%s", strsignal(WTERMSIG(status)), n > 1 ?
				 " among others" : "");
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == HANDLER_EXIT_STUCK &&
			   (run[i].flags & SB_OVERRAN)) {
			out[k].id = run[i].id;
			snprintf(out[k++].reason, sizeof(out[0].reason), "timed out: its in-process "
				 "handler ran past its deadline and the kill grace, and its worker "
				 "exited");
		}
	}
	return k;
}

/* Exited and its channel drained: release what it still held, then replace it. */
static void on_worker_gone(struct child *c)
{
	struct slot *sl = child_data(c);
	struct pool *p = sl->pool;
	uint64_t lived = sl->exited_at - sl->started;
	int status = child_status(c);
	struct sb_item run[SCOREBOARD_ENTRIES];
	struct held_blame *blamed = NULL;
	size_t nrun = pool_running(sl, run, SCOREBOARD_ENTRIES), nblamed = 0;
	char name[PROC_WORKER_NAME_MAX];
	unsigned delay = 0;

	if (nrun > 0 && (blamed = calloc(nrun, sizeof(*blamed))))
		nblamed = blame(status, run, nrun, blamed);
	if (sl->board)
		scoreboard_clear(sl->board);

	if (sl->chan) {
		chan_close(sl->chan);
		sl->chan = NULL;
	}
	child_free(sl->child);
	sl->child = NULL;
	pool_slot_set(sl, SLOT_DOWN);
	/* Its rows by its name too: a claim it locked and never committed may be another
	 * worker's now, with the same token. */
	proc_worker_name(name, sizeof(name), p->host, (int)sl->idx, sl->pid);
	sl->pid = 0;
	permits_drop(&p->permits, sl->idx);
	if (held_release(&sl->held, name, blamed, nblamed, p->o.dbq, on_released, p))
		p->open_handles++;   /* until on_released */
	free(blamed);
	if (p->stopping) {
		p->o.on_change(p->o.data);
		return;
	}
	if (pool_size_gone(sl))
		return;   /* retired, or replaced with a new one (pool_size.c) */
	/* The restart policy (restart.h) says how long the slot waits for its next worker. */
	enum restart_end end = restart_classify(status, sl->done + sl->failed > sl->finished_before,
						lived);
	delay = restart_next(end, &sl->quick_deaths);
	if (delay)
		log_warn("worker slot=%u keeps dying (%u times in a row, each within %d s); "
			 "restarting it in %u ms", sl->idx, sl->quick_deaths, RESTART_QUICK_MS / 1000,
			 delay);
	sl->restarts++;
	uv_timer_start(&sl->respawn_timer, on_respawn, delay, 0);
}

/* A child of ours nobody watches: the fork server, or what a dead worker's handler left
 * behind (we are a subreaper). */
static void on_other(void *data, pid_t pid, int status)
{
	struct pool *p = data;
	char how[64];

	if (forker_exited(&p->forker, pid, status))
		return;
	proc_describe_status(status, how, sizeof(how));
	log_debug("reaped pid=%d (%s), an orphan of a worker", (int)pid, how);
}

static void spawn_failed(struct slot *sl, int r)
{
	struct pool *p = sl->pool;

	if (p->freeing)
		return;
	log_error("cannot start worker slot=%u: %s; trying again in %d ms", sl->idx, strerror(-r),
		  RESTART_MAX_MS / 10);
	if (!p->stopping)
		uv_timer_start(&sl->respawn_timer, on_respawn, RESTART_MAX_MS / 10, 0);
	else
		p->o.on_change(p->o.data);
}

/* The fork server's answer for sl: its process (our end of its socketpair is sl->fork_fd),
 * or why there is none. */
static void on_forked(void *data, int r, pid_t pid)
{
	struct slot *sl = data;
	struct pool *p = sl->pool;
	struct child_opts opts = { .stderr_fd = -1, .settle_ms = DRAIN_MS, .data = sl,
				   .on_exit = on_worker_exit, .on_gone = on_worker_gone };
	uv_os_sock_t fd = sl->fork_fd;

	sl->fork_fd = -1;
	if (r == 0 && p->freeing)
		r = -ECANCELED, proc_kill(pid, SIGKILL);
	if (r == 0 && (r = child_new(p->reaper, pid, &opts, &sl->child)) < 0)
		proc_kill(pid, SIGKILL);  /* unwatched: the reaper takes it as an orphan */
	if (r < 0) {
		close(fd);
		pool_slot_set(sl, SLOT_DOWN);
		spawn_failed(sl, r);
		return;
	}
	sl->pid = pid;
	sl->started = pool_now_ms(p);
	sl->finished_before = sl->done + sl->failed;
	sl->wstate = PROTO_W_STARTING;
	sl->rtt_valid = false;
	sl->last_ack = 0;
	sl->board = p->board ? &p->board[sl->idx] : NULL;
	pool_slot_set(sl, SLOT_UP);
	r = chan_open(p->o.loop, fd, &slot_chan_ops, sl, &sl->chan);
	if (r < 0) {
		log_error("worker slot=%u pid=%d: cannot open its channel: %s; killing it", sl->idx,
			  (int)sl->pid, uv_strerror(r));
		child_kill(sl->child);
		return;
	}
	child_hold(sl->child);  /* its last reports are read before it is gone */
	log_info("worker slot=%u pid=%d started", sl->idx, (int)sl->pid);
	if (p->stopping || sl->role == ROLE_RETIRING) {
		/* stopped, or retired, while it was being forked: it stops at once */
		struct proto_msg m;
		memset(&m, 0, sizeof(m));
		m.type = PROTO_STOP;
		m.u.stop.grace_ms = p->stopping ? 0 : p->cfg->timeout_ms;
		pool_send(sl, &m);
	}
	pool_size_started(sl);
}

/* Ask the fork server for sl's process, its end of a new socketpair going with the question;
 * the answer comes to on_forked. */
static void spawn(struct slot *sl)
{
	struct pool *p = sl->pool;
	uv_os_sock_t fds[2] = { -1, -1 };
	int r;

	r = uv_socketpair(SOCK_STREAM, 0, fds, 0, 0);
	if (r == 0) {
		r = forker_fork(&p->forker, sl->idx, fds[1], on_forked, sl);
		close(fds[1]);
		if (r < 0)
			close(fds[0]);
	}
	if (r < 0) {
		spawn_failed(sl, r);
		return;
	}
	sl->fork_fd = fds[0];
	pool_slot_set(sl, SLOT_FORKING);
}

/* ---- heartbeat and hang detection ---- */

static void check_slot(struct slot *sl)
{
	struct pool *p = sl->pool;
	const struct config *cfg = p->cfg;
	uint64_t now = pool_now_ms(p), overdue = chan_oldest_pending_ms(sl->chan);
	struct proto_msg m;

	if (sl->health != SLOT_UP)
		return;
	if (overdue > cfg->hang_ms || chan_pending(sl->chan) >= CHAN_MAX_PENDING ||
	    (!sl->chan && now - sl->started > cfg->hang_ms)) {
		log_warn("worker slot=%u pid=%d unresponsive: no answer for %llu ms (limit %u ms); "
			 "SIGTERM, then SIGKILL in %u ms", sl->idx, (int)sl->pid,
			 (unsigned long long)overdue, cfg->hang_ms, cfg->kill_grace_ms);
		pool_slot_set(sl, SLOT_UNRESPONSIVE);
		child_stop(sl->child, cfg->kill_grace_ms);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = PROTO_PING;
	m.u.ping.sent_ms = now;
	pool_send(sl, &m);
}

static void on_heartbeat(uv_timer_t *t)
{
	struct pool *p = t->data;

	for (unsigned i = 0; i < p->nslots; i++)
		check_slot(p->slots[i]);
}

/* ---- the pool ---- */

int pool_new(const struct pool_opts *o, struct pool **ret)
{
	struct pool *p = calloc(1, sizeof(*p));
	int r = -ENOMEM;

	if (!p)
		return r;
	p->o = *o;
	p->cfg = o->cfg;
	p->forker.pf.fd = -1;
	p->board_fd = -1;
	p->spawn = spawn;
	gethostname(p->host, sizeof(p->host) - 1);
	uv_timer_init(o->loop, &p->hb_timer);
	p->hb_timer.data = p;
	uv_timer_init(o->loop, &p->cancel_timer);
	p->cancel_timer.data = p;
	p->open_handles = 2;
	p->slots = calloc(POOL_SLOTS_MAX, sizeof(*p->slots));
	if (!p->slots || permits_init(&p->permits, POOL_SLOTS_MAX, p->cfg->claimers,
				      &permit_ops, p) < 0)
		goto fail;
	/* Workers come from the fork server and are re-parented to us: we wait for them. */
	r = proc_become_subreaper();
	if (r < 0) {
		log_error("cannot become a subreaper: %s", strerror(-r));
		goto fail;
	}
	r = child_reaper_new(o->loop, true, on_other, p, &p->reaper);
	if (r < 0) {
		log_error("cannot watch for SIGCHLD: %s", uv_strerror(r));
		goto fail;
	}
	/* What each worker runs, shared with the workers (through the fork server). */
	r = scoreboard_create(&p->board, &p->board_fd);
	if (r < 0) {
		log_error("cannot make the scoreboard: %s", strerror(-r));
		goto fail;
	}
	r = forker_start(&p->forker, o->loop, o->argc, o->argv, p->board_fd);
	if (r < 0)
		goto fail;
	*ret = p;
	return 0;
fail:
	pool_free(p);
	return r;
}

void pool_start(struct pool *p)
{
	pool_resize(p, p->cfg->workers);
	uv_timer_start(&p->hb_timer, on_heartbeat, p->cfg->heartbeat_ms, p->cfg->heartbeat_ms);
	pool_cancel_start(p);
}

void pool_retime(struct pool *p)
{
	permits_set_max(&p->permits, p->cfg->claimers);
	if (uv_is_active((uv_handle_t *)&p->hb_timer))
		uv_timer_start(&p->hb_timer, on_heartbeat, p->cfg->heartbeat_ms, p->cfg->heartbeat_ms);
}

void pool_stop(struct pool *p, unsigned grace_ms)
{
	struct proto_msg m;

	p->stopping = true;
	permits_stop(&p->permits);
	for (unsigned i = 0; i < p->nslots; i++) {
		struct slot *sl = p->slots[i];
		uv_timer_stop(&sl->respawn_timer);
		if (sl->health == SLOT_DOWN)
			continue;
		memset(&m, 0, sizeof(m));
		m.type = PROTO_STOP;
		m.u.stop.grace_ms = grace_ms;
		pool_send(sl, &m);
	}
}

void pool_kill(struct pool *p)
{
	for (unsigned i = 0; i < p->nslots; i++) {
		struct slot *sl = p->slots[i];
		if (sl->health == SLOT_UP || sl->health == SLOT_UNRESPONSIVE) {
			log_warn("worker slot=%u pid=%d did not stop in time; SIGKILL", sl->idx,
				 (int)sl->pid);
			child_kill(sl->child);
		}
	}
}

unsigned pool_up(const struct pool *p, unsigned *ret_db_down)
{
	unsigned n = 0;

	*ret_db_down = 0;
	for (unsigned i = 0; i < p->nslots; i++) {
		const struct slot *sl = p->slots[i];
		if (!slot_role_counts(sl->role))
			continue;
		if (sl->health != SLOT_UP || sl->wstate == PROTO_W_STARTING)
			continue;   /* not taking rows yet: not at strength */
		n++;
		*ret_db_down += sl->wstate == PROTO_W_DB_DOWN;
	}
	return n;
}

bool pool_empty(const struct pool *p)
{
	for (unsigned i = 0; i < p->nslots; i++)
		if (p->slots[i]->health != SLOT_DOWN)
			return false;
	return true;
}

static void on_handle_closed(uv_handle_t *h)
{
	pool_unref(h->data);
}

static void close_handle(struct pool *p, uv_handle_t *h)
{
	h->data = p;
	uv_close(h, on_handle_closed);
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	p->freeing = true;
	for (unsigned i = 0; p->slots && i < p->nslots; i++) {
		struct slot *sl = p->slots[i];
		if (sl->chan)
			chan_close(sl->chan);
		child_free(sl->child);
		held_free(&sl->held);
		close_handle(p, (uv_handle_t *)&sl->respawn_timer);
	}
	child_reaper_free(p->reaper);
	forker_stop(&p->forker);
	p->open_handles += forker_close(&p->forker, on_handle_closed, p);
	permits_fini(&p->permits);
	scoreboard_destroy(p->board, p->board_fd);
	p->board = NULL;
	p->board_fd = -1;
	/* Freed when its timers are closed and no release of a dead worker's claims runs. */
	close_handle(p, (uv_handle_t *)&p->hb_timer);
	close_handle(p, (uv_handle_t *)&p->cancel_timer);
}

struct status_worker *pool_snapshot(const struct pool *p, struct status *st)
{
	struct status_worker *ws = calloc(p->nslots + 1, sizeof(*ws));
	uint64_t now = pool_now_ms(p);
	size_t k = 0;

	st->fork_server_pid = (int)forker_pid(&p->forker);
	st->host = p->host;
	st->workers = ws;
	for (unsigned i = 0; ws && i < p->nslots; i++) {
		const struct slot *sl = p->slots[i];
		/* A retired slot is shown until its worker is gone. */
		if (sl->role == ROLE_SPARE && sl->health == SLOT_DOWN)
			continue;
		struct sb_item run[SCOREBOARD_ENTRIES];
		size_t nrun = sl->health == SLOT_UP ? pool_running(sl, run, SCOREBOARD_ENTRIES) : 0;
		ws[k++] = (struct status_worker){
			.slot = (int)sl->idx, .pid = (int)sl->pid, .state = slot_state_name(sl),
			.item = nrun ? run[0].id : 0,
			.item_ms = nrun ? (int64_t)((uv_hrtime() - run[0].started_ns) / 1000000u) : -1,
			.inflight = nrun, .claims = sl->held.n,
			.done = sl->done, .failed = sl->failed, .dead = sl->dead, .restarts = sl->restarts,
			.rtt_ms = sl->rtt_valid ? sl->rtt_ms : -1,
			.heartbeat_age_ms = sl->rtt_valid ? (int64_t)(now - sl->last_ack) : -1,
		};
	}
	st->nworkers = k;
	return ws;
}
