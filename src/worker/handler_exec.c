/* The exec: kind: one process per item (handler.h has what it sees). The process is a child
 * (common/child.h): its exit, its stderr tail and stopping it (at the item's timeout or a
 * cancel: SIGTERM to its group, SIGKILL after the kill grace) are child's; a run adds the
 * payload written to its stdin and the item's timer. A run lives until its process is gone,
 * which is when its result is reported. Does not log. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "worker/handler_kind.h"
#include "worker/handler_util.h"

#define STDERR_SETTLE_MS 200   /* after its exit: how long to wait for stderr's EOF */

struct exec;

/* One running process. */
struct run {
	struct exec *e;
	struct child *child;
	uv_pipe_t in, out;    /* out: its stdout, with exec_result */
	unsigned char *result;  /* what came on stdout, HANDLER_RESULT_MAX bytes at most */
	size_t result_len;
	uint64_t stdout_bytes;
	bool has_out, out_eof;
	uv_timer_t timer;     /* the item's timeout */
	uv_write_t wreq;
	unsigned char *payload;
	int open_handles;
	bool timed_out, cancelled;
};

struct exec {
	struct handler_env env;
	struct handler_util_argv args;
	struct run *run;
	handler_cb cb;
	void *cb_data;
};

static int exec_check(const char *arg, char *err, size_t errlen)
{
	struct handler_util_argv args;
	int r = handler_util_argv("exec", arg, &args, err, errlen);

	if (r == 0)
		handler_util_argv_free(&args);
	return r;
}

static int exec_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	struct exec *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return -ENOMEM;
	e->env = *env;
	r = handler_util_argv("exec", arg, &e->args, err, errlen);
	if (r < 0) {
		free(e);
		return r;
	}
	*ret = e;
	return 0;
}

static pid_t exec_pid(const void *h)
{
	const struct exec *e = h;

	return e->run ? child_pid(e->run->child) : 0;
}

/* ---- one run ---- */

static void on_run_closed(uv_handle_t *hd)
{
	struct run *run = hd->data;

	if (--run->open_handles == 0) {
		free(run->payload);
		free(run->result);
		free(run);
	}
}

/* The run is over: it lets go of its process and handles, and is freed once they are. */
static void run_end(struct run *run)
{
	if (run->e)
		run->e->run = NULL;
	child_free(run->child);
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_closed);
	if (run->has_out && !uv_is_closing((uv_handle_t *)&run->out))
		uv_close((uv_handle_t *)&run->out, on_run_closed);
	uv_close((uv_handle_t *)&run->timer, on_run_closed);
}

static void build_result(const struct run *run, struct handler_result *res)
{
	int status = child_status(run->child);
	char what[128];

	memset(res, 0, sizeof(*res));
	if (run->cancelled) {
		res->status = HANDLER_CANCELLED;
		snprintf(what, sizeof(what), "cancelled (shutdown)");
	} else if (run->timed_out) {
		res->status = HANDLER_TIMEOUT;
		snprintf(what, sizeof(what), "timed out, killed");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		   run->stdout_bytes > HANDLER_RESULT_MAX) {
		res->status = HANDLER_FAILED;
		snprintf(what, sizeof(what), "its stdout (the result) was %llu bytes, over the %u-byte "
			 "limit", (unsigned long long)run->stdout_bytes, HANDLER_RESULT_MAX);
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		res->status = HANDLER_OK;
		if (run->result_len > 0) {
			res->result = run->result;
			res->result_len = run->result_len;
			res->result_type = "application/octet-stream";
		}
		return;
	} else {
		res->status = HANDLER_FAILED;
		proc_describe_status(status, what, sizeof(what));
	}
	handler_util_error(res, what, child_tail(run->child));
}

/* Exited, and its stderr read to the end (or given up on). */
static void on_gone(struct child *c)
{
	struct run *run = child_data(c);
	struct exec *e = run->e;
	struct handler_result res;

	build_result(run, &res);
	run_end(run);  /* its memory (the result's bytes) goes once its handles are closed */
	if (e)
		e->cb(e->cb_data, &res);
}

static void on_out_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

/* Its stdout, with exec_result: the first HANDLER_RESULT_MAX bytes are kept, the rest
 * counted (and read, so that it is not stuck writing). */
static void on_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct run *run = s->data;

	if (nread > 0) {
		size_t room = HANDLER_RESULT_MAX - run->result_len;
		size_t take = (size_t)nread < room ? (size_t)nread : room;
		if (take > 0) {
			if (!run->result)
				run->result = malloc(HANDLER_RESULT_MAX);
			if (run->result) {
				memcpy(run->result + run->result_len, buf->base, take);
				run->result_len += take;
			}
		}
		run->stdout_bytes += (uint64_t)nread;
	} else if (nread < 0 && !run->out_eof) {
		run->out_eof = true;
		uv_read_stop(s);
		child_release(run->child);
	}
}

/* Read its stdout until EOF (the run is over only then). Returns 0 or a libuv error. */
static int run_watch_stdout(struct run *run, int stdout_fd)
{
	int r = uv_pipe_open(&run->out, stdout_fd);

	if (r < 0) {
		close(stdout_fd);
		return r;
	}
	child_hold(run->child);
	r = uv_read_start((uv_stream_t *)&run->out, on_out_alloc, on_out_read);
	if (r < 0) {
		run->out_eof = true;
		child_release(run->child);
	}
	return r;
}

static void on_timeout(uv_timer_t *t)
{
	struct run *run = t->data;

	run->timed_out = true;
	child_stop(run->child, run->e ? run->e->env.kill_grace_ms : 1000);
}

static void on_stdin_written(uv_write_t *req, int status)
{
	struct run *run = req->data;

	/* A handler that does not read its stdin is its own business: EPIPE is fine. */
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_closed);
}

/* Write the payload to the process's stdin (then close it). Returns 0 or a libuv error. */
static int run_feed(struct run *run, int stdin_fd, size_t len)
{
	uv_buf_t b;
	int r;

	r = uv_pipe_open(&run->in, stdin_fd);
	if (r < 0) {
		close(stdin_fd);
		return r;
	}
	b = uv_buf_init((char *)(run->payload ? run->payload : (unsigned char *)""), (unsigned)len);
	r = uv_write(&run->wreq, (uv_stream_t *)&run->in, &b, 1, on_stdin_written);
	if (r < 0)
		uv_close((uv_handle_t *)&run->in, on_run_closed);
	return 0;
}

static int exec_run(void *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct exec *e = h;
	struct child_opts opts = { .group = true, .settle_ms = STDERR_SETTLE_MS, .on_gone = on_gone };
	struct handler_util_env env;
	struct proc_child pc = { .pid = 0, .stdin_fd = -1, .stderr_fd = -1, .stdout_fd = -1 };
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
		r = proc_spawn_io(e->args.argv, env.vars, e->env.exec_result, &pc);
		handler_util_env_free(&env);
	}
	opts.stderr_fd = pc.stderr_fd;
	opts.data = run;
	if (r == 0 && (r = child_new(e->env.reaper, pc.pid, &opts, &run->child)) < 0) {
		proc_kill_group(pc.pid, SIGKILL);  /* unwatched: the worker reaps it at exit */
		close(pc.stdin_fd);
		if (pc.stdout_fd >= 0)
			close(pc.stdout_fd);
	}
	if (r < 0) {
		free(run->payload);
		free(run);
		return r;
	}
	e->cb = cb;
	e->cb_data = data;
	e->run = run;
	run->e = e;
	uv_pipe_init(e->env.loop, &run->in, 0);
	uv_timer_init(e->env.loop, &run->timer);
	run->in.data = run->timer.data = run->wreq.data = run;
	run->open_handles = 2;
	if (e->env.exec_result) {
		uv_pipe_init(e->env.loop, &run->out, 0);
		run->out.data = run;
		run->has_out = true;
		run->open_handles++;
		if (run_watch_stdout(run, pc.stdout_fd) < 0)
			child_kill(run->child);  /* unwatched stdout: it must not run */
	}
	if (run_feed(run, pc.stdin_fd, job->payload_len) < 0)
		child_kill(run->child);  /* it runs without its stdin: the result says how it ended */
	uv_timer_start(&run->timer, on_timeout, job->timeout_ms ? job->timeout_ms : 1, 0);
	return 0;
}

static void exec_cancel(void *h)
{
	struct exec *e = h;
	struct run *run = e->run;

	if (!run || child_exited(run->child) || run->cancelled)
		return;
	run->cancelled = true;
	uv_timer_stop(&run->timer);
	child_stop(run->child, e->env.kill_grace_ms);
}

static void exec_free(void *h)
{
	struct exec *e = h;

	if (!e)
		return;
	if (e->run) {
		child_kill(e->run->child);
		run_end(e->run);
	}
	handler_util_argv_free(&e->args);
	free(e);
}

const struct handler_kind handler_exec = {
	.prefix = "exec:", .takes_arg = true, .is_inline = false,
	.check = exec_check, .make = exec_make, .free = exec_free, .run = exec_run,
	.cancel = exec_cancel, .pid = exec_pid,
};
