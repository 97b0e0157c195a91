/* The supervisor wires its parts together on one libuv loop: the pool of workers
 * (pool.c, with the claim permits of permits.c), its own database connection (a queue of jobs
 * on the thread pool, dbq.c), the idle poll and maintenance (maint.c) on a timer, the
 * operator's surface (through surface.h: the control socket, HTTP), and stopping on
 * SIGTERM/SIGINT. */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "common/proc.h"
#include "common/secret.h"
#include "store/store.h"
#include "supervisor/dbq.h"
#include "supervisor/history_flush.h"
#include "supervisor/idle.h"
#include "supervisor/maint.h"
#include "supervisor/schedules.h"
#include "supervisor/notify.h"
#include "supervisor/pool.h"
#include "supervisor/registry.h"
#include "supervisor/surface.h"
#include "worker/handler.h"

struct sup {
	uv_loop_t *loop;
	struct config *cfg;        /* main's; a reload changes what it may in place */
	int argc;                  /* the command line, read again at a reload */
	char **argv;
	uint64_t started;
	struct store *store;
	struct dbq *dbq;
	struct store *adds_store[SUP_ADDS_PIPES];   /* connections of their own for adds */
	struct dbq *adds_dbq[SUP_ADDS_PIPES];
	struct pool *pool;
	struct maint *maint;
	struct schedules *sched;
	struct registry *registry;
	struct history_flush *hflush;   /* the queues' history, this supervisor's part */
	const struct surface_ops *ops;   /* the operator's surface, and what it opened */
	struct surface *surface;
	struct jobstats stats;
	const char *queues[CONFIG_QUEUES_MAX];  /* cfg->queues, for the poll */
	struct idle *idle;         /* how idle workers learn of work: the binary log or polls */
	uint64_t maint_changes;    /* idle_changes() at the last maintenance pass */
	unsigned maint_skipped;    /* passes skipped since */
	uv_timer_t poll_timer, maint_timer, stop_timer, watchdog_timer;
	bool ready_told;            /* READY=1 was sent (the pool served once) */
	char status_told[200];      /* the last STATUS= sent */
	uv_signal_t sigterm, sigint, sighup, sigttin, sigttou;
	bool stopping, stopped;
};

static uint64_t now_ms(const struct sup *s)
{
	return uv_now(s->loop);
}

/* ---- systemd (notify.h) ---- */

/* READY=1 once every worker is up the first time; STATUS= when what it says changed. */
static void tell_systemd(struct sup *s)
{
	unsigned db_down, up;
	char st[sizeof(s->status_told)], text[sizeof(st) + 32];

	if (!notify_enabled())
		return;
	up = pool_up(s->pool, &db_down);
	if (!s->ready_told && up < s->cfg->workers)
		return;
	snprintf(st, sizeof(st), "%u of %u workers up, database %s%s, queues %.60s", up,
		 s->cfg->workers, dbq_db_up(s->dbq) && !db_down ? "up" : "unreachable",
		 s->stopping ? ", stopping" : "", s->cfg->queue_list);
	if (s->ready_told && !strcmp(st, s->status_told))
		return;
	snprintf(text, sizeof(text), "%sSTATUS=%s", s->ready_told ? "" : "READY=1\n", st);
	snprintf(s->status_told, sizeof(s->status_told), "%s", st);
	s->ready_told = true;
	notify_send(text);
}

static void on_watchdog(uv_timer_t *t)
{
	notify_send("WATCHDOG=1");
}

/* A tick per --poll-interval: the registry's refresh, the schedules' due ticks, a
 * maintenance step or the idle poll (idle.h), at most one of them. */
static void on_poll(uv_timer_t *t)
{
	struct sup *s = t->data;

	tell_systemd(s);
	if (s->stopping || registry_tick(s->registry) || schedules_tick(s->sched) ||
	    maint_tick(s->maint))
		return;
	idle_tick(s->idle);
}

/* Pushed, and nothing changed since the last pass: maintenance can wait (rows only age,
 * and a dedupe key whose window passed is freed by the insert that wants it), up to
 * MAINT_IDLE_EVERY intervals; it counts in the idle load. */
#define MAINT_IDLE_EVERY 2

static void on_maint_timer(uv_timer_t *t)
{
	struct sup *s = t->data;
	uint64_t changes = idle_changes(s->idle);

	if (idle_push(s->idle) && changes == s->maint_changes && ++s->maint_skipped < MAINT_IDLE_EVERY)
		return;
	s->maint_changes = changes;
	s->maint_skipped = 0;
	maint_due(s->maint);
	schedules_kick(s->sched);   /* schedules added or changed with plain SQL */
}

/* ---- stopping ---- */

/* Whether database work is still under way (on a connection that reaches the database). */
static bool db_busy(const struct sup *s)
{
	bool busy = dbq_pending(s->dbq) && dbq_db_up(s->dbq);

	for (int k = 0; k < SUP_ADDS_PIPES; k++)
		busy |= s->adds_dbq[k] && dbq_pending(s->adds_dbq[k]) && dbq_db_up(s->adds_dbq[k]);
	return busy;
}

static void cancel_waiting(struct sup *s)
{
	dbq_cancel_waiting(s->dbq);
	for (int k = 0; k < SUP_ADDS_PIPES; k++)
		if (s->adds_dbq[k])
			dbq_cancel_waiting(s->adds_dbq[k]);
}

static void maybe_finish_stop(struct sup *s)
{
	if (!s->stopping || s->stopped || !pool_empty(s->pool))
		return;
	/* What the workers finished last, written first (not waited for with the database
	 * unreachable: the stop does not wait for it either). */
	if (dbq_db_up(s->dbq) && history_flush_last(s->hflush))
		return;
	if (db_busy(s))
		return; /* releases (and adds) still being written */
	cancel_waiting(s);
	s->stopped = true;
	log_info("all workers stopped; exiting");
	s->ops->stop(s->surface);
	uv_stop(s->loop);
}

/* Stopping waits for the database work in flight (releases above all) and for every worker:
 * check again whenever either is over. */
static void on_change(void *data)
{
	maybe_finish_stop(data);
}

static void on_stop_timeout(uv_timer_t *t)
{
	struct sup *s = t->data;

	pool_kill(s->pool);
	/* Unreachable database with releases pending: do not wait for ever. */
	cancel_waiting(s);
	maybe_finish_stop(s);
}

static void begin_stop(struct sup *s, int signum)
{
	if (s->stopping) {
		log_warn("second signal %d: killing the workers now", signum);
		on_stop_timeout(&s->stop_timer);
		return;
	}
	s->stopping = true;
	notify_send("STOPPING=1");
	log_info("signal %d: stopping; in-flight items get %u ms", signum, s->cfg->grace_ms);
	registry_stop(s->registry);
	history_flush_stop(s->hflush);
	idle_stop(s->idle);
	uv_timer_stop(&s->poll_timer);
	pool_stop(s->pool, s->cfg->grace_ms);
	/* The workers cut their handlers at grace; give them kill-grace more to write. */
	uv_timer_start(&s->stop_timer, on_stop_timeout,
		       (uint64_t)s->cfg->grace_ms + s->cfg->kill_grace_ms + 1000, 0);
	maybe_finish_stop(s);
}

static void on_signal(uv_signal_t *h, int signum)
{
	begin_stop(h->data, signum);
}

/* ---- reload and resize (SIGHUP, SIGTTIN, SIGTTOU; claimctl reload, workers) ---- */

/* The settings read again (the config file, the environment, the command line) and what
 * can change live applied: the supervisor's own at once, the workers' by replacing each
 * after its item (a new fork server reads them). What only a restart applies is logged.
 * summary: what was done, for claimctl. Returns 0, or -EINVAL when the new settings are bad
 * (the running ones stay). */
static int reload(struct sup *s, char *summary, size_t len)
{
	static struct config next;   /* large: not on the stack */
	char err[600] = "", restart[300], tls[300] = "";
	const char *pwfile;
	bool replace;
	int r;

	if (s->stopping) {
		snprintf(summary, len, "claimd is stopping");
		return -EINVAL;
	}
	notify_send("RELOADING=1");
	r = config_parse(s->argc, s->argv, &next, err, sizeof(err));
	if (r == CONFIG_RUN && (handler_check(next.handler, err, sizeof(err)) < 0 ||
				handler_user_check(next.handler, s->cfg->handler_user, err,
						   sizeof(err)) < 0))
		r = -EINVAL;
	/* The secret files, as at the start: one group or others may access now is refused
	 * (one not there is for what reads it to say). */
	if (r == CONFIG_RUN && ((pwfile = dsn_password_file(&next.dsn)) &&
				secret_check("password_file", pwfile, err, sizeof(err)) == -EPERM))
		r = -EINVAL;
	if (r == CONFIG_RUN && s->ops->check_secrets(&next, err, sizeof(err)) < 0)
		r = -EINVAL;
	if (r != CONFIG_RUN) {
		log_error("reload: %s; the running settings stay", *err ? err : "--help or --version");
		snprintf(summary, len, "not reloaded: %s", err);
		notify_send("READY=1");
		return -EINVAL;
	}
	config_needs_restart(s->cfg, &next, restart, sizeof(restart));
	replace = config_workers_differ(s->cfg, &next);
	config_apply_live(s->cfg, &next);
	log_init("sup", s->cfg->log_level, s->cfg->log_format);
	pool_retime(s->pool);
	uv_timer_start(&s->poll_timer, on_poll, s->cfg->poll_ms, s->cfg->poll_ms);
	uv_timer_start(&s->maint_timer, on_maint_timer, s->cfg->maintenance_ms,
		       s->cfg->maintenance_ms);
	history_flush_start(s->hflush);
	if (replace)
		pool_replace_all(s->pool);
	pool_resize(s->pool, s->cfg->workers);
	if (s->surface)
		s->ops->reload(s->surface, tls, sizeof(tls));
	snprintf(summary, len, "reloaded: %u workers%s%s%s%s%s", s->cfg->workers,
		 replace ? "; each is replaced after its item (the handler or its settings "
		 "changed)" : "", *restart ? "; a restart applies what changed in: " : "", restart,
		 *tls ? "; the HTTPS certificate in use stays: " : "", tls);
	log_info("%s", summary);
	if (*restart)
		log_warn("reload: %s changed: only a restart applies that", restart);
	s->status_told[0] = '\0';
	notify_send("READY=1");
	return 0;
}

static void resize(struct sup *s, unsigned n)
{
	if (s->stopping || n < 1 || n > POOL_SLOTS_MAX)
		return;
	s->cfg->workers = n;
	pool_resize(s->pool, n);
}

static void on_sighup(uv_signal_t *h, int signum)
{
	char summary[700];

	reload(h->data, summary, sizeof(summary));
}

static void on_sigttin(uv_signal_t *h, int signum)
{
	struct sup *s = h->data;

	resize(s, pool_size(s->pool) + 1);
}

static void on_sigttou(uv_signal_t *h, int signum)
{
	struct sup *s = h->data;
	unsigned n = pool_size(s->pool);

	if (n > 1)
		resize(s, n - 1);
}

static int host_reload(void *data, char *summary, size_t len)
{
	return reload(data, summary, len);
}

static void host_schedules_changed(void *data)
{
	struct sup *s = data;

	schedules_kick(s->sched);
}

static int host_resize(void *data, unsigned n)
{
	struct sup *s = data;

	if (s->stopping)
		return -EINVAL;
	resize(s, n);
	return 0;
}

/* ---- what the commands ask of us ---- */

static void host_wake(void *data)
{
	struct sup *s = data;

	pool_wake_one(s->pool);
}

static uint64_t host_now(void *data)
{
	return now_ms(data);
}

/* ---- what idle.h and the pool ask of us ---- */

static bool host_wants(void *data)
{
	struct sup *s = data;

	return pool_wants_poll(s->pool);
}

static void host_rewind(void *data)
{
	struct sup *s = data;

	pool_rewind(s->pool);
}

static uint64_t host_claims(void *data)
{
	struct sup *s = data;

	return pool_claims(s->pool);
}

static void host_claimed_short(void *data, bool found)
{
	struct sup *s = data;

	idle_claimed_short(s->idle, found);
}

static void host_worker_idle(void *data)
{
	struct sup *s = data;

	idle_worker_idle(s->idle);
}

/* Pushed, the registry's refresh takes a poll's place less often (idle load). */
static void host_mode_changed(void *data, bool push)
{
	struct sup *s = data;

	registry_set_interval(s->registry, push ? REGISTRY_PUSH_MS : REGISTRY_MS);
}

static struct status_worker *host_snapshot(void *data, struct status *st)
{
	struct sup *s = data;

	st->pid = (int)getpid();
	st->queue = s->cfg->queue_list;
	st->uptime_ms = now_ms(s) - s->started;
	st->stopping = s->stopping;
	st->db_up = dbq_db_up(s->dbq);
	st->wake = idle_mode(s->idle);
	return pool_snapshot(s->pool, st);
}

/* /healthz: the loop turns (it answers), the database answers, the pool is at strength. */
static bool host_healthy(void *data, char *why, size_t whylen)
{
	struct sup *s = data;
	unsigned db_down, up = pool_up(s->pool, &db_down);

	if (s->stopping)
		snprintf(why, whylen, "stopping");
	else if (!dbq_db_up(s->dbq) || db_down)
		snprintf(why, whylen, "the database does not answer (%u of %u workers cannot reach "
			 "it)", db_down, s->cfg->workers);
	else if (up < s->cfg->workers)
		snprintf(why, whylen, "%u of %u workers up", up, s->cfg->workers);
	else
		return true;
	return false;
}

static bool host_pushed(void *data)
{
	struct sup *s = data;

	return idle_push(s->idle);
}

static void host_follow_rows(void *data, bool want)
{
	struct sup *s = data;

	idle_follow_rows(s->idle, want);
}

static void host_rows_changed(void *data)
{
	struct sup *s = data;

	if (s->surface)
		s->ops->rows_changed(s->surface);
}

/* ---- set-up ---- */

static int sup_init(struct sup *s, struct config *cfg, int argc, char **argv)
{
	struct pool_opts po = { .loop = s->loop, .cfg = cfg, .argc = argc, .argv = argv,
				.stats = &s->stats, .on_change = on_change,
				.claimed_short = host_claimed_short,
				.worker_idle = host_worker_idle, .data = s };
	struct sup_host host = { .loop = s->loop, .cfg = cfg, .stats = &s->stats, .data = s,
				 .wake = host_wake, .snapshot = host_snapshot, .now_ms = host_now,
				 .reload = host_reload, .resize = host_resize,
				 .schedules_changed = host_schedules_changed,
				 .healthy = host_healthy, .pushed = host_pushed,
				 .follow_rows = host_follow_rows };
	char err[512] = "";
	int r;

	s->cfg = cfg;
	s->argc = argc;
	s->argv = argv;
	s->started = now_ms(s);
	jobstats_init(&s->stats, cfg);
	for (unsigned i = 0; i < cfg->nqueues; i++)
		s->queues[i] = cfg->queues[i];
	uv_timer_t *timers[] = { &s->poll_timer, &s->maint_timer, &s->stop_timer,
				 &s->watchdog_timer };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++) {
		uv_timer_init(s->loop, timers[i]);
		timers[i]->data = s;
	}
	uv_signal_t *sigs[] = { &s->sigterm, &s->sigint, &s->sighup, &s->sigttin, &s->sigttou };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		uv_signal_init(s->loop, sigs[i]);
		sigs[i]->data = s;
	}
	r = store_new(&cfg->dsn, "supervisor", &s->store);
	if (r < 0)
		return r;
	store_set_dedupe_window(s->store, cfg->dedupe_window_ms / 1000);
	if ((r = dbq_new(s->loop, s->store, on_change, s, &s->dbq)) < 0 ||
	    (r = maint_new(s->dbq, cfg, &s->maint)) < 0 ||
	    (r = schedules_new(s->loop, s->dbq, &s->sched)) < 0)
		return r;
	/* Connected when the first add comes. */
	for (int k = 0; k < SUP_ADDS_PIPES; k++) {
		if ((r = store_new(&cfg->dsn, "supervisor", &s->adds_store[k])) < 0 ||
		    (r = dbq_new(s->loop, s->adds_store[k], on_change, s, &s->adds_dbq[k])) < 0)
			return r;
		store_set_dedupe_window(s->adds_store[k], cfg->dedupe_window_ms / 1000);
		host.adds_dbq[k] = s->adds_dbq[k];
	}
	struct registry_opts ro = { .loop = s->loop, .dbq = s->dbq, .cfg = cfg,
				    .version = CLAIMD_VERSION, .snapshot = host_snapshot,
				    .pool_json = s->ops->pool_json, .data = s };
	if ((r = registry_new(&ro, &s->registry)) < 0)
		return r;
	struct history_flush_opts ho = { .loop = s->loop, .dbq = s->dbq, .cfg = cfg,
					 .supervisor_id = registry_id(s->registry) };
	if ((r = history_flush_new(&ho, &s->hflush)) < 0)
		return r;
	po.history = history_flush_history(s->hflush);
	struct idle_opts io = { .loop = s->loop, .cfg = cfg, .dbq = s->dbq, .queues = s->queues,
				.wants = host_wants, .wake_one = host_wake,
				.claims = host_claims, .rewind = host_rewind,
				.mode_changed = host_mode_changed,
				.rows_changed = host_rows_changed, .asked = &s->stats.idle_asked,
				.data = s };
	if ((r = idle_new(&io, &s->idle)) < 0)
		return r;
	s->maint_changes = UINT64_MAX;   /* the first pass runs */
	host.dbq = po.dbq = s->dbq;
	if ((r = s->ops->open(&host, &s->surface)) < 0)
		return r;
	registry_set_http(s->registry, s->ops->address(s->surface));
	/* The socket and the port are open: no more root from here (the fork server, its
	 * workers and their handlers start as the user). */
	if (*cfg->user) {
		r = proc_drop_to(cfg->user, cfg->control, !*cfg->control_group, err, sizeof(err));
		if (r < 0) {
			log_error("%s", err);
			return r;
		}
		log_info("running as user %s", cfg->user);
	}
	uv_signal_start(&s->sigterm, on_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_signal, SIGINT);
	uv_signal_start(&s->sighup, on_sighup, SIGHUP);
	uv_signal_start(&s->sigttin, on_sigttin, SIGTTIN);
	uv_signal_start(&s->sigttou, on_sigttou, SIGTTOU);
	return pool_new(&po, &s->pool);
}

static void sup_teardown(struct sup *s)
{
	uv_handle_t *hs[] = { (uv_handle_t *)&s->poll_timer, (uv_handle_t *)&s->maint_timer,
			      (uv_handle_t *)&s->stop_timer, (uv_handle_t *)&s->watchdog_timer,
			      (uv_handle_t *)&s->sigterm, (uv_handle_t *)&s->sigint,
			      (uv_handle_t *)&s->sighup, (uv_handle_t *)&s->sigttin,
			      (uv_handle_t *)&s->sigttou };

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (hs[i]->loop && !uv_is_closing(hs[i]))
			uv_close(hs[i], NULL);
	s->ops->stop(s->surface);
	pool_free(s->pool);
	idle_free(s->idle);
	/* Let close callbacks (and a running database job) finish. */
	uv_run(s->loop, UV_RUN_DEFAULT);
	s->ops->free(s->surface);
	maint_free(s->maint);
	schedules_free(s->sched);
	history_flush_free(s->hflush);
	registry_free(s->registry);
	dbq_free(s->dbq);
	for (int k = 0; k < SUP_ADDS_PIPES; k++)
		dbq_free(s->adds_dbq[k]);
	uv_run(s->loop, UV_RUN_DEFAULT);
	store_free(s->store);
	for (int k = 0; k < SUP_ADDS_PIPES; k++)
		store_free(s->adds_store[k]);
}

int supervisor_main(struct config *cfg, int argc, char **argv, const struct surface_ops *ops)
{
	uv_loop_t loop;
	struct sup s;
	int r;

	log_init("sup", cfg->log_level, cfg->log_format);
	memset(&s, 0, sizeof(s));
	if (notify_init() < 0)
		log_warn("NOTIFY_SOCKET is not a socket path or @name: not telling systemd");
	if (uv_loop_init(&loop) < 0)
		return 1;
	s.loop = &loop;
	s.ops = ops;
	r = sup_init(&s, cfg, argc, argv);
	if (r < 0) {
		sup_teardown(&s);
		uv_loop_close(&loop);
		return 1;
	}
	/* The handler's kind and program, not its arguments: they may hold a secret. */
	size_t prog = strcspn(cfg->handler, ":");
	if (cfg->handler[prog])
		prog += 1 + strcspn(cfg->handler + prog + 1, " \t");
	log_info("starting %u workers on queue%s '%s', handler %.*s%s, control socket %s",
		 cfg->workers, cfg->nqueues > 1 ? "s" : "", cfg->queue_list, (int)prog,
		 cfg->handler, cfg->handler[prog] ? " (its arguments not logged)" : "", cfg->control);
	pool_start(s.pool);
	idle_start(s.idle);
	uv_timer_start(&s.poll_timer, on_poll, cfg->poll_ms, cfg->poll_ms);
	uv_timer_start(&s.maint_timer, on_maint_timer, cfg->maintenance_ms, cfg->maintenance_ms);
	history_flush_start(s.hflush);
	if (notify_watchdog_ms())
		uv_timer_start(&s.watchdog_timer, on_watchdog, 0, notify_watchdog_ms());
	uv_run(&loop, UV_RUN_DEFAULT);
	sup_teardown(&s);
	notify_end();
	r = uv_loop_close(&loop);
	if (r < 0)
		log_debug("loop close: %s", uv_strerror(r));
	return 0;
}
