/* A worker's set-up, and the supervisor's messages: permits (WAKE), STOP, the channel
 * closing. They move the worker's state through worker.c (worker_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proc.h"
#include "worker/fence.h"
#include "worker/pipe_coproc.h"
#include "worker/worker.h"
#include "worker/worker_int.h"

/* ---- the supervisor's messages ---- */

static void on_grace(uv_timer_t *t)
{
	struct worker *w = t->data;
	unsigned n = handler_running(w->handler);

	w->grace_over = true;
	if (n > 0) {
		log_warn("grace period over: stopping %u running item%s; they go back", n,
			 n == 1 ? "" : "s");
		handler_stop_all(w->handler, HANDLER_STOP_SHUTDOWN);
	}
}

/* A claim permit: used when the worker is waiting for one (or asleep), else it goes straight
 * back (CLAIMED with no rows). */
static void on_wake(struct worker *w, const struct place *cursor)
{
	w->asked = false;
	if (w->stopping || worker_db_waiting(w) || (w->state != WS_WANT && w->state != WS_SLEEP)) {
		w->b.n = 0;
		worker_answer_permit(w, 0);
		return;
	}
	w->hint = *cursor;   /* for the claim (the store may be a statement's still) */
	w->hint_set = true;
	w->drained = false;   /* a WAKE is news of work, or the permit a WANT asked for */
	worker_wire_woken(w);
	worker_enter(w, WS_CLAIM);
	worker_kick(w);
}

static void on_stop(struct worker *w, unsigned grace_ms)
{
	if (w->stopping)
		return;
	log_debug("stopping: in-flight items get %u ms", grace_ms);
	w->stopping = true;
	worker_report(w);
	uv_timer_start(&w->grace_timer, on_grace, grace_ms, 0);
	switch (w->state) {
	case WS_CLAIM:
		/* A claim that runs answers when it ends (and its rows go back then). */
		if (!w->db_running || w->job.max == 0) {
			w->b.n = 0;
			worker_answer_permit(w, 0);
		}
		/* fall through */
	case WS_WANT:
	case WS_SLEEP:
	case WS_FULL:
		worker_enter(w, WS_DRAIN);
		break;
	default:
		break;  /* starting or connecting: it drains when the database is back */
	}
	worker_kick(w);
}

static void on_msg(void *data, const struct proto_msg *m)
{
	struct worker *w = data;

	switch (m->type) {
	case PROTO_PING:
		break; /* the ack is the answer */
	case PROTO_WAKE:
		on_wake(w, &m->u.wake.cursor);
		break;
	case PROTO_STOP:
		on_stop(w, m->u.stop.grace_ms);
		break;
	case PROTO_CANCEL:
		worker_cancel(w, m);
		break;
	default:
		log_warn("unexpected %s message from the supervisor, ignored",
			 proto_type_name(m->type));
	}
}

static void on_close(void *data, int reason)
{
	struct worker *w = data;

	w->chan = NULL;
	if (reason == 0)
		log_info("supervisor closed the channel; exiting");
	else
		log_error("supervisor channel failed: %s; exiting", strerror(-reason));
	w->exit_code = reason == 0 ? 0 : 1;
	worker_enter(w, WS_EXIT);
}

static const struct chan_ops worker_chan_ops = {
	.on_msg = on_msg,
	.on_close = on_close,
};

/* ---- set-up ---- */

/* The handler can take items now (worker_room asks it): claim. */
/* Ready: it may claim (kicked). Not ready: nothing changes but what the supervisor sees. */
static void on_handler_ready(void *data)
{
	struct worker *w = data;

	if (w->state != WS_EXIT)
		worker_report(w);
	worker_kick(w);
}

static void on_handler_notice(void *data, const char *text)
{
	(void)data;
	log_warn("%s", text);
}

/* A line of the co-process's stderr, its control characters shown as '?' (the text log is
 * read on terminals: the handler's bytes must not drive them). */
static void on_handler_output(void *data, const char *line, size_t len)
{
	char safe[PIPE_COPROC_ERR_LINE_MAX];

	(void)data;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len > sizeof(safe))
		len = sizeof(safe);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)line[i];
		safe[i] = (ch < 0x20 && ch != '\t') || ch == 0x7f ? '?' : (char)ch;
	}
	log_info("handler: %.*s", (int)len, safe);
}

static int worker_init(struct worker *w, const struct config *cfg)
{
	char err[512] = "", host[64] = "";
	struct proto_msg m;
	int r;

	w->cfg = cfg;
	w->state = WS_START;
	__atomic_store_n(&w->b.lease_ok_ns, 0, __ATOMIC_RELEASE);
	w->db_backoff = (struct backoff)BACKOFF_INIT(DB_BACKOFF_MIN_MS, DB_BACKOFF_MAX_MS);
	outcomes_init(&w->out, worker_send_out, w);
	if (cfg->log_items)
		w->out.finished = worker_log_item;
	srand((unsigned)(getpid() ^ uv_hrtime()));
	r = scoreboard_attach(SCOREBOARD_FD, (unsigned)cfg->worker_slot, cfg->concurrency,
			      &w->board);
	if (r < 0) {
		log_error("cannot map the scoreboard (fd %d): %s", SCOREBOARD_FD, strerror(-r));
		return r;
	}
	close(SCOREBOARD_FD);   /* mapped: the descriptor is of no more use */
	if ((r = fence_init(w->board)) < 0)
		log_warn("cannot set the lease fence's timer (%s): a handler is not stopped when "
			 "its lease ends", strerror(-r));
	gethostname(host, sizeof(host) - 1);
	proc_worker_name(w->claimer, sizeof(w->claimer), host, cfg->worker_slot, getpid());
	r = uv_loop_init(&w->loop);
	if (r < 0)
		return r;
	uv_timer_t *timers[] = { &w->kick_timer, &w->db_timer, &w->lease_timer, &w->grace_timer,
				 &w->gate_timer, &w->flush_timer, &w->progress_timer,
				 &w->watch_timer };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++) {
		uv_timer_init(&w->loop, timers[i]);
		timers[i]->data = w;
	}
	w->up = (struct worker_up){ .kick = worker_kick, .db_failed = worker_db_failed,
				    .write = worker_write };
	if ((r = uv_async_init(&w->loop, &w->locked_async, worker_on_locked_async)) < 0 ||
	    (r = uv_sem_init(&w->locked_sem, 0)) < 0)
		return r;
	w->locked_async.data = w;
	w->cancel_later.type = PROTO_CANCEL;
	/* Checked at start (claimd.c); looked up again here, where the handlers start. */
	if (*cfg->handler_user &&
	    ((r = proc_user_lookup(cfg->handler_user, &w->handler_as, err, sizeof(err))) < 0 ||
	     (!proc_can_switch_user() && (r = -EPERM)))) {
		log_error("--handler-user %s: %s", cfg->handler_user,
			  r == -EPERM ? "this worker cannot start processes as another user" : err);
		return r;
	}
	struct handler_opts ho = {
		.concurrency = cfg->concurrency, .kill_grace_ms = cfg->kill_grace_ms,
		.exec_result = cfg->exec_result, .pipe_ready = cfg->pipe_ready, .scoreboard = w->board,
		.as = *cfg->handler_user ? &w->handler_as : NULL, .lease_ok_ns = &w->b.lease_ok_ns,
		.hooks = { .done = worker_on_done, .progress = worker_on_progress,
			   .ready = on_handler_ready, .notice = on_handler_notice,
			   .output = on_handler_output, .data = w },
	};
	r = handler_new(&w->loop, cfg->handler, &ho, &w->handler, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	w->conc = handler_concurrency(w->handler);
	if (w->conc < cfg->concurrency && cfg->worker_slot == 0)
		log_warn("--concurrency %u: the plugin does not say it is thread-safe "
			 "(CLAIMD_PLUGIN_THREAD_SAFE, claimd/handler.h): it runs one item at a time",
			 cfg->concurrency);
	r = items_init(&w->items, w->conc + PROTO_MAX_ITEMS);
	if (r < 0)
		return r;
	r = store_new(&cfg->dsn, w->claimer, &w->store);
	if (r < 0)
		return r;
	store_set_dedupe_window(w->store, cfg->dedupe_window_ms / 1000);
	store_set_claim_hook(w->store, worker_on_locked, w);
	r = chan_open(&w->loop, cfg->worker_fd, &worker_chan_ops, w, &w->chan);
	if (r < 0) {
		log_error("cannot open the supervisor channel on fd %d: %s", cfg->worker_fd,
			  uv_strerror(r));
		return r;
	}
	memset(&m, 0, sizeof(m));
	m.type = PROTO_HELLO;
	m.u.hello.pid = (uint32_t)getpid();
	m.u.hello.slot = (uint32_t)cfg->worker_slot;
	worker_send(w, &m);
	worker_report(w);
	uv_timer_start(&w->lease_timer, worker_on_lease_timer, cfg->lease_ms / 3, cfg->lease_ms / 3);
	return 0;
}

int worker_main(const struct config *cfg)
{
	static struct worker w; /* large (batch buffers): not on the stack */
	char name[16];
	int r;

	snprintf(name, sizeof(name), "w%d", cfg->worker_slot);
	log_init(name, cfg->log_level, cfg->log_format);
	proc_ignore_stop_signals();
	if (proc_die_with_parent(cfg->parent_pid) < 0)
		log_warn("cannot ask to die with the supervisor; relying on the channel");
	r = worker_init(&w, cfg);
	if (r < 0)
		return 1;
	/* Connect from the loop so the supervisor already hears heartbeats while we try. */
	uv_timer_start(&w.db_timer, worker_on_db_timer, 0, 0);
	uv_run(&w.loop, UV_RUN_DEFAULT);
	while (w.db_running)   /* a statement's thread still has the store */
		uv_run(&w.loop, UV_RUN_ONCE);
	if (w.chan)
		chan_close(w.chan);
	handler_free(w.handler);
	items_fini(&w.items);
	store_free(w.store);
	log_debug("exit code=%d", w.exit_code);
	return w.exit_code;
}
