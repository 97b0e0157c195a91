/* The handler kinds live in handler_exec.c, handler_pipe.c and handler_so.c; this file picks
 * one from the spec and passes the calls on. */
#include "worker/handler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/handler_exec.h"
#include "worker/handler_pipe.h"
#include "worker/handler_so.h"
#include "worker/handler_util.h"

enum kind { KIND_NOOP, KIND_EXEC, KIND_PIPE, KIND_SO };

struct handler {
	enum kind kind;
	union {
		struct handler_exec *exec;
		struct handler_pipe *pipe;
		struct handler_so *so;
	} u;
};

static const struct {
	const char *prefix;
	enum kind kind;
} kinds[] = {
	{ "exec:", KIND_EXEC }, { "pipe:", KIND_PIPE }, { "so:", KIND_SO },
};

/* The kind of spec, and in *ret_arg what follows its prefix. */
static int parse_kind(const char *spec, enum kind *ret, const char **ret_arg, char *err,
		      size_t errlen)
{
	if (!strcmp(spec, "noop")) {
		*ret = KIND_NOOP;
		*ret_arg = "";
		return 0;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].prefix);
		if (!strncmp(spec, kinds[i].prefix, n)) {
			*ret = kinds[i].kind;
			*ret_arg = spec + n + strspn(spec + n, " \t");
			return 0;
		}
	}
	snprintf(err, errlen, "--handler: unknown kind '%s' (expected noop, exec:CMD, pipe:CMD "
		 "or so:LIB)", spec);
	return -EINVAL;
}

int handler_new(uv_loop_t *loop, const char *spec, unsigned kill_grace_ms,
		struct handler **ret, char *err, size_t errlen)
{
	struct handler *h = calloc(1, sizeof(*h));
	const char *arg;
	int r;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = parse_kind(spec, &h->kind, &arg, err, errlen);
	if (r == 0 && h->kind == KIND_EXEC)
		r = handler_exec_new(loop, arg, kill_grace_ms, &h->u.exec, err, errlen);
	else if (r == 0 && h->kind == KIND_PIPE)
		r = handler_pipe_new(loop, arg, kill_grace_ms, &h->u.pipe, err, errlen);
	else if (r == 0 && h->kind == KIND_SO)
		r = handler_so_new(loop, arg, kill_grace_ms, &h->u.so, err, errlen);
	if (r < 0) {
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

void handler_free(struct handler *h)
{
	if (!h)
		return;
	switch (h->kind) {
	case KIND_NOOP: break;
	case KIND_EXEC: handler_exec_free(h->u.exec); break;
	case KIND_PIPE: handler_pipe_free(h->u.pipe); break;
	case KIND_SO: handler_so_free(h->u.so); break;
	}
	free(h);
}

int handler_check(const char *spec, char *err, size_t errlen)
{
	struct handler_util_argv args;
	const char *arg;
	enum kind kind;
	int r;

	r = parse_kind(spec, &kind, &arg, err, errlen);
	if (r < 0 || kind == KIND_NOOP)
		return r;
	if (kind == KIND_SO)
		return handler_so_check(arg, err, errlen);
	r = handler_util_argv(kind == KIND_EXEC ? "exec" : "pipe", arg, &args, err, errlen);
	if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (r == 0)
		handler_util_argv_free(&args);
	return r < 0 ? -EINVAL : 0;
}

bool handler_inline(const struct handler *h)
{
	return h->kind == KIND_NOOP;
}

pid_t handler_pid(const struct handler *h)
{
	switch (h->kind) {
	case KIND_EXEC: return handler_exec_pid(h->u.exec);
	case KIND_PIPE: return handler_pipe_pid(h->u.pipe);
	default: return 0;
	}
}

int handler_run(struct handler *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_job j = *job;
	struct handler_result res;

	if (j.deadline_ms == 0 && h->kind != KIND_NOOP)
		j.deadline_ms = handler_util_now_ms() + j.timeout_ms;
	switch (h->kind) {
	case KIND_EXEC: return handler_exec_run(h->u.exec, &j, cb, data);
	case KIND_PIPE: return handler_pipe_run(h->u.pipe, &j, cb, data);
	case KIND_SO: return handler_so_run(h->u.so, &j, cb, data);
	case KIND_NOOP: break;
	}
	memset(&res, 0, sizeof(res));
	res.status = HANDLER_OK;
	cb(data, &res);
	return 0;
}

void handler_cancel(struct handler *h)
{
	switch (h->kind) {
	case KIND_EXEC: handler_exec_cancel(h->u.exec); break;
	case KIND_PIPE: handler_pipe_cancel(h->u.pipe); break;
	case KIND_SO: handler_so_cancel(h->u.so); break;
	case KIND_NOOP: break;
	}
}
