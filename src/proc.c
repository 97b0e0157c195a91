#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void proc_init(void)
{
	signal(SIGPIPE, SIG_IGN);
}

void proc_ignore_stop_signals(void)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
}

int proc_die_with_parent(pid_t parent_pid)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		return -errno;
	/* The parent may have died before prctl: then we were re-parented already. */
	if (parent_pid > 0 && getppid() != parent_pid)
		_exit(1);
	return 0;
}

/* The handler itself, in the guard's process group: between fork and exec, only
 * async-signal-safe calls. */
static void handler_exec(char *const argv[], char *const envp[], pid_t guard)
{
	const char *e;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != guard)
		_exit(127);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	execve(argv[0], argv, envp);
	e = strerror(errno);
	(void)!write(2, "claimd: cannot exec ", 20);
	(void)!write(2, argv[0], strlen(argv[0]));
	(void)!write(2, ": ", 2);
	(void)!write(2, e, strlen(e));
	(void)!write(2, "\n", 1);
	_exit(127);
}

static void on_guard_orphaned(int sig)
{
	kill(0, SIGKILL);  /* the whole group: handler, its children, and this guard */
	_exit(128 + sig);
}

/* The guard: leads the handler's process group, waits for the handler and exits the same way
 * it did. When the worker dies, however it dies, the kernel signals the guard (parent-death
 * signal), and the guard kills the whole group, so nothing the handler started outlives the
 * worker. It ignores SIGTERM, so a SIGTERM to the group reaches the handler and the guard
 * stays to report how the handler ended. */
static void guard_run(char *const argv[], char *const envp[], int in_fd, int out_fd,
		      int err_fd, pid_t worker)
{
	sigset_t none;
	int fd, status;
	pid_t h, r;

	signal(SIGHUP, on_guard_orphaned);
	prctl(PR_SET_PDEATHSIG, SIGHUP);
	if (getppid() != worker)
		on_guard_orphaned(SIGHUP);
	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_IGN);
	if (dup2(in_fd, 0) < 0 || dup2(err_fd, 2) < 0 || (out_fd >= 0 && dup2(out_fd, 1) < 0))
		_exit(127);
	for (fd = 3; fd < 1024; fd++)
		close(fd);
	h = fork();
	if (h < 0)
		_exit(127);
	if (h == 0)
		handler_exec(argv, envp, getppid());
	/* Our copies of the pipes would keep them open after the handler is gone. */
	fd = open("/dev/null", O_RDWR);
	dup2(fd, 0);
	dup2(fd, 2);
	if (out_fd >= 0)
		dup2(fd, 1);
	if (fd > 2)
		close(fd);
	do
		r = waitpid(h, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		_exit(127);
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	signal(WTERMSIG(status), SIG_DFL);
	raise(WTERMSIG(status));
	_exit(128 + WTERMSIG(status));
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

static int nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int proc_spawn_io(char *const argv[], char *const envp[], bool pipe_stdout,
		  struct proc_child *ret)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
	pid_t parent = getpid(), pid;
	int r;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    (pipe_stdout && pipe2(out, O_CLOEXEC) < 0))
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		guard_run(argv, envp, in[0], out[1], err[1], parent);
	/* Also set the group from the parent side: no race with an early kill of the group. */
	setpgid(pid, pid);
	close(in[0]);
	close(err[1]);
	if (pipe_stdout)
		close(out[1]);
	ret->pid = pid;
	ret->stdin_fd = nonblock(in[1]);
	ret->stderr_fd = nonblock(err[0]);
	ret->stdout_fd = pipe_stdout ? nonblock(out[0]) : -1;
	return 0;
fail:
	r = -errno;
	close_pair(in);
	close_pair(out);
	close_pair(err);
	return r;
}

int proc_spawn(char *const argv[], char *const envp[], struct proc_child *ret)
{
	return proc_spawn_io(argv, envp, false, ret);
}

int proc_kill_group(pid_t pid, int sig)
{
	if (pid <= 0)
		return -EINVAL;
	return kill(-pid, sig) == 0 ? 0 : -errno;
}

int proc_kill(pid_t pid, int sig)
{
	if (pid <= 0)
		return -EINVAL;
	return kill(pid, sig) == 0 ? 0 : -errno;
}

int proc_reap(pid_t pid, int *ret_status)
{
	int status;
	pid_t r;

	do
		r = waitpid(pid, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	*ret_status = status;
	return 1;
}

void proc_describe_status(int status, char *out, size_t outlen)
{
	if (WIFEXITED(status))
		snprintf(out, outlen, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, outlen, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(out, outlen, "status 0x%x", (unsigned)status);
}
