/* handler_so — the so: kind: an in-process C plugin (include/claimd/handler.h).
 *
 * so:/abs/path/lib.so [args]: handler_so_new dlopens the library, finds claimd_plugin_v1,
 * checks its abi_version and calls its init (with args) on this thread. Each item's handle
 * runs on a libuv thread-pool thread so the loop keeps answering the supervisor; the result
 * comes back on the loop.
 *
 * A thread cannot be killed. If handle is still running at the item's timeout (or the kill
 * grace after handler_cancel), this module logs it and ends the whole process with
 * _exit(HANDLER_SO_EXIT_STUCK): the supervisor replaces the worker and releases the item,
 * which is retried (the attempt counts). A crash inside the plugin likewise kills the worker.
 * That log line is the only thing this module logs. The library is never unloaded (dlclose)
 * by a worker: a plugin's threads or atexit handlers may still point into it. */
#ifndef CLAIMD_HANDLER_SO_H
#define CLAIMD_HANDLER_SO_H

#include <uv.h>

#include "worker/handler.h"

#define HANDLER_SO_EXIT_STUCK 70

struct handler_so;

/* arg: "/path/lib.so [args]" (after "so:"). Returns 0, or -EINVAL (cannot load, not a
 * plugin, other ABI version, init failed) / -ENOMEM with err filled. */
int handler_so_new(uv_loop_t *loop, const char *arg, unsigned kill_grace_ms,
		   struct handler_so **ret, char *err, size_t errlen);
/* Calls the plugin's fini unless an item is still running (its thread is left alone then). */
void handler_so_free(struct handler_so *s);
/* Load, check and unload the library without calling init. Returns 0 or -EINVAL with err. */
int handler_so_check(const char *arg, char *err, size_t errlen);
/* As handler_run (job->deadline_ms set). */
int handler_so_run(struct handler_so *s, const struct handler_job *job, handler_cb cb,
		   void *data);
/* The item's result still comes when handle returns; if that is not within the kill grace,
 * the process exits (see above). */
void handler_so_cancel(struct handler_so *s);

#endif
