/* forker — the supervisor's fork server (common/proc.h has how one works): this binary run
 * once more in its fork-server mode, which every worker's process is forked from. Started at
 * start-up, and again when a worker must start after it died. Asked on the loop without
 * waiting: the answer (the new process, or why there is none) comes to a callback when the
 * fork server's socket is readable; a fork server that does not answer within
 * FORKER_TIMEOUT_MS is killed and every question still open answered -ETIMEDOUT. Logs. */
#ifndef CLAIMD_FORKER_H
#define CLAIMD_FORKER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/proc.h"

#define FORKER_TIMEOUT_MS 5000   /* the fork server answers in about a millisecond */
#define FORKER_ASKS_MAX 64       /* questions open at once (one per slot starting) */

/* r 0 with pid the new process (a child of ours, started), or r < 0 (pid 0): why none. */
typedef void (*forker_cb)(void *data, int r, pid_t pid);

struct forker_ask {
	int tag;
	forker_cb cb;
	void *data;
	uint64_t at;     /* when it was asked (the loop's clock) */
};

/* How its socket is watched: a uv_poll_t per fork server, closed (asynchronously) with it. */
enum forker_watch {
	FORKER_UNWATCHED,   /* no fork server, or its poll not started yet */
	FORKER_WATCHING,    /* poll started on pf.fd */
	FORKER_CLOSING,     /* the last one's poll handle is closing; a new one waits for it */
};

struct forker {
	struct proc_forker pf;
	uv_loop_t *loop;
	char exe[PATH_MAX];
	int argc;
	char **argv;      /* the supervisor's command line, passed on */
	int pass_fd;      /* given to the fork server on descriptor 4 (the scoreboard), or -1 */
	uv_poll_t poll;
	enum forker_watch watch;
	uv_timer_t timer;  /* the oldest question's deadline */
	struct forker_ask asks[FORKER_ASKS_MAX];   /* in the order asked */
	size_t nasks;
	uv_close_cb close_cb;      /* forker_close's, for a poll handle closing then */
	void *close_data;
};

/* Finds this binary and starts the fork server, with pass_fd (-1: none) on its descriptor 4
 * (SCOREBOARD_FD): its workers inherit it. argv and pass_fd are borrowed. Returns 0 or -errno
 * (logged); the forker's handles are open either way (forker_close). */
int forker_start(struct forker *f, uv_loop_t *loop, int argc, char **argv, int pass_fd);

/* Ask for a process for worker slot with fd (a descriptor of ours, sent at once: the caller
 * may close it on return) passed to it, from the fork server (started first if it is not
 * running). Returns 0, then cb is called once from the loop (never from here); or -errno, and
 * cb is not called. */
int forker_fork(struct forker *f, unsigned slot, int fd, forker_cb cb, void *data);

/* pid, a child of ours, has exited: true if it was the fork server (logged; its questions
 * still open are answered -EPIPE). */
bool forker_exited(struct forker *f, pid_t pid, int status);

pid_t forker_pid(const struct forker *f);

/* Stop it and wait for it (it holds nothing: SIGKILL, a few ms); questions still open are
 * answered -ECANCELED. The next forker_fork starts another. */
void forker_stop(struct forker *f);

/* After forker_stop: close its handles with cb (h->data set to data). Returns how many. */
int forker_close(struct forker *f, uv_close_cb cb, void *data);

#endif
