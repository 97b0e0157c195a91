#include "common/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <linux/capability.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *title_area;
static size_t title_len;

void proc_init(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	/* The argument strings lie end to end: the area is from the first to the end of the
	 * last that follows on. */
	if (argc > 0 && argv[0]) {
		char *end = argv[0] + strlen(argv[0]);
		for (int i = 1; i < argc && argv[i] == end + 1; i++)
			end = argv[i] + strlen(argv[i]);
		title_area = argv[0];
		title_len = (size_t)(end - argv[0]);
	}
}

void proc_set_title(const char *title)
{
	size_t n = strlen(title);

	if (!title_area || title_len == 0)
		return;
	if (n > title_len)
		n = title_len;
	memset(title_area, 0, title_len);
	memcpy(title_area, title, n);
}

void proc_ignore_stop_signals(void)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
}

/* The stop signals one thread takes for the whole process (proc_stop_signals_block), and the
 * one that wakes it (proc_stop_signal_wake). */
static void stop_set(sigset_t *set, bool waker)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	if (waker)
		sigaddset(set, SIGUSR1);
}

int proc_stop_signals_block(void)
{
	sigset_t set;

	stop_set(&set, true);
	return -pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int proc_stop_signal_wait(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	sigset_t set;
	int sig;

	stop_set(&set, true);
	do
		sig = sigtimedwait(&set, NULL, &ts);
	while (sig < 0 && errno == EINTR);
	if (sig < 0)
		return errno == EAGAIN ? 0 : -errno;
	return sig == SIGUSR1 ? -EINTR : sig;
}

int proc_stop_signal_wake(pthread_t t)
{
	return -pthread_kill(t, SIGUSR1);
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

static void write_exec_error(const char *what, const char *path, int err)
{
	const char *e = strerror(err);

	(void)!write(2, "claimd: cannot ", 15);
	(void)!write(2, what, strlen(what));
	(void)!write(2, path, strlen(path));
	(void)!write(2, ": ", 2);
	(void)!write(2, e, strlen(e));
	(void)!write(2, "\n", 1);
}

/* Become as: groups, gid, uid (in that order: each needs the privilege the next gives up),
 * and check that the old uid cannot be taken back. System calls only. Returns 0 or -errno. */
static int become(const struct proc_user *as)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

	if (setgroups((size_t)as->ngroups, as->groups) < 0 || setgid(as->gid) < 0 ||
	    setuid(as->uid) < 0)
		return -errno;
	/* From root the kernel clears the capabilities at setuid; from a user that was given
	 * CAP_SETUID and CAP_SETGID (ambient) it does not: drop them all here. */
	if (as->uid != 0 && ((prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
			      errno != EINVAL) || syscall(SYS_capset, &hdr, none) < 0))
		return -errno;
	if (as->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0))
		return -EPERM;
	return 0;
}

/* The handler itself, in the guard's process group: between fork and exec, only
 * async-signal-safe calls. The user changes first: a change of credentials clears the
 * parent-death signal. */
static void handler_exec(char *const argv[], char *const envp[], pid_t guard,
			 const struct proc_user *as)
{
	int r;

	if (as && (r = become(as)) < 0) {
		write_exec_error("become user ", as->name, -r);
		_exit(127);
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != guard)
		_exit(127);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	execve(argv[0], argv, envp);
	write_exec_error("exec ", argv[0], errno);
	_exit(127);
}

static void on_guard_orphaned(int sig)
{
	/* The whole group: handler, its children, and this guard; never a group it does not
	 * lead (its worker's, which is the supervisor's: every sibling and the supervisor). */
	if (getpgrp() == getpid())
		kill(0, SIGKILL);
	_exit(128 + sig);
}

_Static_assert(PROC_CHANNEL_FD == 3, "guard_descriptors places the channel at fd[3]");

/* Every descriptor from first up, however high (a worker may have some past 1024): one
 * system call, or (a kernel before 5.9) each up to the limit on descriptors. */
static void close_from(int first)
{
	struct rlimit rl;
	rlim_t end;

	if (close_range((unsigned)first, ~0u, 0) == 0)
		return;
	end = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ?
	      rl.rlim_cur : 1u << 20;
	for (rlim_t i = (rlim_t)first; i < end && i < (1u << 20); i++)
		close((int)i);
}

/* The handler's descriptors 0..3 from the pipes' ends in fd[0..3] (-1: 1 stays the caller's,
 * 3 is not made), and no other. Each end is moved above them first: an end may itself be one
 * of 0..3 (with the caller's 0 closed, say), and a dup2 must neither land on an end not placed
 * yet nor be onto itself (which would keep its close-on-exec; a dup2 onto another number
 * clears it). Returns 0 or -1. */
static int guard_descriptors(const int fd[4])
{
	int high[4], i;

	for (i = 0; i < 4; i++) {
		high[i] = fd[i] < 0 ? -1 : fcntl(fd[i], F_DUPFD_CLOEXEC, 10);
		if (fd[i] >= 0 && high[i] < 0)
			return -1;
	}
	for (i = 0; i < 4; i++)
		if (high[i] >= 0 && dup2(high[i], i) < 0)
			return -1;
	close_from(fd[3] < 0 ? 3 : 4);
	return 0;
}

/* The guard: leads the handler's process group, waits for the handler and exits the same way
 * it did. When the worker dies, however it dies, the kernel signals the guard (parent-death
 * signal), and the guard kills the whole group, so nothing the handler started outlives the
 * worker. It ignores SIGTERM, so a SIGTERM to the group reaches the handler and the guard
 * stays to report how the handler ended. fd: the handler's 0..3 (guard_descriptors). */
static void guard_run(char *const argv[], char *const envp[], const int fd[4], pid_t worker,
		      const struct proc_user *as)
{
	sigset_t none;
	int null, status;
	pid_t h, r;

	/* Its own group first: until then it is in its worker's group, the supervisor's, and
	 * an orphaned guard kills its group. (A worker SIGKILLed between its fork and this
	 * line took its supervisor and every sibling down with it.) */
	setpgid(0, 0);
	signal(SIGHUP, on_guard_orphaned);
	prctl(PR_SET_PDEATHSIG, SIGHUP);
	if (getppid() != worker)
		on_guard_orphaned(SIGHUP);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_IGN);
	if (guard_descriptors(fd) < 0)
		_exit(127);
	h = fork();
	if (h < 0)
		_exit(127);
	if (h == 0)
		handler_exec(argv, envp, getppid(), as);
	/* Our copies of the pipes would keep them open after the handler is gone. */
	if (fd[3] >= 0)
		close(PROC_CHANNEL_FD);
	null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 2);
	if (fd[1] >= 0)
		dup2(null, 1);
	if (null > 2)
		close(null);
	do
		r = waitpid(h, &status, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		_exit(127);
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	signal(WTERMSIG(status), SIG_DFL);
	raise(WTERMSIG(status));
	/* Only if the signal did not end us (it was blocked, say). */
	/* cppcheck-suppress unreachableCode */
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

int proc_spawn_io(char *const argv[], char *const envp[], unsigned flags,
		  const struct proc_user *as, struct proc_child *ret)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 }, chan[2] = { -1, -1 };
	bool pipe_stdout = flags & PROC_SPAWN_STDOUT, channel = flags & PROC_SPAWN_CHANNEL;
	pid_t parent = getpid(), pid;
	int r;

	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    (pipe_stdout && pipe2(out, O_CLOEXEC) < 0) || (channel && pipe2(chan, O_CLOEXEC) < 0))
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		guard_run(argv, envp, (const int[4]){ in[0], out[1], err[1], chan[1] }, parent, as);
	/* Also set the group from the parent side: no race with an early kill of the group. */
	setpgid(pid, pid);
	close(in[0]);
	close(err[1]);
	if (pipe_stdout)
		close(out[1]);
	if (channel)
		close(chan[1]);
	ret->pid = pid;
	ret->stdin_fd = nonblock(in[1]);
	ret->stderr_fd = nonblock(err[0]);
	ret->stdout_fd = pipe_stdout ? nonblock(out[0]) : -1;
	ret->channel_fd = channel ? nonblock(chan[0]) : -1;
	return 0;
fail:
	r = -errno;
	close_pair(in);
	close_pair(out);
	close_pair(err);
	close_pair(chan);
	return r;
}

int proc_spawn(char *const argv[], char *const envp[], struct proc_child *ret)
{
	return proc_spawn_io(argv, envp, 0, NULL, ret);
}

int proc_kill_group(pid_t pid, int sig)
{
	if (pid <= 0)
		return -EINVAL;
	return kill(-pid, sig) == 0 ? 0 : -errno;
}

/* ppid and pgrp of pid, from /proc/PID/stat (after the name, which may hold ')' and
 * spaces: from its last ')'). Returns 0 or -ESRCH (gone, or unreadable). */
static int stat_of(pid_t pid, pid_t *ret_ppid, pid_t *ret_pgrp)
{
	char path[32], buf[1024];
	const char *p;
	int fd, ppid, pgrp;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %d %d", &ppid, &pgrp) != 2)
		return -ESRCH;
	*ret_ppid = ppid;
	*ret_pgrp = pgrp;
	return 0;
}

/* Whether pid descends from me, by its parents: 1, 0 (it does not), or -ESRCH (a process on
 * the way went away: look again). */
static int descends(pid_t pid, pid_t me)
{
	pid_t ppid, pgrp;

	for (unsigned steps = 0; steps < 4096; steps++) {
		if (stat_of(pid, &ppid, &pgrp) < 0)
			return -ESRCH;
		if (ppid == me)
			return 1;
		if (ppid <= 1)
			return 0;
		pid = ppid;
	}
	return 0;
}

/* One look through /proc: see proc_group_ours. */
static int group_ours(pid_t pgid, pid_t me)
{
	struct dirent *e;
	int members = 0, r = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while (r == 0 && (e = readdir(d))) {
		pid_t pid, ppid, pgrp;
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = (pid_t)strtol(e->d_name, NULL, 10);
		if (stat_of(pid, &ppid, &pgrp) < 0 || pgrp != pgid)
			continue;
		members++;
		r = pid == me ? -EPERM : descends(pid, me);
		r = r == 1 ? 0 : r == 0 ? -EPERM : r;
	}
	closedir(d);
	return r < 0 ? r : members > 0;
}

int proc_group_ours(pid_t pgid)
{
	pid_t me = getpid();
	int r = -ESRCH;

	if (pgid <= 1 || pgid == me || pgid == getpgrp() || pgid == getsid(0))
		return -EPERM;
	for (unsigned tries = 0; tries < 3 && r == -ESRCH; tries++)
		r = group_ours(pgid, me);
	return r == -ESRCH ? -EPERM : r;
}

int proc_kill(pid_t pid, int sig)
{
	if (pid <= 0)
		return -EINVAL;
	return kill(pid, sig) == 0 ? 0 : -errno;
}

/* waitpid(pid, WNOHANG): 1 with *ret_pid and *ret_status, 0 if none has exited, -errno. */
static int reap(pid_t pid, pid_t *ret_pid, int *ret_status)
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
	*ret_pid = r;
	*ret_status = status;
	return 1;
}

int proc_reap(pid_t pid, int *ret_status)
{
	pid_t got;

	return reap(pid, &got, ret_status);
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

int proc_reap_any(pid_t *ret_pid, int *ret_status)
{
	return reap(-1, ret_pid, ret_status);
}

int proc_user_lookup(const char *name, struct proc_user *ret, char *err, size_t errlen)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int n = PROC_GROUPS_MAX;
	int r = getpwnam_r(name, &pw, buf, sizeof(buf), &found);

	if (r != 0 || !found) {
		snprintf(err, errlen, "no user '%s'%s%s", name, r ? ": " : "", r ? strerror(r) : "");
		return r ? -r : -ENOENT;
	}
	if (strlen(name) >= sizeof(ret->name)) {
		snprintf(err, errlen, "user name '%.80s' is too long", name);
		return -ENAMETOOLONG;
	}
	if (getgrouplist(name, pw.pw_gid, ret->groups, &n) < 0) {
		snprintf(err, errlen, "user '%s' is in more than %d groups", name, PROC_GROUPS_MAX);
		return -E2BIG;
	}
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->ngroups = n;
	ret->uid = pw.pw_uid;
	ret->gid = pw.pw_gid;
	return 0;
}

bool proc_can_switch_user(void)
{
	/* CAP_KILL, CAP_SETGID, CAP_SETUID: to stop a handler that is another user's, too. */
	const uint64_t need = (1ull << 5) | (1ull << 6) | (1ull << 7);
	unsigned long long eff = 0;
	char line[256];
	bool found = false;
	FILE *f;

	if (geteuid() == 0)
		return true;
	if (!(f = fopen("/proc/self/status", "re")))
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	return found && (eff & need) == need;
}

int proc_become_subreaper(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -errno;
}

int proc_drop_to(const char *name, const char *own_path, bool own_group, char *err,
		 size_t errlen)
{
	struct passwd pw, *found = NULL;
	char buf[4096];
	int r = getpwnam_r(name, &pw, buf, sizeof(buf), &found);

	if (r != 0 || !found) {
		snprintf(err, errlen, "--user %s: %s", name, r ? strerror(r) : "no such user");
		return r ? -r : -ENOENT;
	}
	if (geteuid() != 0) {
		if (geteuid() == pw.pw_uid)
			goto done;   /* that user already */
		snprintf(err, errlen, "--user %s: only root can become another user", name);
		return -EPERM;
	}
	if (own_path && chown(own_path, pw.pw_uid, own_group ? pw.pw_gid : (gid_t)-1) < 0) {
		r = -errno;
		snprintf(err, errlen, "--user %s: cannot give it %s: %s", name, own_path, strerror(-r));
		return r;
	}
	if (initgroups(name, pw.pw_gid) < 0 || setgid(pw.pw_gid) < 0 || setuid(pw.pw_uid) < 0) {
		r = -errno;
		snprintf(err, errlen, "--user %s: cannot become it: %s", name, strerror(-r));
		return r;
	}
	if (pw.pw_uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		snprintf(err, errlen, "--user %s: root could be taken back", name);
		return -EPERM;
	}
done:
	return 0;
}

void proc_set_name(const char *name)
{
	prctl(PR_SET_NAME, name);
}

/* ---- the fork server ---- */

/* One request (tag, with the descriptor as SCM_RIGHTS) and one answer (tag, pid or -errno),
 * each one datagram of a SOCK_SEQPACKET pair. */
struct forker_msg {
	int32_t tag;
	int32_t pid;
};

/* A forker_msg with room for one descriptor, ready for sendmsg or recvmsg. */
struct forker_frame {
	struct forker_msg m;
	_Alignas(struct cmsghdr) char cmsg[CMSG_SPACE(sizeof(int))];
	struct iovec iov;
	struct msghdr mh;
};

static void frame_init(struct forker_frame *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->iov.iov_base = &fr->m;
	fr->iov.iov_len = sizeof(fr->m);
	fr->mh.msg_iov = &fr->iov;
	fr->mh.msg_iovlen = 1;
	fr->mh.msg_control = fr->cmsg;
	fr->mh.msg_controllen = sizeof(fr->cmsg);
}

/* fd, duplicated close-on-exec at 10 or above (so that a dup2 onto 3 or 4 cannot clobber
 * the other), or -1 with errno. */
static int dup_high(int fd)
{
	return fcntl(fd, F_DUPFD_CLOEXEC, 10);
}

int proc_forker_start(struct proc_forker *f, char *const argv[], int pass_fd)
{
	extern char **environ;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	int sv[2], pass = -1, r, d;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	d = dup_high(sv[1]);
	if (d < 0 || (pass_fd >= 0 && (pass = dup_high(pass_fd)) < 0)) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		if (d >= 0)
			close(d);
		return r;
	}
	close(sv[1]);
	sv[1] = d;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	if (pass >= 0)
		posix_spawn_file_actions_adddup2(&fa, pass, 4);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	r = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	if (pass >= 0)
		close(pass);
	if (r != 0) {
		close(sv[0]);
		return -r;
	}
	f->pid = pid;
	f->fd = sv[0];
	return 0;
}

void proc_forker_lost(struct proc_forker *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->pid = 0;
}

void proc_forker_stop(struct proc_forker *f)
{
	pid_t pid = f->pid, r;

	proc_forker_lost(f);
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);  /* it holds nothing: no reason to wait for it to notice */
	do
		r = waitpid(pid, NULL, 0);
	while (r < 0 && errno == EINTR);
}

int proc_forker_ask(struct proc_forker *f, int tag, int fd)
{
	struct forker_frame fr;
	struct cmsghdr *c;
	ssize_t n;

	if (f->fd < 0)
		return -ESRCH;
	frame_init(&fr);
	fr.m.tag = tag;
	c = CMSG_FIRSTHDR(&fr.mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	do
		n = sendmsg(f->fd, &fr.mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(fr.m))
		return n < 0 ? -errno : -EPROTO;
	return 0;
}

int proc_forker_answer(struct proc_forker *f, int *ret_tag, int *ret_pid)
{
	struct forker_msg m;
	ssize_t n;

	if (f->fd < 0)
		return -ESRCH;
	do
		n = recv(f->fd, &m, sizeof(m), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n != (ssize_t)sizeof(m))
		return n < 0 ? -errno : n == 0 ? -EPIPE : -EPROTO;
	*ret_tag = m.tag;
	*ret_pid = m.pid > 0 || (m.pid < 0 && m.pid > -4096) ? m.pid : -EPROTO;
	return 1;
}

void proc_forker_kill(struct proc_forker *f)
{
	if (f->pid > 0)
		kill(f->pid, SIGKILL);
	proc_forker_lost(f);
}

static void forker_reply(int fd, int tag, int pid)
{
	struct forker_msg m = { .tag = tag, .pid = pid };

	(void)!send(fd, &m, sizeof(m), MSG_NOSIGNAL);
}

/* The middle process: fork the new one, answer with its pid and exit, which re-parents it. */
static void forker_middle(int fd, pid_t parent, int tag, int passed,
			  int (*run)(int tag, int fd, void *arg), void *arg)
{
	pid_t middle = getpid(), pid;

	pid = fork();
	if (pid != 0) {
		forker_reply(fd, tag, pid < 0 ? -errno : (int)pid);
		_exit(0);
	}
	close(fd);
	/* Run only once we are the parent's child: it must be able to wait for us, and we
	 * must die with it (the caller of run sets that up against parent). */
	for (int i = 0; getppid() == middle; i++) {
		if (i == 50000)
			_exit(1);
		usleep(100);
	}
	if (getppid() != parent)
		_exit(1);
	exit(run(tag, passed, arg));
}

int proc_forker_serve(int fd, pid_t parent, int (*run)(int tag, int fd, void *arg), void *arg)
{
	for (;;) {
		struct forker_frame fr;
		struct cmsghdr *c;
		int passed = -1;
		ssize_t n;
		pid_t pid, r;

		frame_init(&fr);
		n = recvmsg(fd, &fr.mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? 0 : -errno;
		c = CMSG_FIRSTHDR(&fr.mh);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&passed, CMSG_DATA(c), sizeof(int));
		if (n != (ssize_t)sizeof(fr.m) || passed < 0) {
			if (passed >= 0)
				close(passed);
			forker_reply(fd, n == (ssize_t)sizeof(fr.m) ? fr.m.tag : -1, -EPROTO);
			continue;
		}
		fflush(NULL);  /* nothing buffered may be written twice */
		pid = fork();
		if (pid == 0)
			forker_middle(fd, parent, fr.m.tag, passed, run, arg);
		close(passed);
		if (pid < 0) {
			forker_reply(fd, fr.m.tag, -errno);
			continue;
		}
		do
			r = waitpid(pid, NULL, 0);
		while (r < 0 && errno == EINTR);
	}
}
