#include "supervisor/forker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/log.h"

#define FORK_TIMEOUT_MS 5000  /* the fork server answers in about a millisecond */

static int start(struct forker *f)
{
	char ppid_s[16], fd_s[] = "3";
	char **args = calloc((size_t)f->argc + 6, sizeof(char *));
	int n = 0, r;

	if (!args)
		return -ENOMEM;
	snprintf(ppid_s, sizeof(ppid_s), "%d", (int)getpid());
	args[n++] = f->exe;
	for (int i = 1; i < f->argc; i++)
		args[n++] = f->argv[i];
	args[n++] = "--fork-server-fd";
	args[n++] = fd_s;
	args[n++] = "--parent-pid";
	args[n++] = ppid_s;
	args[n] = NULL;
	r = proc_forker_start(&f->pf, args, f->pass_fd);
	free(args);
	if (r < 0)
		log_error("cannot start the fork server: %s", strerror(-r));
	else
		log_debug("fork server pid=%d started", (int)f->pf.pid);
	return r;
}

int forker_start(struct forker *f, int argc, char **argv, int pass_fd)
{
	size_t len = sizeof(f->exe);
	int r;

	memset(f, 0, sizeof(*f));
	f->pf.fd = -1;
	f->pass_fd = pass_fd;
	f->argc = argc;
	f->argv = argv;
	r = uv_exepath(f->exe, &len);
	if (r < 0) {
		log_error("cannot find my own executable: %s", uv_strerror(r));
		return r;
	}
	return start(f);
}

int forker_fork(struct forker *f, unsigned slot, int fd, pid_t *ret_pid)
{
	int r;

	if (f->pf.pid <= 0 && (r = start(f)) < 0)
		return r;
	return proc_forker_fork(&f->pf, (int)slot, fd, FORK_TIMEOUT_MS, ret_pid);
}

bool forker_exited(struct forker *f, pid_t pid, int status)
{
	char how[64];

	if (pid <= 0 || pid != f->pf.pid)
		return false;
	proc_describe_status(status, how, sizeof(how));
	log_warn("the fork server pid=%d exited (%s); starting another with the next worker",
		 (int)pid, how);
	proc_forker_lost(&f->pf);
	return true;
}

pid_t forker_pid(const struct forker *f)
{
	return f->pf.pid;
}

void forker_stop(struct forker *f)
{
	proc_forker_stop(&f->pf);
}
