/* The handler kinds are a table (handler_kind.h): the spec's prefix picks one, here and only
 * here, and every call goes to its operations. noop lives here; the others in
 * handler_exec.c, handler_pipe.c and handler_so.c. */
#include "worker/handler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/handler_kind.h"
#include "worker/handler_util.h"

static int noop_run(void *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_result res;

	memset(&res, 0, sizeof(res));
	res.status = HANDLER_OK;
	cb(data, &res);
	return 0;
}

static void noop_nothing(void *h)
{
}

static int noop_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	*ret = NULL;
	return 0;
}

static const struct handler_kind handler_noop = {
	.prefix = "noop", .takes_arg = false, .is_inline = true,
	.make = noop_make, .free = noop_nothing, .run = noop_run, .cancel = noop_nothing,
};

static const struct handler_kind *const kinds[] = {
	&handler_noop, &handler_exec, &handler_pipe, &handler_so,
};

struct handler {
	const struct handler_kind *kind;
	void *impl;
	struct child_reaper *reaper;
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

int handler_check(const char *spec, char *err, size_t errlen)
{
	const struct handler_kind *k;
	const char *arg;
	int r = parse_spec(spec, &k, &arg, err, errlen);

	if (r < 0 || !k->check)
		return r;
	return k->check(arg, err, errlen);
}

bool handler_spec_inline(const char *spec)
{
	const struct handler_kind *k;
	const char *arg;
	char err[8];

	return parse_spec(spec, &k, &arg, err, sizeof(err)) == 0 && k->is_inline;
}

int handler_new(uv_loop_t *loop, const char *spec, const struct handler_opts *opts,
		struct handler **ret, char *err, size_t errlen)
{
	struct handler *h = calloc(1, sizeof(*h));
	struct handler_env env = { .loop = loop, .kill_grace_ms = opts->kill_grace_ms,
				   .exec_result = opts->exec_result };
	const char *arg;
	int r = -ENOMEM;

	if (!h)
		goto fail;
	r = parse_spec(spec, &h->kind, &arg, err, errlen);
	if (r < 0)
		goto fail;
	/* Only the processes the handler starts: a plugin's own children are its business. */
	r = child_reaper_new(loop, false, NULL, NULL, &h->reaper);
	if (r < 0)
		goto fail;
	env.reaper = h->reaper;
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
	if (h)
		child_reaper_free(h->reaper);
	free(h);
	return r;
}

void handler_free(struct handler *h)
{
	if (!h)
		return;
	h->kind->free(h->impl);
	child_reaper_free(h->reaper);
	free(h);
}

bool handler_inline(const struct handler *h)
{
	return h->kind->is_inline;
}

pid_t handler_pid(const struct handler *h)
{
	return h->kind->pid ? h->kind->pid(h->impl) : 0;
}

int handler_run(struct handler *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_job j = *job;

	if (j.deadline_ms == 0 && !h->kind->is_inline)
		j.deadline_ms = handler_util_now_ms() + j.timeout_ms;
	return h->kind->run(h->impl, &j, cb, data);
}

void handler_cancel(struct handler *h)
{
	h->kind->cancel(h->impl);
}
