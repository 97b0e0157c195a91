/* proc — processes and signals: the only module that calls fork, exec, kill, waitpid,
 * prctl or sets signal dispositions, and the fork server the workers come from. Does not log. */
#ifndef CLAIMD_PROC_H
#define CLAIMD_PROC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Process-wide set-up every claimd process does first: ignore SIGPIPE (a closed socket is an
 * error return, not a death). Keeps argv for proc_set_title. */
void proc_init(int argc, char **argv);

/* What ps shows as this process's command line: written over the arguments main got (longer
 * titles are cut to their length). For the fork server and the workers, which would all show
 * the fork server's arguments. */
void proc_set_title(const char *title);

/* In a worker: die with SIGKILL when the parent dies. If the parent is already gone (its pid is
 * no longer parent_pid) exit at once. Returns 0 or -errno. */
int proc_die_with_parent(pid_t parent_pid);

/* Ignore SIGINT and SIGTERM in this process. Workers do: Ctrl-C in a terminal, timeout(1) and
 * systemd signal the whole group, and the supervisor decides how the pool stops (it SIGKILLs a
 * worker that does not stop in time). */
void proc_ignore_stop_signals(void);

/* Stop signals for a process whose main thread waits in calls a signal does not end (claimd
 * --migrate in a statement that runs for minutes), taken by a thread of its own: block SIGINT,
 * SIGTERM and SIGHUP (and SIGUSR1, the waker) in the calling thread and the threads it starts
 * after, before it starts any. Returns 0 or -errno. */
int proc_stop_signals_block(void);

/* In the thread that takes them: wait up to ms for SIGINT, SIGTERM or SIGHUP. Returns the
 * signal, 0 when none came in time, -EINTR when proc_stop_signal_wake woke it. */
int proc_stop_signal_wait(unsigned ms);

/* Wake thread t from proc_stop_signal_wait. Returns 0 or -errno. */
int proc_stop_signal_wake(pthread_t t);

struct proc_child {
	pid_t pid;
	int stdin_fd;    /* write end of the child's stdin, non-blocking, close-on-exec */
	int stderr_fd;   /* read end of the child's stderr, non-blocking, close-on-exec */
	int stdout_fd;   /* read end of its stdout (PROC_SPAWN_STDOUT), else -1 */
	int channel_fd;  /* read end of its channel (PROC_SPAWN_CHANNEL), else -1 */
};

/* proc_spawn_io's flags. */
#define PROC_SPAWN_STDOUT 0x1u   /* the handler's stdout is a new pipe, not inherited */
#define PROC_SPAWN_CHANNEL 0x2u  /* its descriptor PROC_CHANNEL_FD is the write end of a new
				  * pipe (a channel besides stdout: exec:'s follow-up jobs) */
#define PROC_CHANNEL_FD 3

#define PROC_GROUPS_MAX 256   /* supplementary groups of a user processes are started as */

/* A user to start processes as: its uid, its primary gid and its groups (initgroups'),
 * looked up once so that a child becomes it with system calls alone. */
struct proc_user {
	char name[64];
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[PROC_GROUPS_MAX];
};

/* User name, looked up (the password and group databases). Returns 0, or -ENOENT (no such
 * user) or another negative errno, with err saying so. */
int proc_user_lookup(const char *name, struct proc_user *ret, char *err, size_t errlen);

/* Whether this process may start processes as another user, and signal them: its effective
 * uid is 0, or it has CAP_SETUID, CAP_SETGID and CAP_KILL in its effective set. */
bool proc_can_switch_user(void);

/* Run argv[0] with argv and envp, no shell, under a guard process: ret->pid is the guard, which
 * leads a new process group holding the handler and anything it starts, exits the way the
 * handler did, and kills the whole group if the calling process dies (by any means). Signal
 * the group (proc_kill_group) to stop the handler; the guard ignores SIGTERM and reports. The
 * handler gets stdin and stderr from new pipes, stdout inherited, and no other descriptor.
 * Returns 0 and fills *ret, or -errno (nothing left behind). An exec failure shows as exit
 * status 127 with the reason on its stderr. */
int proc_spawn(char *const argv[], char *const envp[], struct proc_child *ret);

/* proc_spawn, and with PROC_SPAWN_STDOUT in flags the handler's stdout is a new pipe too
 * (ret->stdout_fd) instead of inherited; with PROC_SPAWN_CHANNEL its descriptor
 * PROC_CHANNEL_FD is the write end of another (ret->channel_fd), else it has none (both read
 * ends non-blocking and close-on-exec); with as (not NULL) the handler runs as that user (its
 * groups, gid and uid set before the exec; the guard stays the caller's, to report and to
 * kill the group). A failure to become it shows as an exec failure. */
int proc_spawn_io(char *const argv[], char *const envp[], unsigned flags,
		  const struct proc_user *as, struct proc_child *ret);

/* Send sig to the process group whose id is pid (a process proc_spawn started leads its own
 * group). Returns 0 or -errno. */
int proc_kill_group(pid_t pid, int sig);
int proc_kill(pid_t pid, int sig);

/* Whether process group pgid is this process's to take down, by what /proc says now: pgid
 * greater than 1, not this process's own group nor its session's, and every process in it a
 * descendant of this process (by their parents; a subreaper's orphans stay its
 * descendants). For a group id read from memory others write (the scoreboard). Returns 1, 0
 * (no process in the group), -EPERM (not ours), or -errno (no /proc). */
int proc_group_ours(pid_t pgid);

/* Non-blocking wait for pid. Returns 1 and fills *ret_status (waitpid status) if it exited,
 * 0 if still running, -errno on error (e.g. -ECHILD). */
int proc_reap(pid_t pid, int *ret_status);

/* "exit status 3", "killed by signal 9 (Killed)" into out. */
void proc_describe_status(int status, char *out, size_t outlen);

/* Non-blocking wait for any child. Returns 1 with *ret_pid and *ret_status, 0 if none has
 * exited, -errno (-ECHILD: no children). */
int proc_reap_any(pid_t *ret_pid, int *ret_status);

/* Make orphaned descendants of this process its children (PR_SET_CHILD_SUBREAPER), so that
 * processes a fork server starts are ours to wait for. Returns 0 or -errno. */
int proc_become_subreaper(void);

/* Become user name for good: own_path (if not NULL) given to it (and to its group too when
 * own_group; else the file keeps its group), then its groups (initgroups), its gid, its
 * uid, and a check that root cannot be taken back. Being that user already is fine.
 * Returns 0, or a negative errno with err filled (no such user, not root, ...). */
int proc_drop_to(const char *name, const char *own_path, bool own_group, char *err,
		 size_t errlen);

/* The process name ps and top show (at most 15 bytes are kept). */
void proc_set_name(const char *name);

/* A fork server: a single-threaded process, started by exec before the caller has threads,
 * connections or much heap, that forks processes on request. A process forked from it shares
 * its loaded and relocated libraries instead of loading them again, and starts with its small
 * heap instead of a copy of the caller's. It forks twice, so the new process is re-parented to
 * the caller (which must be a subreaper): the caller waits for it and kills it as its own
 * child, and the new process dies with the caller, not with the fork server. */
struct proc_forker {
	pid_t pid;  /* 0: not running */
	int fd;     /* our end of its socket, -1 when not running */
};

/* Start the fork server: exec argv[0] with argv, its socket on descriptor 3, pass_fd (if not
 * -1) on descriptor 4, and stdin on /dev/null; argv must tell the program to serve (call
 * proc_forker_serve on fd 3). Returns 0 or -errno. */
int proc_forker_start(struct proc_forker *f, char *const argv[], int pass_fd);

/* Ask the fork server, without waiting, for a process that runs run(tag, fd) (see
 * proc_forker_serve) with fd, a descriptor of ours, passed to it (the caller may close its
 * copy at once). Its answer comes on f->fd (proc_forker_answer), answers in the order asked.
 * Returns 0, or -errno: the fork server is gone or broken (give it up: proc_forker_kill). */
int proc_forker_ask(struct proc_forker *f, int tag, int fd);

/* An answer, without waiting: returns 1 with the tag asked for and *ret_pid the new process
 * (> 0) or -errno of a fork that failed; 0 when none is there yet; or -errno when the fork
 * server is gone or said something else (give it up: proc_forker_kill). */
int proc_forker_answer(struct proc_forker *f, int *ret_tag, int *ret_pid);

/* Give up on the fork server (it hangs): SIGKILL (the caller reaps it), and lost. */
void proc_forker_kill(struct proc_forker *f);

/* The fork server has exited (reaped by the caller) or is given up on: close our end. */
void proc_forker_lost(struct proc_forker *f);

/* Stop the fork server (it exits when its socket closes) and wait for it. */
void proc_forker_stop(struct proc_forker *f);

/* In the fork server: serve requests on fd until it closes, then return 0. Each new process
 * waits until it is the child of parent (pid), closes fd and exits with run(tag, passed_fd,
 * arg); it never returns here. */
int proc_forker_serve(int fd, pid_t parent, int (*run)(int tag, int fd, void *arg), void *arg);

/* A worker's name, "HOST/wSLOT:PID": what its claims write into work_items (claimed_by) and
 * its log lines show, and what the supervisor releases a gone worker's rows by. */
#define PROC_WORKER_NAME_MAX 160   /* with its NUL: a 63-byte host name and the rest */
static inline void proc_worker_name(char *buf, size_t size, const char *host, int slot,
				    pid_t pid)
{
	snprintf(buf, size, "%s/w%d:%d", host, slot, (int)pid);
}

#endif
