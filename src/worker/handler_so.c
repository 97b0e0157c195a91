/* The so: kind: an in-process C plugin (include/claimd/handler.h).
 *
 * so:/abs/path/lib.so [args]: make dlopens the library, finds claimd_plugin_v2 (or, for a
 * plugin of ABI version 1, claimd_plugin_v1), checks its abi_version and calls its init (with
 * args) on this thread. Each item's handle runs on a libuv thread-pool thread so the loop
 * keeps answering the supervisor; the result comes back on the loop. Progress the plugin
 * reports on its thread is kept in the job (under its lock) and handed to the loop by an
 * async handle: the loop takes the latest.
 *
 * A thread cannot be killed. If handle is still running at the item's timeout (or the kill
 * grace after a cancel), this module logs it and ends the whole process with
 * _exit(HANDLER_SO_EXIT_STUCK): the supervisor replaces the worker and releases the item,
 * which is retried (the attempt counts). A crash inside the plugin likewise kills the worker.
 * That log line is the only thing this module logs. The library is never unloaded (dlclose)
 * by a worker: a plugin's threads or atexit handlers may still point into it. */
#include <claimd/handler.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/handler_kind.h"

#define HANDLER_SO_EXIT_STUCK 70

/* One item, handed to a pool thread. Owned by the handler until the thread is done with it;
 * left behind (never freed) if the handler goes first. */
struct so_job {
	uv_work_t work;
	uv_mutex_t lock;            /* s, progress: the plugin's thread and the loop */
	struct handler_so *s;       /* NULL once the handler let go of it */
	const struct claimd_plugin *plugin;
	struct claimd_job cj;
	struct claimd_result res;
	char *queue, *group, *content_type;
	unsigned char *payload;
	unsigned char *result;      /* set_result's (the plugin's thread, then the loop) */
	size_t result_len;
	const char *result_type;
	char *progress;             /* the latest progress not yet taken by the loop */
};

struct handler_so {
	uv_loop_t *loop;
	const struct claimd_plugin *plugin;
	struct claimd_plugin_ctx ctx;
	char *spec;                 /* path, NUL, args */
	unsigned kill_grace_ms;
	uv_timer_t timer;           /* the item's timeout, or the kill grace after a cancel */
	uv_async_t async;           /* a job has progress */
	int open_handles;
	bool inited;
	struct so_job *job;
	unsigned timeout_ms;
	bool grace;                 /* the timer is the kill grace after a cancel */
	handler_cb cb;
	handler_progress_cb on_progress;
	void *cb_data;
};

/* Split "/path args" into path and args (in a malloc'd copy, *ret_path first). */
static int split_spec(const char *arg, char **ret_path, const char **ret_args, char *err,
		      size_t errlen)
{
	char *copy = strdup(arg);
	size_t n;

	if (!copy)
		return -ENOMEM;
	n = strcspn(copy, " \t");
	if (n == 0 || copy[0] != '/') {
		snprintf(err, errlen, "--handler: so: needs an absolute path to a shared library, "
			 "got '%s'", arg);
		free(copy);
		return -EINVAL;
	}
	*ret_args = "";
	if (copy[n]) {
		copy[n] = '\0';
		*ret_args = copy + n + 1 + strspn(copy + n + 1, " \t");
	}
	*ret_path = copy;
	return 0;
}

/* dlopen path and check it is a plugin of our ABI. Returns 0 or -EINVAL with err. */
static int load(const char *path, void **ret_dl, const struct claimd_plugin **ret, char *err,
		size_t errlen)
{
	const struct claimd_plugin *pl;
	const char *sym = CLAIMD_PLUGIN_SYMBOL;
	unsigned version = CLAIMD_PLUGIN_ABI_VERSION;
	claimd_plugin_fn fn;
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!dl) {
		snprintf(err, errlen, "--handler: cannot load plugin: %s", dlerror());
		return -EINVAL;
	}
	*(void **)&fn = dlsym(dl, sym);
	if (!fn) {
		/* Version 1's structs are version 2's first fields: a v1 plugin runs as it is. */
		sym = CLAIMD_PLUGIN_SYMBOL_V1;
		version = 1;
		*(void **)&fn = dlsym(dl, sym);
	}
	pl = fn ? fn() : NULL;
	if (!fn)
		snprintf(err, errlen, "--handler: '%s' is not a claimd plugin: it exports neither "
			 "%s() nor %s() (see claimd/handler.h)", path, CLAIMD_PLUGIN_SYMBOL,
			 CLAIMD_PLUGIN_SYMBOL_V1);
	else if (!pl)
		snprintf(err, errlen, "--handler: '%s': %s() returned NULL", path, sym);
	else if (pl->abi_version != version)
		snprintf(err, errlen, "--handler: '%s' says plugin ABI version %u from %s(), this "
			 "claimd speaks version %d (and 1): rebuild it against this claimd's "
			 "claimd/handler.h", path, pl->abi_version, sym, CLAIMD_PLUGIN_ABI_VERSION);
	else if (!pl->handle)
		snprintf(err, errlen, "--handler: '%s': the plugin has no handle function", path);
	else {
		*ret_dl = dl;
		*ret = pl;
		return 0;
	}
	dlclose(dl);
	return -EINVAL;
}

static int so_check(const char *arg, char *err, size_t errlen)
{
	const struct claimd_plugin *pl;
	const char *args;
	char *path;
	void *dl;
	int r;

	r = split_spec(arg, &path, &args, err, errlen);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r < 0)
		return -EINVAL;
	r = load(path, &dl, &pl, err, errlen);
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

static void so_free(void *h);
static void on_async(uv_async_t *a);

static int so_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		   size_t errlen)
{
	struct handler_so *s = calloc(1, sizeof(*s));
	uv_loop_t *loop = env->loop;
	const char *args;
	void *dl;
	int r = -ENOMEM;

	if (!s)
		goto fail;
	s->loop = loop;
	s->kill_grace_ms = env->kill_grace_ms;
	r = split_spec(arg, &s->spec, &args, err, errlen);
	if (r == 0)
		r = load(s->spec, &dl, &s->plugin, err, errlen);
	if (r == 0)
		r = plugin_init(s, s->spec, args, err, errlen);
	if (r < 0)
		goto fail;
	s->inited = true;
	r = uv_timer_init(loop, &s->timer);
	if (r < 0)
		goto fail;
	s->timer.data = s;
	s->open_handles = 1;
	r = uv_async_init(loop, &s->async, on_async);
	if (r < 0)
		goto fail;
	s->async.data = s;
	s->open_handles++;
	*ret = s;
	return 0;
fail:
	if (r != -EINVAL)
		snprintf(err, errlen, "so handler: %s", strerror(-r));
	so_free(s);
	return r;
}

static void on_handle_closed(uv_handle_t *hd)
{
	struct handler_so *s = hd->data;

	if (--s->open_handles == 0) {
		free(s->spec);
		free(s);
	}
}

static void so_free(void *h)
{
	struct handler_so *s = h;

	if (!s)
		return;
	if (s->job) {
		/* Its thread still runs plugin code: no fini; it no longer reaches us. */
		uv_mutex_lock(&s->job->lock);
		s->job->s = NULL;
		uv_mutex_unlock(&s->job->lock);
	} else if (s->inited && s->plugin->fini) {
		s->plugin->fini(&s->ctx);
	}
	if (s->open_handles == 0) {
		free(s->spec);
		free(s);
		return;
	}
	uv_close((uv_handle_t *)&s->timer, on_handle_closed);
	if (s->open_handles == 2)
		uv_close((uv_handle_t *)&s->async, on_handle_closed);
}

/* ---- one item ---- */

static void job_free(struct so_job *job)
{
	uv_mutex_destroy(&job->lock);
	free(job->queue);
	free(job->group);
	free(job->content_type);
	free(job->payload);
	free(job->result);
	free(job->progress);
	free(job);
}

/* ---- what a plugin may call during handle, on its thread ---- */

static struct so_job *job_of(const struct claimd_job *cj)
{
	return (struct so_job *)(uintptr_t)((const char *)cj - offsetof(struct so_job, cj));
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
	struct so_job *job = job_of(cj);
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
	free(job->result);
	job->result = copy;
	job->result_len = n;
	job->result_type = is_json ? "application/json" : "application/octet-stream";
	return 0;
}

static int plugin_progress(const struct claimd_job *cj, const char *json)
{
	struct so_job *job = job_of(cj);
	char *text;
	size_t n;
	int r = json ? compact_json(json, strlen(json), HANDLER_PROGRESS_MAX, &text, &n) : -EINVAL;

	if (r < 0)
		return r;
	uv_mutex_lock(&job->lock);
	free(job->progress);
	job->progress = text;
	if (job->s)
		uv_async_send(&job->s->async);
	uv_mutex_unlock(&job->lock);
	return 0;
}

/* On the loop: the running job's latest progress. */
static void on_async(uv_async_t *a)
{
	struct handler_so *s = a->data;
	char *text = NULL;

	if (!s->job)
		return;
	uv_mutex_lock(&s->job->lock);
	text = s->job->progress;
	s->job->progress = NULL;
	uv_mutex_unlock(&s->job->lock);
	if (text && s->on_progress)
		s->on_progress(s->cb_data, text, strlen(text));
	free(text);
}

static struct so_job *job_new(struct handler_so *s, const struct handler_job *j)
{
	struct so_job *job = calloc(1, sizeof(*job));

	if (!job)
		return NULL;
	if (uv_mutex_init(&job->lock) < 0) {
		free(job);
		return NULL;
	}
	job->queue = strdup(j->queue);
	job->group = j->group ? strdup(j->group) : NULL;
	job->content_type = j->content_type ? strdup(j->content_type) : NULL;
	job->payload = j->payload_len ? malloc(j->payload_len) : NULL;
	if (!job->queue || (j->group && !job->group) || (j->payload_len && !job->payload) ||
	    (j->content_type && !job->content_type)) {
		job_free(job);
		return NULL;
	}
	if (j->payload_len)
		memcpy(job->payload, j->payload, j->payload_len);
	job->s = s;
	job->plugin = s->plugin;
	job->work.data = job;
	job->cj = (struct claimd_job){
		.id = j->id, .queue = job->queue, .group = job->group, .attempt = j->attempt,
		.max_attempts = j->max_attempts, .seq = j->seq, .enqueued_at_ms = j->enqueued_at_ms,
		.deadline_ms = j->deadline_ms, .payload = job->payload,
		.payload_len = j->payload_len, .user = s->ctx.user,
		.content_type = job->content_type, .set_result = plugin_set_result,
		.progress = plugin_progress,
	};
	return job;
}

/* On a pool thread. */
static void on_work(uv_work_t *w)
{
	struct so_job *job = w->data;

	memset(&job->res, 0, sizeof(job->res));
	job->plugin->handle(&job->cj, &job->res);
}

static void build_result(const struct handler_so *s, struct so_job *job,
			 struct handler_result *res)
{
	struct claimd_result *pr = &job->res;

	memset(res, 0, sizeof(*res));
	pr->error[sizeof(pr->error) - 1] = '\0';
	switch (pr->status) {
	case CLAIMD_OK:
		res->status = HANDLER_OK;
		res->result = job->result;
		res->result_len = job->result_len;
		res->result_type = job->result_type;
		return;
	case CLAIMD_RETRY_LATER:
		res->status = HANDLER_RETRY_LATER;
		res->retry_in_ms = pr->retry_in_ms;
		snprintf(res->error, sizeof(res->error), "the plugin asked to retry in %u ms",
			 pr->retry_in_ms);
		return;
	case CLAIMD_FAIL:
		res->status = HANDLER_FAILED;
		snprintf(res->error, sizeof(res->error), "%s", pr->error[0] ? pr->error :
			 "the plugin reported a failure without an error");
		return;
	}
	res->status = HANDLER_FAILED;
	snprintf(res->error, sizeof(res->error), "the plugin returned an unknown status %d",
		 pr->status);
}

/* On the loop, once handle returned. */
static void on_work_done(uv_work_t *w, int status)
{
	struct so_job *job = w->data;
	struct handler_so *s = job->s;
	struct handler_result res;

	if (!s) {
		job_free(job);
		return;
	}
	on_async(&s->async);  /* progress it reported last, before its result */
	s->job = NULL;
	uv_timer_stop(&s->timer);
	build_result(s, job, &res);
	s->cb(s->cb_data, &res);
	job_free(job);
}

/* handle is past its time and cannot be stopped: end the worker (see handler_so.h). */
static void on_stuck(uv_timer_t *t)
{
	struct handler_so *s = t->data;

	if (!s->job)
		return;
	log_error("plugin %s: item id=%llu still running %u ms after %s; a plugin thread cannot "
		  "be stopped: exiting this worker (status %d) so the supervisor replaces it and "
		  "the item is retried", s->plugin->name ? s->plugin->name : "?",
		  (unsigned long long)s->job->cj.id, s->grace ? s->kill_grace_ms : s->timeout_ms,
		  s->grace ? "it was cancelled (shutdown)" : "it started (--timeout)",
		  HANDLER_SO_EXIT_STUCK);
	_exit(HANDLER_SO_EXIT_STUCK);
}

static int so_run(void *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_so *s = h;
	struct so_job *j;
	int r;

	if (s->job)
		return -EBUSY;
	j = job_new(s, job);
	if (!j)
		return -ENOMEM;
	r = uv_queue_work(s->loop, &j->work, on_work, on_work_done);
	if (r < 0) {
		job_free(j);
		return r;
	}
	s->job = j;
	s->cb = cb;
	s->on_progress = job->on_progress;
	s->cb_data = data;
	s->grace = false;
	s->timeout_ms = job->timeout_ms ? job->timeout_ms : 1;
	uv_timer_start(&s->timer, on_stuck, s->timeout_ms, 0);
	return 0;
}

static void so_cancel(void *h)
{
	struct handler_so *s = h;

	if (!s->job || s->grace || uv_timer_get_due_in(&s->timer) <= s->kill_grace_ms)
		return;
	s->grace = true;
	uv_timer_start(&s->timer, on_stuck, s->kill_grace_ms, 0);
}

const struct handler_kind handler_so = {
	.prefix = "so:", .takes_arg = true, .is_inline = false,
	.check = so_check, .make = so_make, .free = so_free, .run = so_run, .cancel = so_cancel,
};
