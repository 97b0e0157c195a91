/* The handler kinds are a table (handler_kind.h): the spec's prefix picks one, here and only
 * here, and every call goes to its operations. The kinds are in handler_exec.c,
 * handler_pipe.c and handler_so.c (so: and noop, which is an in-process handler built in). */
#include "worker/handler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/handler_kind.h"
#include "worker/handler_util.h"

static const struct handler_kind *const kinds[] = {
	&handler_noop, &handler_exec, &handler_pipe, &handler_so,
};

struct handler {
	const struct handler_kind *kind;
	void *impl;
	struct child_reaper *reaper;
	struct sb_slot *own_sb;       /* when the caller gave no scoreboard */
	unsigned concurrency;
};

/* The kind of spec, and in *ret_arg what follows its prefix (blanks skipped). */
static int parse_spec(const char *spec, const struct handler_kind **ret, const char **ret_arg,
		      char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct handler_kind *k = kinds[i];
		size_t n = strlen(k->prefix);
		if (k->takes_arg ? strncmp(spec, k->prefix, n) != 0 : strcmp(spec, k->prefix) != 0)
			continue;
		*ret = k;
		*ret_arg = spec + n + strspn(spec + n, " \t");
		if (k->takes_arg && !**ret_arg) {
			snprintf(err, errlen, "--handler: '%s' needs a command", k->prefix);
			return -EINVAL;
		}
		return 0;
	}
	snprintf(err, errlen, "--handler: unknown kind '%s' (expected noop, exec:CMD, pipe:CMD "
		 "or so:LIB)", spec);
	return -EINVAL;
}

int handler_spec_check(const char *spec, char *err, size_t errlen)
{
	const struct handler_kind *k;
	const char *arg;

	return parse_spec(spec, &k, &arg, err, errlen);
}

int handler_user_check(const char *spec, const char *user, char *err, size_t errlen)
{
	const struct handler_kind *k;
	const char *arg;

	if (!user || !*user || parse_spec(spec, &k, &arg, err, errlen) < 0 || !k->in_worker)
		return 0;   /* a spec that does not parse is handler_check's to refuse */
	snprintf(err, errlen, "--handler-user %s: a %s plugin runs inside the worker, as claimd's "
		 "user, and cannot run as another; use an exec: or pipe: handler, or leave "
		 "--handler-user out", user, k->prefix);
	return -EINVAL;
}

int handler_check(const char *spec, char *err, size_t errlen)
{
	const struct handler_kind *k;
	const char *arg;
	int r = parse_spec(spec, &k, &arg, err, errlen);

	if (r < 0 || !k->check)
		return r;
	return k->check(arg, err, errlen);
}

int handler_new(uv_loop_t *loop, const char *spec, const struct handler_opts *opts,
		struct handler **ret, char *err, size_t errlen)
{
	struct handler *h = calloc(1, sizeof(*h));
	struct handler_env env = {
		.loop = loop, .concurrency = opts->concurrency, .kill_grace_ms = opts->kill_grace_ms,
		.exec_result = opts->exec_result, .pipe_ready = opts->pipe_ready,
		.scoreboard = opts->scoreboard, .as = opts->as,
		.lease_ok_ns = opts->lease_ok_ns, .hooks = opts->hooks,
	};
	const char *arg;
	int r = -ENOMEM;

	if (!h)
		goto fail;
	r = -EINVAL;
	if (env.concurrency < 1 || env.concurrency > HANDLER_CONCURRENCY_MAX) {
		snprintf(err, errlen, "--concurrency: %u is not from 1 to %u", env.concurrency,
			 (unsigned)HANDLER_CONCURRENCY_MAX);
		goto fail;
	}
	r = parse_spec(spec, &h->kind, &arg, err, errlen);
	if (r < 0)
		goto fail;
	if (!env.scoreboard) {
		r = -ENOMEM;
		h->own_sb = calloc(1, sizeof(*h->own_sb));
		if (!h->own_sb)
			goto fail;
		h->own_sb->nentries = env.concurrency;
		env.scoreboard = h->own_sb;
	}
	/* Only the processes the handler starts: a plugin's own children are its business. */
	r = child_reaper_new(loop, false, NULL, NULL, &h->reaper);
	if (r < 0)
		goto fail;
	env.reaper = h->reaper;
	h->concurrency = env.concurrency;
	r = h->kind->make(&env, arg, &h->impl, err, errlen);
	if (r < 0)
		goto fail;
	*ret = h;
	return 0;
fail:
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (r != -EINVAL)
		snprintf(err, errlen, "--handler: %s", strerror(-r));
	if (h) {
		child_reaper_free(h->reaper);
		free(h->own_sb);
	}
	free(h);
	return r;
}

void handler_free(struct handler *h)
{
	if (!h)
		return;
	h->kind->free(h->impl);
	child_reaper_free(h->reaper);
	free(h->own_sb);
	free(h);
}

int handler_submit(struct handler *h, struct handler_job *job)
{
	if (job->timeout_ms == 0)
		job->timeout_ms = 1;
	return h->kind->submit(h->impl, job);
}

size_t handler_withdraw(struct handler *h, struct handler_job **out, size_t max)
{
	return max ? h->kind->withdraw(h->impl, out, max) : 0;
}

bool handler_cancel(struct handler *h, struct handler_job *job)
{
	return h->kind->cancel(h->impl, job);
}

void handler_stop_all(struct handler *h, enum handler_stop why)
{
	h->kind->stop_all(h->impl, why);
}

unsigned handler_running(const struct handler *h)
{
	return h->kind->running(h->impl);
}

size_t handler_queued(const struct handler *h)
{
	return h->kind->queued(h->impl);
}

bool handler_ready(const struct handler *h)
{
	return !h->kind->ready || h->kind->ready(h->impl);
}

unsigned handler_concurrency(const struct handler *h)
{
	return h->kind->concurrency ? h->kind->concurrency(h->impl) : h->concurrency;
}
