/* The rows a worker holds, from its claim to their outcome: each goes to the handler (or first
 * through the rate-limit gate, one start slot at a time), runs there with up to the handler's
 * concurrency of others, and comes back through the done hook as an outcome. Rows that wait
 * (in the handler's queue or the gate) go back when their queue is paused, when the items
 * running outlast what the prefetch expected, when the worker stops, or when their leases
 * may have ended. */
#include "worker/worker_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobset.h"
#include "common/log.h"
#include "common/trace.h"
#include "store/store_graph.h"
#include "worker/fence.h"

#define RETRY_CAP_MS (3600u * 1000u)
#define RETRY_JITTER_PCT 25u
#define PAUSE_CHECK_MS 50u
/* A cancelled row's error as the worker gives it; the store writes the cancel's reason. */
#define CANCELLED_ERROR "cancelled"

/* The queue's own back-off as the claim read it (queues.retry_*), else claimd's: --retry-base,
 * at most RETRY_CAP_MS (or the queue's base, when that is longer), +-RETRY_JITTER_PCT. */
static unsigned retry_delay_ms(const struct worker *w, const struct store_item *row)
{
	unsigned base = row->retry_base_ms ? row->retry_base_ms : w->cfg->retry_base_ms;
	unsigned max = row->retry_max_ms ? row->retry_max_ms :
		       row->retry_base_ms > RETRY_CAP_MS ? row->retry_base_ms : RETRY_CAP_MS;
	unsigned jitter = row->retry_jitter_pct >= 0 ? (unsigned)row->retry_jitter_pct :
			  RETRY_JITTER_PCT;

	return backoff_retry_ms(base, max, jitter, row->attempt, (double)rand() / RAND_MAX);
}

static uint32_t us32(uint64_t ns)
{
	return ns / 1000u > UINT32_MAX ? UINT32_MAX : (uint32_t)(ns / 1000u);
}

/* x's run ended as kind (or it never ran): its outcome is recorded (and returned) and the row
 * leaves. A success keeps res's result, and the last progress its handler reported if that
 * was not written yet. */
static struct outcome *finish(struct worker *w, struct item *x, enum outcome_kind kind,
			      unsigned retry_ms, const char *error,
			      const struct handler_result *res)
{
	uint64_t started = x->job.kstarted_ns;
	const unsigned char *result = res ? res->result : NULL;
	const char *progress = x->progress_dirty ? x->progress : NULL;
	struct outcome *o;

	o = outcomes_add(&w->out, &x->row, kind, retry_ms, error);
	o->queue = x->qi;
	if (started) {
		o->run_us = us32(uv_hrtime() - started);
		o->wait_us = us32(x->row.waited_us * 1000u +
				  (started > x->claimed_ns ? started - x->claimed_ns : 0));
	}
	if (kind == OUTCOME_SUCCESS && (result || progress) &&
	    outcome_set_result(&w->out, o, result, res ? res->result_len : 0,
			       res ? res->result_type : NULL, progress) < 0)
		log_warn("item id=%llu: out of memory for its result: not kept",
			 (unsigned long long)x->row.id);
	items_put(&w->items, x);
	if (items_held(&w->items) == 0)
		fence_disarm();
	return o;
}

/* A successful run of x that adds jobs (res->enqueue): they are checked as any add's, and
 * written with its outcome; jobs that are not valid fail the run, naming what is wrong. */
static void finish_adding(struct worker *w, struct item *x, const struct handler_result *res)
{
	struct jobset *set = malloc(sizeof(*set));
	unsigned retry_ms = retry_delay_ms(w, &x->row);
	char why[300], error[400], q[700], tr[TRACE_LOG_FIELD];
	int r = set ? jobset_parse(res->enqueue, res->enqueue_len, STORE_GRAPH_MAX, x->job.queue,
				   JOBSET_LINE_QUEUE, set, why, sizeof(why)) : -ENOMEM;

	if (r == 0 && set->n > 0) {
		outcome_set_enqueue(&w->out, finish(w, x, OUTCOME_SUCCESS, 0, NULL, res), set,
				    retry_ms);
		return;
	}
	if (r == 0)
		jobset_free(set);
	free(set);
	if (r == 0)
		snprintf(why, sizeof(why), "no job in them");
	else if (r == -E2BIG)
		snprintf(why, sizeof(why), "more than %d", STORE_GRAPH_MAX);
	else if (r == -ENOMEM)
		snprintf(why, sizeof(why), "out of memory");
	snprintf(error, sizeof(error), "the jobs it adds: %s", why);
	log_info("item id=%llu attempt=%u/%u failed error=%s%s", (unsigned long long)x->row.id,
		 x->row.attempt, x->row.max_attempts, log_quote(error, 300, q, sizeof(q)),
		 trace_log_field(x->row.traceparent, tr));
	finish(w, x, OUTCOME_FAILURE, retry_ms, error, NULL);
}

/* ---- to the handler ---- */

static void submit(struct worker *w, struct item *x)
{
	char error[160];
	int r = handler_submit(w->handler, &x->job);

	if (r < 0) {
		snprintf(error, sizeof(error), "could not start handler: %s", strerror(-r));
		finish(w, x, OUTCOME_FAILURE, retry_delay_ms(w, &x->row), error, NULL);
	}
}

void worker_take_claimed(struct worker *w)
{
	uint64_t now = uv_hrtime();

	for (size_t i = 0; i < w->b.n; i++) {
		struct store_item *row = &w->b.rows[i];
		struct item *x = items_add(&w->items, row, (uint8_t)w->b.qi, w->b.claimed_ns,
					   (row->min_interval_ms > 0 || row->key_interval_ms > 0) &&
					   !row->spent);
		if (!x) {
			/* worker_room never claims more than there is room for */
			log_error("item id=%llu: no room to hold it; it goes back",
				  (unsigned long long)row->id);
			outcomes_add(&w->out, row, OUTCOME_RELEASE, 0, NULL)->queue = (uint8_t)w->b.qi;
			store_items_clear(row, 1);
			continue;
		}
		x->job = (struct handler_job){
			.id = x->row.id, .token = x->row.token, .queue = x->row.queue,
			.group = x->row.group, .attempt = x->row.attempt,
			.max_attempts = x->row.max_attempts, .seq = x->row.group_seq,
			.enqueued_at_ms = x->row.enqueued_at_ms, .payload = x->row.payload,
			.payload_len = x->row.payload_len, .content_type = x->row.content_type,
			.traceparent = x->row.traceparent,
			.timeout_ms = x->row.timeout_ms ? x->row.timeout_ms : w->cfg->timeout_ms,
		};
		if (x->row.cancelled)
			finish(w, x, OUTCOME_FAILURE, 0, CANCELLED_ERROR, NULL);
		else if (x->row.spent)
			finish(w, x, OUTCOME_FAILURE, 0, "its last attempt's worker vanished (lease "
			       "expired)", NULL);
		else if (x->state == ITEM_HANDED)
			submit(w, x);
	}
	w->b.n = 0;  /* the rows are the items' now */
	w->last_end_ns = now;
	worker_watch(w);
}

unsigned worker_room(struct worker *w, bool commit)
{
	unsigned extra, target, low, room;
	size_t held = items_held(&w->items);
	uint64_t now = uv_hrtime(), quiet = now - w->last_done_ns;
	struct prefetch pf = w->pf;

	if (w->stopping || !handler_ready(w->handler) ||
	    (held > 0 && batch_lease_lapsed(&w->b, now)))
		return 0;
	/* Every item at once running, none ended for longer than the average says: they take
	 * at least that long, and the estimate is read as if one had. */
	if (handler_running(w->handler) >= w->conc && quiet > pf.avg_ns)
		pf.avg_ns = quiet;
	extra = commit ? prefetch_extra(&pf, w->cfg->batch, w->conc) :
			 prefetch_peek(&pf, w->cfg->batch, w->conc);
	w->pf.last = pf.last;
	target = w->conc + extra;
	room = target > held ? target - (unsigned)held : 0;
	if (room > PROTO_MAX_ITEMS)
		room = PROTO_MAX_ITEMS;
	if (commit)
		return room;
	/* Not a claim for every item that ends (prefetch_low). */
	low = prefetch_low(&pf, w->cfg->batch, w->conc, extra);
	if (low > PROTO_MAX_ITEMS)
		low = PROTO_MAX_ITEMS;
	return room >= low ? room : 0;
}

bool worker_busy(const struct worker *w)
{
	return items_held(&w->items) > 0;
}

void worker_release_unstarted(struct worker *w)
{
	struct handler_job *jobs[ITEMS_MAX];
	size_t n = handler_withdraw(w->handler, jobs, ITEMS_MAX);
	struct item *x;

	for (size_t i = 0; i < n; i++)
		finish(w, items_of_job(jobs[i]), OUTCOME_RELEASE, 0, NULL, NULL);
	while ((x = items_gate_first(&w->items)))
		finish(w, x, OUTCOME_RELEASE, 0, NULL, NULL);
	uv_timer_stop(&w->gate_timer);
}

/* ---- the rate-limit gate ---- */

/* The first gated row has taken every start it needs: to the handler. */
static void gate_pass(struct worker *w, struct item *x)
{
	items_gate_pass(&w->items);
	submit(w, x);
}

static void on_gate(uv_timer_t *t)
{
	struct worker *w = t->data;
	struct item *x = items_gate_first(&w->items);

	if (!x || w->stopping)
		return;
	/* Its key's start came: its queue's may still be to take. */
	if (!x->row.min_interval_ms || x->queue_slot)
		gate_pass(w, x);
	worker_gate(w);
	w->up.kick(w);
}

int worker_gate(struct worker *w)
{
	char err[STORE_ERR_MAX] = "";
	struct item *x;
	unsigned wait_ms;
	int r;

	while ((x = items_gate_first(&w->items)) && !w->stopping &&
	       !uv_is_active((uv_handle_t *)&w->gate_timer)) {
		if (batch_lease_lapsed(&w->b, uv_hrtime())) {
			finish(w, x, OUTCOME_RELEASE, 0, NULL, NULL);
			continue;
		}
		/* A start is taken only when the row can start at once: nothing then stands
		 * between the start and the run (starts are an interval apart). */
		if (handler_running(w->handler) + handler_queued(w->handler) >= w->conc ||
		    worker_db_busy(w))
			return 0;
		if (w->out.n > 0 && (r = w->up.write(w)) < 0)
			return r;
		if (w->db_running)
			return 0;   /* the write runs: on from here when it ends */
		r = batch_paused(&w->b, w->store, x->row.queue, err, sizeof(err));
		if (r > 0) {
			log_info("queue '%s' paused: %zu rows waiting for their start slot go back",
				 x->row.queue, w->items.count[ITEM_GATED]);
			while ((x = items_gate_first(&w->items)))
				finish(w, x, OUTCOME_RELEASE, 0, NULL, NULL);
			return 0;
		}
		/* Its key's start first (one further off than the hold: back until then, not
		 * counted as an attempt), then its queue's. */
		bool key = !x->key_slot && x->row.key_interval_ms;
		if (r == 0 && (key || !x->queue_slot))
			r = batch_take_slot(w->store, x, key, &wait_ms, err, sizeof(err));
		else if (r == 0)
			wait_ms = 0, r = 1;
		if (r < 0) {
			w->up.db_failed(w, r, "taking a rate-limit start", err);
			return r;
		}
		if (r == 0) {
			log_debug("item id=%llu: key '%s' has its next start in %u ms: it goes back "
				  "until then", (unsigned long long)x->row.id, x->row.group, wait_ms);
			finish(w, x, OUTCOME_DEFER, wait_ms, NULL, NULL);
			continue;
		}
		if (key)
			x->key_slot = true;
		else
			x->queue_slot = true;
		if (wait_ms > 0) {
			/* From now: the loop's time is from before the round trip that took the
			 * slot, and a timer set from it fires that much before the slot (the chaos
			 * run saw a start 13 ms early). */
			uv_update_time(&w->loop);
			uv_timer_start(&w->gate_timer, on_gate, wait_ms, 0);
			return 0;
		}
		if (x->queue_slot || !x->row.min_interval_ms)
			gate_pass(w, x);
	}
	return 0;
}

/* ---- back from the handler ---- */

void worker_on_done(void *data, struct handler_job *job, const struct handler_result *res)
{
	struct worker *w = data;
	struct item *x = items_of_job(job);
	uint64_t started = job->kstarted_ns, now = uv_hrtime(), fired = fence_fired_ns();
	char q[1300], tr[TRACE_LOG_FIELD];

	w->last_end_ns = w->last_done_ns = now;
	/* What an item costs this worker: its run (to its end where it ran: a quick in-process
	 * item's end may wait for the loop, busy with a claim), and for a rate-limited queue's
	 * also its wait for a start slot since the claim (so the worker holds no more of them than it can
	 * start soon: a worker that dies holds them until their lease ends). */
	if (started && res->status != HANDLER_RELEASED)
		prefetch_ran(&w->pf, (job->kended_ns ? job->kended_ns : now) -
				     (x->row.min_interval_ms || x->row.key_interval_ms ?
				      x->claimed_ns : started));
	if (x->cancelled && res->status != HANDLER_OK) {
		log_info("item id=%llu attempt=%u/%u cancelled%s", (unsigned long long)x->row.id,
			 x->row.attempt, x->row.max_attempts, trace_log_field(x->row.traceparent, tr));
		finish(w, x, OUTCOME_FAILURE, 0, CANCELLED_ERROR, NULL);
	} else if (started && fired >= started && res->status != HANDLER_OK) {
		log_warn("item id=%llu: its lease ended without a renewal (the database did not "
			 "answer): its handler was killed, so that no other worker runs it at the "
			 "same time%s", (unsigned long long)x->row.id,
			 trace_log_field(x->row.traceparent, tr));
		finish(w, x, OUTCOME_FAILURE, retry_delay_ms(w, &x->row),
		       "killed: its lease could not be renewed in time (the database did not "
		       "answer)", NULL);
	} else if (res->status == HANDLER_OK && res->enqueue) {
		finish_adding(w, x, res);
	} else if (res->status == HANDLER_OK) {
		finish(w, x, OUTCOME_SUCCESS, 0, NULL, res);
	} else if (res->status == HANDLER_RELEASED) {
		finish(w, x, OUTCOME_RELEASE, 0, NULL, NULL);
	} else if (res->status == HANDLER_RETRY_LATER) {
		log_debug("item id=%llu asks to run again in %u ms", (unsigned long long)x->row.id,
			  res->retry_in_ms);
		finish(w, x, OUTCOME_DEFER, res->retry_in_ms, NULL, NULL);
	} else {
		log_info("item id=%llu attempt=%u/%u failed error=%s%s", (unsigned long long)x->row.id,
			 x->row.attempt, x->row.max_attempts, log_quote(res->error, 300, q, sizeof(q)),
			 trace_log_field(x->row.traceparent, tr));
		finish(w, x, OUTCOME_FAILURE, retry_delay_ms(w, &x->row), res->error, NULL);
	}
	w->up.kick(w);
}

/* ---- cancelled by an operator ---- */

/* A row the running claim locked is not an item until it ends: its cancel is kept, and done
 * again then. */
static void cancel_later(struct worker *w, const struct proto_item *it)
{
	struct proto_msg *m = &w->cancel_later;

	if (m->u.items.n < PROTO_MAX_ITEMS)
		m->u.items.items[m->u.items.n++] = *it;
	else
		log_warn("item id=%llu: too many cancels at once during a claim; this one is not "
			 "kept", (unsigned long long)it->id);
}

void worker_cancel(struct worker *w, const struct proto_msg *m)
{
	for (unsigned i = 0; i < m->u.items.n; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		struct item *x = items_find(&w->items, it->id, it->token);
		if (!x && w->db_running && w->job.max > 0)
			cancel_later(w, it);
		if (!x || x->cancelled)
			continue;
		x->cancelled = true;
		if (x->state == ITEM_GATED || handler_cancel(w->handler, &x->job)) {
			log_info("item id=%llu cancelled before it started", (unsigned long long)it->id);
			finish(w, x, OUTCOME_FAILURE, 0, CANCELLED_ERROR, NULL);
		} else {
			log_info("item id=%llu cancelled: stopping its run", (unsigned long long)it->id);
		}
	}
	w->up.kick(w);
}

/* ---- rows that wait ---- */

static void on_watch(uv_timer_t *t)
{
	struct worker *w = t->data;
	struct handler_job *jobs[ITEMS_MAX];
	char err[STORE_ERR_MAX] = "";
	uint64_t now = uv_hrtime();
	size_t n, kept = 0;
	bool overrun;
	int r = 0;

	if (w->stopping || handler_queued(w->handler) == 0)
		return;
	overrun = !w->cfg->batch && now - w->last_end_ns >= prefetch_overrun_ns(&w->pf) &&
		  handler_running(w->handler) >= w->conc;
	/* The loop may have been blocked until now (a claim, a write): items that ended
	 * meanwhile are read in the poll before this timer fires again, and only then does the
	 * quiet count as the items outlasting their estimate. */
	if (overrun && w->overrun_polled_end != w->last_end_ns) {
		w->overrun_polled_end = w->last_end_ns;
		uv_timer_start(&w->watch_timer, on_watch, 1, 0);
		return;
	}
	if (!overrun && worker_db_busy(w)) {
		uv_timer_start(&w->watch_timer, on_watch, PAUSE_CHECK_MS, 0);
		return;
	}
	if (!overrun && now - w->b.pause_seen_ns < PAUSE_CHECK_MS * 1000000ull) {
		worker_watch(w);
		return;
	}
	/* Take them back (newest first) and keep, in order, those that may still run. */
	n = handler_withdraw(w->handler, jobs, ITEMS_MAX);
	if (overrun) {
		log_debug("the items running outlast their estimate: %zu waiting rows go back", n);
		prefetch_overran(&w->pf, now - w->last_end_ns);
	}
	for (size_t i = n; i-- > 0;) {
		struct item *x = items_of_job(jobs[i]);
		if (!overrun && r >= 0)
			r = batch_paused(&w->b, w->store, x->row.queue, err, sizeof(err));
		if (overrun || r > 0) {
			if (r > 0)
				log_info("queue '%s' paused: item id=%llu, waiting, goes back",
					 x->row.queue, (unsigned long long)x->row.id);
			finish(w, x, OUTCOME_RELEASE, 0, NULL, NULL);
			continue;
		}
		submit(w, x);
		kept++;
	}
	if (r < 0)
		w->up.db_failed(w, r, "checking for a pause", err);
	else if (kept < n)
		w->up.write(w);
	worker_watch(w);
	w->up.kick(w);
}

/* Rows wait with the handler: whether their queue was paused is asked about as often as an
 * item starts, but not more than every PAUSE_CHECK_MS (a claim counts as asking); with
 * --batch auto, whether the items running outlast their estimate too. */
void worker_watch(struct worker *w)
{
	uint64_t now = uv_hrtime(), at, every = PAUSE_CHECK_MS * 1000000ull, over_at;

	if (handler_queued(w->handler) == 0) {
		uv_timer_stop(&w->watch_timer);
		return;
	}
	if (w->pf.avg_ns / (w->conc ? w->conc : 1) > every)
		every = w->pf.avg_ns / (w->conc ? w->conc : 1);
	at = w->b.pause_seen_ns + every;
	over_at = w->last_end_ns + prefetch_overrun_ns(&w->pf);
	if (!w->cfg->batch && over_at < at)
		at = over_at;
	/* Never 0 ms: a timer set to 0 from its own callback runs again before the loop polls. */
	uv_timer_start(&w->watch_timer, on_watch, at > now + 1000000u ? (at - now) / 1000000u : 1, 0);
}
