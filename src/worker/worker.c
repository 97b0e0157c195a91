/* A worker's life is one enum (enum wstate, worker_int.h) changed only by worker_enter(),
 * whose table below says what may follow what. Events (the supervisor's messages, a handler's result, timers, the
 * database failing or coming back) move it from state to state; step() then does the work of
 * the state it is in: ask for a permit, claim (the finished rows' outcomes ride along), start
 * the next row of the batch, write what is due, drain. Database calls block the loop, but each
 * is one short statement; the heartbeat is answered between them.
 *
 * Beside the state there are three things that are not the worker's life but facts about its
 * surroundings: `stopping` (a STOP came: where the states lead changes), `asked` (a WANT is
 * out, unanswered) and the database back-off (the db timer runs: no statement until it fires,
 * which may happen while a handler runs). */
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

#define RETRY_CAP_MS (3600u * 1000u)

static const char *const wstate_names[WS_COUNT] = {
	"start", "connect", "want", "sleep", "claim", "batch", "slot", "run", "drain", "exit",
};

#define B(s) (1u << (s))

/* What may follow what. Any state may end in WS_EXIT (the supervisor's channel closed). */
static const unsigned may_follow[WS_COUNT] = {
	[WS_START] = B(WS_CONNECT) | B(WS_WANT) | B(WS_DRAIN),
	[WS_CONNECT] = B(WS_WANT) | B(WS_BATCH) | B(WS_DRAIN),
	[WS_WANT] = B(WS_CLAIM) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_SLEEP] = B(WS_CLAIM) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_CLAIM] = B(WS_BATCH) | B(WS_SLEEP) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_BATCH] = B(WS_RUN) | B(WS_SLOT) | B(WS_WANT) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_SLOT] = B(WS_RUN) | B(WS_DRAIN),
	[WS_RUN] = B(WS_BATCH) | B(WS_DRAIN),
	[WS_DRAIN] = B(WS_CONNECT),
	[WS_EXIT] = 0,
};

static void step(struct worker *w);
static void on_slot(uv_timer_t *t);

static void on_kick(uv_timer_t *t)
{
	step(t->data);
}

void worker_kick(struct worker *w)
{
	if (w->state != WS_EXIT)
		uv_timer_start(&w->kick_timer, on_kick, 0, 0);
}

uint64_t worker_running_id(const struct worker *w)
{
	return w->state == WS_RUN ? w->b.items[w->b.next - 1].id : 0;
}

/* The one place the state changes. What the supervisor sees changes with it where the
 * worker's activity does: idle when asleep, busy with a batch, the database down. */
void worker_enter(struct worker *w, enum wstate to)
{
	enum wstate from = w->state;

	assert(to == WS_EXIT || (may_follow[from] & B(to)));
	w->state = to;
	if (log_level() >= LOG_DEBUG && to != WS_RUN && from != WS_RUN)
		log_debug("%s -> %s", wstate_names[from], wstate_names[to]);
	switch (to) {
	case WS_CONNECT:
		worker_report(w, PROTO_W_DB_DOWN, 0);
		break;
	case WS_SLEEP:
		worker_report(w, PROTO_W_IDLE, 0);
		break;
	case WS_WANT:
		if (from == WS_START || from == WS_CONNECT)
			worker_report(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_IDLE, 0);
		break;
	case WS_BATCH:
		if (from == WS_CLAIM || from == WS_CONNECT)
			worker_report(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_BUSY, w->b.items[w->b.next].id);
		break;
	case WS_EXIT:
		uv_stop(&w->loop);
		break;
	default:
		break;
	}
}

/* ---- the database ---- */


/* A database call failed: wait (back-off doubling from 100 ms to 5 s), then reconnect if the
 * connection is gone. A handler that runs meanwhile goes on; the rest waits in WS_CONNECT. */
static void db_failed(struct worker *w, int r, const char *what, const char *err)
{
	unsigned wait = backoff_next(&w->db_backoff);

	if (r == -ENOTCONN)
		log_warn("database unreachable during %s: %s; reconnecting in %u ms", what, err, wait);
	else
		log_error("database error during %s: %s; retrying in %u ms", what, err, wait);
	uv_timer_start(&w->db_timer, worker_on_db_timer, wait, 0);
	if (w->state == WS_RUN)
		worker_report(w, PROTO_W_DB_DOWN, 0);
	else if (w->state != WS_CONNECT)
		worker_enter(w, WS_CONNECT);
}

bool worker_db_waiting(const struct worker *w)
{
	return uv_is_active((const uv_handle_t *)&w->db_timer);
}

/* The back-off is over and a connection is there: where the worker left off. */
static void db_back(struct worker *w)
{
	if (w->state == WS_RUN) {
		worker_report(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_BUSY, worker_running_id(w));
		return;
	}
	if (w->state != WS_START && w->state != WS_CONNECT)
		return;
	worker_enter(w, w->stopping ? WS_DRAIN : w->b.next < w->b.n ? WS_BATCH : WS_WANT);
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
			db_failed(w, -ENOTCONN, "connect", err);
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

/* Answer the permit (CLAIMED) with the rows claimed under it, possibly none. */
void worker_answer_permit(struct worker *w, size_t n)
{
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_CLAIMED;
	m.u.items.n = (uint16_t)n;
	m.u.items.claim_us = w->b.claim_us;
	store_cursor(w->store, &m.u.items.cursor);  /* left none when it has no place */
	for (size_t i = 0; i < n; i++) {
		m.u.items.items[i].id = w->b.items[i].id;
		m.u.items.items[i].token = w->b.items[i].token;
	}
	worker_send(w, &m);
}

/* The store's claim hook: the rows a claim locked, told to the supervisor (HOLDING) before
 * the commit goes out. */
void worker_on_locked(void *data, const struct store_item *items, size_t n)
{
	struct worker *w = data;
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_HOLDING;
	m.u.items.n = (uint16_t)(n > PROTO_MAX_ITEMS ? PROTO_MAX_ITEMS : n);
	for (size_t i = 0; i < m.u.items.n; i++) {
		m.u.items.items[i].id = items[i].id;
		m.u.items.items[i].token = items[i].token;
	}
	worker_send(w, &m);
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
}

/* Write every outcome; with max > 0 also claim the next batch in the same transaction (and
 * answer the permit). Returns 0, or a negative error after db_failed() took over. */
static int write_and_claim(struct worker *w, unsigned max, size_t *ret_n)
{
	char err[STORE_ERR_MAX] = "";
	size_t n = 0;
	int r;

	r = batch_claim(&w->b, w->store, w->cfg, &w->out, max, &n, err, sizeof(err));
	if (r < 0) {
		if (w->state == WS_CLAIM)
			worker_answer_permit(w, 0);
		db_failed(w, r, max > 0 ? "claim" : "completing items", err);
		return r;
	}
	backoff_reset(&w->db_backoff);
	if (max > 0)
		worker_answer_permit(w, n);
	if (ret_n)
		*ret_n = n;
	return 0;
}

/* Write the outcomes now if they are due. Returns 0, or a negative error (db_failed took
 * over). */
static int write_if_due(struct worker *w)
{
	return outcomes_due(&w->out) ? write_and_claim(w, 0, NULL) : 0;
}

/* Quick outcomes wait for the next claim, FLUSH_MS at most. */
static void on_flush(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->out.n == 0 || w->stopping || worker_db_waiting(w))
		return;
	if (w->state == WS_WANT || w->state == WS_SLEEP || w->state == WS_BATCH ||
	    w->state == WS_SLOT || w->state == WS_RUN)
		write_and_claim(w, 0, NULL);
}

static void start_flush_timer(struct worker *w)
{
	if (w->out.n > 0 && !uv_is_active((uv_handle_t *)&w->flush_timer))
		uv_timer_start(&w->flush_timer, on_flush, OUTCOMES_FLUSH_MS, 0);
}

/* ---- running items ---- */

static unsigned retry_delay_ms(const struct worker *w, uint32_t attempt)
{
	double d = backoff_nth(w->cfg->retry_base_ms, RETRY_CAP_MS, attempt ? attempt - 1 : 0);

	return (unsigned)(d * (0.75 + 0.5 * ((double)rand() / RAND_MAX)));  /* +-25 % */
}

static uint32_t us32(uint64_t ns)
{
	return ns / 1000u > UINT32_MAX ? UINT32_MAX : (uint32_t)(ns / 1000u);
}

static void on_result(void *data, const struct handler_result *res)
{
	struct worker *w = data;
	const struct store_item *it = &w->b.items[w->b.next - 1];
	uint64_t took = uv_hrtime() - w->item_started_ns;
	struct outcome *x;
	char q[1300];

	if (w->state != WS_RUN)
		return;  /* exiting: the channel is gone, nothing will be written */
	uv_timer_stop(&w->progress_timer);
	uv_timer_stop(&w->overrun_timer);
	fence_disarm();
	if (fence_fired()) {
		log_warn("item id=%llu: its lease ended without a renewal (the database did not "
			 "answer): its handler was killed, so that no other worker runs it at the "
			 "same time", (unsigned long long)it->id);
		x = outcomes_add(&w->out, it, OUTCOME_FAILURE, retry_delay_ms(w, it->attempt),
				 "killed: its lease could not be renewed in time (the database did "
				 "not answer)", took);
		goto added;
	}
	if (res->status != HANDLER_CANCELLED)
		prefetch_ran(&w->pf, took);
	switch (res->status) {
	case HANDLER_OK:
		x = outcomes_add(&w->out, it, OUTCOME_SUCCESS, 0, NULL, took);
		if ((res->result || w->progress_dirty) &&
		    outcome_set_result(&w->out, x, res->result, res->result_len, res->result_type,
				       w->progress_dirty ? w->progress : NULL) < 0)
			log_warn("item id=%llu: out of memory for its result: not kept",
				 (unsigned long long)it->id);
		break;
	case HANDLER_CANCELLED:
		x = outcomes_add(&w->out, it, OUTCOME_RELEASE, 0, NULL, took);
		break;
	case HANDLER_RETRY_LATER:
		log_debug("item id=%llu asks to run again in %u ms", (unsigned long long)it->id,
			  res->retry_in_ms);
		x = outcomes_add(&w->out, it, OUTCOME_DEFER, res->retry_in_ms, NULL, took);
		break;
	default:
		log_info("item id=%llu attempt=%u/%u failed error=%s", (unsigned long long)it->id,
			 it->attempt, it->max_attempts, log_quote(res->error, 300, q, sizeof(q)));
		x = outcomes_add(&w->out, it, OUTCOME_FAILURE, retry_delay_ms(w, it->attempt),
				 res->error, took);
	}
added:
	x->queue = (uint8_t)w->b.qi;
	x->run_us = us32(took);
	x->wait_us = us32(it->waited_us * 1000u + (w->item_started_ns - w->b.claimed_ns));
	worker_enter(w, w->stopping ? WS_DRAIN : WS_BATCH);
	if (!handler_inline(w->handler)) {
		start_flush_timer(w);
		worker_kick(w);
	}
}

/* --batch auto: the running item has run far longer than its batch was sized for, and rows
 * claimed with it wait: they go back now, for the other workers. */
static void on_overrun(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->state != WS_RUN || w->b.next >= w->b.n || w->stopping)
		return;
	log_debug("item id=%llu runs long: %zu prefetched items go back",
		  (unsigned long long)worker_running_id(w), w->b.n - w->b.next);
	batch_give_back_rest(&w->b, &w->out);
	if (!worker_db_waiting(w))
		write_and_claim(w, 0, NULL);
}

/* Start the next row of the batch (its rate-limit slot, if any, is taken). */
static void run_next(struct worker *w)
{
	struct store_item *it = &w->b.items[w->b.next++];
	struct handler_job job = {
		.id = it->id, .queue = it->queue, .attempt = it->attempt,
		.max_attempts = it->max_attempts, .payload = it->payload,
		.payload_len = it->payload_len,
		.timeout_ms = it->timeout_ms ? it->timeout_ms : w->cfg->timeout_ms,
		.enqueued_at_ms = it->enqueued_at_ms,
		.group = it->group, .seq = it->group_seq, .content_type = it->content_type,
		.on_progress = worker_on_progress,
	};
	int r;

	w->item_started_ns = uv_hrtime();
	w->progress_dirty = false;
	w->progress_at = 0;
	worker_enter(w, WS_RUN);
	if (it->spent) {
		struct handler_result res = { .status = HANDLER_FAILED };
		snprintf(res.error, sizeof(res.error), "its last attempt's worker vanished (lease "
			 "expired)");
		on_result(w, &res);
		return;
	}
	/* Which row runs, said before it starts: should it kill this worker, the supervisor
	 * counts the attempt against that row alone. */
	if (!handler_inline(w->handler))
		worker_report(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_BUSY, it->id);
	r = handler_run(w->handler, &job, on_result, w);
	if (r < 0) {
		struct handler_result res = { .status = HANDLER_FAILED };
		snprintf(res.error, sizeof(res.error), "could not start handler: %s", strerror(-r));
		on_result(w, &res);
	} else if (!handler_inline(w->handler)) {
		/* Now that it runs: with its handler's pid. */
		worker_report(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_BUSY, it->id);
		fence_arm(w->b.lease_ok_ns, handler_pid(w->handler));
		if (!w->cfg->batch && w->b.next < w->b.n)
			uv_timer_start(&w->overrun_timer, on_overrun,
				       prefetch_overrun_ns(&w->pf) / 1000000u, 0);
	}
}

/* The next row's rate-limit start slot, if its queue has a limit. Returns 1 when it must
 * wait for it (WS_SLOT: the slot timer starts it), 0 to start it now, or a negative error
 * (db_failed took over). */
static int take_slot(struct worker *w)
{
	char err[STORE_ERR_MAX] = "";
	unsigned wait_ms = 0;
	int r = batch_take_slot(&w->b, w->store, &wait_ms, err, sizeof(err));

	if (r < 0) {
		db_failed(w, r, "taking a rate-limit slot", err);
		return r;
	}
	if (wait_ms == 0)
		return 0;
	worker_enter(w, WS_SLOT);
	uv_timer_start(&w->slot_timer, on_slot, wait_ms, 0);
	return 1;
}

/* 1 when the next row's queue was paused meanwhile (the rest went back), 0 to go on, or a
 * negative error (db_failed took over). */
static int paused_meanwhile(struct worker *w)
{
	char err[STORE_ERR_MAX] = "";
	int r = batch_paused(&w->b, w->store, &w->out, err, sizeof(err));

	if (r < 0)
		db_failed(w, r, "checking for a pause", err);
	return r;
}

/* ---- what each state does ---- */

static void step_want(struct worker *w)
{
	/* A slow item's outcome is written before anything else; quick ones wait for the next
	 * claim, but not for long: the supervisor may keep permits with the workers that are
	 * claiming. */
	if (!handler_inline(w->handler) && write_if_due(w) < 0)
		return;
	ask_for_work(w);
	start_flush_timer(w);
}

static void step_claim(struct worker *w)
{
	size_t n = 0;

	if (write_and_claim(w, prefetch_size(&w->pf, w->cfg->batch), &n) < 0)
		return;
	if (n == 0) {
		worker_enter(w, WS_SLEEP);
		return;
	}
	worker_enter(w, WS_BATCH);
	/* An inline batch takes microseconds: ask for the next permit now, so it is already
	 * here when the batch is done. */
	if (handler_inline(w->handler))
		ask_for_work(w);
	worker_kick(w);
}

static void step_batch(struct worker *w)
{
	int r;

	if (worker_db_waiting(w)) {
		worker_enter(w, WS_CONNECT);
		return;
	}
	if (!handler_inline(w->handler) && w->b.next < w->b.n) {
		/* A slow item's outcome is written before the next one starts, and a prefetched
		 * item does not start in a queue paused meanwhile. With a rate limit, both before
		 * its start slot is taken: nothing then stands between the slot and the start
		 * (slots are min_interval_ms apart). */
		bool limited = w->b.items[w->b.next].min_interval_ms > 0;
		if ((outcomes_due(&w->out) || (limited && w->out.n > 0)) &&
		    write_and_claim(w, 0, NULL) < 0)
			return;
		r = paused_meanwhile(w);
		if (r != 0) {
			if (r > 0)
				worker_kick(w);  /* the batch is over now */
			return;
		}
	}
	while (w->b.next < w->b.n) {
		if (batch_lease_lapsed(&w->b, uv_hrtime())) {
			/* Perhaps claimed by another worker meanwhile: none of them runs here. */
			log_warn("the leases of %zu prefetched items may have ended (the database did "
				 "not answer in time): they go back unrun", w->b.n - w->b.next);
			batch_release_unstarted(&w->b, &w->out);
			break;
		}
		if (take_slot(w) != 0)
			return;
		run_next(w);
		if (!handler_inline(w->handler))
			return;  /* its result comes on the loop */
	}
	/* The batch is over. Inline outcomes ride on the next claim. */
	worker_enter(w, WS_WANT);
	step_want(w);
}

static void step_sleep(struct worker *w)
{
	if (w->out.n > 0)
		write_and_claim(w, 0, NULL);
}

static void step_drain(struct worker *w)
{
	uv_timer_stop(&w->slot_timer);
	batch_release_unstarted(&w->b, &w->out);
	if (write_and_claim(w, 0, NULL) == 0)
		worker_enter(w, WS_EXIT);
}

static void step(struct worker *w)
{
	switch (w->state) {
	case WS_WANT:
		step_want(w);
		break;
	case WS_SLEEP:
		step_sleep(w);
		break;
	case WS_CLAIM:
		step_claim(w);
		break;
	case WS_BATCH:
		step_batch(w);
		break;
	case WS_DRAIN:
		step_drain(w);
		break;
	case WS_CONNECT:
		/* Stopping: rows not started are outcomes to write too; with nothing to write,
		 * no reason to wait for the database. */
		if (w->stopping) {
			batch_release_unstarted(&w->b, &w->out);
			if (w->out.n == 0)
				worker_enter(w, WS_EXIT);
		}
		break;
	default:
		break;  /* waiting for an event */
	}
}

/* The rate-limit slot of the next row has come: it starts now. */
static void on_slot(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->state != WS_SLOT)
		return;
	run_next(w);
	if (w->state == WS_BATCH)
		worker_kick(w);  /* an inline handler is done with it: the rest of the batch */
}

/* ---- leases ---- */

void worker_on_lease_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	char err[STORE_ERR_MAX] = "";
	int r;

	if (worker_db_waiting(w) || w->state == WS_START || w->state == WS_EXIT)
		return;
	r = batch_extend(&w->b, w->state == WS_RUN, &w->out, w->store, w->cfg->lease_ms, err,
			 sizeof(err));
	if (r < 0)
		db_failed(w, r, "extending leases", err);
	else if (w->state == WS_RUN && !handler_inline(w->handler))
		fence_arm(w->b.lease_ok_ns, handler_pid(w->handler));
}

