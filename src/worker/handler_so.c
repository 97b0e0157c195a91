/* The in-process kinds: so: (a C plugin, include/claimd/handler.h) and noop (a plugin built
 * in, whose handle does nothing: it takes the very same path).
 *
 * so:/abs/path/lib.so [args]: make dlopens the library, finds claimd_plugin_v3 (or _v2, _v1),
 * checks its abi_version and calls its init (with args) on this thread. Items run on lanes:
 * threads of this kind's own, as many as the concurrency (one for a plugin that is not
 * CLAIMD_PLUGIN_THREAD_SAFE). The loop puts submitted jobs in one queue; an idle lane takes
 * the oldest, runs handle, and puts the job on the done list; the loop takes the whole list
 * when the async handle says there is something, so a batch of quick items costs a few
 * wake-ups, not one hand-off each way per item. Progress a plugin reports on its lane waits
 * in its job for the loop to take (the latest wins).
 *
 * A thread cannot be killed. The watchdog (a timer on the loop, set to the next moment
 * anything is due) sets a running item's cancelled flag at its deadline and, if handle has
 * not returned by the kill grace after that (or after a stop), marks the item in the
 * scoreboard (SB_OVERRAN when its deadline was the reason), logs it and ends the whole
 * process with _exit(HANDLER_EXIT_STUCK): the supervisor replaces the worker, fails the
 * marked item and releases the others. That log line is the only thing this module logs. The
 * library is never unloaded (dlclose) by a worker: a plugin's threads or atexit handlers may
 * still point into it. */
#include <claimd/handler.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/proc.h"
#include "worker/handler_kind.h"
#include "worker/handler_util.h"
#include "worker/so_load.h"

#define SO_LANE_NAME "handler-lane"   /* the name of each lane's thread */

struct handler_so;

/* One thread, and the item it runs. Fields marked (lock) are read and written under the
 * handler's lock. */
struct lane {
	struct handler_so *s;
	unsigned idx;
	uv_thread_t thread;
	bool started;
	struct handler_job *job;   /* (lock) running, or NULL */
	uint64_t deadline_ns;      /* (lock) its deadline (uv_hrtime) */
	uint64_t exit_ns;          /* (lock) the worker exits if it still runs then; 0: no */
	bool timed_out;            /* (lock) its deadline passed while it ran */
	bool stopped;              /* (lock) handler_stop_all: it goes back unless it succeeded */
	bool withdrawn;            /* (lock) handler_cancel: an operator cancelled it */
	int cancelled;             /* atomic: what job->cancelled() answers */
	struct claimd_job cj;      /* the running item as the plugin sees it */
	struct claimd_result res;
};

struct handler_so {
	struct handler_env env;
	const struct claimd_plugin *plugin;
	unsigned version;          /* the plugin's ABI version */
	struct claimd_plugin_ctx ctx;
	char *spec;                /* path, NUL, args; NULL for noop */
	bool inited;
	unsigned nlanes;
	struct lane *lanes;
	uv_mutex_t lock;
	uv_cond_t cond;            /* a job was queued, or quit */
	/* (lock) */
	struct handler_job *qhead, *qtail;
	size_t nqueued;
	unsigned running;
	struct handler_job *dhead, *dtail;   /* done, for the loop */
	bool progress;             /* a running job has progress for the loop */
	bool quit;                 /* lanes exit */
	bool freed;                /* the loop let go: lanes must not touch the async handle */
	/* the loop's */
	uv_async_t async;
	uv_timer_t watchdog;
	uint64_t watch_at;         /* when the watchdog is set for (uv_hrtime), 0: not set */
	int open_handles;
};

/* ---- loading ---- */

static int so_check(const char *arg, char *err, size_t errlen)
{
	const struct claimd_plugin *pl;
	unsigned version;
	const char *args;
	char *path;
	void *dl;
	int r;

	r = so_load_split(arg, &path, &args, err, errlen);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r < 0)
		return -EINVAL;
	r = so_load_open(path, &dl, &pl, &version, err, errlen);
	if (r == 0)
		dlclose(dl);
	free(path);
	return r;
}

static int plugin_init(struct handler_so *s, const char *path, const char *args, char *err,
		       size_t errlen)
{
	int r;

	s->ctx.abi_version = CLAIMD_PLUGIN_ABI_VERSION;
	s->ctx.args = args;
	if (!s->plugin->init)
		return 0;
	r = s->plugin->init(&s->ctx);
	if (r >= 0)
		return 0;
	s->ctx.error[sizeof(s->ctx.error) - 1] = '\0';
	snprintf(err, errlen, "--handler: plugin '%s' (%s): init failed: %s", path,
		 s->plugin->name ? s->plugin->name : "?",
		 s->ctx.error[0] ? s->ctx.error : "(no reason given)");
	return -EINVAL;
}

/* ---- what a plugin may call during handle, on its lane ---- */

static struct lane *lane_of(const struct claimd_job *cj)
{
	return (struct lane *)(uintptr_t)((const char *)cj - offsetof(struct lane, cj));
}

/* text (len bytes) as one JSON value, compact, at most max bytes, into a malloc'd string.
 * Returns 0, -EINVAL or -ENOMEM. */
static int compact_json(const char *text, size_t len, size_t max, char **ret, size_t *ret_len)
{
	json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	size_t n;
	char *out;

	if (!v)
		return -EINVAL;
	n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	if (n == 0 || n > max) {
		json_decref(v);
		return -EINVAL;
	}
	out = malloc(n + 1);
	if (!out) {
		json_decref(v);
		return -ENOMEM;
	}
	json_dumpb(v, out, n, JSON_COMPACT | JSON_ENCODE_ANY);
	out[n] = '\0';
	json_decref(v);
	*ret = out;
	*ret_len = n;
	return 0;
}

static int plugin_set_result(const struct claimd_job *cj, const void *data, size_t len,
			     const char *type)
{
	struct handler_job *job = lane_of(cj)->job;
	bool is_json = type && !strcmp(type, "application/json");
	unsigned char *copy;
	size_t n = len;
	int r;

	if (len > HANDLER_RESULT_MAX)
		return -EMSGSIZE;
	if (is_json) {
		r = compact_json(data, len, HANDLER_RESULT_MAX, (char **)&copy, &n);
		if (r < 0)
			return r;
	} else {
		copy = malloc(len ? len : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, len);
	}
	/* Only the lane touches kresult until the job is on the done list. */
	free(job->kresult);
	job->kresult = copy;
	job->kresult_len = n;
	job->kresult_type = is_json ? "application/json" : "application/octet-stream";
	return 0;
}

static int plugin_enqueue(const struct claimd_job *cj, const char *json)
{
	struct handler_job *job = lane_of(cj)->job;
	json_t *v = json ? json_loads(json, JSON_REJECT_DUPLICATES, NULL) : NULL;
	size_t n = json_is_object(v) ? json_dumpb(v, NULL, 0, JSON_COMPACT) : 0;
	bool fits = job->kenqueue_len + n < CLAIMD_ENQUEUE_MAX;
	/* Only the lane touches kenqueue until the job is on the done list. */
	char *more = n && fits ? realloc(job->kenqueue, job->kenqueue_len + n + 1) : NULL;
	int r = !n ? -EINVAL : !fits ? -EMSGSIZE : !more ? -ENOMEM : 0;

	if (more) {
		job->kenqueue = more;
		job->kenqueue_len += json_dumpb(v, more + job->kenqueue_len, n, JSON_COMPACT);
		more[job->kenqueue_len++] = '\n';
	}
	json_decref(v);
	return r;
}

static int plugin_progress(const struct claimd_job *cj, const char *json)
{
	struct lane *l = lane_of(cj);
	struct handler_so *s = l->s;
	char *text;
	size_t n;
	int r = json ? compact_json(json, strlen(json), HANDLER_PROGRESS_MAX, &text, &n) : -EINVAL;

	if (r < 0)
		return r;
	uv_mutex_lock(&s->lock);
	free(l->job->kprogress);
	l->job->kprogress = text;
	s->progress = true;
	if (!s->freed)
		uv_async_send(&s->async);
	uv_mutex_unlock(&s->lock);
	return 0;
}

static int plugin_cancelled(const struct claimd_job *cj)
{
	return __atomic_load_n(&lane_of(cj)->cancelled, __ATOMIC_ACQUIRE);
}

/* ---- the lanes ---- */

/* The plugin's answer as the job's result (on the lane). */
static void take_result(struct lane *l, struct handler_job *job)
{
	struct claimd_result *pr = &l->res;

	pr->error[sizeof(pr->error) - 1] = '\0';
	switch (pr->status) {
	case CLAIMD_OK:
		job->kstatus = HANDLER_OK;
		return;
	case CLAIMD_RETRY_LATER:
		job->kstatus = HANDLER_RETRY_LATER;
		job->kretry_ms = pr->retry_in_ms;
		return;
	case CLAIMD_FAIL:
		job->kstatus = HANDLER_FAILED;
		job->kerror = strdup(pr->error[0] ? pr->error :
				     "the plugin reported a failure without an error");
		return;
	}
	job->kstatus = HANDLER_FAILED;
	if (asprintf(&job->kerror, "the plugin returned an unknown status %d", pr->status) < 0)
		job->kerror = NULL;
}

/* Run job on l (its lane thread, not holding the lock). */
static void lane_run(struct lane *l, struct handler_job *job)
{
	struct handler_so *s = l->s;
	struct sb_entry *e = &s->env.scoreboard->entries[l->idx];

	job->kslot = l->idx;
	if (handler_util_lease_lapsed(s->env.lease_ok_ns)) {
		job->kstatus = HANDLER_RELEASED;
		return;
	}
	job->kstarted_ns = uv_hrtime();
	sb_start(e, job->id, job->token, 0, SB_INPROC);
	job->deadline_ms = handler_util_now_ms() + job->timeout_ms;
	l->cj = (struct claimd_job){
		.id = job->id, .queue = job->queue, .group = job->group, .attempt = job->attempt,
		.max_attempts = job->max_attempts, .seq = job->seq,
		.enqueued_at_ms = job->enqueued_at_ms, .deadline_ms = job->deadline_ms,
		.payload = job->payload, .payload_len = job->payload_len, .user = s->ctx.user,
		.content_type = job->content_type, .set_result = plugin_set_result,
		.traceparent = job->traceparent,
		.progress = plugin_progress, .cancelled = plugin_cancelled,
		.enqueue = plugin_enqueue,
	};
	l->res.status = CLAIMD_OK;
	l->res.retry_in_ms = 0;
	l->res.error[0] = '\0';
	s->plugin->handle(&l->cj, &l->res);
	job->kended_ns = uv_hrtime();
	take_result(l, job);
	sb_end(e);
}

static void lane_main(void *arg)
{
	struct lane *l = arg;
	struct handler_so *s = l->s;

	proc_set_name(SO_LANE_NAME);   /* what top -H and ps -L show for the thread */
	uv_mutex_lock(&s->lock);
	for (;;) {
		struct handler_job *job;
		while (!s->quit && !s->qhead)
			uv_cond_wait(&s->cond, &s->lock);
		if (s->quit)
			break;
		job = s->qhead;
		s->qhead = job->knext;
		if (!s->qhead)
			s->qtail = NULL;
		__atomic_store_n(&s->nqueued, s->nqueued - 1, __ATOMIC_RELEASE);
		__atomic_store_n(&s->running, s->running + 1, __ATOMIC_RELEASE);
		l->job = job;
		l->deadline_ns = uv_hrtime() + (uint64_t)job->timeout_ms * 1000000u;
		l->exit_ns = 0;
		l->timed_out = false;
		l->stopped = false;
		l->withdrawn = false;
		__atomic_store_n(&l->cancelled, 0, __ATOMIC_RELEASE);
		uv_mutex_unlock(&s->lock);

		lane_run(l, job);

		uv_mutex_lock(&s->lock);
		if (l->timed_out)
			job->kstatus = HANDLER_TIMEOUT;
		else if (l->withdrawn)   /* it returned because it was cancelled, or despite it */
			job->kstatus = HANDLER_FAILED;
		else if (l->stopped && job->kstatus != HANDLER_OK)
			job->kstatus = HANDLER_RELEASED;
		l->job = NULL;
		__atomic_store_n(&s->running, s->running - 1, __ATOMIC_RELEASE);
		job->knext = NULL;
		if (s->dtail)
			s->dtail->knext = job;
		else
			s->dhead = job;
		s->dtail = job;
		if (!s->freed)
			uv_async_send(&s->async);
	}
	uv_mutex_unlock(&s->lock);
}

/* ---- the loop's side ---- */

static void arm_watchdog(struct handler_so *s, uint64_t at_ns);

/* Hand a finished job to the worker. */
static void report(struct handler_so *s, struct handler_job *job)
{
	struct handler_result res;

	memset(&res, 0, sizeof(res));
	res.status = job->kstatus;
	res.retry_in_ms = job->kretry_ms;
	switch (job->kstatus) {
	case HANDLER_OK:
		res.result = job->kresult;
		res.result_len = job->kresult ? job->kresult_len : 0;
		res.result_type = job->kresult_type;
		res.enqueue = job->kenqueue;
		res.enqueue_len = job->kenqueue_len;
		break;
	case HANDLER_TIMEOUT:
		snprintf(res.error, sizeof(res.error), "timed out after %u ms (the plugin returned "
			 "within the kill grace after its deadline)", job->timeout_ms);
		break;
	case HANDLER_RELEASED:
		snprintf(res.error, sizeof(res.error), "%s", "not run, or stopped before it ended");
		break;
	case HANDLER_RETRY_LATER:
		snprintf(res.error, sizeof(res.error), "the plugin asked to retry in %u ms",
			 job->kretry_ms);
		break;
	default:
		snprintf(res.error, sizeof(res.error), "%s", job->kerror ? job->kerror :
			 "out of memory for the plugin's error");
	}
	s->env.hooks.done(s->env.hooks.data, job, &res);
	free(job->kerror);
	free(job->kresult);
	free(job->kprogress);
	free(job->kenqueue);
	job->kerror = NULL;
	job->kresult = NULL;
	job->kprogress = NULL;
	job->kenqueue = NULL;
	job->kenqueue_len = 0;
}

/* The lanes have finished jobs, or progress, for us. */
static void on_async(uv_async_t *a)
{
	struct handler_so *s = a->data;
	struct handler_job *done, *next;
	struct { struct handler_job *job; char *text; } prog[HANDLER_CONCURRENCY_MAX];
	size_t nprog = 0;

	uv_mutex_lock(&s->lock);
	done = s->dhead;
	s->dhead = s->dtail = NULL;
	if (s->progress) {
		s->progress = false;
		for (unsigned i = 0; i < s->nlanes; i++) {
			struct handler_job *job = s->lanes[i].job;
			if (job && job->kprogress) {
				prog[nprog].job = job;
				prog[nprog++].text = job->kprogress;
				job->kprogress = NULL;
			}
		}
	}
	uv_mutex_unlock(&s->lock);
	/* A running job's progress first; a finished one's last progress goes with it. */
	for (size_t i = 0; i < nprog; i++) {
		if (s->env.hooks.progress)
			s->env.hooks.progress(s->env.hooks.data, prog[i].job, prog[i].text,
					      strlen(prog[i].text));
		free(prog[i].text);
	}
	for (; done; done = next) {
		next = done->knext;
		if (done->kprogress && s->env.hooks.progress)
			s->env.hooks.progress(s->env.hooks.data, done, done->kprogress,
					      strlen(done->kprogress));
		report(s, done);
	}
}

/* A lane runs past its kill grace: the process ends. Called holding the lock. */
static void stuck(struct handler_so *s, struct lane *l)
{
	if (l->timed_out)
		sb_flag(&s->env.scoreboard->entries[l->idx], SB_OVERRAN);
	log_error("plugin %s: item id=%llu still running %u ms after %s; a plugin thread cannot "
		  "be stopped: exiting this worker (status %d) so the supervisor replaces it%s",
		  s->plugin->name ? s->plugin->name : "?", (unsigned long long)l->job->id,
		  s->env.kill_grace_ms, l->timed_out ? "its deadline (--timeout)" :
		  l->withdrawn ? "an operator cancelled it" : "it was stopped (shutdown)",
		  HANDLER_EXIT_STUCK,
		  l->timed_out ? ": the item fails as timed out, the others go back" :
		  ": its items go back");
	_exit(HANDLER_EXIT_STUCK);
}

/* What is due now; set the watchdog for the next thing that will be. The earliest a queued
 * job can reach its deadline is now + its timeout (it has not started). */
static void on_watchdog(uv_timer_t *t)
{
	struct handler_so *s = t->data;
	uint64_t now = uv_hrtime(), next = UINT64_MAX;

	s->watch_at = 0;
	uv_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->nlanes; i++) {
		struct lane *l = &s->lanes[i];
		if (!l->job)
			continue;
		if (!l->timed_out && now >= l->deadline_ns) {
			l->timed_out = true;
			__atomic_store_n(&l->cancelled, 1, __ATOMIC_RELEASE);
			if (!l->exit_ns || l->exit_ns > now + s->env.kill_grace_ms * 1000000ull)
				l->exit_ns = now + s->env.kill_grace_ms * 1000000ull;
		}
		if (l->exit_ns && now >= l->exit_ns)
			stuck(s, l);
		if (!l->timed_out && l->deadline_ns < next)
			next = l->deadline_ns;
		if (l->exit_ns && l->exit_ns < next)
			next = l->exit_ns;
	}
	for (struct handler_job *j = s->qhead; j; j = j->knext) {
		uint64_t at = now + (uint64_t)j->timeout_ms * 1000000u;
		if (at < next)
			next = at;
	}
	uv_mutex_unlock(&s->lock);
	if (next != UINT64_MAX)
		arm_watchdog(s, next);
}

static void arm_watchdog(struct handler_so *s, uint64_t at_ns)
{
	uint64_t now = uv_hrtime();

	if (s->watch_at && s->watch_at <= at_ns)
		return;
	s->watch_at = at_ns;
	uv_timer_start(&s->watchdog, on_watchdog,
		       at_ns > now ? (at_ns - now + 999999u) / 1000000u : 0, 0);
}

static int so_submit(void *h, struct handler_job *job)
{
	struct handler_so *s = h;

	job->knext = NULL;
	job->kstatus = HANDLER_FAILED;
	job->kretry_ms = 0;
	job->kerror = NULL;
	job->kresult = NULL;
	job->kprogress = NULL;
	job->kenqueue = NULL;
	job->kenqueue_len = 0;
	uv_mutex_lock(&s->lock);
	if (s->qtail)
		s->qtail->knext = job;
	else
		s->qhead = job;
	s->qtail = job;
	__atomic_store_n(&s->nqueued, s->nqueued + 1, __ATOMIC_RELEASE);
	uv_cond_signal(&s->cond);
	uv_mutex_unlock(&s->lock);
	/* Its deadline is at least a timeout from now. */
	arm_watchdog(s, uv_hrtime() + (uint64_t)job->timeout_ms * 1000000u);
	return 0;
}

static size_t so_withdraw(void *h, struct handler_job **out, size_t max)
{
	struct handler_so *s = h;
	size_t n = 0;

	uv_mutex_lock(&s->lock);
	/* The queue is singly linked: keep the first nqueued - k, hand back the rest. */
	size_t keep = s->nqueued > max ? s->nqueued - max : 0;
	struct handler_job *j = s->qhead, *last = NULL;
	for (size_t i = 0; i < keep; i++) {
		last = j;
		j = j->knext;
	}
	for (; j; j = j->knext)
		out[n++] = j;
	if (last) {
		last->knext = NULL;
		s->qtail = last;
	} else {
		s->qhead = s->qtail = NULL;
	}
	__atomic_store_n(&s->nqueued, keep, __ATOMIC_RELEASE);
	uv_mutex_unlock(&s->lock);
	/* newest first */
	for (size_t i = 0; i < n / 2; i++) {
		struct handler_job *t = out[i];
		out[i] = out[n - 1 - i];
		out[n - 1 - i] = t;
	}
	return n;
}

static void so_stop_all(void *h, enum handler_stop why)
{
	struct handler_so *s = h;
	uint64_t at = uv_hrtime() + s->env.kill_grace_ms * 1000000ull, next = 0;

	(void)why;  /* a stopped item goes back; the lane reports it as the plugin answers */
	uv_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->nlanes; i++) {
		struct lane *l = &s->lanes[i];
		if (!l->job)
			continue;
		__atomic_store_n(&l->cancelled, 1, __ATOMIC_RELEASE);
		l->stopped = true;
		if (!l->exit_ns || l->exit_ns > at)
			l->exit_ns = at;
		next = at;
	}
	uv_mutex_unlock(&s->lock);
	if (next)
		arm_watchdog(s, next);
}

/* Queued: taken out. Running: its lane's cancelled flag, and the worker ends if handle has
 * not returned by the kill grace (the supervisor then releases its items: the cancelled
 * row's request makes it dead, the others run again). */
static bool so_cancel(void *h, struct handler_job *job)
{
	struct handler_so *s = h;
	uint64_t at = uv_hrtime() + s->env.kill_grace_ms * 1000000ull;
	struct handler_job **pp, *prev = NULL;
	bool taken = false, running = false;

	uv_mutex_lock(&s->lock);
	for (pp = &s->qhead; *pp; prev = *pp, pp = &(*pp)->knext) {
		if (*pp != job)
			continue;
		*pp = job->knext;
		if (s->qtail == job)
			s->qtail = prev;
		job->knext = NULL;
		__atomic_store_n(&s->nqueued, s->nqueued - 1, __ATOMIC_RELEASE);
		taken = true;
		break;
	}
	for (unsigned i = 0; !taken && i < s->nlanes; i++) {
		struct lane *l = &s->lanes[i];
		if (l->job != job || l->withdrawn)
			continue;
		l->withdrawn = true;
		__atomic_store_n(&l->cancelled, 1, __ATOMIC_RELEASE);
		if (!l->exit_ns || l->exit_ns > at)
			l->exit_ns = at;
		running = true;
	}
	uv_mutex_unlock(&s->lock);
	if (running)
		arm_watchdog(s, at);
	return taken;
}

/* Read without the lock: a lane may change them the next moment anyway. */
static unsigned so_running(const void *h)
{
	return __atomic_load_n(&((const struct handler_so *)h)->running, __ATOMIC_ACQUIRE);
}

static size_t so_queued(const void *h)
{
	return __atomic_load_n(&((const struct handler_so *)h)->nqueued, __ATOMIC_ACQUIRE);
}

static unsigned so_concurrency(const void *h)
{
	return ((const struct handler_so *)h)->nlanes;
}

/* ---- making and freeing ---- */

static void on_handle_closed(uv_handle_t *hd)
{
	struct handler_so *s = hd->data;

	if (--s->open_handles > 0)
		return;
	uv_cond_destroy(&s->cond);
	uv_mutex_destroy(&s->lock);
	free(s->lanes);
	free(s->spec);
	free(s);
}

static void so_free(void *h)
{
	struct handler_so *s = h;
	bool busy;

	if (!s)
		return;
	uv_mutex_lock(&s->lock);
	s->quit = true;
	s->freed = true;
	busy = s->running > 0;
	uv_cond_broadcast(&s->cond);
	uv_mutex_unlock(&s->lock);
	if (busy) {
		/* A lane still runs plugin code: no fini, no join, and its memory stays (the
		 * process is about to exit). */
		uv_close((uv_handle_t *)&s->watchdog, NULL);
		uv_close((uv_handle_t *)&s->async, NULL);
		return;
	}
	for (unsigned i = 0; i < s->nlanes; i++)
		if (s->lanes[i].started)
			uv_thread_join(&s->lanes[i].thread);
	if (s->inited && s->plugin->fini)
		s->plugin->fini(&s->ctx);
	uv_close((uv_handle_t *)&s->watchdog, on_handle_closed);
	uv_close((uv_handle_t *)&s->async, on_handle_closed);
}

/* Everything but the plugin: the lanes and the loop's handles. */
static int start_lanes(struct handler_so *s, bool thread_safe, char *err, size_t errlen)
{
	int r;

	s->nlanes = thread_safe ? s->env.concurrency : 1;
	s->lanes = calloc(s->nlanes, sizeof(*s->lanes));
	if (!s->lanes)
		return -ENOMEM;
	if (uv_mutex_init(&s->lock) < 0 || uv_cond_init(&s->cond) < 0)
		return -ENOMEM;
	r = uv_async_init(s->env.loop, &s->async, on_async);
	if (r < 0)
		return r;
	s->async.data = s;
	uv_timer_init(s->env.loop, &s->watchdog);
	s->watchdog.data = s;
	s->open_handles = 2;
	for (unsigned i = 0; i < s->nlanes; i++) {
		struct lane *l = &s->lanes[i];
		l->s = s;
		l->idx = i;
		r = uv_thread_create(&l->thread, lane_main, l);
		if (r < 0) {
			snprintf(err, errlen, "so handler: cannot start thread %u of %u: %s", i + 1,
				 s->nlanes, uv_strerror(r));
			return -EINVAL;
		}
		l->started = true;
	}
	return 0;
}

static int make_common(const struct handler_env *env, const struct claimd_plugin *pl,
		       unsigned version, const char *arg, void **ret, char *err, size_t errlen)
{
	struct handler_so *s = calloc(1, sizeof(*s));
	const char *args = "";
	void *dl;
	int r = -ENOMEM;

	if (!s)
		goto fail;
	s->env = *env;
	s->plugin = pl;
	s->version = version;
	if (arg) {
		r = so_load_split(arg, &s->spec, &args, err, errlen);
		if (r == 0)
			r = so_load_open(s->spec, &dl, &s->plugin, &s->version, err, errlen);
		if (r < 0)
			goto fail;
	}
	r = plugin_init(s, s->spec ? s->spec : "noop", args, err, errlen);
	if (r < 0)
		goto fail;
	s->inited = true;
	r = start_lanes(s, s->version >= 3 && (s->plugin->flags & CLAIMD_PLUGIN_THREAD_SAFE), err,
			errlen);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	if (r != -EINVAL)
		snprintf(err, errlen, "so handler: %s", strerror(-r));
	if (s && s->open_handles == 2) {
		so_free(s);
	} else if (s) {
		/* No lane started or every one is waiting: let them go. */
		if (s->lanes) {
			uv_mutex_lock(&s->lock);
			s->quit = true;
			uv_cond_broadcast(&s->cond);
			uv_mutex_unlock(&s->lock);
			for (unsigned i = 0; i < s->nlanes; i++)
				if (s->lanes[i].started)
					uv_thread_join(&s->lanes[i].thread);
		}
		free(s->lanes);
		free(s->spec);
		free(s);
	}
	return r;
}

static int so_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		   size_t errlen)
{
	return make_common(env, NULL, 0, arg, ret, err, errlen);
}

const struct handler_kind handler_so = {
	.prefix = "so:", .takes_arg = true, .in_worker = true,
	.check = so_check, .make = so_make, .free = so_free, .submit = so_submit,
	.withdraw = so_withdraw, .stop_all = so_stop_all, .cancel = so_cancel,
	.running = so_running, .queued = so_queued, .concurrency = so_concurrency,
};

/* ---- noop: a plugin built in ---- */

static void noop_handle(const struct claimd_job *job, struct claimd_result *res)
{
	(void)job;
	(void)res;
}

static const struct claimd_plugin noop_plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION, .name = "noop", .handle = noop_handle,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

static int noop_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	(void)arg;
	return make_common(env, &noop_plugin, CLAIMD_PLUGIN_ABI_VERSION, NULL, ret, err, errlen);
}

const struct handler_kind handler_noop = {
	.prefix = "noop", .takes_arg = false,
	.make = noop_make, .free = so_free, .submit = so_submit, .withdraw = so_withdraw,
	.stop_all = so_stop_all, .cancel = so_cancel, .running = so_running, .queued = so_queued,
	.concurrency = so_concurrency,
};
