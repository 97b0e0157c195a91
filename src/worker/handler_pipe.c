/* The pipe: kind. A handler_pipe has at most one co-process (struct coproc) at a time; a
 * coproc lives until its process has exited and its pipes are closed, which may be after
 * the handler let go of it. An item whose co-process must be stopped (bad reply, timeout,
 * cancel) is reported only once that co-process is gone, so two never overlap. */
#include "worker/handler_pipe.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/proc.h"
#include "worker/handler_kind.h"
#include "worker/handler_util.h"
#include "worker/pipe_reply.h"
#include "worker/pipe_request.h"

#define SETTLE_MS 200           /* after exit: how long to wait for the pipes' EOF */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

/* A co-process: a child (common/child.h: its exit, stderr tail, SIGTERM -> SIGKILL), whose
 * stdin we write and whose stdout we read; it is gone once the child is and its stdout is at
 * EOF (a hold on the child). */
struct coproc {
	struct handler_pipe *p;  /* NULL once the handler let go of it */
	struct child *child;
	uv_pipe_t in, out;
	int open_handles;
	bool out_eof, stopping, replied, gone;
	char why[200];           /* why we stopped it */
	char *line;              /* a reply line not complete yet */
	size_t line_len, line_cap;
};

/* A request line in flight, with its write request. */
struct wreq {
	uv_write_t w;
	size_t len;
	char data[];
};

struct handler_pipe {
	struct handler_env env;
	struct handler_util_argv args;
	uv_timer_t item_timer, start_timer;
	int open_handles;
	struct coproc *cp;
	struct backoff backoff;  /* co-processes that exit before their first reply */
	uint64_t not_before;     /* uv_now(): no start before this */
	/* the item in flight */
	bool busy, decided;
	uint64_t id;
	unsigned timeout_ms;
	struct wreq *pending;    /* its request, until written to a co-process */
	struct pipe_reply reply;    /* its result, once decided (reply.res) */
	handler_cb cb;
	handler_progress_cb on_progress;
	void *cb_data;
};

static void start_next(struct handler_pipe *p);

/* ---- the request ---- */

static struct wreq *make_request(const struct handler_job *job)
{
	size_t len = pipe_request(job, NULL);
	struct wreq *req = malloc(sizeof(*req) + len);

	if (!req)
		return NULL;
	req->len = pipe_request(job, req->data);
	return req;
}

/* ---- the item ---- */

static void report(struct handler_pipe *p)
{
	struct pipe_reply reply = p->reply;

	memset(&p->reply, 0, sizeof(p->reply));
	p->busy = p->decided = false;
	free(p->pending);
	p->pending = NULL;
	uv_timer_stop(&p->item_timer);
	uv_timer_stop(&p->start_timer);
	p->cb(p->cb_data, &reply.res);
	pipe_reply_clear(&reply);
}

/* The item's outcome is known; it is reported when its co-process is gone. */
static void decide(struct handler_pipe *p, int status, const char *error)
{
	if (!p->busy || p->decided)
		return;
	p->decided = true;
	pipe_reply_clear(&p->reply);
	p->reply.res.status = status;
	snprintf(p->reply.res.error, sizeof(p->reply.res.error), "%s", error);
}

/* Report an item that never reached a co-process. */
static void report_unsent(struct handler_pipe *p, int status, const char *error)
{
	decide(p, status, error);
	report(p);
}

/* ---- the co-process ---- */

static void on_cp_closed(uv_handle_t *hd)
{
	struct coproc *cp = hd->data;

	if (--cp->open_handles == 0) {
		free(cp->line);
		free(cp);
	}
}

/* Let go of cp's process and pipes; cp is freed once they are closed. */
static void coproc_close(struct coproc *cp)
{
	uv_handle_t *hs[] = { (uv_handle_t *)&cp->in, (uv_handle_t *)&cp->out };

	child_free(cp->child);
	cp->child = NULL;
	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (!uv_is_closing(hs[i]))
			uv_close(hs[i], on_cp_closed);
}

/* Stop cp: SIGTERM to its group, SIGKILL after the kill grace. What it writes from now on
 * is read (to see the EOF) and dropped. */
static void coproc_stop(struct coproc *cp, const char *why)
{
	if (cp->stopping)
		return;
	cp->stopping = true;
	snprintf(cp->why, sizeof(cp->why), "%s", why);
	child_stop(cp->child, cp->p ? cp->p->env.kill_grace_ms : 1000);
}

static void note_startup_death(struct handler_pipe *p)
{
	p->not_before = uv_now(p->env.loop) + backoff_next(&p->backoff);
}

/* The item's result when its co-process went away without a reply or our decision. */
static void decide_died(struct handler_pipe *p, struct coproc *cp)
{
	char what[480], how[128];

	proc_describe_status(child_status(cp->child), how, sizeof(how));
	if (cp->stopping)
		snprintf(what, sizeof(what), "the co-process was stopped (%s): %s", cp->why, how);
	else
		snprintf(what, sizeof(what), "the co-process exited (%s) while handling the item", how);
	decide(p, HANDLER_FAILED, "");
	handler_util_error(&p->reply.res, what, child_tail(cp->child));
}

/* The process has exited and its pipes are drained (or given up on). */
static void on_coproc_gone(struct child *c)
{
	struct coproc *cp = child_data(c);
	struct handler_pipe *p = cp->p;

	cp->gone = true;
	if (p) {
		p->cp = NULL;
		if (!cp->replied && !cp->stopping)
			note_startup_death(p);
		if (p->busy && !p->pending && !p->decided)
			decide_died(p, cp);
	}
	coproc_close(cp);
	if (!p || !p->busy)
		return;
	if (p->pending)              /* its request was for the next co-process */
		start_next(p);
	else
		report(p);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

/* One complete reply line. */
static void on_line(struct coproc *cp, const char *line, size_t len)
{
	struct handler_pipe *p = cp->p;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return;
	if (!p || !p->busy || p->pending || p->decided) {
		coproc_stop(cp, "it wrote to its stdout with no item in flight");
		return;
	}
	if (pipe_reply_parse(line, len, p->id, &p->reply) < 0) {
		p->decided = true;
		coproc_stop(cp, "bad reply");
		return;
	}
	if (p->reply.progress) {
		if (p->on_progress)
			p->on_progress(p->cb_data, p->reply.text, p->reply.text_len);
		pipe_reply_clear(&p->reply);
		return;
	}
	cp->replied = true;
	backoff_reset(&p->backoff);
	p->decided = true;
	report(p);
}

static int line_append(struct coproc *cp, const char *s, size_t n)
{
	size_t need = cp->line_len + n, cap = cp->line_cap ? cp->line_cap : 4096;
	char *q;

	if (need > cp->line_cap) {
		while (cap < need)
			cap *= 2;
		q = realloc(cp->line, cap);
		if (!q)
			return -ENOMEM;
		cp->line = q;
		cp->line_cap = cap;
	}
	memcpy(cp->line + cp->line_len, s, n);
	cp->line_len = need;
	return 0;
}

static void reply_too_long(struct coproc *cp, const char *why)
{
	if (cp->p)
		decide(cp->p, HANDLER_FAILED, why);
	coproc_stop(cp, why);
}

/* Split what came on stdout into lines; keep the unfinished one. */
static void out_data(struct coproc *cp, const char *s, size_t n)
{
	while (n > 0 && !cp->stopping) {
		const char *nl = memchr(s, '\n', n);
		size_t k = nl ? (size_t)(nl - s) : n;
		if (cp->line_len + k > PIPE_REPLY_MAX) {
			reply_too_long(cp, "bad reply from the co-process: longer than 1 MiB");
			return;
		}
		if (cp->line_len > 0 || !nl) {
			if (line_append(cp, s, k) < 0) {
				reply_too_long(cp, "out of memory for the co-process's reply");
				return;
			}
			if (!nl)
				return;
			size_t len = cp->line_len;
			cp->line_len = 0;    /* the text stays in cp->line while on_line reads it */
			on_line(cp, cp->line, len);
		} else {
			on_line(cp, s, k);
		}
		s += k + 1;
		n -= k + 1;
	}
}

static void on_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct coproc *cp = s->data;

	if (nread > 0) {
		out_data(cp, buf->base, (size_t)nread);
	} else if (nread < 0 && !cp->out_eof) {
		cp->out_eof = true;
		uv_read_stop(s);
		child_release(cp->child);
	}
}

static void on_written(uv_write_t *w, int status)
{
	struct coproc *cp = w->data;
	char why[120];

	free(w);  /* the uv_write_t is the first member of its struct wreq */
	if (status < 0 && status != UV_ECANCELED) {
		snprintf(why, sizeof(why), "cannot write the item to its stdin: %s", uv_strerror(status));
		coproc_stop(cp, why);
	}
}

static void send_pending(struct handler_pipe *p)
{
	struct wreq *req = p->pending;
	uv_buf_t b = uv_buf_init(req->data, (unsigned)req->len);
	char why[120];
	int r;

	p->pending = NULL;
	req->w.data = p->cp;
	r = uv_write(&req->w, (uv_stream_t *)&p->cp->in, &b, 1, on_written);
	if (r < 0) {
		free(req);
		snprintf(why, sizeof(why), "cannot write the item to its stdin: %s", uv_strerror(r));
		coproc_stop(p->cp, why);
	}
}

/* Start a co-process and make it p->cp. Returns 0 or -errno (no process then). */
static int coproc_start(struct handler_pipe *p)
{
	struct child_opts opts = { .group = true, .settle_ms = SETTLE_MS, .on_gone = on_coproc_gone };
	struct handler_util_env env;
	struct proc_child pc = { .pid = 0, .stdin_fd = -1, .stderr_fd = -1, .stdout_fd = -1 };
	struct coproc *cp = calloc(1, sizeof(*cp));
	int r = -ENOMEM;

	if (!cp)
		return r;
	r = handler_util_env(NULL, &env);
	if (r == 0) {
		r = proc_spawn_io(p->args.argv, env.vars, true, &pc);
		handler_util_env_free(&env);
	}
	opts.stderr_fd = pc.stderr_fd;
	opts.data = cp;
	if (r == 0 && (r = child_new(p->env.reaper, pc.pid, &opts, &cp->child)) < 0) {
		proc_kill_group(pc.pid, SIGKILL);  /* unwatched: the worker reaps it at exit */
		close(pc.stdin_fd);
		close(pc.stdout_fd);
	}
	if (r < 0) {
		free(cp);
		return r;
	}
	cp->p = p;
	p->cp = cp;
	uv_pipe_init(p->env.loop, &cp->in, 0);
	uv_pipe_init(p->env.loop, &cp->out, 0);
	cp->in.data = cp->out.data = cp;
	cp->open_handles = 2;
	child_hold(cp->child);  /* until its stdout's EOF */
	r = uv_pipe_open(&cp->in, pc.stdin_fd);
	if (r < 0)
		close(pc.stdin_fd);
	if (uv_pipe_open(&cp->out, pc.stdout_fd) < 0) {
		close(pc.stdout_fd);
		r = r ? r : -EBADF;
	} else if (r == 0) {
		r = uv_read_start((uv_stream_t *)&cp->out, on_alloc, on_out_read);
	}
	if (r < 0) {
		/* Without its pipes it is of no use: it goes, and the item fails. */
		cp->out_eof = true;
		child_release(cp->child);
		coproc_stop(cp, "cannot watch its pipes");
		child_kill(cp->child);
	}
	return r;
}

static void on_start_timer(uv_timer_t *t)
{
	start_next(t->data);
}

/* The item waits for a co-process: start one (after the back-off) and send it. */
static void start_next(struct handler_pipe *p)
{
	uint64_t now = uv_now(p->env.loop);
	char what[200];
	int r;

	if (p->cp)
		return;              /* the old one is on its way out: coproc_gone calls again */
	if (now < p->not_before) {
		uv_timer_start(&p->start_timer, on_start_timer, p->not_before - now, 0);
		return;
	}
	r = coproc_start(p);
	if (r < 0) {
		snprintf(what, sizeof(what), "cannot start the co-process %s: %s", p->args.argv[0],
			 strerror(-r));
		report_unsent(p, HANDLER_FAILED, what);
		return;
	}
	send_pending(p);
}

static void on_item_timeout(uv_timer_t *t)
{
	struct handler_pipe *p = t->data;
	char what[200];

	if (!p->busy || p->decided)
		return;
	if (p->pending) {
		snprintf(what, sizeof(what), "timed out after %u ms waiting for the co-process to "
			 "start (it keeps exiting at start-up)", p->timeout_ms);
		report_unsent(p, HANDLER_TIMEOUT, what);
		return;
	}
	snprintf(what, sizeof(what), "timed out after %u ms; co-process stopped", p->timeout_ms);
	decide(p, HANDLER_TIMEOUT, what);
	if (p->cp)
		coproc_stop(p->cp, "item timed out");
}

/* ---- the handler ---- */

static int pipe_check(const char *arg, char *err, size_t errlen)
{
	struct handler_util_argv args;
	int r = handler_util_argv("pipe", arg, &args, err, errlen);

	if (r == 0)
		handler_util_argv_free(&args);
	return r;
}

static int pipe_make(const struct handler_env *env, const char *arg, void **ret, char *err,
		     size_t errlen)
{
	struct handler_pipe *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->env = *env;
	p->backoff = (struct backoff)BACKOFF_INIT(BACKOFF_MIN_MS, BACKOFF_MAX_MS);
	r = handler_util_argv("pipe", arg, &p->args, err, errlen);
	if (r < 0) {
		free(p);
		return r;
	}
	uv_timer_init(env->loop, &p->item_timer);
	uv_timer_init(env->loop, &p->start_timer);
	p->open_handles = 2;
	p->item_timer.data = p->start_timer.data = p;
	*ret = p;
	return 0;
}

static void on_handle_closed(uv_handle_t *hd)
{
	struct handler_pipe *p = hd->data;

	if (--p->open_handles == 0) {
		handler_util_argv_free(&p->args);
		free(p);
	}
}

/* The co-process gets SIGTERM; its guard kills its group when the worker exits. */
static void pipe_free(void *h)
{
	struct handler_pipe *p = h;

	if (!p)
		return;
	if (p->cp) {
		p->cp->p = NULL;
		coproc_stop(p->cp, "worker stopping");
		coproc_close(p->cp);
		p->cp = NULL;
	}
	free(p->pending);
	p->pending = NULL;
	pipe_reply_clear(&p->reply);
	uv_close((uv_handle_t *)&p->item_timer, on_handle_closed);
	uv_close((uv_handle_t *)&p->start_timer, on_handle_closed);
}

static int pipe_run(void *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_pipe *p = h;
	struct wreq *req;

	if (p->busy)
		return -EBUSY;
	req = make_request(job);
	if (!req)
		return -ENOMEM;
	p->busy = true;
	p->decided = false;
	p->id = job->id;
	p->timeout_ms = job->timeout_ms ? job->timeout_ms : 1;
	p->pending = req;
	p->cb = cb;
	p->on_progress = job->on_progress;
	p->cb_data = data;
	uv_timer_start(&p->item_timer, on_item_timeout, p->timeout_ms, 0);
	if (p->cp && !p->cp->stopping && !child_exited(p->cp->child))
		send_pending(p);
	else
		start_next(p);    /* waits for a dying co-process to be gone, if need be */
	return 0;
}

static void pipe_cancel(void *h)
{
	struct handler_pipe *p = h;

	if (!p->busy || p->decided)
		return;
	if (p->pending) {
		report_unsent(p, HANDLER_CANCELLED, "cancelled (shutdown) before it started");
		return;
	}
	decide(p, HANDLER_CANCELLED, "cancelled (shutdown); co-process stopped");
	if (p->cp)
		coproc_stop(p->cp, "item cancelled");
}

static pid_t pipe_pid(const void *h)
{
	const struct handler_pipe *p = h;

	return p->cp && !child_exited(p->cp->child) ? child_pid(p->cp->child) : 0;
}

const struct handler_kind handler_pipe = {
	.prefix = "pipe:", .takes_arg = true, .is_inline = false,
	.check = pipe_check, .make = pipe_make, .free = pipe_free, .run = pipe_run,
	.cancel = pipe_cancel, .pid = pipe_pid,
};
