/* pipe_coproc — one co-process of the pipe: kind (handler_pipe.h has the protocol): started
 * through proc_spawn_io (no shell, its own process group under a guard that kills the group
 * if the worker dies, this process's environment without any CLAIMD_* variable), lines
 * written to its stdin, lines read from its stdout, stopped with SIGTERM to its group and
 * SIGKILL after a grace. What the lines mean is its owner's (handler_pipe.c). It is gone once
 * its process has exited and its stdout reached EOF (or a settle time passed); its memory
 * lives until then or until pipe_coproc_free, whichever is later. Does not log. */
#ifndef CLAIMD_PIPE_COPROC_H
#define CLAIMD_PIPE_COPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "common/child.h"
#include "common/proc.h"

struct pipe_coproc;

/* Called on the loop; none after pipe_coproc_free. */
#define PIPE_COPROC_ERR_LINE_MAX 1024

struct pipe_coproc_hooks {
	/* A line it wrote: len bytes (at most PIPE_REPLY_MAX), its newline and a trailing \r
	 * taken off, never empty (empty lines are skipped), valid during the call. None once it
	 * is stopping. */
	void (*line)(struct pipe_coproc *cp, const char *line, size_t len);
	/* A line over PIPE_REPLY_MAX bytes (-EPROTO), no memory for one (-ENOMEM), or a write
	 * to its stdin failed (a libuv error: UV_EPIPE when it closed its stdin): why says what.
	 * Once; no line is passed on after it. */
	void (*fault)(struct pipe_coproc *cp, int err, const char *why);
	/* A line it wrote to its stderr (its newline taken off; a line over
	 * PIPE_COPROC_ERR_LINE_MAX bytes comes in pieces of that size), valid during the call;
	 * NULL: only the tail is kept (for why it exited). */
	void (*err_line)(struct pipe_coproc *cp, const char *line, size_t len);
	/* It has exited and its pipes are drained: the owner frees it (from here or later). */
	void (*gone)(struct pipe_coproc *cp);
	void *data;
};

/* Start argv (argv[0] an absolute path) on loop, as user as (NULL: ours), its exit watched
 * through reaper. Returns 0 with *ret, or -errno (nothing left running). */
int pipe_coproc_start(uv_loop_t *loop, struct child_reaper *reaper, char *const argv[],
		      const struct proc_user *as, const struct pipe_coproc_hooks *hooks,
		      struct pipe_coproc **ret);
/* No more hooks; its pipes are closed and the process left as it is (SIGKILL it first if it
 * must not run on: pipe_coproc_kill). Accepts NULL. */
void pipe_coproc_free(struct pipe_coproc *cp);

/* A line on its way to the stdin: len bytes at data, its newline included. */
struct pipe_coproc_line {
	uv_write_t w;
	struct pipe_coproc_line *next;   /* the lines written with it (corked) */
	size_t len;
	char data[];
};

/* A line of len bytes to fill and pass to pipe_coproc_send; NULL when out of memory. */
struct pipe_coproc_line *pipe_coproc_line(size_t len);
/* Write line, which it takes in any case. Returns 0, or a libuv error (nothing written). A
 * write that fails later calls the fault hook. */
int pipe_coproc_send(struct pipe_coproc *cp, struct pipe_coproc_line *line);

/* Until pipe_coproc_uncork, lines sent are held and then written together, in one write:
 * many items started at once cost the co-process one wake-up, and us one system call. */
void pipe_coproc_cork(struct pipe_coproc *cp);
/* Write what was held. Returns 0, or a libuv error (nothing written; the fault hook is not
 * called for it). */
int pipe_coproc_uncork(struct pipe_coproc *cp);

/* SIGTERM to its group now (once), SIGKILL grace_ms later unless it has exited. What it
 * writes from now on is read (to see its EOF) and dropped. */
void pipe_coproc_stop(struct pipe_coproc *cp, unsigned grace_ms);
/* SIGKILL to its group now. */
void pipe_coproc_kill(struct pipe_coproc *cp);

/* Whether it takes lines: not stopping, not exited. */
bool pipe_coproc_usable(const struct pipe_coproc *cp);
/* Whether pipe_coproc_stop was called. */
bool pipe_coproc_stopping(const struct pipe_coproc *cp);
/* Its process group (the guard's pid). */
pid_t pipe_coproc_pgid(const struct pipe_coproc *cp);
/* How it ended (waitpid status), meaningful once gone. */
int pipe_coproc_status(const struct pipe_coproc *cp);
/* The tail of its stderr. */
const struct child_tail *pipe_coproc_tail(const struct pipe_coproc *cp);
void *pipe_coproc_data(const struct pipe_coproc *cp);

#endif
