/* handler — runs the user's code for one claimed item.
 *
 * Kinds (the --handler SPEC):
 *   noop               completes every item at once (benchmarks, plumbing tests)
 *   exec:/path args    one process per item, no shell: argv split on spaces, payload on stdin,
 *                      CLAIMD_ITEM_ID, CLAIMD_QUEUE, CLAIMD_ATTEMPT, CLAIMD_MAX_ATTEMPTS,
 *                      CLAIMD_DEADLINE_MS (ms the handler has), CLAIMD_SEQ, CLAIMD_GROUP (when
 *                      the item has a group), CLAIMD_ENQUEUED_AT (ISO 8601 UTC, when known)
 *                      and CLAIMD_CONTENT_TYPE (when the row has one) in its environment,
 *                      stdout inherited (with exec_result: read, at most HANDLER_RESULT_MAX
 *                      bytes, as the result; more fails the item), the tail of stderr kept
 *                      for last_error. Exit 0 is success. The process runs in its own process
 *                      group and is killed (SIGKILL) if the worker dies.
 *   pipe:/path args    one long-lived co-process per worker, started on the first item, no
 *                      shell, own process group, dies with the worker; one JSON request line
 *                      per item on its stdin, one JSON reply line per item on its stdout
 *                      (handler_pipe.h has the protocol). Restarted when it dies, writes a bad
 *                      reply or runs past the timeout.
 *   so:/path.so args   an in-process C plugin (include/claimd/handler.h), loaded once per
 *                      worker; each item runs on a thread of its own. A plugin past the
 *                      timeout cannot be stopped: the worker process exits (handler_so.h).
 * One item at a time per handler. Does not log, except the so: kind right before it ends the
 * process. */
#ifndef CLAIMD_HANDLER_H
#define CLAIMD_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "worker/handler_job.h"

struct handler;

struct handler_opts {
	unsigned kill_grace_ms;   /* SIGTERM to SIGKILL on timeout or cancel */
	bool exec_result;         /* exec: its stdout is the result (else inherited) */
};

/* Parse spec and make a handler on loop. so: loads the plugin and runs its init here.
 * Returns 0, or -EINVAL (or -ENOMEM) with a message in err. */
int handler_new(uv_loop_t *loop, const char *spec, const struct handler_opts *opts,
		struct handler **ret, char *err, size_t errlen);
void handler_free(struct handler *h);

/* Check spec without making a handler, for a clear error at start-up: the kind, the
 * executable, and for so: that the library loads and speaks this ABI (it is loaded and
 * unloaded, so its constructors run, but not its init). Returns 0 or -EINVAL with err. */
int handler_check(const char *spec, char *err, size_t errlen);
/* The spec's form alone (a known kind, with its argument): nothing is loaded or run. */
int handler_spec_check(const char *spec, char *err, size_t errlen);

/* True for kinds that finish inside handler_run, before it returns (noop): the worker can run
 * a whole batch without going back to the loop. */
bool handler_inline(const struct handler *h);

/* The same for a spec, without making a handler (false for a spec that does not parse). */
bool handler_spec_inline(const char *spec);

/* Start job. cb is called exactly once with the result (inline kinds: before handler_run
 * returns). Returns 0, -EBUSY if a job is running, or -errno if it could not be started (cb
 * is not called then). job's strings need only live until handler_run returns. */
int handler_run(struct handler *h, const struct handler_job *job, handler_cb cb, void *data);

/* Stop the running job: SIGTERM to its process group, SIGKILL after the kill grace; its
 * result comes through cb as HANDLER_CANCELLED. so: cannot be stopped: its result comes when
 * the plugin returns, and if that takes longer than the kill grace the worker exits.
 * No-op when idle. */
void handler_cancel(struct handler *h);

/* pid of the handler's process (group leader), or 0: the running exec process, the pipe
 * co-process whenever it runs, 0 for noop and so. */
pid_t handler_pid(const struct handler *h);

#endif
