#include "supervisor/supervisor.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "common/chan.h"
#include "supervisor/control.h"
#include "supervisor/dbq.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/proto.h"
#include "supervisor/sup.h"
#include "store/store.h"
#include "worker/handler.h"

#define QUICK_DEATH_MS 10000   /* a worker that dies sooner than this counts towards back-off */
#define RESPAWN_MAX_MS 30000
#define HEAD_SCAN_MS 1000      /* see store_cursor_hint() */
#define FORK_TIMEOUT_MS 5000  /* the fork server answers in about a millisecond */
#define DRAIN_MS 1000          /* wait for a dead worker's channel to reach EOF */

static uint64_t now_ms(const struct sup *s)
{
	return sup_now(s);
}

static bool slot_alive(const struct slot *sl)
{
	return sl->state != SLOT_DOWN;
}

const char *sup_slot_state_name(int state)
{
	if (state == SLOT_UNRESPONSIVE)
		return "unresponsive";
	if (state == SLOT_DOWN)
		return "down";
	return proto_wstate_name((unsigned)state);
}

static void maybe_finish_stop(struct sup *s);
static void slot_gone(struct slot *sl);
static void spawn_worker(struct slot *sl);
static void grant_more(struct sup *s);
static void on_want(struct slot *sl);
static void grant(struct slot *sl);
static void want_remove(struct sup *s, const struct slot *sl);

/* ---- claims table ---- */

static void claims_add(struct slot *sl, uint64_t id, uint64_t token)
{
	if (sl->nclaims == sl->capclaims) {
		size_t cap = sl->capclaims ? sl->capclaims * 2 : 64;
		struct store_ref *p = realloc(sl->claims, cap * sizeof(*p));
		if (!p) {
			log_error("out of memory tracking claims of worker slot=%d; item id=%llu "
				  "will come back after its lease", sl->idx, (unsigned long long)id);
			return;
		}
		sl->claims = p;
		sl->capclaims = cap;
	}
	sl->claims[sl->nclaims++] = (struct store_ref){ .id = id, .token = token };
}

static void claims_remove(struct slot *sl, uint64_t id, uint64_t token)
{
	for (size_t i = 0; i < sl->nclaims; i++) {
		if (sl->claims[i].id == id && sl->claims[i].token == token) {
			sl->claims[i] = sl->claims[--sl->nclaims];
			return;
		}
	}
}

/* ---- the supervisor's database jobs ---- */

/* Releasing the claims of a dead worker: must not be lost (retried until done). */
struct release_job {
	struct dbq_job j;
	struct sup *s;
	struct store_ref *refs;
	size_t n;
};

static int release_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct release_job *rj = container_of(j, struct release_job, j);

	return store_release(st, rj->refs, rj->n, true, "its worker died while running it", err,
			     errlen);
}

static void on_released(struct dbq_job *j)
{
	struct release_job *rj = container_of(j, struct release_job, j);
	struct sup *s = rj->s;

	if (j->rc >= 0)
		log_info("released %d of %zu claims of a dead worker (the rest had finished)", j->rc,
			 rj->n);
	else
		log_warn("gave up releasing %zu claims of a dead worker: %s; they come back when "
			 "their lease expires", rj->n, j->err);
	if (j->rc > 0)
		sup_wake_one(s, NULL);
	free(rj->refs);
	free(rj);
	maybe_finish_stop(s);
}

static void release_claims(struct slot *sl)
{
	struct release_job *rj;

	if (sl->nclaims == 0)
		return;
	rj = calloc(1, sizeof(*rj));
	if (!rj) {
		log_error("out of memory: %zu claims of worker slot=%d come back after their lease",
			  sl->nclaims, sl->idx);
		sl->nclaims = 0;
		return;
	}
	rj->j.run = release_run;
	rj->j.done = on_released;
	rj->j.must_finish = true;
	rj->s = sl->sup;
	rj->refs = sl->claims;
	rj->n = sl->nclaims;
	sl->claims = NULL;
	sl->nclaims = sl->capclaims = 0;
	dbq_push(sl->sup->dbq, &rj->j);
}

static int poll_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct sup *s = container_of(j, struct sup, poll_job);

	return store_poll_any(st, s->queue_ptrs, s->cfg->nqueues, err, errlen);
}

static void on_polled(struct dbq_job *j)
{
	struct sup *s = container_of(j, struct sup, poll_job);

	s->poll_inflight = false;
	if (j->rc > 0 && !s->stopping)
		sup_wake_one(s, NULL);
	else if (j->rc < 0)
		log_debug("idle poll failed: %s", j->err);
}

/* ---- messages from workers ---- */

static void on_items(struct slot *sl, const struct proto_msg *m)
{
	struct sup *s = sl->sup;

	for (unsigned i = 0; i < m->u.items.n; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		if (m->type == PROTO_CLAIMED) {
			claims_add(sl, it->id, it->token);
			continue;
		}
		claims_remove(sl, it->id, it->token);
		if (it->outcome == PROTO_OUT_DONE)
			sl->done++;
		else if (it->outcome == PROTO_OUT_RETRY || it->outcome == PROTO_OUT_DEAD)
			sl->failed++;
	}
	if (m->type != PROTO_CLAIMED)
		return;
	/* The furthest place any worker claimed (priority, then position) is where the next
	 * claimer starts. */
	if (store_place_after(&m->u.items.cursor, &s->cursor))
		s->cursor = m->u.items.cursor;
	/* CLAIMED answers a permit. A worker that found work: there may be more. */
	if (sl->granted) {
		sl->granted = false;
		s->claiming--;
	}
	/* A no-op worker runs its batch at once and wants the next one: it keeps the permit.
	 * Handing it to a sleeping worker costs a wake-up and a cold connection per claim (8
	 * workers did 0.87-0.89x the claims/s of 2; kept, the same). The others' finished
	 * items do not wait for a permit (see the worker's flush timer). */
	if (m->u.items.n > 0 && s->inline_handler && !s->stopping && sl->chan && !sl->exited) {
		want_remove(s, sl);
		grant(sl);
	}
	if (m->u.items.n > 0)
		sup_wake_one(s, sl);
	else
		grant_more(s);
}

static void slot_on_msg(void *data, const struct proto_msg *m)
{
	struct slot *sl = data;

	switch (m->type) {
	case PROTO_HELLO:
		log_debug("worker slot=%d pid=%u says hello", sl->idx, m->u.hello.pid);
		break;
	case PROTO_STATE:
		if (sl->state == SLOT_UNRESPONSIVE)
			break; /* our verdict stands until it is gone */
		if (m->u.state.item_id != sl->item)
			sl->item_since = now_ms(sl->sup);
		sl->item = m->u.state.item_id;
		sl->handler_pid = (pid_t)m->u.state.handler_pid;
		if (m->u.state.state == PROTO_W_DB_DOWN && sl->state != PROTO_W_DB_DOWN)
			log_warn("worker slot=%d pid=%d reports the database down", sl->idx,
				 (int)sl->pid);
		sl->state = m->u.state.state;
		break;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
		on_items(sl, m);
		break;
	case PROTO_WANT:
		on_want(sl);
		break;
	default:
		log_warn("worker slot=%d pid=%d sent an unexpected %s message, ignored", sl->idx,
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
	sl->last_ack = now_ms(sl->sup);
}

static void slot_on_close(void *data, int reason)
{
	struct slot *sl = data;

	sl->chan = NULL;
	if (reason == -EBADMSG || reason == -EMSGSIZE || reason == -EPROTONOSUPPORT) {
		log_error("worker slot=%d pid=%d broke the protocol (%s); killing it", sl->idx,
			  (int)sl->pid, strerror(-reason));
		if (!sl->exited)
			proc_kill(sl->pid, SIGKILL);
	}
	/* EOF: the process is exiting; once it has, the slot is done with. */
	if (sl->exited)
		slot_gone(sl);
}

static const struct chan_ops slot_chan_ops = {
	.on_msg = slot_on_msg,
	.on_ack = slot_on_ack,
	.on_close = slot_on_close,
};

static void send_to(struct slot *sl, struct proto_msg *m)
{
	int r;

	if (!sl->chan)
		return;
	r = chan_send(sl->chan, m);
	if (r < 0 && r != -ENOBUFS)
		log_warn("cannot send %s to worker slot=%d pid=%d: %s", proto_type_name(m->type),
			 sl->idx, (int)sl->pid, strerror(-r));
}

/* ---- claim permits ----
 * At most cfg->claimers claim transactions run at once per supervisor: beyond the number of
 * cores, more concurrent locking scans over the same index range only slow each other down.
 * A worker asks (WANT) when it is ready for more; a WAKE is the permit; its CLAIMED (with
 * the rows, or none) gives it back. */

static void grant(struct slot *sl)
{
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_WAKE;
	/* Once a second one claimer scans from the head, for rows behind the cursor. */
	if (now_ms(sl->sup) - sl->sup->head_scan_at >= HEAD_SCAN_MS) {
		sl->sup->head_scan_at = now_ms(sl->sup);
		memset(&m.u.wake.cursor, 0, sizeof(m.u.wake.cursor));  /* none: from the head */
	} else {
		m.u.wake.cursor = sl->sup->cursor;
	}
	send_to(sl, &m);
	sl->granted = true;
	sl->sup->claiming++;
}

static void want_remove(struct sup *s, const struct slot *sl)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nwant; i++)
		if (s->want[i] != sl->idx)
			s->want[k++] = s->want[i];
	s->nwant = k;
}

static void grant_more(struct sup *s)
{
	while (!s->stopping && s->claiming < s->cfg->claimers && s->nwant > 0) {
		struct slot *sl = &s->slots[s->want[0]];
		memmove(s->want, s->want + 1, --s->nwant * sizeof(*s->want));
		if (sl->chan && !sl->granted && !sl->exited)
			grant(sl);
	}
}

static void on_want(struct slot *sl)
{
	struct sup *s = sl->sup;
	bool queued = false;

	for (size_t i = 0; i < s->nwant; i++)
		queued |= s->want[i] == sl->idx;
	if (!queued && !sl->granted)
		s->want[s->nwant++] = sl->idx;
	grant_more(s);
}

/* There is work: workers waiting for a permit come first, then one idle worker. */
void sup_wake_one(struct sup *s, const struct slot *except)
{
	grant_more(s);
	if (s->stopping || s->claiming >= s->cfg->claimers)
		return;
	for (unsigned k = 0; k < s->cfg->workers; k++) {
		struct slot *sl = &s->slots[(s->poll_rr + k) % s->cfg->workers];
		if (sl == except || sl->state != PROTO_W_IDLE || !sl->chan || sl->granted)
			continue;
		s->poll_rr = (unsigned)(sl->idx + 1);
		grant(sl);
		return;
	}
}

/* ---- process lifecycle ---- */

static void on_respawn(uv_timer_t *t)
{
	struct slot *sl = t->data;

	if (!sl->sup->stopping)
		spawn_worker(sl);
}

/* The worker is gone and its channel drained: release what it still held, then replace it. */
static void slot_gone(struct slot *sl)
{
	struct sup *s = sl->sup;
	uint64_t lived = sl->exited_at - sl->started;
	unsigned delay = 0;

	uv_timer_stop(&sl->respawn_timer);
	if (sl->chan) {
		chan_close(sl->chan);
		sl->chan = NULL;
	}
	sl->exited = false;
	sl->state = SLOT_DOWN;
	sl->item = 0;
	sl->pid = 0;
	sl->handler_pid = 0;
	if (sl->granted) {
		sl->granted = false;
		s->claiming--;
	}
	want_remove(s, sl);
	release_claims(sl);
	if (s->stopping) {
		maybe_finish_stop(s);
		return;
	}
	sl->quick_deaths = lived < QUICK_DEATH_MS ? sl->quick_deaths + 1 : 0;
	if (sl->quick_deaths > 1) {
		delay = 250u << (sl->quick_deaths - 2 > 7 ? 7 : sl->quick_deaths - 2);
		if (delay > RESPAWN_MAX_MS)
			delay = RESPAWN_MAX_MS;
		log_warn("worker slot=%d keeps dying (%u times in a row, each within %d s); "
			 "restarting it in %u ms", sl->idx, sl->quick_deaths, QUICK_DEATH_MS / 1000,
			 delay);
	}
	sl->restarts++;
	uv_timer_start(&sl->respawn_timer, on_respawn, delay, 0);
}

static void on_drain_timeout(uv_timer_t *t)
{
	slot_gone(t->data);
}

static void worker_exited(struct slot *sl, int status)
{
	struct sup *s = sl->sup;
	uint64_t lived = now_ms(s) - sl->started;
	bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	char how[64];

	proc_describe_status(status, how, sizeof(how));
	if (failed || !s->stopping)
		log_warn("worker slot=%d pid=%d ended after %llu ms: %s", sl->idx, (int)sl->pid,
			 (unsigned long long)lived, how);
	else
		log_info("worker slot=%d pid=%d stopped", sl->idx, (int)sl->pid);
	/* A handler outlives a killed worker only by the children it started itself (the
	 * handler gets SIGKILL with its parent): take its whole process group down. */
	if (sl->handler_pid > 0 && failed) {
		proc_kill_group(sl->handler_pid, SIGKILL);
		sl->handler_pid = 0;
	}
	sl->exited = true;
	sl->exited_at = now_ms(s);
	/* Its last reports may still sit unread in the socket: read them before releasing. */
	if (!sl->chan)
		slot_gone(sl);
	else
		uv_timer_start(&sl->respawn_timer, on_drain_timeout, DRAIN_MS, 0);
}

/* Every child and every orphan of ours (we are a subreaper): workers, the fork server, and
 * whatever a dead worker's handler left behind. */
static void on_sigchld(uv_signal_t *h, int signum)
{
	struct sup *s = h->data;
	int status;
	pid_t pid;

	while (proc_reap_any(&pid, &status) == 1) {
		struct slot *sl = NULL;
		char how[64];

		for (unsigned i = 0; i < s->cfg->workers && !sl; i++)
			if (s->slots[i].pid == pid && slot_alive(&s->slots[i]) && !s->slots[i].exited)
				sl = &s->slots[i];
		if (sl) {
			worker_exited(sl, status);
			continue;
		}
		proc_describe_status(status, how, sizeof(how));
		if (pid == s->forker.pid) {
			log_warn("the fork server pid=%d exited (%s); starting another with the next "
				 "worker", (int)pid, how);
			proc_forker_lost(&s->forker);
		} else {
			log_debug("reaped pid=%d (%s), an orphan of a worker", (int)pid, how);
		}
	}
}

static int start_forker(struct sup *s)
{
	char ppid_s[16], fd_s[] = "3";
	char **args = calloc((size_t)s->argc + 6, sizeof(char *));
	int n = 0, r;

	if (!args)
		return -ENOMEM;
	snprintf(ppid_s, sizeof(ppid_s), "%d", (int)getpid());
	args[n++] = s->exe;
	for (int i = 1; i < s->argc; i++)
		args[n++] = s->argv[i];
	args[n++] = "--fork-server-fd";
	args[n++] = fd_s;
	args[n++] = "--parent-pid";
	args[n++] = ppid_s;
	args[n] = NULL;
	r = proc_forker_start(&s->forker, args);
	free(args);
	if (r == 0)
		log_debug("fork server pid=%d started", (int)s->forker.pid);
	return r;
}

static void spawn_worker(struct slot *sl)
{
	struct sup *s = sl->sup;
	uv_os_sock_t fds[2] = { -1, -1 };
	pid_t pid = 0;
	int r;

	r = uv_socketpair(SOCK_STREAM, 0, fds, 0, 0);
	if (r < 0)
		goto fail;
	if (s->forker.pid <= 0 && (r = start_forker(s)) < 0) {
		log_error("cannot start the fork server: %s", strerror(-r));
		goto fail;
	}
	r = proc_forker_fork(&s->forker, sl->idx, fds[1], FORK_TIMEOUT_MS, &pid);
	uv_update_time(s->loop);  /* it blocked: up to FORK_TIMEOUT_MS when the server hangs */
	close(fds[1]);
	fds[1] = -1;
	if (r < 0)
		goto fail;
	sl->pid = pid;
	sl->started = now_ms(s);
	sl->state = PROTO_W_STARTING;
	sl->term_sent = sl->kill_sent = false;
	sl->rtt_valid = false;
	sl->last_ack = 0;
	sl->item = 0;
	r = chan_open(s->loop, fds[0], &slot_chan_ops, sl, &sl->chan);
	fds[0] = -1;
	if (r < 0) {
		log_error("worker slot=%d pid=%d: cannot open its channel: %s; killing it", sl->idx,
			  (int)sl->pid, uv_strerror(r));
		proc_kill(sl->pid, SIGKILL);
	} else {
		log_info("worker slot=%d pid=%d started", sl->idx, (int)sl->pid);
	}
	return;
fail:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	log_error("cannot start worker slot=%d: %s; trying again in %d ms", sl->idx,
		  strerror(-r), RESPAWN_MAX_MS / 10);
	sl->state = SLOT_DOWN;
	if (!s->stopping)
		uv_timer_start(&sl->respawn_timer, on_respawn, RESPAWN_MAX_MS / 10, 0);
}

/* ---- heartbeat and hang detection ---- */

static void check_slot(struct slot *sl)
{
	struct sup *s = sl->sup;
	uint64_t now = now_ms(s), overdue = chan_oldest_pending_ms(sl->chan);
	struct proto_msg m;

	if (!slot_alive(sl) || sl->exited)
		return;
	if (sl->term_sent) {
		if (!sl->kill_sent && now - sl->term_at >= s->cfg->kill_grace_ms) {
			log_warn("worker slot=%d pid=%d still there %u ms after SIGTERM; SIGKILL",
				 sl->idx, (int)sl->pid, s->cfg->kill_grace_ms);
			proc_kill(sl->pid, SIGKILL);
			sl->kill_sent = true;
		}
		return;
	}
	if (overdue > s->cfg->hang_ms || chan_pending(sl->chan) >= CHAN_MAX_PENDING ||
	    (!sl->chan && now - sl->started > s->cfg->hang_ms)) {
		log_warn("worker slot=%d pid=%d unresponsive: no answer for %llu ms (limit %u ms); "
			 "SIGTERM, then SIGKILL in %u ms", sl->idx, (int)sl->pid,
			 (unsigned long long)overdue, s->cfg->hang_ms, s->cfg->kill_grace_ms);
		sl->state = SLOT_UNRESPONSIVE;
		sl->term_sent = true;
		sl->term_at = now;
		proc_kill(sl->pid, SIGTERM);
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = PROTO_PING;
	m.u.ping.sent_ms = now;
	send_to(sl, &m);
}

static void on_heartbeat(uv_timer_t *t)
{
	struct sup *s = t->data;

	for (unsigned i = 0; i < s->cfg->workers; i++)
		check_slot(&s->slots[i]);
}

/* One idle poll per interval for the whole pool, on the supervisor's own connection: an idle
 * worker is woken only when there is work. */
static void on_prune_timer(uv_timer_t *t)
{
	struct sup *s = t->data;

	maint_due(s->maint);
}

static void on_poll(uv_timer_t *t)
{
	struct sup *s = t->data;
	bool idle = false;

	if (s->stopping || maint_tick(s->maint))
		return;
	/* With every claim permit out, finding work would wake nobody: the workers holding
	 * them are claiming already, and one gives its permit back when a claim finds nothing.
	 * (Under load the poll would only read the head of the claim ranges, where the entries
	 * of rows just claimed wait for purge.) */
	if (s->claiming >= s->cfg->claimers)
		return;
	for (unsigned i = 0; i < s->cfg->workers; i++)
		idle |= s->slots[i].state == PROTO_W_IDLE && s->slots[i].chan;
	if (!idle || s->poll_inflight)
		return;
	s->poll_inflight = true;
	s->poll_job.run = poll_run;
	s->poll_job.done = on_polled;
	dbq_push(s->dbq, &s->poll_job);
}

/* ---- stopping ---- */

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void maybe_finish_stop(struct sup *s)
{
	if (!s->stopping || s->stopped)
		return;
	for (unsigned i = 0; i < s->cfg->workers; i++)
		if (slot_alive(&s->slots[i]))
			return;
	if (dbq_pending(s->dbq) && dbq_db_up(s->dbq))
		return; /* releases still being written */
	dbq_cancel_waiting(s->dbq);
	s->stopped = true;
	log_info("all workers stopped; exiting");
	cmds_flush(s->cmds);
	control_close(s->control);
	s->control = NULL;
	uv_stop(s->loop);
}

/* Stopping waits for the database work in flight (releases above all): check again when it
 * is over, whatever it was. */
static void on_db_idle(void *data)
{
	maybe_finish_stop(data);
}

static void on_stop_timeout(uv_timer_t *t)
{
	struct sup *s = t->data;

	for (unsigned i = 0; i < s->cfg->workers; i++) {
		struct slot *sl = &s->slots[i];
		if (slot_alive(sl) && sl->pid && !sl->exited) {
			log_warn("worker slot=%d pid=%d did not stop in time; SIGKILL", sl->idx,
				 (int)sl->pid);
			proc_kill(sl->pid, SIGKILL);
		}
	}
	/* Unreachable database with releases pending: do not wait for ever. */
	if (dbq_pending(s->dbq)) {
		dbq_cancel_waiting(s->dbq);
		maybe_finish_stop(s);
	}
}

static void begin_stop(struct sup *s, int signum)
{
	struct proto_msg m;

	if (s->stopping) {
		log_warn("second signal %d: killing the workers now", signum);
		on_stop_timeout(&s->stop_timer);
		return;
	}
	s->stopping = true;
	log_info("signal %d: stopping; in-flight items get %u ms", signum, s->cfg->grace_ms);
	uv_timer_stop(&s->poll_timer);
	for (unsigned i = 0; i < s->cfg->workers; i++) {
		struct slot *sl = &s->slots[i];
		uv_timer_stop(&sl->respawn_timer);
		if (!slot_alive(sl))
			continue;
		memset(&m, 0, sizeof(m));
		m.type = PROTO_STOP;
		m.u.stop.grace_ms = s->cfg->grace_ms;
		send_to(sl, &m);
	}
	/* The workers cut their handlers at grace; give them kill-grace more to write. */
	uv_timer_start(&s->stop_timer, on_stop_timeout,
		       (uint64_t)s->cfg->grace_ms + s->cfg->kill_grace_ms + 1000, 0);
	maybe_finish_stop(s);
}

static void on_signal(uv_signal_t *h, int signum)
{
	begin_stop(h->data, signum);
}

/* ---- what the commands ask of us ---- */

static void host_wake(void *data)
{
	sup_wake_one(data, NULL);
}

static uint64_t host_now(void *data)
{
	return sup_now(data);
}

static struct status_worker *host_snapshot(void *data, struct status *st)
{
	struct sup *s = data;
	struct status_worker *ws = calloc(s->cfg->workers, sizeof(*ws));
	uint64_t now = sup_now(s);

	*st = (struct status){
		.pid = (int)getpid(), .fork_server_pid = (int)s->forker.pid, .host = s->host,
		.queue = s->cfg->queue_list, .uptime_ms = now - s->started,
		.stopping = s->stopping, .db_up = dbq_db_up(s->dbq),
		.workers = ws, .nworkers = ws ? s->cfg->workers : 0,
	};
	for (unsigned i = 0; ws && i < s->cfg->workers; i++) {
		const struct slot *sl = &s->slots[i];
		ws[i] = (struct status_worker){
			.slot = sl->idx, .pid = (int)sl->pid, .state = sup_slot_state_name(sl->state),
			.item = sl->item, .item_ms = now - sl->item_since, .claims = sl->nclaims,
			.done = sl->done, .failed = sl->failed, .restarts = sl->restarts,
			.rtt_valid = sl->rtt_valid, .rtt_ms = sl->rtt_ms,
			.heartbeat_age_ms = now - sl->last_ack,
		};
	}
	return ws;
}

/* ---- set-up ---- */

static int sup_init(struct sup *s, const struct config *cfg, int argc, char **argv)
{
	struct cmd_host host = { .wake = host_wake, .snapshot = host_snapshot, .now_ms = host_now };
	char err[512] = "";
	size_t len = sizeof(s->exe);
	int r;

	s->cfg = cfg;
	s->inline_handler = handler_spec_inline(cfg->handler);
	s->argc = argc;
	s->argv = argv;
	s->started = now_ms(s);
	gethostname(s->host, sizeof(s->host) - 1);
	r = uv_exepath(s->exe, &len);
	if (r < 0) {
		log_error("cannot find my own executable: %s", uv_strerror(r));
		return r;
	}
	for (unsigned i = 0; i < cfg->nqueues; i++)
		s->queue_ptrs[i] = cfg->queues[i];
	r = store_new(&cfg->dsn, "supervisor", &s->store);
	if (r < 0)
		return r;
	store_set_dedupe_window(s->store, cfg->dedupe_window_ms / 1000);
	r = dbq_new(s->loop, s->store, on_db_idle, s, &s->dbq);
	if (r < 0)
		return r;
	s->slots = calloc(cfg->workers, sizeof(*s->slots));
	s->want = calloc(cfg->workers, sizeof(*s->want));
	if (!s->slots || !s->want)
		return -ENOMEM;
	r = maint_new(s->dbq, cfg, &s->maint);
	if (r < 0)
		return r;
	host.dbq = s->dbq;
	host.cfg = cfg;
	host.data = s;
	r = cmds_new(&host, &s->cmds);
	if (r < 0)
		return r;
	r = control_open(s->loop, cfg->control, s->cmds, &s->control, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	uv_timer_t *timers[] = { &s->hb_timer, &s->poll_timer, &s->stop_timer, &s->prune_timer };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++) {
		uv_timer_init(s->loop, timers[i]);
		timers[i]->data = s;
	}
	uv_signal_init(s->loop, &s->sigterm);
	uv_signal_init(s->loop, &s->sigint);
	s->sigterm.data = s->sigint.data = s;
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	/* Workers come from the fork server and are re-parented to us: we wait for them. */
	r = proc_become_subreaper();
	if (r < 0) {
		log_error("cannot become a subreaper: %s", strerror(-r));
		return r;
	}
	uv_signal_init(s->loop, &s->sigchld);
	s->sigchld.data = s;
	uv_signal_start(&s->sigchld, on_sigchld, SIGCHLD);
	r = start_forker(s);
	if (r < 0) {
		log_error("cannot start the fork server: %s", strerror(-r));
		return r;
	}
	for (unsigned i = 0; i < cfg->workers; i++) {
		struct slot *sl = &s->slots[i];
		sl->sup = s;
		sl->idx = (int)i;
		sl->state = SLOT_DOWN;
		uv_timer_init(s->loop, &sl->respawn_timer);
		sl->respawn_timer.data = sl;
	}
	return 0;
}

static void sup_teardown(struct sup *s)
{
	uv_handle_t *hs[] = { (uv_handle_t *)&s->hb_timer, (uv_handle_t *)&s->poll_timer,
			      (uv_handle_t *)&s->stop_timer, (uv_handle_t *)&s->prune_timer,
			      (uv_handle_t *)&s->sigterm, (uv_handle_t *)&s->sigint,
			      (uv_handle_t *)&s->sigchld };

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (hs[i]->loop)
			close_handle(hs[i]);
	for (unsigned i = 0; s->slots && i < s->cfg->workers; i++) {
		if (s->slots[i].respawn_timer.loop)
			close_handle((uv_handle_t *)&s->slots[i].respawn_timer);
		free(s->slots[i].claims);
	}
	control_close(s->control);
	proc_forker_stop(&s->forker);
	/* Let close callbacks (and a running database job) finish. */
	uv_run(s->loop, UV_RUN_DEFAULT);
	free(s->slots);
	free(s->want);
	cmds_free(s->cmds);
	maint_free(s->maint);
	dbq_free(s->dbq);
	uv_run(s->loop, UV_RUN_DEFAULT);
	store_free(s->store);
}

int supervisor_main(const struct config *cfg, int argc, char **argv)
{
	uv_loop_t loop;
	struct sup s;
	int r;

	log_init("sup", cfg->log_level);
	memset(&s, 0, sizeof(s));
	s.forker.fd = -1;
	if (uv_loop_init(&loop) < 0)
		return 1;
	s.loop = &loop;
	r = sup_init(&s, cfg, argc, argv);
	if (r < 0) {
		sup_teardown(&s);
		uv_loop_close(&loop);
		return 1;
	}
	log_info("starting %u workers on queue%s '%s', handler %s, control socket %s",
		 cfg->workers, cfg->nqueues > 1 ? "s" : "", cfg->queue_list, cfg->handler,
		 cfg->control);
	for (unsigned i = 0; i < cfg->workers; i++)
		spawn_worker(&s.slots[i]);
	uv_timer_start(&s.hb_timer, on_heartbeat, cfg->heartbeat_ms, cfg->heartbeat_ms);
	uv_timer_start(&s.poll_timer, on_poll, cfg->poll_ms, cfg->poll_ms);
	uv_timer_start(&s.prune_timer, on_prune_timer, cfg->maintenance_ms, cfg->maintenance_ms);
	uv_run(&loop, UV_RUN_DEFAULT);
	sup_teardown(&s);
	r = uv_loop_close(&loop);
	if (r < 0)
		log_debug("loop close: %s", uv_strerror(r));
	return 0;
}
