/* forker — the supervisor's fork server (common/proc.h has how one works): this binary run
 * once more in its fork-server mode, which every worker's process is forked from. Started at
 * start-up, and again when a worker must start after it died. Logs. */
#ifndef CLAIMD_FORKER_H
#define CLAIMD_FORKER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "common/proc.h"

struct forker {
	struct proc_forker pf;
	char exe[PATH_MAX];
	int argc;
	char **argv;      /* the supervisor's command line, passed on */
	int pass_fd;      /* given to the fork server on descriptor 4 (the scoreboard), or -1 */
};

/* Finds this binary and starts the fork server, with pass_fd (-1: none) on its descriptor 4
 * (SCOREBOARD_FD): its workers inherit it. argv and pass_fd are borrowed. Returns 0 or -errno
 * (logged). */
int forker_start(struct forker *f, int argc, char **argv, int pass_fd);

/* A process for worker slot with fd (a descriptor of ours) passed to it, from the fork
 * server (started first if it is not running). Blocks up to a few seconds when the fork
 * server hangs (it is killed then). Returns 0 with *ret_pid, or -errno. */
int forker_fork(struct forker *f, unsigned slot, int fd, pid_t *ret_pid);

/* pid, a child of ours, has exited: true if it was the fork server (logged). */
bool forker_exited(struct forker *f, pid_t pid, int status);

pid_t forker_pid(const struct forker *f);

/* Stop it and wait for it. */
void forker_stop(struct forker *f);

#endif
