/* proc — processes and signals: the only module that calls fork, exec, kill, waitpid,
 * prctl or sets signal dispositions. Does not log. */
#ifndef CLAIMD_PROC_H
#define CLAIMD_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Process-wide set-up every claimd process does first: ignore SIGPIPE (a closed socket is an
 * error return, not a death). */
void proc_init(void);

/* In a worker: die with SIGKILL when the parent dies. If the parent is already gone (its pid is
 * no longer parent_pid) exit at once. Returns 0 or -errno. */
int proc_die_with_parent(pid_t parent_pid);

/* Ignore SIGINT and SIGTERM in this process. Workers do: Ctrl-C in a terminal, timeout(1) and
 * systemd signal the whole group, and the supervisor decides how the pool stops (it SIGKILLs a
 * worker that does not stop in time). */
void proc_ignore_stop_signals(void);

struct proc_child {
	pid_t pid;
	int stdin_fd;   /* write end of the child's stdin, non-blocking, close-on-exec */
	int stderr_fd;  /* read end of the child's stderr, non-blocking, close-on-exec */
	int stdout_fd;  /* read end of its stdout (proc_spawn_io with pipe_stdout), else -1 */
};

/* Run argv[0] with argv and envp, no shell, under a guard process: ret->pid is the guard, which
 * leads a new process group holding the handler and anything it starts, exits the way the
 * handler did, and kills the whole group if the calling process dies (by any means). Signal
 * the group (proc_kill_group) to stop the handler; the guard ignores SIGTERM and reports. The
 * handler gets stdin and stderr from new pipes, stdout inherited, and no other descriptor.
 * Returns 0 and fills *ret, or -errno (nothing left behind). An exec failure shows as exit
 * status 127 with the reason on its stderr. */
int proc_spawn(char *const argv[], char *const envp[], struct proc_child *ret);

/* proc_spawn, and with pipe_stdout the handler's stdout is a new pipe too (ret->stdout_fd,
 * non-blocking, close-on-exec) instead of inherited. */
int proc_spawn_io(char *const argv[], char *const envp[], bool pipe_stdout,
		  struct proc_child *ret);

/* Send sig to the process group whose id is pid (a process proc_spawn started leads its own
 * group). Returns 0 or -errno. */
int proc_kill_group(pid_t pid, int sig);
int proc_kill(pid_t pid, int sig);

/* Non-blocking wait for pid. Returns 1 and fills *ret_status (waitpid status) if it exited,
 * 0 if still running, -errno on error (e.g. -ECHILD). */
int proc_reap(pid_t pid, int *ret_status);

/* "exit status 3", "killed by signal 9 (Killed)" into out. */
void proc_describe_status(int status, char *out, size_t outlen);

#endif
