/* handler — runs the user's code on claimed items, up to `concurrency` at once.
 *
 * Kinds (the --handler SPEC):
 *   noop               completes every item at once: an in-process handler built in, run on
 *                      the same threads and the same path as a so: plugin (benchmarks,
 *                      plumbing tests)
 *   exec:/path args    one process per item, no shell: argv split on spaces, payload on stdin,
 *                      CLAIMD_ITEM_ID, CLAIMD_QUEUE, CLAIMD_ATTEMPT, CLAIMD_MAX_ATTEMPTS,
 *                      CLAIMD_DEADLINE_MS (ms the handler has), CLAIMD_SEQ, CLAIMD_GROUP (when
 *                      the item has a group), CLAIMD_ENQUEUED_AT (ISO 8601 UTC, when known)
 *                      and CLAIMD_CONTENT_TYPE (when the row has one) in its environment,
 *                      descriptor 3 (CLAIMD_ENQUEUE_FD) a pipe for the jobs it adds, a line
 *                      each (handler_job.h: enqueue),
 *                      stdout inherited (with exec_result: read, at most HANDLER_RESULT_MAX
 *                      bytes, as the result; more fails the item), the tail of stderr kept
 *                      for last_error. Exit 0 is success. Each process runs in its own process
 *                      group and is killed (SIGKILL) if the worker dies. Up to `concurrency`
 *                      processes at once.
 *   pipe:/path args    one long-lived co-process per worker, started on the first item (with
 *                      pipe_ready: at once, again whenever gone, and sent nothing before its
 *                      {"ready":true} line), no
 *                      shell, own process group, dies with the worker; one JSON request line
 *                      per item on its stdin, up to `concurrency` outstanding, answered by id
 *                      in any order on its stdout (handler_pipe.h has the protocol).
 *   so:/path.so args   an in-process C plugin (include/claimd/handler.h), loaded once per
 *                      worker; items run on `concurrency` threads of the worker's own (one for
 *                      a plugin that does not say it is thread-safe). A plugin past an item's
 *                      deadline cannot be stopped: the worker process exits (handler_so.c).
 * Items the kind cannot start yet wait in its queue, in order. Does not log, except the so:
 * kind right before it ends the process. */
#ifndef CLAIMD_HANDLER_H
#define CLAIMD_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/proc.h"
#include "common/scoreboard.h"
#include "worker/handler_job.h"

struct handler;

struct handler_opts {
	unsigned concurrency;     /* items at once, 1..HANDLER_CONCURRENCY_MAX */
	unsigned kill_grace_ms;   /* a stop (SIGTERM, a cancel line, the cancelled flag) to the
				   * end (SIGKILL, the co-process stopped, the worker's exit) */
	bool exec_result;         /* exec: its stdout is the result (else inherited) */
	bool pipe_ready;          /* pipe: started at once, ready when it says so (handler_ready) */
	/* Where each running item is written (entries [0, concurrency)); NULL: nowhere. */
	struct sb_slot *scoreboard;
	/* exec: and pipe: processes run as this user (borrowed); NULL: the worker's. */
	const struct proc_user *as;
	/* Until when (uv_hrtime) the leases of the items held are surely the worker's: an item
	 * is not started once it has passed (HANDLER_RELEASED). Read from any thread; NULL: no
	 * check. */
	const uint64_t *lease_ok_ns;
	struct handler_hooks hooks;
};

/* Parse spec and make a handler on loop. so: loads the plugin and runs its init here.
 * Returns 0, or -EINVAL (or -ENOMEM) with a message in err. */
int handler_new(uv_loop_t *loop, const char *spec, const struct handler_opts *opts,
		struct handler **ret, char *err, size_t errlen);
/* Items still queued or running are not reported; whatever runs is stopped (SIGKILL to
 * processes; so: threads are left alone, the process is about to exit). Accepts NULL. */
void handler_free(struct handler *h);

/* Check spec without making a handler, for a clear error at start-up: the kind, the
 * executable, and for so: that the library loads and speaks this ABI (it is loaded and
 * unloaded, so its constructors run, but not its init). Returns 0 or -EINVAL with err. */
int handler_check(const char *spec, char *err, size_t errlen);
/* The spec's form alone (a known kind, with its argument): nothing is loaded or run. */
int handler_spec_check(const char *spec, char *err, size_t errlen);
/* Whether spec's handler can run as user (--handler-user; NULL or "": no user asked for):
 * not a so: plugin, which runs inside the worker. Returns 0 or -EINVAL with err. */
int handler_user_check(const char *spec, const char *user, char *err, size_t errlen);

/* Queue job (the caller's until its done hook): it starts as soon as fewer than the
 * concurrency run. Returns 0, or -ENOMEM (not taken; done is not called). */
int handler_submit(struct handler *h, struct handler_job *job);

/* Take back jobs not started yet, the newest first, up to max into out. Their done is not
 * called. Returns how many. */
size_t handler_withdraw(struct handler *h, struct handler_job **out, size_t max);

/* Stop every running job (why: enum handler_stop) and take back none: their results come
 * through done, within the kill grace (a so: plugin that does not return by then ends the
 * worker); pipe: within twice the grace, as its co-process has one to answer the cancel and
 * is stopped (SIGTERM, SIGKILL after the grace) only if it did not. */
void handler_stop_all(struct handler *h, enum handler_stop why);

/* An operator cancelled job (submitted, its done not called yet). Waiting in the queue, it
 * is taken back: returns true, and its done is not called. Running, it is stopped as at its
 * timeout (exec: SIGTERM, SIGKILL after the kill grace; pipe: the cancel line with reason
 * "cancelled", the co-process stopped if it does not answer within the grace, its other
 * items released; so: the lane's cancelled flag, the worker ended past the grace, as for a
 * deadline): returns false, and done follows with whatever status the run ended with (the
 * caller knows it was cancelled). Calling it again for the same job does nothing more. */
bool handler_cancel(struct handler *h, struct handler_job *job);

/* Items running now, and queued (not started). */
unsigned handler_running(const struct handler *h);
size_t handler_queued(const struct handler *h);

/* Whether it can take items now: false only for a pipe: kind with pipe_ready whose
 * co-process has not written its ready line (yet, or since it was started again); the
 * ready hook tells when it changes. */
bool handler_ready(const struct handler *h);

/* How many items it runs at once: opts.concurrency, or 1 for a so: plugin that does not say
 * it is thread-safe. */
unsigned handler_concurrency(const struct handler *h);

#endif
