#include "supervisor/forker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

static void on_readable(uv_poll_t *h, int status, int events);

/* Watch the fork server's socket, once the last one's poll handle has closed. */
static void watch(struct forker *f)
{
	int r;

	if (f->watch != FORKER_UNWATCHED || f->pf.fd < 0)
		return;
	r = uv_poll_init(f->loop, &f->poll, f->pf.fd);
	if (r == 0) {
		f->poll.data = f;
		f->watch = FORKER_WATCHING;
		r = uv_poll_start(&f->poll, UV_READABLE | UV_DISCONNECT, on_readable);
	}
	if (r < 0)
		log_error("cannot watch the fork server's socket: %s", uv_strerror(r));
}

static void on_poll_closed(uv_handle_t *h)
{
	struct forker *f = h->data;

	f->watch = FORKER_UNWATCHED;
	if (f->close_cb) {           /* forker_close counted it */
		h->data = f->close_data;
		f->close_cb(h);
		return;
	}
	watch(f);   /* a new fork server may have started meanwhile */
}

/* Stop watching before its descriptor is closed (proc_forker_lost, _kill, _stop). */
static void unwatch(struct forker *f)
{
	if (f->watch != FORKER_WATCHING)
		return;
	uv_poll_stop(&f->poll);
	f->watch = FORKER_CLOSING;
	uv_close((uv_handle_t *)&f->poll, on_poll_closed);
}

/* Answer the question at index i with r and pid, and take it off the list. */
static void answer(struct forker *f, size_t i, int r, pid_t pid)
{
	struct forker_ask a = f->asks[i];

	memmove(&f->asks[i], &f->asks[i + 1], (f->nasks - i - 1) * sizeof(f->asks[0]));
	f->nasks--;
	a.cb(a.data, r, r < 0 ? 0 : pid);
}

static void answer_all(struct forker *f, int r)
{
	while (f->nasks)
		answer(f, 0, r, 0);
	uv_timer_stop(&f->timer);
}

static void on_timeout(uv_timer_t *t);

/* The timer, for the oldest question still open. */
static void arm(struct forker *f)
{
	uint64_t now = uv_now(f->loop), due;

	if (!f->nasks) {
		uv_timer_stop(&f->timer);
		return;
	}
	due = f->asks[0].at + FORKER_TIMEOUT_MS;
	uv_timer_start(&f->timer, on_timeout, due > now ? due - now : 0, 0);
}

static void on_timeout(uv_timer_t *t)
{
	struct forker *f = t->data;

	if (!f->nasks)
		return;
	log_error("the fork server pid=%d did not answer within %d ms; killing it", (int)f->pf.pid,
		  FORKER_TIMEOUT_MS);
	unwatch(f);
	proc_forker_kill(&f->pf);
	answer_all(f, -ETIMEDOUT);
}

static void on_readable(uv_poll_t *h, int status, int events)
{
	struct forker *f = h->data;
	int r, tag, pid;

	(void)events;
	while (status >= 0 && (r = proc_forker_answer(&f->pf, &tag, &pid)) > 0) {
		size_t i = 0;
		while (i < f->nasks && f->asks[i].tag != tag)
			i++;
		if (i == f->nasks) {
			log_warn("the fork server answered for slot %d, which did not ask", tag);
			if (pid > 0)
				kill(pid, SIGKILL);   /* unwatched: reaped as an orphan */
			continue;
		}
		answer(f, i, pid > 0 ? 0 : pid, pid);
	}
	if (status >= 0 && r == -EPIPE) {
		/* it went away: forker_exited says so once it is reaped */
		unwatch(f);
		answer_all(f, r);
		return;
	}
	if (status < 0 || r < 0) {
		log_warn("the fork server's socket: %s; it is killed",
			 uv_strerror(status < 0 ? status : r));
		unwatch(f);
		proc_forker_kill(&f->pf);
		answer_all(f, status < 0 ? status : r);
		return;
	}
	arm(f);
}

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
	if (r < 0) {
		log_error("cannot start the fork server: %s", strerror(-r));
		return r;
	}
	log_debug("fork server pid=%d started", (int)f->pf.pid);
	watch(f);
	return 0;
}

int forker_start(struct forker *f, uv_loop_t *loop, int argc, char **argv, int pass_fd)
{
	size_t len = sizeof(f->exe);
	int r;

	memset(f, 0, sizeof(*f));
	f->pf.fd = -1;
	f->loop = loop;
	f->pass_fd = pass_fd;
	f->argc = argc;
	f->argv = argv;
	uv_timer_init(loop, &f->timer);
	f->timer.data = f;
	r = uv_exepath(f->exe, &len);
	if (r < 0) {
		log_error("cannot find my own executable: %s", uv_strerror(r));
		return r;
	}
	return start(f);
}

int forker_fork(struct forker *f, unsigned slot, int fd, forker_cb cb, void *data)
{
	int r;

	if (f->nasks == FORKER_ASKS_MAX)
		return -EAGAIN;
	if (f->pf.pid <= 0 && (r = start(f)) < 0)
		return r;
	r = proc_forker_ask(&f->pf, (int)slot, fd);
	if (r < 0) {
		log_warn("cannot ask the fork server: %s; it is killed", strerror(-r));
		unwatch(f);
		proc_forker_kill(&f->pf);
		answer_all(f, r);
		return r;
	}
	f->asks[f->nasks++] = (struct forker_ask){ .tag = (int)slot, .cb = cb, .data = data,
						   .at = uv_now(f->loop) };
	if (f->nasks == 1)
		arm(f);
	return 0;
}

bool forker_exited(struct forker *f, pid_t pid, int status)
{
	char how[64];

	if (pid <= 0 || pid != f->pf.pid)
		return false;
	proc_describe_status(status, how, sizeof(how));
	log_warn("the fork server pid=%d exited (%s); starting another with the next worker",
		 (int)pid, how);
	unwatch(f);
	proc_forker_lost(&f->pf);
	answer_all(f, -EPIPE);
	return true;
}

pid_t forker_pid(const struct forker *f)
{
	return f->pf.pid;
}

void forker_stop(struct forker *f)
{
	unwatch(f);
	proc_forker_stop(&f->pf);
	answer_all(f, -ECANCELED);
}

int forker_close(struct forker *f, uv_close_cb cb, void *data)
{
	int n = 1;

	f->close_cb = cb;
	f->close_data = data;
	unwatch(f);
	n += f->watch == FORKER_CLOSING;   /* on_poll_closed hands it to cb */
	f->timer.data = data;
	uv_close((uv_handle_t *)&f->timer, cb);
	return n;
}
