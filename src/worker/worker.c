/* A worker's claiming life is one enum (enum wstate, worker_int.h) changed only by
 * worker_enter(), whose table below says what may follow what. Events (the supervisor's
 * messages, items ending, timers, the database failing or coming back) move it from state to
 * state; step() then does the work of the state it is in: ask for a permit, claim (the
 * finished rows' outcomes ride along), write what is due, drain. The rows it holds
 * (worker_items.c) run meanwhile, on the handler, in every state but the first: the worker
 * asks for more while fewer than it should hold remain, so the next claim is made while the
 * last one's rows run. Database calls block the loop, but each is one short statement; the
 * heartbeat is answered between them.
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
	[WS_FULL] = B(WS_WANT) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_WANT] = B(WS_CLAIM) | B(WS_CONNECT) | B(WS_DRAIN),
	[WS_SLEEP] = B(WS_CLAIM) | B(WS_CONNECT) | B(WS_DRAIN),
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

/* A database call failed: wait (back-off doubling from 100 ms to 5 s), then reconnect if the
 * connection is gone. Items that run meanwhile go on; their outcomes wait. */
void worker_db_failed(struct worker *w, int r, const char *what, const char *err)
{
	unsigned wait = backoff_next(&w->db_backoff);

	if (r == -ENOTCONN)
		log_warn("database unreachable during %s: %s; reconnecting in %u ms", what, err, wait);
	else
		log_error("database error during %s: %s; retrying in %u ms", what, err, wait);
	uv_timer_start(&w->db_timer, worker_on_db_timer, wait, 0);
	if (w->state != WS_CONNECT && w->state != WS_EXIT)
		worker_enter(w, WS_CONNECT);
}

bool worker_db_waiting(const struct worker *w)
{
	return uv_is_active((const uv_handle_t *)&w->db_timer);
}

/* Where the worker goes when nothing stops it: asking for more while there is room. */
static enum wstate settled(struct worker *w)
{
	if (w->stopping)
		return WS_DRAIN;
	return worker_room(w, false) > 0 ? WS_WANT : WS_FULL;
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
		m.u.items.items[i].id = w->b.rows[i].id;
		m.u.items.items[i].token = w->b.rows[i].token;
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
	w->asked_ns = uv_hrtime();
}

int worker_write(struct worker *w)
{
	char err[STORE_ERR_MAX] = "";
	size_t n = 0;
	int r;

	if (w->out.n == 0)
		return 0;
	r = batch_claim(&w->b, w->store, w->cfg, &w->out, 0, true, &n, err, sizeof(err));
	if (r < 0) {
		worker_db_failed(w, r, "completing items", err);
		return r;
	}
	backoff_reset(&w->db_backoff);
	return 0;
}

/* Successes wait for the next claim, but not for long. */
static void on_flush(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->out.n == 0 || worker_db_waiting(w))
		return;
	if (w->state == WS_WANT || w->state == WS_SLEEP || w->state == WS_FULL ||
	    w->state == WS_DRAIN)
		worker_write(w);
}

/* Write the outcomes if they are due; else make sure they will be, within the flush time.
 * Returns 0, or a negative error (db_failed took over). */
static int write_if_due(struct worker *w)
{
	if (outcomes_due(&w->out))
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
	char err[STORE_ERR_MAX] = "";
	unsigned max = worker_room(w, true);
	size_t n = 0;
	int r;

	if (max == 0) {
		worker_answer_permit(w, 0);
		worker_enter(w, WS_FULL);
		return;
	}
	r = batch_claim(&w->b, w->store, w->cfg, &w->out, max, items_held(&w->items) > 0, &n,
			err, sizeof(err));
	if (r < 0) {
		worker_answer_permit(w, 0);
		worker_db_failed(w, r, "claim", err);
		return;
	}
	backoff_reset(&w->db_backoff);
	worker_answer_permit(w, n);
	if (n == 0) {
		/* What it waits for now is work, not a claim: the wait is no claim cycle (counted
		 * as one, a worker that idled would hold rows its siblings could run). */
		w->asked_ns = 0;
		worker_enter(w, WS_SLEEP);
		return;
	}
	if (w->asked_ns)
		prefetch_claimed(&w->pf, uv_hrtime() - w->asked_ns);
	w->asked_ns = 0;
	worker_take_claimed(w);
	fence_arm(w->b.lease_ok_ns);
	worker_enter(w, settled(w));
	if (w->state == WS_WANT)
		ask_for_work(w);   /* right away: the permit may come back to us */
	worker_kick(w);
}

static void step_held(struct worker *w)
{
	if (worker_gate(w) < 0 || write_if_due(w) < 0)
		return;
	if (w->state == WS_FULL && worker_room(w, false) > 0) {
		worker_enter(w, WS_WANT);
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

	if (worker_db_waiting(w) || w->state == WS_START || w->state == WS_EXIT)
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
