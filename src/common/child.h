/* child — a process this one started, watched from a libuv loop: learning that it ended (a
 * reaper waits for it on SIGCHLD), stopping it (SIGTERM, then SIGKILL after a grace), and the
 * tail of what it wrote to its stderr. The one home of that for the supervisor's workers and
 * for the handler processes of exec: and pipe:. Does not log. */
#ifndef CLAIMD_CHILD_H
#define CLAIMD_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#define CHILD_TAIL_MAX 4000

/* The last CHILD_TAIL_MAX bytes a process wrote to its stderr. */
struct child_tail {
	size_t len;
	char buf[CHILD_TAIL_MAX];
};

void child_tail_add(struct child_tail *t, const char *p, size_t n);

/* One per loop: waits for the children watched through it when SIGCHLD comes. With any, it
 * waits for every child of this process (a subreaper's orphans too) and hands those nobody
 * watches to on_other(data, pid, status); without, only for the watched ones (waitpid on each
 * pid), leaving other children to whoever started them. */
struct child_reaper;

int child_reaper_new(uv_loop_t *loop, bool any,
		     void (*on_other)(void *data, pid_t pid, int status), void *data,
		     struct child_reaper **ret);
/* Children still watched are no longer waited for. Frees once libuv is done with it. Accepts
 * NULL. */
void child_reaper_free(struct child_reaper *r);

struct child;

struct child_opts {
	bool group;            /* signal its process group (it leads one), not only it */
	int stderr_fd;         /* read its stderr from here (taken over), or -1 */
	unsigned settle_ms;    /* after its exit, how long to wait for EOF on stderr and holds */
	/* Called once, on the loop, when the process has been waited for; NULL: nothing. */
	void (*on_exit)(struct child *c);
	/* Called once, on the loop, when the process has exited and its stderr reached EOF and
	 * every hold was released, or settle_ms after its exit. */
	void (*on_gone)(struct child *c);
	/* What it wrote to its stderr, as read (any piece of a line), valid during the call;
	 * NULL: only its tail is kept. */
	void (*on_stderr)(struct child *c, const char *p, size_t n);
	void *data;
};

/* Watch pid, a child of this process. Returns 0, or a negative errno / libuv error (the
 * stderr descriptor is closed then, the process left alone). */
int child_new(struct child_reaper *r, pid_t pid, const struct child_opts *o,
	      struct child **ret);
/* Stop watching (on_gone is not called after this) and free once libuv is done. The process
 * is left as it is. Accepts NULL. */
void child_free(struct child *c);

/* Something else of the child's must be drained before it counts as gone (its stdout, the
 * worker's channel); release it at that one's EOF. */
void child_hold(struct child *c);
void child_release(struct child *c);

/* SIGTERM now (once), and SIGKILL grace_ms later unless it has exited by then. */
void child_stop(struct child *c, unsigned grace_ms);
/* SIGKILL now, unless it has exited. */
void child_kill(struct child *c);

pid_t child_pid(const struct child *c);
void *child_data(const struct child *c);
bool child_exited(const struct child *c);
/* The waitpid status; meaningful once child_exited. */
int child_status(const struct child *c);
/* Whether SIGTERM was sent (child_stop). */
bool child_stopping(const struct child *c);
const struct child_tail *child_tail(const struct child *c);

#endif
