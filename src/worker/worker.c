/* A worker's claiming life is one enum (enum wstate, worker_int.h) changed only by
 * worker_enter(), whose table below says what may follow what. Events (the supervisor's
 * messages, items ending, timers, the database failing or coming back) move it from state to
 * state; step() then does the work of the state it is in: ask for a permit, claim (the
 * finished rows' outcomes ride along), write what is due, drain. The rows it holds
 * (worker_items.c) run meanwhile, on the handler, in every state but the first: the worker
 * asks for more while fewer than it should hold remain, so the next claim is made while the
 * last one's rows run. A claim, and the outcomes written alone, run on a thread-pool thread
 * (db_start .. on_db_done) when items that last at least as long as a claim run meanwhile:
 * the loop then answers those that end and starts the rows held in their place (measured:
 * 50 ms items at --concurrency 50, ~2-3 % more jobs/s). Items of microseconds gain nothing
 * (they are done before the claim is; same-run A/Bs showed no gain, pipe: at --concurrency
 * 10 perhaps a loss) while the hand-off adds threads beside the server on the CPUs, so
 * their claims run on the loop, as every other statement does (rare: failures, leases,
 * progress, the rate gate); those wait for a claim on the thread to end.
 *
 * Beside the state there are three things that are not the worker's life but facts about its
 * surroundings: `stopping` (a STOP came: where the states lead changes), `asked` (a WANT is
 * out, unanswered) and the database back-off (the db timer runs: no statement until it fires,
 * which may happen while items run). */
#include "worker/worker_int.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"
#include "worker/fence.h"

static const char *const wstate_names[WS_COUNT] = {
	"start", "connect", "full", "want", "sleep", "claim", "drain", "exit",
};

#define B(s) (1u << (s))

/* What may follow what. Any state may end in WS_EXIT (the supervisor's channel closed). */
static const unsigned may_follow[WS_COUNT] = {
	[WS_START] = B(WS_CONNECT) | B(WS_FULL) | B(WS_WANT) | B(WS_DRAIN),
	[WS_CONNECT] = B(WS_FULL) | B(WS_WANT) | B(WS_DRAIN),
	[WS_FULL] = B(WS_WANT) | B(WS_SLEEP) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_WANT] = B(WS_CLAIM) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_SLEEP] = B(WS_CLAIM) | B(WS_WANT) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_CLAIM] = B(WS_FULL) | B(WS_WANT) | B(WS_SLEEP) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_DRAIN] = B(WS_CONNECT),
	[WS_EXIT] = 0,
};

static void step(struct worker *w);

static void on_kick(uv_timer_t *t)
{
	step(t->data);
}

void worker_kick(struct worker *w)
{
	if (w->state != WS_EXIT)
		uv_timer_start(&w->kick_timer, on_kick, 0, 0);
}

/* The one place the state changes. What the supervisor sees changes with it. */
void worker_enter(struct worker *w, enum wstate to)
{
	enum wstate from = w->state;

	assert(to == WS_EXIT || (may_follow[from] & B(to)));
	w->state = to;
	log_debug("%s -> %s", wstate_names[from], wstate_names[to]);
	if (to == WS_EXIT)
		uv_stop(&w->loop);
	else
		worker_report(w);
}

/* ---- the database ---- */

/* A database call failed: wait (back-off doubling from 100 ms to 2 s), then reconnect if the
 * connection is gone. Items that run meanwhile go on; their outcomes wait. */
void worker_db_failed(struct worker *w, int r, const char *what, const char *err)
{
	unsigned wait = backoff_next(&w->db_backoff);

	if (r == -ENOTCONN)
		log_warn("database unreachable during %s: %s; reconnecting in %u ms", what, err, wait);
	else
		log_error("database error during %s: %s; retrying in %u ms", what, err, wait);
	uv_timer_start(&w->db_timer, worker_on_db_timer, wait, 0);
	w->drained = false;   /* rows may have come due meanwhile: claim once it is back */
	if (w->state != WS_CONNECT && w->state != WS_EXIT)
		worker_enter(w, WS_CONNECT);
}

/* Where the worker goes when nothing stops it: asking for more while there is room, unless
 * the last claim took every due row it could (then the supervisor wakes it for more). */
static enum wstate settled(struct worker *w)
{
	if (w->stopping)
		return WS_DRAIN;
	if (worker_room(w, false) == 0)
		return WS_FULL;
	return w->drained ? WS_SLEEP : WS_WANT;
}

/* The back-off is over and a connection is there: where the worker left off. */
static void db_back(struct worker *w)
{
	if (w->state != WS_START && w->state != WS_CONNECT)
		return;
	worker_enter(w, settled(w));
	worker_kick(w);
}

void worker_on_db_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	char err[STORE_ERR_MAX] = "";
	int r;

	if (!store_connected(w->store)) {
		r = store_connect(w->store, err, sizeof(err));
		if (r < 0) {
			worker_db_failed(w, -ENOTCONN, "connect", err);
			return;
		}
		char at[DSN_FIELD_MAX + 16];
		if (w->cfg->dsn.nhosts > 1)
			log_info("connected to the database at %s",
				 store_server(w->store, at, sizeof(at)));
		else
			log_info("connected to the database");
	}
	/* The back-off is reset by the next statement that succeeds, not here: a server that
	 * accepts connections but fails every claim (a missing table) must not be hammered. */
	db_back(w);
}

/* ---- claiming ---- */

/* The answer to the permit (CLAIMED) with the rows claimed under it (b.rows), possibly none;
 * its state is filled in as it goes (claimed_send). */
static void claimed_build(struct worker *w, struct proto_msg *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->type = PROTO_CLAIMED;
	m->u.items.n = (uint16_t)n;
	m->u.items.claim_us = w->b.claim_us;
	/* A short claim took every due row of its queue it could lock: waking another worker
	 * for more would find none (rows that come due later wake one themselves). */
	m->u.items.more = n > 0 && (n >= w->job.max || w->cfg->nqueues > 1);
	if (!w->db_running)   /* the store is the thread's meanwhile; none then */
		store_cursor(w->store, &m->u.items.cursor);  /* left none when it has no place */
	for (size_t i = 0; i < n; i++) {
		m->u.items.items[i].id = w->b.rows[i].id;
		m->u.items.items[i].token = w->b.rows[i].token;
	}
}

/* CLAIMED goes with what the worker does now: no STATE of its own. */
static void claimed_send(struct worker *w, struct proto_msg *m)
{
	m->u.items.state = worker_wire_now(w);
	worker_send(w, m);
}

void worker_answer_permit(struct worker *w, size_t n)
{
	struct proto_msg m;

	claimed_build(w, &m, n);
	claimed_send(w, &m);
}

static struct proto_msg *build_holding(struct proto_msg *m, const struct store_item *items,
					size_t n)
{
	memset(m, 0, sizeof(*m));
	m->type = PROTO_HOLDING;
	m->u.items.n = (uint16_t)(n > PROTO_MAX_ITEMS ? PROTO_MAX_ITEMS : n);
	for (size_t i = 0; i < m->u.items.n; i++) {
		m->u.items.items[i].id = items[i].id;
		m->u.items.items[i].token = items[i].token;
	}
	return m;
}

/* The store's claim hook, on the claim's thread: the rows it locked, told to the supervisor
 * (HOLDING) by the loop (the channel is the loop's) before the commit goes out; called on
 * the loop (a claim run there), it sends them itself. */
void worker_on_locked(void *data, const struct store_item *items, size_t n)
{
	struct worker *w = data;
	struct proto_msg *m = &w->holding;

	if (w->db_inline) {   /* on the loop */
		worker_send(w, build_holding(m, items, n));
		return;
	}

	build_holding(m, items, n);
	uv_async_send(&w->locked_async);
	uv_sem_wait(&w->locked_sem);
}

void worker_on_locked_async(uv_async_t *a)
{
	struct worker *w = a->data;

	if (w->db_running && w->holding.type == PROTO_HOLDING) {
		if (w->chan)
			worker_send(w, &w->holding);
		w->holding.type = 0;
		uv_sem_post(&w->locked_sem);
	}
}

static void ask_for_work(struct worker *w)
{
	struct proto_msg m;

	if (w->asked)
		return;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_WANT;
	worker_send(w, &m);
	w->asked = true;
	w->asked_ns = uv_hrtime();
}

/* ---- statements off the loop ---- */

static void on_db_work(uv_work_t *req)
{
	struct worker *w = req->data;

	batch_claim_run(&w->b, w->store, w->cfg, &w->job);
}

static void claim_ended(struct worker *w, int r);

static void on_db_done(uv_work_t *req, int status)
{
	struct worker *w = req->data;
	struct proto_msg later;
	int r;

	(void)status;   /* never cancelled */
	w->db_running = false;
	if (w->state == WS_EXIT) {   /* rows claimed go back when their lease ends */
		store_items_clear(w->b.rows, w->job.n);
		return;
	}
	r = batch_claim_end(&w->b, &w->out, &w->job);
	if (w->job.max > 0)
		claim_ended(w, r);
	else if (r < 0)
		worker_db_failed(w, r, "completing items", w->job.err);
	else
		backoff_reset(&w->db_backoff);
	if (w->job.max == 0 && r >= 0 && w->job.left_next)
		w->drained = false;   /* its keys' next rows may be due: claim (step_held) */
	/* What waited for the statement, before the next one can start. */
	if (w->lease_due && !worker_db_busy(w)) {
		w->lease_due = false;
		worker_on_lease_timer(&w->lease_timer);
	}
	if (w->progress_due && !worker_db_busy(w)) {
		w->progress_due = false;
		worker_progress_write(w);
	}
	if (w->cancel_later.u.items.n > 0) {
		later = w->cancel_later;
		w->cancel_later.u.items.n = 0;
		worker_cancel(w, &later);
	}
	worker_kick(w);
}

/* Whether the statements go to a thread: items run that last at least as long as the last
 * claim took (see the top of this file). */
static bool db_off_loop(const struct worker *w)
{
	return handler_running(w->handler) > 0 && w->b.claim_us > 0 &&
	       w->pf.avg_ns >= (uint64_t)w->b.claim_us * 1000u;
}

/* Start the outcomes' statements, with a claim of max rows (or none: 0): off the loop, or
 * on it (ended before this returns). Returns 0 (started or done, or nothing to write), or
 * the store's error of a failure written before (db_failed took over; a claim's permit is
 * answered). */
static int db_start(struct worker *w, unsigned max)
{
	char err[STORE_ERR_MAX] = "";
	int r;

	assert(!w->db_running);
	r = batch_claim_begin(&w->b, w->store, &w->out, max, items_held(&w->items) > 0, &w->job,
			      err, sizeof(err));
	if (r < 0) {
		if (max > 0)
			worker_answer_permit(w, 0);
		worker_db_failed(w, r, max > 0 ? "claim" : "completing items", err);
		return r;
	}
	if (r == 0)
		return 0;
	w->db_running = true;
	w->db_work.data = w;
	if (!db_off_loop(w)) {
		w->db_inline = true;
		on_db_work(&w->db_work);
		w->db_inline = false;
		on_db_done(&w->db_work, 0);
		return 0;
	}
	r = uv_queue_work(&w->loop, &w->db_work, on_db_work, on_db_done);
	assert(r == 0);   /* fails only for a NULL callback */
	return 0;
}

int worker_write(struct worker *w)
{
	if (w->out.n == 0 || w->db_running)
		return 0;
	return db_start(w, 0);
}

/* Successes wait for the next claim, but not for long. The timer was set for outcomes a
 * claim may have carried since: those here now may have come a moment ago, and wait for
 * theirs (written at once, they cost a transaction of their own, and a FIFO group's next
 * row, made visible for anyone instead of handed on with the claim, a walk of the claim
 * index until the server purges its entry). */
static void on_flush(uv_timer_t *t)
{
	struct worker *w = t->data;
	uint64_t age_ms;

	if (w->out.n == 0 || worker_db_busy(w))
		return;
	age_ms = (uv_hrtime() - w->out.since_ns) / 1000000u;
	if (age_ms < OUTCOMES_FLUSH_MS && !w->out.urgent) {
		uv_timer_start(&w->flush_timer, on_flush, OUTCOMES_FLUSH_MS - age_ms, 0);
		return;
	}
	if (w->state == WS_WANT || w->state == WS_SLEEP || w->state == WS_FULL ||
	    w->state == WS_DRAIN)
		worker_write(w);
}

/* Write the outcomes if they are due, or asleep with nothing running (no claim will carry
 * them: a lone row's outcome is written as it ends); else make sure they will be, within
 * the flush time. Returns 0, or a negative error (db_failed took over). */
static int write_if_due(struct worker *w)
{
	if (outcomes_due(&w->out) || (w->state == WS_SLEEP && !worker_busy(w)))
		return worker_write(w);
	if (w->out.n > 0 && !uv_is_active((uv_handle_t *)&w->flush_timer))
		uv_timer_start(&w->flush_timer, on_flush, OUTCOMES_FLUSH_MS, 0);
	return 0;
}

/* ---- what each state does ---- */

static void step_want(struct worker *w)
{
	/* A failure's outcome is written now; successes wait for the claim (it is asked for
	 * now), but not for long: the supervisor may keep the permits with others. */
	if (w->out.urgent && worker_write(w) < 0)
		return;
	ask_for_work(w);
	write_if_due(w);
}

static void step_claim(struct worker *w)
{
	unsigned max = worker_room(w, true);

	if (max == 0) {
		worker_answer_permit(w, 0);
		worker_enter(w, WS_FULL);
		return;
	}
	/* The host's cursor is one place in one queue's order: with several queues each worker
	 * keeps its own. */
	if (w->hint_set && w->cfg->nqueues == 1)
		store_cursor_hint(w->store, w->cfg->queue, &w->hint);
	w->hint_set = false;
	db_start(w, max);
}

/* The claim's statements ended with r (its rows in b): the rows are the items', the worker
 * moves on, and the permit is answered with what it does now (CLAIMED carries its state).
 * A claim that took every due row it could leaves the worker asleep, its rows running: it
 * asks for no permit until a WAKE brings news of more. Stopping meanwhile (WS_DRAIN), the
 * rows go back at once. */
static void claim_ended(struct worker *w, int r)
{
	size_t n = w->b.n;
	struct proto_msg m;

	if (r < 0) {
		worker_answer_permit(w, 0);
		worker_db_failed(w, r, "claim", w->job.err);
		return;
	}
	backoff_reset(&w->db_backoff);
	claimed_build(w, &m, n);
	/* Rows of a key it finished may have made the key's next rows due where the claim did
	 * not look (store_claim_left_next; another queue's): more. Rows of a key it took make
	 * the key's next rows due as they finish: it keeps asking (the next claim carries their
	 * outcomes), not drained. */
	m.u.items.more |= w->job.grouped && (w->job.left_next || w->cfg->nqueues > 1);
	w->drained = !m.u.items.more;
	for (size_t i = 0; i < n && w->drained; i++)
		w->drained = w->b.rows[i].group == NULL;
	if (n == 0) {
		/* What it waits for now is work, not a claim: the wait is no claim cycle (counted
		 * as one, a worker that idled would hold rows its siblings could run). */
		w->asked_ns = 0;
		w->report_held = true;
		if (w->state == WS_CLAIM)
			worker_enter(w, WS_SLEEP);
		w->report_held = false;
		claimed_send(w, &m);
		return;
	}
	if (w->asked_ns)
		prefetch_claimed(&w->pf, uv_hrtime() - w->asked_ns);
	w->asked_ns = 0;
	/* The answer goes before the rows are handed on (another worker may wait for the
	 * permit), with the state they leave the worker in: asleep when drained, else busy
	 * (a STATE follows should its room say otherwise). */
	if (w->state == WS_CLAIM) {
		m.u.items.state = w->drained ? PROTO_W_IDLE : PROTO_W_BUSY;
		worker_wire_told(w, m.u.items.state);
		worker_send(w, &m);
	} else {
		claimed_send(w, &m);
	}
	worker_take_claimed(w);
	fence_arm(w->b.lease_ok_ns);
	if (w->state != WS_CLAIM) {
		worker_release_unstarted(w);
		return;
	}
	worker_enter(w, settled(w));
	if (w->state == WS_WANT)
		ask_for_work(w);   /* right away: the permit may come back to us */
}

static void step_held(struct worker *w)
{
	/* A failure's row may be due again soon, a release's at once: after writing them the
	 * worker claims (a claim that finds none has the supervisor look when the next is due). */
	if (w->out.urgent)
		w->drained = false;
	if (worker_gate(w) < 0 || write_if_due(w) < 0)
		return;
	if ((w->state == WS_FULL || (w->state == WS_SLEEP && !w->drained)) &&
	    worker_room(w, false) > 0) {
		worker_enter(w, settled(w));
		if (w->state == WS_WANT)
			step_want(w);
	}
}

static void step_drain(struct worker *w)
{
	uv_timer_stop(&w->gate_timer);
	worker_release_unstarted(w);
	if (worker_busy(w)) {
		write_if_due(w);   /* running items end on their own, or at the grace's end */
		return;
	}
	if (worker_write(w) == 0 && w->out.n == 0)
		worker_enter(w, WS_EXIT);
}

static void step(struct worker *w)
{
	if (w->db_running)
		return;   /* its end kicks */
	switch (w->state) {
	case WS_WANT:
		if (worker_gate(w) == 0)
			step_want(w);
		break;
	case WS_SLEEP:
	case WS_FULL:
		step_held(w);
		break;
	case WS_CLAIM:
		step_claim(w);
		break;
	case WS_DRAIN:
		step_drain(w);
		break;
	case WS_CONNECT:
		/* Stopping: rows not started are outcomes to write too; with nothing to write
		 * and nothing running, no reason to wait for the database. */
		if (w->stopping) {
			worker_release_unstarted(w);
			if (w->out.n == 0 && !worker_busy(w))
				worker_enter(w, WS_EXIT);
		}
		break;
	default:
		break;  /* waiting for an event */
	}
}

/* ---- leases ---- */

void worker_on_lease_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	char err[STORE_ERR_MAX] = "";
	int r;

	if (w->db_running)
		w->lease_due = true;   /* renewed as soon as the statement ends */
	if (worker_db_busy(w) || w->state == WS_START || w->state == WS_EXIT)
		return;
	r = batch_extend(&w->b, &w->items, &w->out, w->store, w->cfg->lease_ms, err, sizeof(err));
	if (r < 0) {
		worker_db_failed(w, r, "extending leases", err);
		return;
	}
	if (items_held(&w->items) > 0) {
		fence_arm(w->b.lease_ok_ns);
		if (batch_lease_lapsed(&w->b, uv_hrtime()))
			worker_kick(w);   /* rows waiting go back (worker_gate, the handler) */
	}
}
