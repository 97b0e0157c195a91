/* The exec: kind: one process per item, up to env->concurrency at once (handler.h has what
 * each sees). Jobs wait in a queue; they are started from a 0 ms timer (the kick), never from
 * inside submit, whenever fewer than the concurrency run. A run's process is a child
 * (common/child.h): its exit, its stderr tail and stopping it (at the item's timeout or a
 * stop: SIGTERM to its group, SIGKILL after the kill grace) are child's; a run adds the
 * payload written to its stdin, its stdout read as the result (exec_result), its channel (a
 * pipe on its descriptor 3, CLAIMD_ENQUEUE_FD) read as the jobs it adds (a job line each:
 * follow-up jobs, passed on only when it exits 0) and the item's timer. A run holds its slot
 * (its scoreboard entry) until its process is gone, which is when its result is reported; its
 * memory lives until its handles are closed. Does not log. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/proc.h"
#include "worker/handler_kind.h"
#include "worker/handler_util.h"

/* After its exit: how long to wait for EOF on its stderr, stdout and channel (a process it
 * started may hold them open: then the run goes on with what came). */
#define STDERR_SETTLE_MS 200
#define EXEC_ENQUEUE_MAX (1024u * 1024)   /* bytes a run writes to its channel (as so:'s) */

struct exec;

/* Why we stopped a run's process. */
enum run_stop {
	RUN_STOP_NONE,       /* we did not: its exit is its own */
	RUN_STOP_TIMEOUT,    /* it ran past its timeout: HANDLER_TIMEOUT */
	RUN_STOP_SHUTDOWN,   /* handler_stop_all: HANDLER_RELEASED */
	RUN_STOP_CANCEL,     /* handler_cancel: HANDLER_FAILED */
};

/* A pipe a run reads from its process to EOF: its stdout (the result) or its channel (the
 * jobs it adds). The first max bytes are kept, the rest counted (and read, so that the
 * process is not stuck writing). */
struct sink {
	uv_pipe_t pipe;
	struct run *run;
	char *buf;               /* grown as bytes come, to max at most */
	size_t len, cap, max;
	uint64_t bytes;          /* all that came */
	bool open, eof, nomem;   /* open: pipe is initialised (a handle of the run's) */
};

/* One running process. */
struct run {
	struct exec *e;          /* NULL once its handler let go of it */
	struct handler_job *job;
	struct child *child;
	uv_pipe_t in;
	struct sink out;         /* its stdout, with exec_result */
	struct sink chan;        /* its channel */
	uv_timer_t timer;        /* the item's timeout */
	uv_write_t wreq;
	int open_handles;
	enum run_stop stop;
};

struct exec {
	struct handler_env env;
	struct handler_util_argv args;
	struct handler_util_queue queue;
	struct handler_util_slots slots;
	struct run **runs;       /* by slot; NULL: free */
	uv_timer_t kick;         /* 0 ms: start what waits */
	bool closing;            /* exec_free was called: its memory goes with the kick */
};

static void kick(struct exec *e);

static int exec_check(const char *arg, char *err, size_t errlen)
{
	struct handler_util_argv args;
	int r = handler_util_argv("exec", arg, &args, err, errlen);

	if (r == 0)
		handler_util_argv_free(&args);
	return r;
}

/* ---- one run ---- */

/* One of run's handles is closed: the last frees it. */
static void run_closed(struct run *run)
{
	if (--run->open_handles == 0) {
		free(run->out.buf);
		free(run->chan.buf);
		free(run);
	}
}

static void on_run_closed(uv_handle_t *hd)
{
	run_closed(hd->data);
}

static void on_sink_closed(uv_handle_t *hd)
{
	const struct sink *k = hd->data;

	run_closed(k->run);
}

/* The run is over: its slot is free, it lets go of its process and handles, and is freed once
 * they are closed (its result's bytes stay until then). */
static void run_end(struct run *run)
{
	struct exec *e = run->e;

	if (e) {
		unsigned slot = run->job->kslot;
		sb_end(&e->env.scoreboard->entries[slot]);
		handler_util_slot_put(&e->slots, slot);
		e->runs[slot] = NULL;
		run->e = NULL;
	}
	child_free(run->child);
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_closed);
	if (run->out.open && !uv_is_closing((uv_handle_t *)&run->out.pipe))
		uv_close((uv_handle_t *)&run->out.pipe, on_sink_closed);
	if (run->chan.open && !uv_is_closing((uv_handle_t *)&run->chan.pipe))
		uv_close((uv_handle_t *)&run->chan.pipe, on_sink_closed);
	uv_close((uv_handle_t *)&run->timer, on_run_closed);
}

/* Whether k lost bytes it was to keep (more than its max came, or no memory for them): what
 * then says so, naming k as name. */
static bool sink_lost(const struct sink *k, const char *name, char *what, size_t whatlen)
{
	if (k->bytes > k->max)
		snprintf(what, whatlen, "%s was %llu bytes, over the %zu-byte limit", name,
			 (unsigned long long)k->bytes, k->max);
	else if (k->nomem)
		snprintf(what, whatlen, "%s: out of memory for it", name);
	return k->bytes > k->max || k->nomem;
}

/* Whether its channel holds a job line: blank lines alone add nothing (and are no error). */
static bool chan_has_lines(const struct sink *k)
{
	for (size_t i = 0; i < k->len; i++)
		if (k->buf[i] != '\n' && k->buf[i] != '\r')
			return true;
	return false;
}

static void build_result(const struct run *run, struct handler_result *res)
{
	int status = child_status(run->child);
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	char what[160];

	memset(res, 0, sizeof(*res));
	if (run->stop == RUN_STOP_SHUTDOWN) {
		res->status = HANDLER_RELEASED;
		snprintf(what, sizeof(what), "stopped: the worker is stopping");
	} else if (run->stop == RUN_STOP_CANCEL) {
		res->status = HANDLER_FAILED;
		snprintf(what, sizeof(what), "cancelled: stopped (SIGTERM, SIGKILL after %u ms)",
			 run->e ? run->e->env.kill_grace_ms : 0);
	} else if (run->stop == RUN_STOP_TIMEOUT) {
		res->status = HANDLER_TIMEOUT;
		snprintf(what, sizeof(what), "timed out after %u ms, killed", run->job->timeout_ms);
	} else if (ok && (sink_lost(&run->out, "its stdout (the result)", what, sizeof(what)) ||
			  sink_lost(&run->chan, "its descriptor 3 (the jobs it adds)", what,
				    sizeof(what)))) {
		res->status = HANDLER_FAILED;
	} else if (ok) {
		res->status = HANDLER_OK;
		if (run->out.len > 0) {
			res->result = (const unsigned char *)run->out.buf;
			res->result_len = run->out.len;
			res->result_type = "application/octet-stream";
		}
		if (chan_has_lines(&run->chan)) {
			res->enqueue = run->chan.buf;
			res->enqueue_len = run->chan.len;
		}
		return;
	} else {
		res->status = HANDLER_FAILED;
		proc_describe_status(status, what, sizeof(what));
	}
	handler_util_error(res, what, child_tail(run->child));
}

/* Exited, and its stderr (and stdout) read to the end or given up on. */
static void on_gone(struct child *c)
{
	struct run *run = child_data(c);
	struct exec *e = run->e;
	struct handler_job *job = run->job;
	struct handler_result res;

	build_result(run, &res);
	run_end(run);
	if (!e)
		return;
	e->env.hooks.done(e->env.hooks.data, job, &res);
	kick(e);
}

static void on_sink_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

/* n more bytes came on k: kept while it has room under its max. */
static void sink_take(struct sink *k, const char *p, size_t n)
{
	size_t take = n < k->max - k->len ? n : k->max - k->len, cap = k->cap ? k->cap : 4096;
	char *more;

	k->bytes += n;
	if (take == 0 || k->nomem)
		return;
	if (k->len + take > k->cap) {
		while (cap < k->len + take)
			cap *= 2;
		cap = cap < k->max ? cap : k->max;
		if (!(more = realloc(k->buf, cap))) {
			k->nomem = true;
			return;
		}
		k->buf = more;
		k->cap = cap;
	}
	memcpy(k->buf + k->len, p, take);
	k->len += take;
}

static void on_sink_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct sink *k = s->data;

	if (nread > 0) {
		sink_take(k, buf->base, (size_t)nread);
	} else if (nread < 0 && !k->eof) {
		k->eof = true;
		uv_read_stop(s);
		child_release(k->run->child);
	}
}

/* Read fd into k, keeping max bytes, until EOF: the run is over only then (or once the settle
 * wait after its exit is over). Returns 0 or a libuv error (fd closed). */
static int sink_watch(uv_loop_t *loop, struct run *run, struct sink *k, int fd, size_t max)
{
	int r;

	k->run = run;
	k->max = max;
	uv_pipe_init(loop, &k->pipe, 0);
	k->pipe.data = k;
	k->open = true;
	run->open_handles++;
	r = uv_pipe_open(&k->pipe, fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	child_hold(run->child);
	r = uv_read_start((uv_stream_t *)&k->pipe, on_sink_alloc, on_sink_read);
	if (r < 0) {
		k->eof = true;
		child_release(run->child);
	}
	return r;
}

static void on_timeout(uv_timer_t *t)
{
	struct run *run = t->data;

	if (!run->e || run->stop != RUN_STOP_NONE)
		return;
	run->stop = RUN_STOP_TIMEOUT;
	child_stop(run->child, run->e->env.kill_grace_ms);
}

static void on_stdin_written(uv_write_t *req, int status)
{
	struct run *run = req->data;

	/* A handler that does not read its stdin is its own business: EPIPE is fine. */
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_closed);
}

/* Write the payload to the process's stdin, then close it. The job's payload stays valid
 * until done, and run_end closes the pipe (no write after that) before done is called.
 * Returns 0 or a libuv error. */
static int run_feed(struct run *run, int stdin_fd)
{
	const struct handler_job *job = run->job;
	uv_buf_t b;
	int r;

	r = uv_pipe_open(&run->in, stdin_fd);
	if (r < 0) {
		close(stdin_fd);
		return r;
	}
	/* libuv only reads the buffer: the cast drops a const it has no way to take. */
	b = uv_buf_init((char *)(uintptr_t)(job->payload ? job->payload : (const unsigned char *)""),
			(unsigned)job->payload_len);
	r = uv_write(&run->wreq, (uv_stream_t *)&run->in, &b, 1, on_stdin_written);
	if (r < 0)
		uv_close((uv_handle_t *)&run->in, on_run_closed);
	return r;
}

/* Its process is started and watched: the run's handles. */
static void run_watch(struct exec *e, struct run *run, const struct proc_child *pc)
{
	uv_pipe_init(e->env.loop, &run->in, 0);
	uv_timer_init(e->env.loop, &run->timer);
	run->in.data = run->timer.data = run->wreq.data = run;
	run->open_handles = 2;
	/* An unwatched stdout or channel: it must not run (it could block writing to it). */
	if (e->env.exec_result &&
	    sink_watch(e->env.loop, run, &run->out, pc->stdout_fd, HANDLER_RESULT_MAX) < 0)
		child_kill(run->child);
	if (pc->channel_fd >= 0 &&
	    sink_watch(e->env.loop, run, &run->chan, pc->channel_fd, EXEC_ENQUEUE_MAX) < 0)
		child_kill(run->child);
	if (run_feed(run, pc->stdin_fd) < 0)
		child_kill(run->child);  /* it runs without its stdin: the result says how it ended */
	if (uv_timer_start(&run->timer, on_timeout, run->job->timeout_ms, 0) < 0)
		child_kill(run->child);  /* no timeout: it must not run */
}

/* Start job's process in a free slot. Returns 0, or -errno (nothing started, the slot free). */
static int run_start(struct exec *e, struct handler_job *job)
{
	struct child_opts opts = { .group = true, .settle_ms = STDERR_SETTLE_MS, .on_gone = on_gone };
	struct proc_child pc = { .pid = 0, .stdin_fd = -1, .stderr_fd = -1, .stdout_fd = -1,
				 .channel_fd = -1 };
	unsigned io = PROC_SPAWN_CHANNEL | (e->env.exec_result ? PROC_SPAWN_STDOUT : 0);
	struct handler_util_env env;
	struct run *run = calloc(1, sizeof(*run));
	int slot, r;

	if (!run)
		return -ENOMEM;
	slot = handler_util_slot_take(&e->slots);
	if (slot < 0) {
		free(run);
		return -EBUSY;   /* not reached: the caller checked for a free slot */
	}
	job->kslot = (unsigned)slot;
	job->kstarted_ns = uv_hrtime();
	job->deadline_ms = handler_util_now_ms() + job->timeout_ms;
	r = handler_util_env(job, PROC_CHANNEL_FD, &env);
	if (r == 0) {
		r = proc_spawn_io(e->args.argv, env.vars, io, e->env.as, &pc);
		handler_util_env_free(&env);
	}
	opts.stderr_fd = pc.stderr_fd;
	opts.data = run;
	if (r == 0 && (r = child_new(e->env.reaper, pc.pid, &opts, &run->child)) < 0) {
		proc_kill_group(pc.pid, SIGKILL);  /* unwatched: the worker reaps it at exit */
		close(pc.stdin_fd);
		if (pc.stdout_fd >= 0)
			close(pc.stdout_fd);
		if (pc.channel_fd >= 0)
			close(pc.channel_fd);
	}
	if (r < 0) {
		handler_util_slot_put(&e->slots, (unsigned)slot);
		free(run);
		return r;
	}
	run->e = e;
	run->job = job;
	e->runs[slot] = run;
	sb_start(&e->env.scoreboard->entries[slot], job->id, job->token, pc.pid, 0);
	run_watch(e, run, &pc);
	return 0;
}

/* ---- the queue ---- */

/* Start queued jobs while a slot is free. A done hook called from here may submit more: they
 * are taken in the same pass. */
static void pump(struct exec *e)
{
	struct handler_job *job;
	char what[300];
	int r;

	while (!e->closing && e->slots.nused < e->slots.n &&
	       (job = handler_util_queue_pop(&e->queue))) {
		if (handler_util_lease_lapsed(e->env.lease_ok_ns)) {
			handler_util_report(&e->env.hooks, job, HANDLER_RELEASED,
					    "not started: the worker's lease on it may have ended");
			continue;
		}
		r = run_start(e, job);
		if (r < 0) {
			snprintf(what, sizeof(what), "cannot start %s: %s", e->args.argv[0],
				 strerror(-r));
			handler_util_report(&e->env.hooks, job, HANDLER_FAILED, what);
		}
	}
}

static void on_kick(uv_timer_t *t)
{
	pump(t->data);
}

/* Start what waits on the next loop turn. */
static void kick(struct exec *e)
{
	if (!e->closing && e->queue.n > 0)
		uv_timer_start(&e->kick, on_kick, 0, 0);
}

/* ---- the kind ---- */

static int exec_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	struct exec *e = calloc(1, sizeof(*e));
	int r = -ENOMEM;

	if (!e)
		return r;
	e->env = *env;
	handler_util_slots_init(&e->slots, env->concurrency);
	e->runs = calloc(e->slots.n, sizeof(*e->runs));
	if (!e->runs)
		goto fail;
	r = handler_util_argv("exec", arg, &e->args, err, errlen);
	if (r < 0)
		goto fail;
	r = uv_timer_init(env->loop, &e->kick);
	if (r < 0) {
		handler_util_argv_free(&e->args);
		goto fail;
	}
	e->kick.data = e;
	*ret = e;
	return 0;
fail:
	free(e->runs);
	free(e);
	return r;
}

static void on_kick_closed(uv_handle_t *hd)
{
	struct exec *e = hd->data;

	free(e->runs);
	free(e);
}

static void exec_free(void *h)
{
	struct exec *e = h;

	if (!e)
		return;
	e->closing = true;
	for (unsigned i = 0; i < e->slots.n; i++) {
		struct run *run = e->runs[i];
		if (run) {
			child_kill(run->child);
			run_end(run);
		}
	}
	handler_util_argv_free(&e->args);
	uv_close((uv_handle_t *)&e->kick, on_kick_closed);
}

static int exec_submit(void *h, struct handler_job *job)
{
	struct exec *e = h;
	int r;

	if (e->closing)
		return -EINVAL;
	r = uv_timer_start(&e->kick, on_kick, 0, 0);
	if (r < 0)
		return r;
	handler_util_queue_push(&e->queue, job);
	return 0;
}

static size_t exec_withdraw(void *h, struct handler_job **out, size_t max)
{
	struct exec *e = h;

	return handler_util_queue_withdraw(&e->queue, out, max);
}

static void exec_stop_all(void *h, enum handler_stop why)
{
	struct exec *e = h;

	for (unsigned i = 0; i < e->slots.n; i++) {
		struct run *run = e->runs[i];
		if (!run || child_exited(run->child) || run->stop != RUN_STOP_NONE)
			continue;
		run->stop = RUN_STOP_SHUTDOWN;
		uv_timer_stop(&run->timer);
		child_stop(run->child, e->env.kill_grace_ms);
	}
}

static bool exec_cancel(void *h, struct handler_job *job)
{
	struct exec *e = h;
	struct run *run;

	if (handler_util_queue_remove(&e->queue, job))
		return true;
	run = job->kslot < e->slots.n ? e->runs[job->kslot] : NULL;
	if (!run || run->job != job || child_exited(run->child) || run->stop != RUN_STOP_NONE)
		return false;   /* ending, or stopped already: its done follows */
	run->stop = RUN_STOP_CANCEL;
	uv_timer_stop(&run->timer);
	child_stop(run->child, e->env.kill_grace_ms);
	return false;
}

static unsigned exec_running(const void *h)
{
	const struct exec *e = h;

	return e->slots.nused;
}

static size_t exec_queued(const void *h)
{
	const struct exec *e = h;

	return e->queue.n;
}

const struct handler_kind handler_exec = {
	.prefix = "exec:", .takes_arg = true,
	.check = exec_check, .make = exec_make, .free = exec_free, .submit = exec_submit,
	.withdraw = exec_withdraw, .stop_all = exec_stop_all, .cancel = exec_cancel,
	.running = exec_running,
	.queued = exec_queued,
};
