#include "supervisor/idle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/finetimer.h"
#include "common/log.h"
#include "store/store.h"
#include "supervisor/wake.h"

struct idle {
	struct idle_opts o;
	struct wake *wake;
	bool push;                 /* the binary log is followed now */
	bool stopping;
	char mode[480];
	/* the one statement at a time: the poll (poll mode), or when the next row is due */
	struct dbq_job job;
	bool inflight, again;
	bool job_push;             /* the mode the job runs in (read on the thread pool) */
	int64_t next_us;           /* the job's answer (push mode) */
	uint64_t asked_ns;         /* uv_hrtime() half way through the job's statement */
	uint64_t safety_at;        /* push mode: the last poll */
	struct finetimer due;      /* when the next row is due, to the microsecond */
	unsigned open_timers;      /* idle_free: closing */
	bool freeing;              /* idle_free was called: freed once closed and no job runs */
	uint64_t changes;          /* changes the binary log told of */
	/* A wake-up found no worker to take it: owed to the next that says it is idle. The
	 * pool's view lags the workers' (a worker answers a permit with CLAIMED before its STATE
	 * says it is idle), and a row that came due meanwhile has nothing else to wake for it. */
	bool owed;
	uint64_t claims_at;        /* permits_claims when the statement was queued */
	/* A statement found a row due and woke a worker. The binary log delivers a change about
	 * when its commit becomes visible, so the change that statement saw may be told of just
	 * after: while that worker's claim runs, a change wakes no one more (its CLAIMED asks
	 * again if it took every row it could, and the rechecks below cover the change). */
	bool polled_wake;
	/* A change is in the binary log before its commit is seen by others: a claim or the
	 * statement that follows it may not see its rows yet, so it is asked again a few times
	 * (RECHECK_FIRST_MS doubling) for RECHECK_WINDOW_MS after the change. */
	uint64_t changed_at;       /* the loop's clock */
	unsigned recheck_ms;       /* the next delay; 0: none since the change */
	/* Once a claim woken for the last change took rows, that change was seen (its commit
	 * was visible then, or the claim took another row due at that very moment and left the
	 * change's): one late recheck for that case instead of the doubling ones, each of which
	 * is a statement (a row every 30 ms: 5 of them a row, 7 ms of the server's time). */
	uint64_t woke_for;         /* changes when a change last woke a worker */
	uint64_t seen;             /* changes when a claim woken for the last change took rows */
	uv_timer_t recheck_timer;
	/* The last question (the loop's clock, and the changes told of by then), and the one
	 * put off until ASK_GAP_MS after it. */
	uint64_t asked_at, asked_changes;
	uv_timer_t ask_timer;
	/* Every worker busy for PAUSE_AFTER_MS: the stream is closed until one is idle. */
	uint64_t busy_since;       /* the loop's clock; 0: a worker is idle */
	bool paused;
	bool rows_wanted;          /* idle_follow_rows: not paused while requests wait */
	uv_timer_t watch_timer;    /* every WATCH_MS while pushed: idle_watch */
};

#define RECHECK_FIRST_MS 2
/* After a short claim, when the next row is due is asked at most once in this long while the
 * binary log told of no change: a drain of keyed rows, whose claims take each key's next row
 * by hand and scan little, ends a short claim every few milliseconds, and each question read
 * ~1.3 ms of the server's time (100 keys at N = 1, 30,000 rows: 600 of them, 18 % of the
 * server's time; the drain 43-45 % faster without any). What turns due meanwhile without a
 * change told of is what claimd's own quiet statements set (a deferral, a recurring row's
 * next run, a lease's end): woken for at most this much later. */
#define ASK_GAP_MS 20
#define RECHECK_WINDOW_MS 500
#define RECHECK_SEEN_MS 100
#define PAUSE_AFTER_MS 500
#define WATCH_MS 250

static uint64_t now_ms(const struct idle *d)
{
	return uv_now(d->o.loop);
}

static void stop_timers(struct idle *d)
{
	finetimer_stop(&d->due);
	uv_timer_stop(&d->recheck_timer);
	uv_timer_stop(&d->ask_timer);
	uv_timer_stop(&d->watch_timer);
}

static void wake_if_wanted(struct idle *d)
{
	if (d->stopping)
		return;
	d->owed = !d->o.wants(d->o.data);
	if (!d->owed)
		d->o.wake_one(d->o.data);
}

/* ---- the statement ---- */

static int job_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct idle *d = container_of(j, struct idle, job);
	uint64_t t0;
	int r;

	if (!d->job_push)
		return store_poll_any(st, d->o.queues, d->o.cfg->nqueues, err, errlen);
	t0 = uv_hrtime();
	r = store_poll_next(st, d->o.queues, d->o.cfg->nqueues, &d->next_us, err, errlen);
	d->asked_ns = t0 + (uv_hrtime() - t0) / 2;
	return r;
}

static void on_due(struct finetimer *t)
{
	wake_if_wanted(t->data);
}

static void run_job(struct idle *d);

static void on_recheck(uv_timer_t *t)
{
	struct idle *d = t->data;

	if (d->push && !d->stopping)
		run_job(d);
}

/* Nothing due now: if a change came just before, its commit may not be visible yet. */
static void maybe_recheck(struct idle *d)
{
	uint64_t since = now_ms(d) - d->changed_at;

	if (!d->changes || since >= RECHECK_WINDOW_MS || uv_is_active((uv_handle_t *)&d->recheck_timer))
		return;
	if (d->seen != d->changes)
		d->recheck_ms = d->recheck_ms ? d->recheck_ms * 2 : RECHECK_FIRST_MS;
	else if (d->recheck_ms < RECHECK_SEEN_MS)
		d->recheck_ms = RECHECK_SEEN_MS;
	else
		return;   /* the one late recheck was asked */
	if (since + d->recheck_ms <= RECHECK_WINDOW_MS)
		uv_timer_start(&d->recheck_timer, on_recheck, d->recheck_ms, 0);
}

static void maybe_free(struct idle *d)
{
	if (d->open_timers == 0 && !d->inflight)
		free(d);
}

static void job_done(struct dbq_job *j)
{
	struct idle *d = container_of(j, struct idle, job);

	d->inflight = false;
	if (d->freeing) {
		maybe_free(d);   /* idle_free came while the statement ran */
		return;
	}
	if (j->rc < 0) {
		log_debug("idle poll failed: %s", j->err);
	} else if (j->rc > 0) {
		/* A claim that ran or began meanwhile took the row, or its CLAIMED says what it
		 * left: another worker woken (a full claim), or this asked again (claimed_short). */
		uint64_t claims = d->o.claims(d->o.data);
		d->o.rewind(d->o.data);
		if (claims == d->claims_at && claims != UINT64_MAX) {
			wake_if_wanted(d);
			d->polled_wake = !d->owed;
		}
	} else if (d->job_push && d->push && !d->stopping) {
		/* The server read its clock during the statement: half way is the best guess
		 * (a worker woken then asks some 100 us later in any case). */
		if (d->next_us > 0 && finetimer_start_at(&d->due, d->asked_ns +
					(uint64_t)d->next_us * 1000, on_due) < 0)
			log_warn("cannot set the timer for the next due row: it starts by the "
				 "next poll");
		maybe_recheck(d);
	}
	if (d->again && !d->stopping) {
		d->again = false;
		run_job(d);
	}
}

static void run_job(struct idle *d)
{
	if (d->inflight) {
		d->again = true;
		return;
	}
	d->inflight = true;
	d->asked_at = now_ms(d);
	d->asked_changes = d->changes;
	uv_timer_stop(&d->ask_timer);
	if (d->o.asked)
		++*d->o.asked;
	d->claims_at = d->o.claims(d->o.data);
	d->job_push = d->push;
	d->job.run = job_run;
	d->job.done = job_done;
	dbq_push(d->o.dbq, &d->job);
}

static void on_watch(uv_timer_t *t)
{
	idle_watch(t->data);
}

/* ---- the binary log's news (wake.h) ---- */

static void on_changed(void *data)
{
	struct idle *d = data;
	bool polled = d->polled_wake && d->o.claims(d->o.data) == UINT64_MAX;

	d->changes++;
	d->changed_at = now_ms(d);
	d->recheck_ms = 0;
	d->polled_wake = false;
	if (polled)
		return;
	wake_if_wanted(d);
	if (!d->owed)
		d->woke_for = d->changes;
}

static void on_rows(void *data)
{
	struct idle *d = data;

	if (!d->stopping)
		d->o.rows_changed(d->o.data);
}

static void on_state(void *data, bool up, bool final, const char *why)
{
	struct idle *d = data;
	const struct config *cfg = d->o.cfg;

	if (up) {
		log_debug("the binary log stream is open");
		if (!d->push)
			log_info("woken by the binary log: idle workers start new rows as they are "
				 "written; a poll every %d s all the same", IDLE_SAFETY_MS / 1000);
		d->push = true;
		if (!uv_is_active((uv_handle_t *)&d->watch_timer))
			uv_timer_start(&d->watch_timer, on_watch, WATCH_MS, WATCH_MS);
		snprintf(d->mode, sizeof(d->mode), "binlog");
		d->safety_at = now_ms(d);
		run_job(d);   /* what changed while the stream was down */
	} else {
		if (final && cfg->wake == CONFIG_WAKE_AUTO)
			log_info("not woken by the binary log (%s): polling every %u ms", why,
				 cfg->poll_ms);
		else if (final)
			log_error("--wake binlog: %s; polling every %u ms instead", why, cfg->poll_ms);
		else
			log_warn("the binary log stream is lost (%s): polling every %u ms until it is "
				 "back", why, cfg->poll_ms);
		d->push = false;
		stop_timers(d);
		snprintf(d->mode, sizeof(d->mode), "poll (binlog: %.400s)", why);
	}
	if (d->o.mode_changed)
		d->o.mode_changed(d->o.data, d->push);
}

/* ---- the interface ---- */

int idle_new(const struct idle_opts *o, struct idle **ret)
{
	struct idle *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->o = *o;
	r = finetimer_init(o->loop, &d->due);
	if (r < 0) {
		free(d);
		return r;
	}
	d->due.data = d;
	uv_timer_init(o->loop, &d->recheck_timer);
	d->recheck_timer.data = d;
	uv_timer_init(o->loop, &d->ask_timer);
	d->ask_timer.data = d;
	uv_timer_init(o->loop, &d->watch_timer);
	d->watch_timer.data = d;
	snprintf(d->mode, sizeof(d->mode), "poll");
	*ret = d;
	return 0;
}

void idle_start(struct idle *d)
{
	struct wake_opts wo = { .loop = d->o.loop, .cfg = d->o.cfg, .changed = on_changed,
				.rows = d->o.rows_changed ? on_rows : NULL, .state = on_state,
				.data = d };

	if (d->o.cfg->wake == CONFIG_WAKE_POLL)
		return;
	snprintf(d->mode, sizeof(d->mode), "poll (binlog: connecting)");
	if (wake_start(&wo, &d->wake) < 0)
		log_error("cannot start following the binary log: out of memory; polling");
}

bool idle_tick(struct idle *d)
{
	uint64_t now = now_ms(d);

	if (d->stopping || d->inflight)
		return false;
	if (d->push) {
		if (now - d->safety_at < IDLE_SAFETY_MS)
			return false;
		d->safety_at = now;
	} else if (!d->o.wants(d->o.data)) {
		/* (Under load the poll would only read the head of the claim ranges, where the
		 * entries of rows just claimed wait for purge.) */
		return false;
	}
	run_job(d);
	return true;
}

/* A worker is idle (or about to be): the stream is wanted again. Opened, it is "up" again,
 * and that asks once what changed while it was closed (on_state). */
static void resume(struct idle *d)
{
	d->busy_since = 0;
	if (!d->paused)
		return;
	d->paused = false;
	d->changes++;   /* unknown while closed: maintenance must not take it for quiet */
	log_debug("a worker is idle: following the binary log again");
	wake_pause(d->wake, false);
}

void idle_watch(struct idle *d)
{
	uint64_t now = now_ms(d);

	if (!d->wake || !d->push || d->stopping)
		return;
	if (d->o.wants(d->o.data)) {
		resume(d);
		return;
	}
	if (!d->busy_since) {
		d->busy_since = now ? now : 1;
	} else if (!d->paused && !d->rows_wanted && now - d->busy_since >= PAUSE_AFTER_MS) {
		d->paused = true;
		log_debug("every worker busy for %d ms: the binary log is not followed until one is "
			  "idle", PAUSE_AFTER_MS);
		wake_pause(d->wake, true);
	}
}

void idle_follow_rows(struct idle *d, bool want)
{
	d->rows_wanted = want;
	if (want && d->paused && d->push && !d->stopping) {
		log_debug("requests wait for rows: following the binary log again");
		resume(d);
	}
}

void idle_claimed_short(struct idle *d, bool found)
{
	d->polled_wake = false;
	if (found && d->woke_for == d->changes)
		d->seen = d->changes;
	if (!d->push || d->stopping)
		return;
	resume(d);
	uint64_t since = now_ms(d) - d->asked_at;
	if (d->asked_at && since < ASK_GAP_MS && d->changes == d->asked_changes) {
		if (!uv_is_active((uv_handle_t *)&d->ask_timer))
			uv_timer_start(&d->ask_timer, on_recheck, ASK_GAP_MS - since, 0);
		return;
	}
	run_job(d);
}

void idle_worker_idle(struct idle *d)
{
	if (d->owed)
		wake_if_wanted(d);
}

bool idle_push(const struct idle *d)
{
	return d->push;
}

uint64_t idle_changes(const struct idle *d)
{
	return d->changes;
}

const char *idle_mode(const struct idle *d)
{
	return d->mode;
}

void idle_stop(struct idle *d)
{
	if (!d || d->stopping)
		return;
	d->stopping = true;
	stop_timers(d);
	wake_stop(d->wake);
	d->wake = NULL;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct idle *d = h->data;

	d->open_timers--;
	maybe_free(d);
}

static void on_due_closed(uv_handle_t *h)
{
	struct finetimer *t = h->data;
	struct idle *d = t->data;

	d->open_timers--;
	maybe_free(d);
}

void idle_free(struct idle *d)
{
	if (!d)
		return;
	idle_stop(d);
	d->freeing = true;
	d->open_timers = 4;
	finetimer_close(&d->due, on_due_closed);
	uv_close((uv_handle_t *)&d->recheck_timer, on_timer_closed);
	uv_close((uv_handle_t *)&d->ask_timer, on_timer_closed);
	uv_close((uv_handle_t *)&d->watch_timer, on_timer_closed);
}
