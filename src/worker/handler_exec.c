#include "worker/handler_exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/handler_util.h"
#include "common/proc.h"

#define STDERR_SETTLE_MS 200

/* One running process. Lives until all of its handles are closed, which may be after the
 * result went to the worker. */
struct run {
	struct handler_exec *e;
	pid_t pid;
	uv_pipe_t in, err;
	uv_timer_t timer;
	uv_write_t wreq;
	unsigned char *payload;
	int open_handles;
	bool exited, err_eof, timed_out, cancelled, term_sent, reported;
	int status;
	struct handler_util_tail tail;
};

struct handler_exec {
	uv_loop_t *loop;
	unsigned kill_grace_ms;
	struct handler_util_argv args;
	uv_signal_t sigchld;
	bool sigchld_started;
	struct run *run;
	handler_cb cb;
	void *cb_data;
};

static void on_sigchld(uv_signal_t *s, int signum);

int handler_exec_new(uv_loop_t *loop, const char *cmd, unsigned kill_grace_ms,
		     struct handler_exec **ret, char *err, size_t errlen)
{
	struct handler_exec *e = calloc(1, sizeof(*e));
	int r = -ENOMEM;

	if (!e)
		goto fail;
	e->loop = loop;
	e->kill_grace_ms = kill_grace_ms;
	r = handler_util_argv("exec", cmd, &e->args, err, errlen);
	if (r < 0)
		goto fail;
	r = uv_signal_init(loop, &e->sigchld);
	if (r < 0)
		goto fail;
	e->sigchld.data = e;
	e->sigchld_started = true;
	r = uv_signal_start(&e->sigchld, on_sigchld, SIGCHLD);
	if (r < 0)
		goto fail;
	*ret = e;
	return 0;
fail:
	if (r != -EINVAL)
		snprintf(err, errlen, "exec handler: %s", strerror(-r));
	handler_exec_free(e);
	return r;
}

static void on_signal_closed(uv_handle_t *hd)
{
	struct handler_exec *e = hd->data;

	handler_util_argv_free(&e->args);
	free(e);
}

void handler_exec_free(struct handler_exec *e)
{
	if (!e)
		return;
	if (e->run) {
		proc_kill_group(e->run->pid, SIGKILL);
		e->run->e = NULL;
		e->run = NULL;
	}
	if (e->sigchld_started) {
		uv_close((uv_handle_t *)&e->sigchld, on_signal_closed);
		return;
	}
	handler_util_argv_free(&e->args);
	free(e);
}

pid_t handler_exec_pid(const struct handler_exec *e)
{
	return e->run ? e->run->pid : 0;
}

/* ---- one run ---- */

static void on_run_handle_closed(uv_handle_t *hd)
{
	struct run *run = hd->data;

	if (--run->open_handles == 0) {
		free(run->payload);
		free(run);
	}
}

static void run_close(struct run *run)
{
	uv_handle_t *hs[] = { (uv_handle_t *)&run->in, (uv_handle_t *)&run->err,
			      (uv_handle_t *)&run->timer };

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (!uv_is_closing(hs[i]))
			uv_close(hs[i], on_run_handle_closed);
}

static void build_result(struct run *run, struct handler_result *res)
{
	char what[128];

	memset(res, 0, sizeof(*res));
	if (run->cancelled) {
		res->status = HANDLER_CANCELLED;
		snprintf(what, sizeof(what), "cancelled (shutdown)");
	} else if (run->timed_out) {
		res->status = HANDLER_TIMEOUT;
		snprintf(what, sizeof(what), "timed out, killed");
	} else if (WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0) {
		res->status = HANDLER_OK;
		return;
	} else {
		res->status = HANDLER_FAILED;
		proc_describe_status(run->status, what, sizeof(what));
	}
	handler_util_error(res, what, &run->tail);
}

static void run_report(struct run *run)
{
	struct handler_exec *e = run->e;
	struct handler_result res;

	if (run->reported)
		return;
	run->reported = true;
	run_close(run);
	if (!e)
		return;
	e->run = NULL;
	build_result(run, &res);
	e->cb(e->cb_data, &res);
}

static void on_settle(uv_timer_t *t)
{
	run_report(t->data);
}

static void on_kill_timer(uv_timer_t *t)
{
	struct run *run = t->data;

	if (run->exited)
		return;
	if (!run->term_sent) {
		run->term_sent = true;
		proc_kill_group(run->pid, SIGTERM);
		uv_timer_start(&run->timer, on_kill_timer, run->e ? run->e->kill_grace_ms : 1000, 0);
		return;
	}
	proc_kill_group(run->pid, SIGKILL);
}

static void on_timeout(uv_timer_t *t)
{
	struct run *run = t->data;

	run->timed_out = true;
	on_kill_timer(t);
}

static void on_err_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[4096];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

static void on_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct run *run = s->data;

	if (nread > 0) {
		handler_util_tail_add(&run->tail, buf->base, (size_t)nread);
		return;
	}
	if (nread == 0)
		return;
	run->err_eof = true;
	uv_read_stop(s);
	if (run->exited)
		run_report(run);
}

static void on_exited(struct run *run, int status)
{
	run->exited = true;
	run->status = status;
	/* Handles are reused for the settle wait: give stderr a moment to drain. */
	if (run->err_eof) {
		run_report(run);
		return;
	}
	uv_timer_stop(&run->timer);
	uv_timer_start(&run->timer, on_settle, STDERR_SETTLE_MS, 0);
}

static void on_sigchld(uv_signal_t *s, int signum)
{
	struct handler_exec *e = s->data;
	int status;

	if (e->run && !e->run->exited && proc_reap(e->run->pid, &status) == 1)
		on_exited(e->run, status);
}

static void on_stdin_written(uv_write_t *req, int status)
{
	struct run *run = req->data;

	/* A handler that does not read its stdin is its own business: EPIPE is fine. */
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_handle_closed);
}

static int run_start_io(struct run *run, const struct proc_child *child, size_t len)
{
	uv_loop_t *loop = run->e->loop;
	uv_buf_t b;
	int r;

	uv_pipe_init(loop, &run->in, 0);
	uv_pipe_init(loop, &run->err, 0);
	uv_timer_init(loop, &run->timer);
	run->in.data = run->err.data = run->timer.data = run->wreq.data = run;
	run->open_handles = 3;
	r = uv_pipe_open(&run->in, child->stdin_fd);
	if (r == 0)
		r = uv_pipe_open(&run->err, child->stderr_fd);
	if (r == 0)
		r = uv_read_start((uv_stream_t *)&run->err, on_err_alloc, on_err_read);
	if (r < 0)
		return r;
	b = uv_buf_init((char *)(run->payload ? run->payload : (unsigned char *)""), (unsigned)len);
	r = uv_write(&run->wreq, (uv_stream_t *)&run->in, &b, 1, on_stdin_written);
	if (r < 0)
		uv_close((uv_handle_t *)&run->in, on_run_handle_closed);
	return 0;
}

int handler_exec_run(struct handler_exec *e, const struct handler_job *job, handler_cb cb,
		     void *data)
{
	struct handler_util_env env;
	struct proc_child child;
	struct run *run;
	int r;

	if (e->run)
		return -EBUSY;
	run = calloc(1, sizeof(*run));
	if (!run || (job->payload_len && !(run->payload = malloc(job->payload_len)))) {
		free(run);
		return -ENOMEM;
	}
	if (job->payload_len)
		memcpy(run->payload, job->payload, job->payload_len);
	r = handler_util_env(job, &env);
	if (r == 0) {
		r = proc_spawn(e->args.argv, env.vars, &child);
		handler_util_env_free(&env);
	}
	if (r < 0) {
		free(run->payload);
		free(run);
		return r;
	}
	e->cb = cb;
	e->cb_data = data;
	run->e = e;
	run->pid = child.pid;
	e->run = run;
	r = run_start_io(run, &child, job->payload_len);
	if (r < 0) {
		/* The process runs without its pipes: kill it, the result reports the failure. */
		proc_kill_group(run->pid, SIGKILL);
		return 0;
	}
	uv_timer_start(&run->timer, on_timeout, job->timeout_ms ? job->timeout_ms : 1, 0);
	return 0;
}

void handler_exec_cancel(struct handler_exec *e)
{
	struct run *run = e->run;

	if (!run || run->exited || run->cancelled)
		return;
	run->cancelled = true;
	uv_timer_stop(&run->timer);
	on_kill_timer(&run->timer);
}
