/* handler_kind — the operations every kind of handler has (noop, exec:, pipe:, so:): the
 * table handler.c picks from by the spec's prefix. A kind's module exports one const struct
 * handler_kind and nothing else. For handler.c and the kinds only. */
#ifndef CLAIMD_HANDLER_KIND_H
#define CLAIMD_HANDLER_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "common/child.h"
#include "worker/handler_job.h"

/* What a kind gets from handler.c. */
struct handler_env {
	uv_loop_t *loop;
	struct child_reaper *reaper;  /* waits for the processes a kind starts */
	unsigned kill_grace_ms;       /* SIGTERM to SIGKILL on timeout or cancel */
	bool exec_result;             /* exec: stdout is the result */
};

struct handler_kind {
	const char *prefix;  /* "exec:"; for a kind without an argument its whole spec ("noop") */
	bool takes_arg;
	bool is_inline;      /* finishes inside run, before it returns (see handler_inline) */
	/* Check arg (what follows the prefix) at start-up, making nothing: the executable, the
	 * library and its ABI. Returns 0 or -EINVAL with err. NULL: nothing to check. */
	int (*check)(const char *arg, char *err, size_t errlen);
	/* Make one on env (copied). Returns 0 with *ret, or -EINVAL / -ENOMEM with err. */
	int (*make)(const struct handler_env *env, const char *arg, void **ret, char *err,
		    size_t errlen);
	/* A job still running is not reported; whatever it runs is stopped (so: left alone). */
	void (*free)(void *h);
	/* As handler_run; job->deadline_ms is set. */
	int (*run)(void *h, const struct handler_job *job, handler_cb cb, void *data);
	void (*cancel)(void *h);
	/* As handler_pid; NULL: never a process. */
	pid_t (*pid)(const void *h);
};

extern const struct handler_kind handler_exec;
extern const struct handler_kind handler_pipe;
extern const struct handler_kind handler_so;

#endif
