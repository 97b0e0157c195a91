/* The pipe: kind: one co-process at a time (pipe_coproc.h) with up to env->concurrency items
 * outstanding on it. Each running item has a slot of its own (its scoreboard entry and its
 * timer: its timeout, then its cancel's grace); its life is enum item_state, changed only by
 * item_enter() along the table below. The items of a co-process we stop are reported once it
 * is gone, and the next co-process is started only then, so two never overlap. Jobs are
 * started, and items stopped before they were sent reported, from a 0 ms timer (the kick),
 * never from inside submit. With env->pipe_ready a co-process runs whether items wait or not
 * (started with the worker, again whenever one is gone) and is sent nothing before its ready
 * line, which pipe_ready_now reports to the worker, so it claims nothing before either. */
#include "worker/handler_pipe.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "common/backoff.h"
#include "common/proc.h"
#include "worker/handler_kind.h"
#include "worker/handler_util.h"
#include "worker/pipe_coproc.h"
#include "worker/pipe_reply.h"
#include "worker/pipe_request.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
#define READY_NOTICE_MS 5000   /* pipe_ready: a co-process silent this long is noticed */

enum item_state {
	ITEM_FREE,        /* the slot holds no job */
	ITEM_WAITING,     /* started (its timeout runs), no co-process to send it to yet */
	ITEM_SENT,        /* its request went to the co-process, which owes the reply */
	ITEM_CANCELLING,  /* its cancel line went too (why: item->cancel): the reply, or the grace */
	ITEM_STOPPING,    /* its co-process is being stopped: reported once that one is gone */
	ITEM_ENDING,      /* stopped before it was sent: reported RELEASED from the kick */
	ITEM_COUNT,
};

#define B(s) (1u << (s))
static const unsigned may_follow[ITEM_COUNT] = {
	[ITEM_FREE] = B(ITEM_WAITING) | B(ITEM_SENT),
	[ITEM_WAITING] = B(ITEM_SENT) | B(ITEM_ENDING) | B(ITEM_FREE),
	[ITEM_SENT] = B(ITEM_CANCELLING) | B(ITEM_STOPPING) | B(ITEM_FREE),
	[ITEM_CANCELLING] = B(ITEM_STOPPING) | B(ITEM_FREE),
	[ITEM_STOPPING] = B(ITEM_FREE),
	[ITEM_ENDING] = B(ITEM_FREE),
};

/* Why we stopped the co-process (what its items were stopped for). */
enum cp_stop {
	CP_STOP_NONE,       /* we did not: it exited on its own */
	CP_STOP_PROTOCOL,   /* it wrote what the protocol does not allow: p->stop_why */
	CP_STOP_STDIN,      /* writing to its stdin failed: p->stop_why */
	CP_STOP_CANCEL,     /* item p->stop_item's cancel got no reply within the grace */
};

struct handler_pipe;

struct item {
	struct handler_pipe *p;
	struct handler_job *job;   /* NULL: ITEM_FREE */
	enum item_state state;
	enum pipe_cancel cancel;   /* why its cancel line went; PIPE_CANCEL_NONE: it did not */
	uv_timer_t timer;
};

struct handler_pipe {
	struct handler_env env;
	struct handler_util_argv args;
	struct handler_util_queue queue;
	struct handler_util_slots slots;
	struct item *items;        /* by slot */
	uv_timer_t kick;           /* 0 ms: report ITEM_ENDING, start queued jobs, a co-process */
	uv_timer_t start_timer;    /* the back-off before the next co-process */
	uv_timer_t ready_timer;    /* pipe_ready: the notice of a co-process not ready yet */
	int open_handles;
	bool closing;              /* pipe_free was called: its memory goes with its handles */
	bool stopping;             /* stop_all was called: no co-process for an empty queue */
	struct pipe_coproc *cp;    /* the co-process, until it is gone */
	uint64_t err_second;       /* the second (uv_now / 1000) its stderr lines are counted in */
	unsigned err_lines;        /* lines passed on in it */
	unsigned long err_dropped; /* lines not passed on since the last one that was */
	bool cp_replied;           /* it sent a reply (its start-up went well) */
	bool cp_ready;             /* pipe_ready: it wrote its ready line */
	enum cp_stop stop;
	uint64_t stop_item;
	char stop_why[HANDLER_ERR_MAX + 1];
	struct backoff backoff;    /* co-processes that exit before their first reply */
	uint64_t not_before;       /* uv_now(): no co-process started before this */
};

static void kick(struct handler_pipe *p);
static void on_kick(uv_timer_t *t);
static void coproc_ready(struct handler_pipe *p);
static void on_item_timer(uv_timer_t *t);

static void item_enter(struct item *it, enum item_state to)
{
	assert(may_follow[it->state] & B(to));
	it->state = to;
	if (to == ITEM_FREE || to == ITEM_STOPPING || to == ITEM_ENDING)
		uv_timer_stop(&it->timer);
}

/* The item's run is over: its slot is free. Returns its job, for done. */
static struct handler_job *item_end(struct item *it)
{
	struct handler_pipe *p = it->p;
	struct handler_job *job = it->job;

	sb_end(&p->env.scoreboard->entries[job->kslot]);
	handler_util_slot_put(&p->slots, job->kslot);
	it->job = NULL;
	it->cancel = PIPE_CANCEL_NONE;
	item_enter(it, ITEM_FREE);
	return job;
}

/* Its end, reported (then what waits may start). */
static void item_report(struct item *it, const struct handler_result *res)
{
	struct handler_pipe *p = it->p;

	p->env.hooks.done(p->env.hooks.data, item_end(it), res);
	kick(p);
}

static void item_report_text(struct item *it, int status, const char *what)
{
	struct handler_pipe *p = it->p;

	handler_util_report(&p->env.hooks, item_end(it), status, what);
	kick(p);
}

#define OUTSTANDING (B(ITEM_SENT) | B(ITEM_CANCELLING))   /* the co-process owes a reply */

/* The co-process takes requests: it runs, and with pipe_ready it has said it is ready. */
static bool sendable(const struct handler_pipe *p)
{
	return pipe_coproc_usable(p->cp) && (!p->env.pipe_ready || p->cp_ready);
}

/* The first item in one of states (a mask of B(state)) with this id (any: 0, which no item
 * has), or NULL. */
static struct item *find(struct handler_pipe *p, unsigned states, uint64_t id)
{
	for (unsigned i = 0; i < p->slots.n; i++) {
		struct item *it = &p->items[i];
		if ((states & B(it->state)) && (id == 0 || it->job->id == id))
			return it;
	}
	return NULL;
}

/* ---- stopping the co-process ---- */

/* The items outstanding wait for the co-process to be gone (no timer, no cancel). */
static void stop_outstanding(struct handler_pipe *p)
{
	for (unsigned i = 0; i < p->slots.n; i++)
		if (OUTSTANDING & B(p->items[i].state))
			item_enter(&p->items[i], ITEM_STOPPING);
}

/* Stop the co-process for why (unless it is stopping already: the first reason stays); its
 * items outstanding are reported once it is gone. */
static void coproc_stop(struct handler_pipe *p, enum cp_stop why, const char *text)
{
	if (!p->cp || pipe_coproc_stopping(p->cp))
		return;
	p->stop = why;
	snprintf(p->stop_why, sizeof(p->stop_why), "%s", text ? text : "");
	stop_outstanding(p);
	pipe_coproc_stop(p->cp, p->env.kill_grace_ms);
}

/* It broke the protocol, or its stdin (err: UV_EPIPE) did. One that has exited already is
 * reported as such once gone. */
static void coproc_fault(struct handler_pipe *p, int err, const char *why)
{
	if (!pipe_coproc_usable(p->cp) && !pipe_coproc_stopping(p->cp))
		return;   /* exited on its own: gone soon */
	coproc_stop(p, err == UV_EPIPE || err == -EPIPE ? CP_STOP_STDIN : CP_STOP_PROTOCOL, why);
}

/* How the co-process ended, for item it, into out. */
static void coproc_end_text(const struct handler_pipe *p, const struct pipe_coproc *cp,
			    const struct item *it, char *out, size_t outlen)
{
	int status = pipe_coproc_status(cp);
	bool signalled = WIFSIGNALED(status) &&
			 (WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGKILL);
	char how[128];

	proc_describe_status(status, how, sizeof(how));
	if (p->stop == CP_STOP_NONE || (p->stop == CP_STOP_STDIN && !signalled))
		snprintf(out, outlen, "the co-process exited (%s) while handling the item", how);
	else if (p->stop == CP_STOP_CANCEL && p->stop_item == it->job->id)
		snprintf(out, outlen, "no reply to its cancel within %u ms: the co-process was "
			 "stopped (%s)", p->env.kill_grace_ms, how);
	else if (p->stop == CP_STOP_CANCEL)
		snprintf(out, outlen, "the co-process was stopped (%s): item %llu did not answer "
			 "its cancel within %u ms", how, (unsigned long long)p->stop_item,
			 p->env.kill_grace_ms);
	else
		snprintf(out, outlen, "%.3800s", p->stop_why);
}

/* The outcome of an item whose co-process is gone without its reply. */
static void stopped_result(const struct handler_pipe *p, const struct pipe_coproc *cp,
			   const struct item *it, struct handler_result *res)
{
	char what[HANDLER_ERR_MAX + 1], cause[HANDLER_ERR_MAX + 1];

	memset(res, 0, sizeof(*res));
	coproc_end_text(p, cp, it, cause, sizeof(cause));
	if (it->cancel == PIPE_CANCEL_TIMEOUT) {
		res->status = HANDLER_TIMEOUT;
		snprintf(what, sizeof(what), "timed out after %u ms; %.3800s", it->job->timeout_ms,
			 cause);
	} else if (it->cancel == PIPE_CANCEL_SHUTDOWN) {
		res->status = HANDLER_RELEASED;
		snprintf(what, sizeof(what), "stopped: the worker is stopping; %.3800s", cause);
	} else if (it->cancel == PIPE_CANCEL_OPERATOR) {
		res->status = HANDLER_FAILED;
		snprintf(what, sizeof(what), "cancelled; %.3800s", cause);
	} else {
		res->status = p->stop == CP_STOP_CANCEL ? HANDLER_RELEASED : HANDLER_FAILED;
		snprintf(what, sizeof(what), "%s", cause);
	}
	handler_util_error(res, what, pipe_coproc_tail(cp));
}

/* ---- the co-process's hooks ---- */

static void on_cp_gone(struct pipe_coproc *cp)
{
	struct handler_pipe *p = pipe_coproc_data(cp);
	struct handler_result res;
	bool was_ready = p->cp_ready;

	if (!pipe_coproc_stopping(cp)) {
		p->stop = CP_STOP_NONE;
		if (!p->cp_replied)    /* it died at start-up: back off */
			p->not_before = uv_now(p->env.loop) + backoff_next(&p->backoff);
	}
	p->cp = NULL;
	p->cp_ready = false;
	uv_timer_stop(&p->ready_timer);
	if (was_ready && !p->closing && p->env.hooks.ready)
		p->env.hooks.ready(p->env.hooks.data);   /* not ready now */
	stop_outstanding(p);   /* all first: a done hook called below finds them taken */
	for (unsigned i = 0; i < p->slots.n && !p->closing; i++) {
		struct item *it = &p->items[i];
		if (it->state != ITEM_STOPPING)
			continue;
		stopped_result(p, cp, it, &res);
		item_report(it, &res);
	}
	pipe_coproc_free(cp);
	kick(p);   /* a co-process for the items waiting */
}

static void on_cp_fault(struct pipe_coproc *cp, int err, const char *why)
{
	coproc_fault(pipe_coproc_data(cp), err, why);
}

/* Its reply to it: the outcome. */
static void item_replied(struct item *it, const struct pipe_reply *reply)
{
	char what[200];

	if (it->cancel == PIPE_CANCEL_TIMEOUT) {
		snprintf(what, sizeof(what), "timed out after %u ms; the co-process answered its "
			 "cancel", it->job->timeout_ms);
		item_report_text(it, HANDLER_TIMEOUT, what);
	} else if (it->cancel == PIPE_CANCEL_SHUTDOWN && reply->res.status != HANDLER_OK) {
		item_report_text(it, HANDLER_RELEASED, "stopped: the worker is stopping (the "
				 "co-process answered its cancel)");
	} else {
		item_report(it, &reply->res);
	}
}

/* Its log, to the worker's, at most ERR_LINES_PER_S lines a second (a co-process that
 * writes more must not make the worker's log its bottleneck). */
#define ERR_LINES_PER_S 200u

static void on_cp_err_line(struct pipe_coproc *cp, const char *line, size_t len)
{
	struct handler_pipe *p = pipe_coproc_data(cp);
	uint64_t second = uv_now(p->env.loop) / 1000u;
	char note[100];
	int n;

	if (!p->env.hooks.output)
		return;
	if (second != p->err_second) {
		p->err_second = second;
		p->err_lines = 0;
	}
	if (p->err_lines >= ERR_LINES_PER_S) {
		p->err_dropped++;
		return;
	}
	p->err_lines++;
	if (p->err_dropped) {
		n = snprintf(note, sizeof(note), "(%lu lines of its stderr not logged: over %u a "
			     "second)", p->err_dropped, ERR_LINES_PER_S);
		p->env.hooks.output(p->env.hooks.data, note, (size_t)n);
		p->err_dropped = 0;
	}
	p->env.hooks.output(p->env.hooks.data, line, len);
}

static void on_cp_line(struct pipe_coproc *cp, const char *line, size_t len)
{
	struct handler_pipe *p = pipe_coproc_data(cp);
	struct pipe_reply reply;
	struct item *it = NULL;
	char what[120];
	int r = pipe_reply_parse(line, len, &reply);

	if (r == 0 && reply.ready) {
		pipe_reply_clear(&reply);
		coproc_ready(p);
		return;
	}
	if (r == 0 && (reply.id == 0 || !(it = find(p, OUTSTANDING, reply.id)))) {
		if (find(p, OUTSTANDING, 0))
			snprintf(what, sizeof(what), "wrong id %llu (no item outstanding has it)",
				 (unsigned long long)reply.id);
		else
			snprintf(what, sizeof(what), "it wrote to its stdout with no item outstanding");
		pipe_reply_refuse(&reply, line, len, what);
	}
	if (!it) {
		coproc_fault(p, -EPROTO, reply.res.error);
	} else if (reply.progress) {
		if (p->env.hooks.progress)
			p->env.hooks.progress(p->env.hooks.data, it->job, reply.text, reply.text_len);
	} else {
		p->cp_replied = true;
		backoff_reset(&p->backoff);
		item_replied(it, &reply);
	}
	pipe_reply_clear(&reply);
}

/* ---- an item ---- */

/* Send it (its request) to the co-process, which takes lines. */
static void item_send(struct item *it)
{
	struct handler_pipe *p = it->p;
	int64_t now_ms = handler_util_now_ms();
	struct pipe_coproc_line *line = pipe_coproc_line(pipe_request(it->job, now_ms, NULL));
	char why[120];
	int r = -ENOMEM;

	sb_set_pgid(&p->env.scoreboard->entries[it->job->kslot], pipe_coproc_pgid(p->cp));
	item_enter(it, ITEM_SENT);
	if (line) {
		pipe_request(it->job, now_ms, line->data);
		r = pipe_coproc_send(p->cp, line);
	}
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot write the item to its stdin: %s", uv_strerror(r));
		coproc_fault(p, r, why);
	}
}

/* Its cancel line, for why: the reply (or the item's end) is awaited for the grace. */
static void item_cancel(struct item *it, enum pipe_cancel why)
{
	struct handler_pipe *p = it->p;
	struct pipe_coproc_line *line;
	char text[120];
	int r = -ENOMEM;

	it->cancel = why;
	item_enter(it, ITEM_CANCELLING);
	uv_timer_start(&it->timer, on_item_timer, p->env.kill_grace_ms, 0);
	if (!pipe_coproc_usable(p->cp))
		return;   /* it has exited: gone soon */
	if ((line = pipe_coproc_line(pipe_request_cancel(it->job->id, why, NULL)))) {
		pipe_request_cancel(it->job->id, why, line->data);
		r = pipe_coproc_send(p->cp, line);
	}
	if (r < 0) {
		snprintf(text, sizeof(text), "cannot write a cancel to its stdin: %s", uv_strerror(r));
		coproc_fault(p, r, text);
	}
}

static void on_item_timer(uv_timer_t *t)
{
	struct item *it = t->data;
	char what[200];

	switch (it->state) {
	case ITEM_WAITING:
		snprintf(what, sizeof(what), "timed out after %u ms waiting for a co-process (the "
			 "last one was stopped, or they keep exiting at start-up)", it->job->timeout_ms);
		item_report_text(it, HANDLER_TIMEOUT, what);
		break;
	case ITEM_SENT:
		item_cancel(it, PIPE_CANCEL_TIMEOUT);
		break;
	case ITEM_CANCELLING:   /* the grace is over (a co-process that exited is gone soon) */
		if (pipe_coproc_usable(it->p->cp)) {
			it->p->stop_item = it->job->id;
			coproc_stop(it->p, CP_STOP_CANCEL, NULL);
		}
		break;
	default:
		break;
	}
}

/* Write the requests held since pipe_coproc_cork. */
static void uncork(struct handler_pipe *p)
{
	char why[120];
	int r = pipe_coproc_uncork(p->cp);

	if (r < 0) {
		snprintf(why, sizeof(why), "cannot write the items to its stdin: %s", uv_strerror(r));
		coproc_fault(p, r, why);
	}
}

/* Start job in a free slot: sent now, or waiting for a co-process. */
static void item_start(struct handler_pipe *p, struct handler_job *job)
{
	int slot = handler_util_slot_take(&p->slots);
	struct item *it = &p->items[slot];
	bool usable = sendable(p);

	job->kslot = (unsigned)slot;
	job->kstarted_ns = uv_hrtime();
	job->deadline_ms = handler_util_now_ms() + job->timeout_ms;
	it->job = job;
	it->cancel = PIPE_CANCEL_NONE;
	sb_start(&p->env.scoreboard->entries[slot], job->id, job->token,
		 usable ? pipe_coproc_pgid(p->cp) : 0, 0);
	uv_timer_start(&it->timer, on_item_timer, job->timeout_ms, 0);
	if (usable)
		item_send(it);
	else
		item_enter(it, ITEM_WAITING);
}

/* The items waiting for a co-process, to it, in one write. */
static void send_waiting(struct handler_pipe *p)
{
	pipe_coproc_cork(p->cp);
	for (unsigned i = 0; i < p->slots.n && pipe_coproc_usable(p->cp); i++)
		if (p->items[i].state == ITEM_WAITING)
			item_send(&p->items[i]);
	uncork(p);
}

static void notice(struct handler_pipe *p, const char *text)
{
	if (p->env.hooks.notice)
		p->env.hooks.notice(p->env.hooks.data, text);
}

/* Its ready line: what waits is sent, and the worker may claim. Without pipe_ready, or from
 * a co-process that said it already, the line means nothing. (The back-off is reset by a
 * reply, not by this line: one that says it is ready and dies still backs off.) */
static void coproc_ready(struct handler_pipe *p)
{
	if (!p->env.pipe_ready || p->cp_ready || !pipe_coproc_usable(p->cp))
		return;
	p->cp_ready = true;
	uv_timer_stop(&p->ready_timer);
	send_waiting(p);
	if (p->env.hooks.ready)
		p->env.hooks.ready(p->env.hooks.data);
}

static void on_ready_timer(uv_timer_t *t)
{
	struct handler_pipe *p = t->data;
	char text[300];

	if (!pipe_coproc_usable(p->cp) || p->cp_ready)
		return;
	snprintf(text, sizeof(text), "the co-process %s (pid %d) has not written {\"ready\":true} "
		 "in %d s (--pipe-ready): its worker claims nothing until it does",
		 p->args.argv[0], (int)pipe_coproc_pgid(p->cp), READY_NOTICE_MS / 1000);
	notice(p, text);
}

/* Items wait (or, with pipe_ready, none is there) and no co-process is: start one (after the
 * back-off) and send them, at once or once it is ready. */
static void coproc_start(struct handler_pipe *p)
{
	struct pipe_coproc_hooks h = {
		.line = on_cp_line, .err_line = on_cp_err_line, .fault = on_cp_fault,
		.gone = on_cp_gone, .data = p,
	};
	uint64_t now = uv_now(p->env.loop);
	char what[300];
	int r;

	if (now < p->not_before) {
		uv_timer_start(&p->start_timer, on_kick, p->not_before - now, 0);
		return;
	}
	r = pipe_coproc_start(p->env.loop, p->env.reaper, p->args.argv, p->env.as, &h, &p->cp);
	if (r < 0) {
		snprintf(what, sizeof(what), "cannot start the co-process %s: %s", p->args.argv[0],
			 strerror(-r));
		for (unsigned i = 0; i < p->slots.n && !p->closing; i++)
			if (p->items[i].state == ITEM_WAITING)
				item_report_text(&p->items[i], HANDLER_FAILED, what);
		if (p->env.pipe_ready) {   /* no item to fail: told, and tried again later */
			notice(p, what);
			p->not_before = now + backoff_next(&p->backoff);
			kick(p);
		}
		return;
	}
	p->cp_replied = false;
	p->cp_ready = false;
	p->stop = CP_STOP_NONE;
	if (p->env.pipe_ready)
		uv_timer_start(&p->ready_timer, on_ready_timer, READY_NOTICE_MS, 0);
	else
		send_waiting(p);
}

/* Report the items stopped before they were sent, start queued jobs while a slot is free,
 * and a co-process for those waiting. A done hook called from here may submit more: they are
 * taken in the same pass. */
static void pump(struct handler_pipe *p)
{
	struct handler_job *job;
	bool corked = p->cp && pipe_coproc_usable(p->cp);

	for (unsigned i = 0; i < p->slots.n && !p->closing; i++)
		if (p->items[i].state == ITEM_ENDING)
			item_report_text(&p->items[i], HANDLER_RELEASED, "stopped: the worker is "
					 "stopping (it was not sent to the co-process yet)");
	if (corked)
		pipe_coproc_cork(p->cp);   /* the requests started now go in one write */
	while (!p->closing && p->slots.nused < p->slots.n &&
	       (job = handler_util_queue_pop(&p->queue))) {
		if (handler_util_lease_lapsed(p->env.lease_ok_ns))
			handler_util_report(&p->env.hooks, job, HANDLER_RELEASED,
					    "not started: the worker's lease on it may have ended");
		else
			item_start(p, job);
	}
	if (corked && p->cp)
		uncork(p);
	if (!p->closing && !p->cp && !uv_is_active((uv_handle_t *)&p->start_timer) &&
	    (find(p, B(ITEM_WAITING), 0) || (p->env.pipe_ready && !p->stopping)))
		coproc_start(p);
}

static void on_kick(uv_timer_t *t)
{
	pump(t->data);
}

/* Pump on the next loop turn. */
static void kick(struct handler_pipe *p)
{
	if (!p->closing)
		uv_timer_start(&p->kick, on_kick, 0, 0);
}

/* ---- the kind ---- */

static int pipe_check(const char *arg, char *err, size_t errlen)
{
	struct handler_util_argv args;
	int r = handler_util_argv("pipe", arg, &args, err, errlen);

	if (r == 0)
		handler_util_argv_free(&args);
	return r;
}

static void handle_closed(struct handler_pipe *p)
{
	if (--p->open_handles == 0) {
		handler_util_argv_free(&p->args);
		free(p->items);
		free(p);
	}
}

static void on_handle_closed(uv_handle_t *hd)
{
	handle_closed(hd->data);
}

static void on_item_timer_closed(uv_handle_t *hd)
{
	handle_closed(((struct item *)hd->data)->p);
}

static int pipe_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	struct handler_pipe *p = calloc(1, sizeof(*p));
	int r = -ENOMEM;

	if (!p)
		return r;
	p->env = *env;
	p->backoff = (struct backoff)BACKOFF_INIT(BACKOFF_MIN_MS, BACKOFF_MAX_MS);
	handler_util_slots_init(&p->slots, env->concurrency);
	p->items = calloc(p->slots.n, sizeof(*p->items));
	if (!p->items)
		goto fail;
	r = handler_util_argv("pipe", arg, &p->args, err, errlen);
	if (r < 0)
		goto fail;
	/* Timers on a loop that runs cannot fail to initialise (uv_timer_init returns 0). */
	uv_timer_init(env->loop, &p->kick);
	uv_timer_init(env->loop, &p->start_timer);
	uv_timer_init(env->loop, &p->ready_timer);
	p->kick.data = p->start_timer.data = p->ready_timer.data = p;
	p->open_handles = 3;
	for (unsigned i = 0; i < p->slots.n; i++) {
		p->items[i].p = p;
		uv_timer_init(env->loop, &p->items[i].timer);
		p->items[i].timer.data = &p->items[i];
		p->open_handles++;
	}
	if (env->pipe_ready)
		kick(p);   /* its co-process, once the loop runs */
	*ret = p;
	return 0;
fail:
	free(p->items);
	free(p);
	return r;
}

/* Nothing is reported; the co-process gets SIGKILL. */
static void pipe_free(void *h)
{
	struct handler_pipe *p = h;

	if (!p)
		return;
	p->closing = true;
	if (p->cp) {
		pipe_coproc_kill(p->cp);
		pipe_coproc_free(p->cp);
		p->cp = NULL;
	}
	for (unsigned i = 0; i < p->slots.n; i++) {
		struct item *it = &p->items[i];
		if (it->job)
			sb_end(&p->env.scoreboard->entries[it->job->kslot]);
		it->job = NULL;
		uv_close((uv_handle_t *)&it->timer, on_item_timer_closed);
	}
	uv_close((uv_handle_t *)&p->kick, on_handle_closed);
	uv_close((uv_handle_t *)&p->start_timer, on_handle_closed);
	uv_close((uv_handle_t *)&p->ready_timer, on_handle_closed);
}

static int pipe_submit(void *h, struct handler_job *job)
{
	struct handler_pipe *p = h;
	int r;

	if (p->closing)
		return -EINVAL;
	r = uv_timer_start(&p->kick, on_kick, 0, 0);
	if (r < 0)
		return r;
	handler_util_queue_push(&p->queue, job);
	return 0;
}

static size_t pipe_withdraw(void *h, struct handler_job **out, size_t max)
{
	struct handler_pipe *p = h;

	return handler_util_queue_withdraw(&p->queue, out, max);
}

/* Items waiting are reported RELEASED from the kick; those sent get a cancel line. */
static void pipe_stop_all(void *h, enum handler_stop why)
{
	struct handler_pipe *p = h;

	p->stopping = true;
	for (unsigned i = 0; i < p->slots.n; i++) {
		struct item *it = &p->items[i];
		if (it->state == ITEM_WAITING) {
			item_enter(it, ITEM_ENDING);
			kick(p);
		} else if (it->state == ITEM_SENT) {
			item_cancel(it, PIPE_CANCEL_SHUTDOWN);
		}
	}
}

/* Queued: taken back. Waiting for a co-process: reported from the kick. Sent: its cancel
 * line ("cancelled"), the co-process stopped if it does not answer within the grace. */
static bool pipe_cancel(void *h, struct handler_job *job)
{
	struct handler_pipe *p = h;
	struct item *it;

	if (handler_util_queue_remove(&p->queue, job))
		return true;
	it = job->kslot < p->slots.n ? &p->items[job->kslot] : NULL;
	if (!it || it->job != job)
		return false;
	if (it->state == ITEM_WAITING) {
		item_enter(it, ITEM_ENDING);
		kick(p);
	} else if (it->state == ITEM_SENT) {
		item_cancel(it, PIPE_CANCEL_OPERATOR);
	}
	return false;
}

static unsigned pipe_running(const void *h)
{
	const struct handler_pipe *p = h;

	return p->slots.nused;
}

static size_t pipe_queued(const void *h)
{
	const struct handler_pipe *p = h;

	return p->queue.n;
}

static bool pipe_ready_now(const void *h)
{
	const struct handler_pipe *p = h;

	return !p->env.pipe_ready || sendable(p);
}

const struct handler_kind handler_pipe = {
	.prefix = "pipe:", .takes_arg = true,
	.check = pipe_check, .make = pipe_make, .free = pipe_free, .submit = pipe_submit,
	.withdraw = pipe_withdraw, .stop_all = pipe_stop_all, .cancel = pipe_cancel,
	.running = pipe_running,
	.queued = pipe_queued,
	.ready = pipe_ready_now,
};
