/* handler_kind — the operations every kind of handler has (noop, exec:, pipe:, so:): the
 * table handler.c picks from by the spec's prefix. A kind's module exports its const struct
 * handler_kind(s) and nothing else. For handler.c and the kinds only.
 *
 * Every kind keeps the jobs it was given in a queue and runs up to env->concurrency at once;
 * while one runs it holds scoreboard entry env->scoreboard->entries[job->kslot] (sb_start
 * when it starts, sb_end before done), kslot < concurrency. A job whose lease may have ended
 * (handler_util_lease_lapsed) is not started: done with HANDLER_RELEASED. done is never
 * called from inside submit. */
#ifndef CLAIMD_HANDLER_KIND_H
#define CLAIMD_HANDLER_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "common/child.h"
#include "common/proc.h"
#include "common/scoreboard.h"
#include "worker/handler_job.h"

/* What a kind gets from handler.c. */
struct handler_env {
	uv_loop_t *loop;
	struct child_reaper *reaper;  /* waits for the processes a kind starts */
	unsigned concurrency;
	unsigned kill_grace_ms;
	bool exec_result;             /* exec: stdout is the result */
	bool pipe_ready;              /* pipe: wait for the co-process's ready line */
	struct sb_slot *scoreboard;   /* never NULL: handler.c gives a private one if need be */
	const struct proc_user *as;   /* the processes it starts run as this user; NULL: ours */
	const uint64_t *lease_ok_ns;  /* NULL: no check */
	struct handler_hooks hooks;
};

struct handler_kind {
	const char *prefix;  /* "exec:"; for a kind without an argument its whole spec ("noop") */
	bool takes_arg;
	bool in_worker;      /* runs code of its own inside the worker (so:): as the worker's
			      * user, whatever env->as says */
	/* Check arg (what follows the prefix) at start-up, making nothing: the executable, the
	 * library and its ABI. Returns 0 or -EINVAL with err. NULL: nothing to check. */
	int (*check)(const char *arg, char *err, size_t errlen);
	/* Make one on env (copied). Returns 0 with *ret, or -EINVAL / -ENOMEM with err. */
	int (*make)(const struct handler_env *env, const char *arg, void **ret, char *err,
		    size_t errlen);
	/* As handler_free. */
	void (*free)(void *h);
	int (*submit)(void *h, struct handler_job *job);
	size_t (*withdraw)(void *h, struct handler_job **out, size_t max);
	void (*stop_all)(void *h, enum handler_stop why);
	/* As handler_cancel. */
	bool (*cancel)(void *h, struct handler_job *job);
	unsigned (*running)(const void *h);
	size_t (*queued)(const void *h);
	/* NULL: env->concurrency. */
	unsigned (*concurrency)(const void *h);
	/* As handler_ready; NULL: always. */
	bool (*ready)(const void *h);
};

extern const struct handler_kind handler_exec;
extern const struct handler_kind handler_pipe;
extern const struct handler_kind handler_so;
extern const struct handler_kind handler_noop;

#endif
