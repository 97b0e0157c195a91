/* A worker is a small state machine driven by its libuv loop. step() decides what to do next
 * whenever something happened (a handler finished, the supervisor woke us, the database came
 * back): run the next item of the current batch, or write the outcomes and claim the next
 * batch in one transaction, or go idle until the supervisor wakes us. Database calls block
 * the loop, but each is one short statement; the heartbeat is answered between them. */
#include "worker/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/chan.h"
#include "worker/handler.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/proto.h"
#include "store/store.h"

#define PEND_MAX (2 * PROTO_MAX_ITEMS)
#define DB_BACKOFF_MIN_MS 100
#define DB_BACKOFF_MAX_MS 5000
#define RETRY_CAP_MS (3600u * 1000u)
#define FLUSH_WAIT_MS 20      /* outcomes waiting for a claim permit are written after this */
#define QUICK_RUN_NS 2000000u /* an item that ran less than this is quick (see outcomes_due) */
#define PAUSE_CHECK_NS 50000000u /* is a prefetched item's queue paused: asked at most this often */

/* An outcome not yet written to the database. */
struct pend {
	struct store_ref ref;
	uint8_t outcome;   /* enum proto_outcome */
	unsigned retry_ms;
	char *error;
};

struct worker {
	uv_loop_t loop;
	const struct config *cfg;
	struct chan *chan;
	struct store *store;
	struct handler *handler;
	char claimer[160];
	uint8_t state;
	uint64_t state_item;
	uint32_t state_hpid;
	bool state_sent;

	struct store_item items[PROTO_MAX_ITEMS];
	size_t nitems, next;
	bool running;
	uint64_t item_started_ns;
	uint64_t pause_seen_ns;   /* when a claim or a check last saw the queues not paused */

	struct pend pend[PEND_MAX];
	size_t npend;
	uint64_t pend_since_ns;  /* when the oldest unwritten outcome came */
	bool pend_urgent;        /* one is not a quick success: write them before going on */

	bool wanted;      /* ready for more work */
	bool asked;       /* WANT sent, no WAKE yet */
	bool granted;     /* holding the supervisor's claim permit (a WAKE): answer with CLAIMED */
	bool db_ok;
	bool stopping;
	bool exiting;
	unsigned db_backoff_ms;
	int exit_code;

	unsigned qi;      /* the queue (cfg->queues[qi]) that had work last */
	bool slot_ready;  /* the next item's rate-limit slot is taken: run it when its timer fires */
	uv_timer_t kick_timer, db_timer, lease_timer, grace_timer, slot_timer, flush_timer;
};

static void step(struct worker *w);
static void on_kick(uv_timer_t *t);
static void on_flush_timer(uv_timer_t *t);

static void kick(struct worker *w)
{
	if (!w->exiting)
		uv_timer_start(&w->kick_timer, on_kick, 0, 0);
}

static void on_kick(uv_timer_t *t)
{
	step(t->data);
}

static void send_msg(struct worker *w, struct proto_msg *m)
{
	int r = chan_send(w->chan, m);

	if (r < 0 && !w->exiting)
		log_warn("cannot send %s to supervisor: %s", proto_type_name(m->type), strerror(-r));
}

/* Tell the supervisor what we do, when it changed. The handler's pid lets the supervisor
 * kill the handler's whole process group should this worker die. */
static void set_state(struct worker *w, uint8_t state, uint64_t item)
{
	uint32_t hpid = (uint32_t)handler_pid(w->handler);
	struct proto_msg m;

	if (w->state_sent && w->state == state && w->state_item == item && w->state_hpid == hpid)
		return;
	w->state = state;
	w->state_item = item;
	w->state_hpid = hpid;
	w->state_sent = true;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_STATE;
	m.u.state.state = state;
	m.u.state.item_id = item;
	m.u.state.handler_pid = hpid;
	send_msg(w, &m);
}

/* ---- database trouble ---- */

static void on_db_timer(uv_timer_t *t);

static void db_failed(struct worker *w, int r, const char *what, const char *err)
{
	if (r == -ENOTCONN)
		log_warn("database unreachable during %s: %s; reconnecting in %u ms", what, err,
			 w->db_backoff_ms ? w->db_backoff_ms : DB_BACKOFF_MIN_MS);
	else
		log_error("database error during %s: %s; retrying in %u ms", what, err,
			  w->db_backoff_ms ? w->db_backoff_ms : DB_BACKOFF_MIN_MS);
	w->db_ok = false;
	set_state(w, PROTO_W_DB_DOWN, 0);
	if (!w->db_backoff_ms)
		w->db_backoff_ms = DB_BACKOFF_MIN_MS;
	uv_timer_start(&w->db_timer, on_db_timer, w->db_backoff_ms, 0);
	w->db_backoff_ms = w->db_backoff_ms * 2 > DB_BACKOFF_MAX_MS ? DB_BACKOFF_MAX_MS
								 : w->db_backoff_ms * 2;
}

static void on_db_timer(uv_timer_t *t)
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
		log_info("connected to the database");
	}
	/* The back-off is reset by the next statement that succeeds, not here: a server that
	 * accepts connections but fails every claim (a missing table) must not be hammered. */
	w->db_ok = true;
	w->wanted = true;
	set_state(w, w->running || w->next < w->nitems ? PROTO_W_BUSY : PROTO_W_IDLE,
		  w->running ? w->items[w->next - 1].id : 0);
	kick(w);
}

/* ---- outcomes ---- */

static void report_finished(struct worker *w, const struct pend *p, size_t n)
{
	struct proto_msg m;

	while (n > 0) {
		size_t k = n > PROTO_MAX_ITEMS ? PROTO_MAX_ITEMS : n;
		memset(&m, 0, sizeof(m));
		m.type = PROTO_FINISHED;
		m.u.items.n = (uint16_t)k;
		for (size_t i = 0; i < k; i++) {
			m.u.items.items[i].id = p[i].ref.id;
			m.u.items.items[i].token = p[i].ref.token;
			m.u.items.items[i].outcome = p[i].outcome;
		}
		send_msg(w, &m);
		p += k;
		n -= k;
	}
}

static void add_pend(struct worker *w, const struct store_item *it, uint8_t outcome,
		     unsigned retry_ms, const char *error)
{
	struct pend *p;

	if (w->npend == 0) {
		w->pend_since_ns = uv_hrtime();
		w->pend_urgent = false;
	}
	/* Anything but a success is written before the worker goes on (see outcomes_due). */
	if (outcome != PROTO_OUT_DONE)
		w->pend_urgent = true;
	p = &w->pend[w->npend++];
	p->ref.id = it->id;
	p->ref.token = it->token;
	p->ref.grouped = it->group != NULL;
	p->outcome = outcome;
	p->retry_ms = retry_ms;
	p->error = error && *error ? strdup(error) : NULL;
}

/* Whether a handler that is not inline writes its outcomes before its next item. A quick
 * success waits, to ride on the next claim (or the flush timer) with the others; a slow one, a
 * failure, or outcomes waiting FLUSH_WAIT_MS already are written now, so a worker that dies
 * running its next item loses at most a few milliseconds of work. */
static bool outcomes_due(const struct worker *w)
{
	return w->npend > 0 &&
	       (w->pend_urgent || uv_hrtime() - w->pend_since_ns >= FLUSH_WAIT_MS * 1000000ull);
}

static void start_flush_timer(struct worker *w)
{
	if (w->npend > 0 && !uv_is_active((uv_handle_t *)&w->flush_timer))
		uv_timer_start(&w->flush_timer, on_flush_timer, FLUSH_WAIT_MS, 0);
}

/* Write failures and releases one by one (they are rare); leave DONE entries for the claim
 * that follows. Returns 0 or the store error (entries not yet written stay). */
static int flush_slow(struct worker *w, char *err, size_t errlen)
{
	size_t keep = 0;
	int r = 0;

	for (size_t i = 0; i < w->npend; i++) {
		struct pend *p = &w->pend[i];
		if (r < 0 || p->outcome == PROTO_OUT_DONE) {
			w->pend[keep++] = *p;
			continue;
		}
		if (p->outcome == PROTO_OUT_RELEASED)
			r = store_release(w->store, &p->ref, 1, false, NULL, err, errlen);
		else if (p->outcome == PROTO_OUT_DEFERRED)
			r = store_defer(w->store, p->ref, p->retry_ms, err, errlen);
		else
			r = store_fail(w->store, p->ref, p->retry_ms, p->error, err, errlen);
		if (r < 0) {
			w->pend[keep++] = *p;
			continue;
		}
		if (p->outcome == PROTO_OUT_RETRY || p->outcome == PROTO_OUT_DEAD)
			p->outcome = r == 2 ? PROTO_OUT_DEAD : r == 1 ? PROTO_OUT_RETRY : PROTO_OUT_LOST;
		else if (r == 0)
			p->outcome = PROTO_OUT_LOST;
		report_finished(w, p, 1);
		free(p->error);
	}
	w->npend = keep;
	return r < 0 ? r : 0;
}

static unsigned retry_delay_ms(const struct worker *w, uint32_t attempt)
{
	double d = w->cfg->retry_base_ms;

	for (uint32_t i = 1; i < attempt && d < RETRY_CAP_MS; i++)
		d *= 2;
	if (d > RETRY_CAP_MS)
		d = RETRY_CAP_MS;
	d *= 0.75 + 0.5 * ((double)rand() / RAND_MAX);
	return (unsigned)d;
}

/* ---- claiming ---- */

/* CLAIMED answers the permit, with the rows claimed under it (possibly none). */
static void handle_claimed(struct worker *w, size_t n)
{
	struct proto_msg m;

	w->granted = false;
	w->pause_seen_ns = uv_hrtime();  /* the claim skips paused queues */
	memset(&m, 0, sizeof(m));
	m.type = PROTO_CLAIMED;
	m.u.items.n = (uint16_t)n;
	store_cursor(w->store, &m.u.items.cursor);  /* left none when it has no place */
	for (size_t i = 0; i < n; i++) {
		m.u.items.items[i].id = w->items[i].id;
		m.u.items.items[i].token = w->items[i].token;
	}
	send_msg(w, &m);
	w->nitems = n;
	w->next = 0;
}

static void return_grant(struct worker *w)
{
	if (w->granted)
		handle_claimed(w, 0);
}

static void ask_for_work(struct worker *w)
{
	struct proto_msg m;

	if (w->asked || w->granted)
		return;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_WANT;
	send_msg(w, &m);
	w->asked = true;
}

/* Claim from the queue that had work last, then from the others in turn, until one has
 * rows: the outcomes ride on the first claim. With max 0, only the outcomes are written. */
static int claim_any(struct worker *w, unsigned max, const struct store_ref *done, size_t ndone,
		     size_t *ret_n, size_t *ret_completed, char *err, size_t errlen)
{
	unsigned nq = max > 0 ? w->cfg->nqueues : 1;
	size_t completed = 0;
	int r = 0;

	*ret_n = 0;
	for (unsigned k = 0; k < nq && *ret_n == 0; k++) {
		unsigned qi = (w->qi + k) % w->cfg->nqueues;
		r = store_claim(w->store, w->cfg->queues[qi], max, w->cfg->lease_ms,
				k ? NULL : done, k ? 0 : ndone, w->items, ret_n,
				k ? &(size_t){ 0 } : &completed, err, errlen);
		if (r < 0)
			return r;
		if (*ret_n > 0)
			w->qi = qi;
	}
	*ret_completed = completed;
	return 0;
}

/* Write every pending outcome; with max > 0 also claim the next batch in the same
 * transaction. Returns 0, or a negative error after db_failed() took over. */
static int write_and_claim(struct worker *w, unsigned max)
{
	struct store_ref done[PEND_MAX];
	char err[STORE_ERR_MAX] = "";
	size_t ndone = 0, n = 0, completed = 0;
	int r;

	r = flush_slow(w, err, sizeof(err));
	if (r < 0)
		goto fail;
	if (w->npend == 0 && max == 0)
		return 0;
	for (size_t i = 0; i < w->npend; i++)
		done[ndone++] = w->pend[i].ref;
	if (max > 0) {
		store_items_clear(w->items, w->nitems);
		w->nitems = w->next = 0;
	}
	r = claim_any(w, max, done, ndone, &n, &completed, err, sizeof(err));
	if (r < 0)
		goto fail;
	w->db_backoff_ms = 0;
	if (completed < ndone)
		log_warn("%zu of %zu finished items had lost their claim (lease expired or "
			 "released); their results were not written", ndone - completed, ndone);
	report_finished(w, w->pend, w->npend);
	w->npend = 0;
	if (max == 0)
		return 0;
	handle_claimed(w, n);
	if (n > 0) {
		set_state(w, PROTO_W_BUSY, w->items[0].id);
		w->wanted = true;
		/* An inline batch takes microseconds: ask for the next permit now, so it is
		 * already here when the batch is done. */
		if (handler_inline(w->handler))
			ask_for_work(w);
		kick(w);
		return 0;
	}
	w->wanted = false;
	set_state(w, PROTO_W_IDLE, 0);
	return 0;
fail:
	return_grant(w);
	db_failed(w, r, max > 0 ? "claim" : "completing items", err);
	return r;
}

/* ---- running items ---- */

static void on_result(void *data, const struct handler_result *res);

static void run_next(struct worker *w)
{
	struct store_item *it = &w->items[w->next++];
	struct handler_job job = {
		.id = it->id, .queue = it->queue, .attempt = it->attempt,
		.max_attempts = it->max_attempts, .payload = it->payload,
		.payload_len = it->payload_len,
		.timeout_ms = it->timeout_ms ? it->timeout_ms : w->cfg->timeout_ms,
		.enqueued_at_ms = it->enqueued_at_ms,
		.group = it->group, .seq = it->group_seq,
	};
	int r;

	if (it->attempt > it->max_attempts) {
		/* Claimed again after its last attempt's worker vanished without a word (the lease
		 * ran out): that attempt counted, and it was the last. */
		add_pend(w, it, PROTO_OUT_DEAD, 0, "its last attempt's worker vanished (lease expired)");
		if (!handler_inline(w->handler))
			kick(w);
		return;
	}
	w->running = true;
	w->item_started_ns = uv_hrtime();
	r = handler_run(w->handler, &job, on_result, w);
	if (r == 0 && !handler_inline(w->handler))
		set_state(w, w->stopping ? PROTO_W_STOPPING : PROTO_W_BUSY, it->id);
	if (r < 0) {
		struct handler_result res = { .status = HANDLER_FAILED };
		snprintf(res.error, sizeof(res.error), "could not start handler: %s", strerror(-r));
		on_result(w, &res);
	}
}

static void on_result(void *data, const struct handler_result *res)
{
	struct worker *w = data;
	const struct store_item *it = &w->items[w->next - 1];
	char q[1300];

	w->running = false;
	switch (res->status) {
	case HANDLER_OK:
		add_pend(w, it, PROTO_OUT_DONE, 0, NULL);
		if (uv_hrtime() - w->item_started_ns >= QUICK_RUN_NS)
			w->pend_urgent = true;
		break;
	case HANDLER_CANCELLED:
		add_pend(w, it, PROTO_OUT_RELEASED, 0, NULL);
		break;
	case HANDLER_RETRY_LATER:
		log_debug("item id=%llu asks to run again in %u ms", (unsigned long long)it->id,
			  res->retry_in_ms);
		add_pend(w, it, PROTO_OUT_DEFERRED, res->retry_in_ms, NULL);
		break;
	default:
		log_info("item id=%llu attempt=%u/%u failed error=%s", (unsigned long long)it->id,
			 it->attempt, it->max_attempts, log_quote(res->error, 300, q, sizeof(q)));
		add_pend(w, it, it->attempt >= it->max_attempts ? PROTO_OUT_DEAD : PROTO_OUT_RETRY,
			 retry_delay_ms(w, it->attempt), res->error);
	}
	if (!handler_inline(w->handler)) {
		start_flush_timer(w);
		kick(w);
	}
}

/* Items of the batch that will not run now go back, their attempt given back. */
static void release_unstarted(struct worker *w)
{
	w->slot_ready = false;
	uv_timer_stop(&w->slot_timer);
	while (w->next < w->nitems) {
		add_pend(w, &w->items[w->next], PROTO_OUT_RELEASED, 0, NULL);
		w->next++;
	}
}

/* The next item's queue has a shared rate limit: take its start slot (one UPDATE on the
 * queues row, serialised across every supervisor). Returns true when the item must wait:
 * the slot timer (or, on a database error, the reconnect timer) calls step again. */
static bool wait_for_slot(struct worker *w)
{
	const struct store_item *it = &w->items[w->next];
	char err[STORE_ERR_MAX] = "";
	unsigned wait_ms = 0;
	int r;

	if (!it->min_interval_ms || w->slot_ready) {
		w->slot_ready = false;
		return false;
	}
	r = store_take_slot(w->store, it->queue, &wait_ms, err, sizeof(err));
	if (r < 0) {
		db_failed(w, r, "taking a rate-limit slot", err);
		return true;
	}
	if (wait_ms == 0)
		return false;
	w->slot_ready = true;
	uv_timer_start(&w->slot_timer, on_kick, wait_ms, 0);
	return true;
}

/* Returns true when the rest of the batch is not to run now: the queue was paused (its
 * items go back, attempts given back), or the database failed (db_failed took over). */
static bool release_if_paused(struct worker *w)
{
	char err[STORE_ERR_MAX] = "";
	const char *queue = w->items[w->next].queue;
	int r;

	/* Quick items do not pay a round trip each: a pause shows within PAUSE_CHECK_NS. */
	if (uv_hrtime() - w->pause_seen_ns < PAUSE_CHECK_NS)
		return false;
	r = store_paused(w->store, queue, err, sizeof(err));
	if (r < 0) {
		db_failed(w, r, "checking for a pause", err);
		return true;
	}
	if (r == 0) {
		w->pause_seen_ns = uv_hrtime();
		return false;
	}
	log_info("queue '%s' paused: %zu prefetched items go back", queue,
		 w->nitems - w->next);
	release_unstarted(w);
	kick(w);
	return true;
}

static void finish_exit(struct worker *w)
{
	w->exiting = true;
	uv_stop(&w->loop);
}

static void step(struct worker *w)
{
	if (w->exiting || w->running)
		return;
	if (w->stopping)
		release_unstarted(w);
	if (!w->db_ok) {
		/* Stopping with nothing to write: no reason to wait for the database. (Rows
		 * claimed but not started come back when their lease expires.) */
		if (w->stopping && w->npend == 0)
			finish_exit(w);
		return;  /* the reconnect timer kicks us */
	}
	if (w->next < w->nitems) {
		if (!handler_inline(w->handler)) {
			/* A slow item's outcome is written before the next one starts, and a
			 * prefetched item does not start in a queue paused meanwhile. With a
			 * rate limit, both before its start slot is taken: nothing then stands
			 * between the slot and the start (slots are min_interval_ms apart). */
			bool limited = w->items[w->next].min_interval_ms > 0;
			if (((outcomes_due(w) || (limited && w->npend > 0 && !w->slot_ready)) &&
			     write_and_claim(w, 0) < 0) ||
			    (w->next > 0 && !w->slot_ready && release_if_paused(w)) ||
			    wait_for_slot(w))
				return;
			run_next(w);
			return;
		}
		while (w->next < w->nitems) {
			if (wait_for_slot(w))
				return;
			run_next(w);
		}
		/* Inline outcomes ride on the next claim. */
	}
	if (w->stopping) {
		if (write_and_claim(w, 0) == 0)
			finish_exit(w);
		return;
	}
	/* Slow items' outcomes are written at once; quick ones ride on the next claim. */
	if (!handler_inline(w->handler) && outcomes_due(w) && write_and_claim(w, 0) < 0)
		return;
	if (w->granted) {
		write_and_claim(w, w->cfg->batch);
	} else if (w->wanted) {
		ask_for_work(w);
		/* Quick outcomes wait for the next claim, but not for long: the supervisor may
		 * keep permits with the workers that are claiming. */
		start_flush_timer(w);
	} else if (w->npend > 0) {
		write_and_claim(w, 0);
	}
}

static void on_flush_timer(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (!w->granted && w->npend > 0 && w->db_ok && !w->stopping)
		write_and_claim(w, 0);
}

/* ---- leases ---- */

static void on_lease_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	struct store_ref refs[PROTO_MAX_ITEMS + PEND_MAX];
	char err[STORE_ERR_MAX] = "";
	size_t n = 0, first = w->running ? w->next - 1 : w->next;
	int r;

	if (!w->db_ok)
		return;
	for (size_t i = first; i < w->nitems; i++)
		refs[n++] = (struct store_ref){ .id = w->items[i].id, .token = w->items[i].token };
	for (size_t i = 0; i < w->npend; i++)
		refs[n++] = w->pend[i].ref;
	if (n == 0)
		return;
	r = store_extend(w->store, refs, n, w->cfg->lease_ms, err, sizeof(err));
	if (r < 0) {
		db_failed(w, r, "extending leases", err);
		return;
	}
	if ((size_t)r < n)
		log_warn("lease extension: %zu of %zu held items are no longer ours", n - (size_t)r, n);
}

/* ---- supervisor channel ---- */

static void on_grace(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->running) {
		log_warn("grace period over: stopping the handler of item id=%llu",
			 (unsigned long long)w->items[w->next - 1].id);
		handler_cancel(w->handler);
	}
}

static void on_msg(void *data, const struct proto_msg *m)
{
	struct worker *w = data;

	switch (m->type) {
	case PROTO_PING:
		break; /* the ack is the answer */
	case PROTO_WAKE:
		/* A claim permit. One we cannot use now goes straight back. */
		w->asked = false;
		if (w->granted || w->stopping || !w->db_ok ||
		    (!handler_inline(w->handler) && (w->running || w->next < w->nitems))) {
			struct proto_msg back;
			memset(&back, 0, sizeof(back));
			back.type = PROTO_CLAIMED;
			send_msg(w, &back);
			break;
		}
		w->granted = true;
		w->wanted = true;
		/* The host's cursor is one place in one queue's order: with several queues
		 * each worker keeps its own. */
		if (w->cfg->nqueues == 1)
			store_cursor_hint(w->store, w->cfg->queue, &m->u.wake.cursor);
		kick(w);
		break;
	case PROTO_STOP:
		if (w->stopping)
			break;
		log_debug("stopping: in-flight items get %u ms", m->u.stop.grace_ms);
		w->stopping = true;
		set_state(w, PROTO_W_STOPPING, w->running ? w->items[w->next - 1].id : 0);
		uv_timer_start(&w->grace_timer, on_grace, m->u.stop.grace_ms, 0);
		kick(w);
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
	handler_cancel(w->handler);
	w->exit_code = reason == 0 ? 0 : 1;
	finish_exit(w);
}

static const struct chan_ops worker_chan_ops = {
	.on_msg = on_msg,
	.on_close = on_close,
};

/* ---- set-up ---- */

static int worker_init(struct worker *w, const struct config *cfg)
{
	char err[512] = "", host[64] = "";
	struct proto_msg m;
	int r;

	w->cfg = cfg;
	srand((unsigned)(getpid() ^ uv_hrtime()));
	gethostname(host, sizeof(host) - 1);
	snprintf(w->claimer, sizeof(w->claimer), "%s/w%d:%d", host, cfg->worker_slot, (int)getpid());
	r = uv_loop_init(&w->loop);
	if (r < 0)
		return r;
	uv_timer_t *timers[] = { &w->kick_timer, &w->db_timer, &w->lease_timer, &w->grace_timer,
				 &w->slot_timer, &w->flush_timer };
	for (size_t i = 0; i < sizeof(timers) / sizeof(timers[0]); i++) {
		uv_timer_init(&w->loop, timers[i]);
		timers[i]->data = w;
	}
	r = handler_new(&w->loop, cfg->handler, cfg->kill_grace_ms, &w->handler, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	r = store_new(&cfg->dsn, w->claimer, &w->store);
	if (r < 0)
		return r;
	store_set_dedupe_window(w->store, cfg->dedupe_window_ms / 1000);
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
	send_msg(w, &m);
	set_state(w, PROTO_W_STARTING, 0);
	uv_timer_start(&w->lease_timer, on_lease_timer, cfg->lease_ms / 3, cfg->lease_ms / 3);
	return 0;
}

int worker_main(const struct config *cfg)
{
	static struct worker w; /* large (batch buffers): not on the stack */
	char name[16];
	int r;

	snprintf(name, sizeof(name), "w%d", cfg->worker_slot);
	log_init(name, cfg->log_level);
	proc_ignore_stop_signals();
	if (proc_die_with_parent(cfg->parent_pid) < 0)
		log_warn("cannot ask to die with the supervisor; relying on the channel");
	r = worker_init(&w, cfg);
	if (r < 0)
		return 1;
	/* Connect from the loop so the supervisor already hears heartbeats while we try. */
	w.db_backoff_ms = 0;
	uv_timer_start(&w.db_timer, on_db_timer, 0, 0);
	w.wanted = true;
	uv_run(&w.loop, UV_RUN_DEFAULT);
	if (w.chan)
		chan_close(w.chan);
	handler_free(w.handler);
	store_items_clear(w.items, w.nitems);
	store_free(w.store);
	log_debug("exit code=%d", w.exit_code);
	return w.exit_code;
}

static int run_forked_worker(int slot, int fd, void *arg)
{
	struct config *cfg = arg;
	char title[64];
	int r;

	snprintf(title, sizeof(title), "claimd: worker %d of supervisor %d", slot, cfg->parent_pid);
	proc_set_title(title);
	proc_set_name("claimd");
	cfg->worker_slot = slot;
	cfg->worker_fd = fd;
	r = worker_main(cfg);
	store_library_end();
	return r;
}

int worker_forker_main(struct config *cfg)
{
	char title[64];
	int r;

	snprintf(title, sizeof(title), "claimd: fork server of supervisor %d", cfg->parent_pid);
	log_init("fork", cfg->log_level);
	proc_set_title(title);
	proc_set_name("claimd-fork");
	proc_ignore_stop_signals();
	if (proc_die_with_parent(cfg->parent_pid) < 0)
		log_warn("cannot ask to die with the supervisor; relying on the socket");
	r = proc_forker_serve(cfg->fork_fd, cfg->parent_pid, run_forked_worker, cfg);
	if (r < 0) {
		log_error("fork server: %s", strerror(-r));
		return 1;
	}
	return 0;
}
