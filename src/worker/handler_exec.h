/* handler_exec — the exec: kind: one process per item (see handler.h). Does not log. */
#ifndef CLAIMD_HANDLER_EXEC_H
#define CLAIMD_HANDLER_EXEC_H

#include <sys/types.h>
#include <uv.h>

#include "worker/handler.h"

struct handler_exec;

/* cmd: "/path args" (after "exec:"). Returns 0, or -EINVAL / -ENOMEM with err filled. */
int handler_exec_new(uv_loop_t *loop, const char *cmd, unsigned kill_grace_ms,
		     struct handler_exec **ret, char *err, size_t errlen);
/* A running process is killed (SIGKILL to its group); its result is not reported. */
void handler_exec_free(struct handler_exec *e);
/* As handler_run: job->deadline_ms is set. */
int handler_exec_run(struct handler_exec *e, const struct handler_job *job, handler_cb cb,
		     void *data);
void handler_exec_cancel(struct handler_exec *e);
pid_t handler_exec_pid(const struct handler_exec *e);

#endif
