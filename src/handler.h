/* handler — runs the user's code for one claimed item.
 *
 * Kinds (the --handler SPEC):
 *   noop               completes every item at once (benchmarks, plumbing tests)
 *   exec:/path args    one process per item, no shell: argv split on spaces, payload on stdin,
 *                      CLAIMD_ITEM_ID, CLAIMD_QUEUE, CLAIMD_ATTEMPT, CLAIMD_MAX_ATTEMPTS and
 *                      CLAIMD_DEADLINE_MS (ms the handler has) in its environment, stdout
 *                      inherited, the tail of stderr kept for last_error. Exit 0 is success.
 *                      The process runs in its own process group and is killed (SIGKILL)
 *                      if the worker dies.
 * One item at a time per handler. Does not log. */
#ifndef CLAIMD_HANDLER_H
#define CLAIMD_HANDLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#define HANDLER_ERR_MAX 4000

struct handler;

struct handler_job {
	uint64_t id;
	const char *queue;
	uint32_t attempt;
	uint32_t max_attempts;
	const unsigned char *payload;
	size_t payload_len;
	unsigned timeout_ms;
};

enum handler_status {
	HANDLER_OK = 0,
	HANDLER_FAILED,     /* non-zero exit, signal, or could not start */
	HANDLER_TIMEOUT,    /* ran past timeout_ms and was killed */
	HANDLER_CANCELLED,  /* handler_cancel() */
};

struct handler_result {
	int status;                       /* enum handler_status */
	char error[HANDLER_ERR_MAX + 1];  /* what happened + tail of stderr; "" on success */
};

typedef void (*handler_cb)(void *data, const struct handler_result *r);

/* Parse spec and make a handler on loop. kill_grace_ms: SIGTERM to SIGKILL on timeout or
 * cancel. Returns 0, or -EINVAL with a message in err. */
int handler_new(uv_loop_t *loop, const char *spec, unsigned kill_grace_ms,
		struct handler **ret, char *err, size_t errlen);
void handler_free(struct handler *h);

/* True for kinds that finish inside handler_run, before it returns (noop): the worker can run
 * a whole batch without going back to the loop. */
bool handler_inline(const struct handler *h);

/* Start job. cb is called exactly once with the result (inline kinds: before handler_run
 * returns). Returns 0, -EBUSY if a job is running, or -errno if it could not be started (cb
 * is not called then). job's strings need only live until handler_run returns. */
int handler_run(struct handler *h, const struct handler_job *job, handler_cb cb, void *data);

/* Stop the running job: SIGTERM to its process group, SIGKILL after the kill grace; its
 * result comes through cb as HANDLER_CANCELLED. No-op when idle. */
void handler_cancel(struct handler *h);

/* pid of the running handler process, or 0. */
pid_t handler_pid(const struct handler *h);

#endif
