/* A co-process is a child (common/child.h: its exit, stderr tail, SIGTERM -> SIGKILL) whose
 * stdin we write and whose stdout we read, split into lines; it is gone once the child is and
 * its stdout is at EOF (a hold on the child). Its memory is freed when its two pipes are
 * closed, which pipe_coproc_free starts: a write or a read in progress then ends first. */
#include "worker/pipe_coproc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/proc.h"
#include "worker/handler_util.h"
#include "worker/pipe_reply.h"

#define SETTLE_MS 200           /* after exit: how long to wait for the pipes' EOF */

struct pipe_coproc {
	struct child *child;
	uv_pipe_t in, out;
	int open_handles;
	bool out_eof, stopping, faulted, freed;
	struct pipe_coproc_hooks hooks;
	char *line;              /* a line not complete yet */
	size_t line_len, line_cap;
	bool corked;
	struct pipe_coproc_line *held, *held_tail;   /* corked lines, in order */
	unsigned nheld;
	char err[PIPE_COPROC_ERR_LINE_MAX];   /* a stderr line not complete yet */
	size_t err_len;
};

#define CORK_MAX 256   /* lines in one write at most */

static void free_lines(struct pipe_coproc_line *line)
{
	while (line) {
		struct pipe_coproc_line *next = line->next;
		free(line);
		line = next;
	}
}

static void on_closed(uv_handle_t *hd)
{
	struct pipe_coproc *cp = hd->data;

	if (--cp->open_handles == 0) {
		free_lines(cp->held);
		free(cp->line);
		free(cp);
	}
}

void pipe_coproc_free(struct pipe_coproc *cp)
{
	uv_handle_t *hs[2];

	if (!cp)
		return;
	hs[0] = (uv_handle_t *)&cp->in;
	hs[1] = (uv_handle_t *)&cp->out;
	cp->freed = true;
	child_free(cp->child);
	for (size_t i = 0; i < 2; i++)
		if (!uv_is_closing(hs[i]))
			uv_close(hs[i], on_closed);
}

/* Its output or input broke: the owner hears it once, and no line is passed on after it. */
static void fault(struct pipe_coproc *cp, int err, const char *why)
{
	if (cp->faulted || cp->stopping || cp->freed)
		return;
	cp->faulted = true;
	cp->hooks.fault(cp, err, why);
}

static void on_child_gone(struct child *c)
{
	struct pipe_coproc *cp = child_data(c);

	if (!cp->freed)
		cp->hooks.gone(cp);
}

/* ---- its stdout ---- */

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

static bool taking_lines(const struct pipe_coproc *cp)
{
	return !cp->stopping && !cp->faulted && !cp->freed;
}

static void pass_line(struct pipe_coproc *cp, const char *line, size_t len)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len > 0)
		cp->hooks.line(cp, line, len);
}

static int line_append(struct pipe_coproc *cp, const char *s, size_t n)
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

/* Split what came on stdout into lines; keep the unfinished one. */
static void out_data(struct pipe_coproc *cp, const char *s, size_t n)
{
	while (n > 0 && taking_lines(cp)) {
		const char *nl = memchr(s, '\n', n);
		size_t k = nl ? (size_t)(nl - s) : n;
		if (cp->line_len + k > PIPE_REPLY_MAX) {
			fault(cp, -EPROTO, "bad reply from the co-process: longer than 1 MiB");
			return;
		}
		if (cp->line_len > 0 || !nl) {
			if (line_append(cp, s, k) < 0) {
				fault(cp, -ENOMEM, "out of memory for the co-process's reply");
				return;
			}
			if (!nl)
				return;
			size_t len = cp->line_len;
			cp->line_len = 0;    /* the text stays in cp->line while the hook reads it */
			pass_line(cp, cp->line, len);
		} else {
			pass_line(cp, s, k);
		}
		s += k + 1;
		n -= k + 1;
	}
}

static void on_out_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct pipe_coproc *cp = s->data;

	if (nread > 0) {
		out_data(cp, buf->base, (size_t)nread);
	} else if (nread < 0 && !cp->out_eof) {
		cp->out_eof = true;
		uv_read_stop(s);
		child_release(cp->child);
	}
}

/* ---- its stdin ---- */

static void on_written(uv_write_t *w, int status)
{
	struct pipe_coproc *cp = w->data;
	char why[120];

	/* the uv_write_t is the first member of the first struct pipe_coproc_line */
	free_lines((struct pipe_coproc_line *)(void *)w);
	if (status < 0 && status != UV_ECANCELED) {
		snprintf(why, sizeof(why), "cannot write to its stdin: %s", uv_strerror(status));
		fault(cp, status, why);
	}
}

struct pipe_coproc_line *pipe_coproc_line(size_t len)
{
	struct pipe_coproc_line *line = malloc(sizeof(*line) + len);

	if (line) {
		line->len = len;
		line->next = NULL;
	}
	return line;
}

/* Write first and the lines linked to it (at most CORK_MAX) in one request. */
static int write_lines(struct pipe_coproc *cp, struct pipe_coproc_line *first)
{
	uv_buf_t b[CORK_MAX];
	unsigned n = 0;
	int r;

	for (struct pipe_coproc_line *l = first; l; l = l->next)
		b[n++] = uv_buf_init(l->data, (unsigned)l->len);
	first->w.data = cp;
	r = uv_write(&first->w, (uv_stream_t *)&cp->in, b, n, on_written);
	if (r < 0)
		free_lines(first);
	return r;
}

int pipe_coproc_send(struct pipe_coproc *cp, struct pipe_coproc_line *line)
{
	line->next = NULL;
	if (!cp->corked)
		return write_lines(cp, line);
	if (cp->held_tail)
		cp->held_tail->next = line;
	else
		cp->held = line;
	cp->held_tail = line;
	if (++cp->nheld == CORK_MAX) {
		int r = pipe_coproc_uncork(cp);
		cp->corked = true;
		return r;
	}
	return 0;
}

void pipe_coproc_cork(struct pipe_coproc *cp)
{
	cp->corked = true;
}

int pipe_coproc_uncork(struct pipe_coproc *cp)
{
	struct pipe_coproc_line *first = cp->held;

	cp->corked = false;
	cp->held = cp->held_tail = NULL;
	cp->nheld = 0;
	return first ? write_lines(cp, first) : 0;
}

/* ---- its life ---- */

/* Its pipes as handles, its stdout read until EOF. Returns 0 or a libuv error (then it must
 * go: without its pipes it is of no use). */
static int watch_pipes(struct pipe_coproc *cp, uv_loop_t *loop, const struct proc_child *pc)
{
	int r, r2;

	uv_pipe_init(loop, &cp->in, 0);
	uv_pipe_init(loop, &cp->out, 0);
	cp->in.data = cp->out.data = cp;
	cp->open_handles = 2;
	child_hold(cp->child);  /* until its stdout's EOF */
	r = uv_pipe_open(&cp->in, pc->stdin_fd);
	if (r < 0)
		close(pc->stdin_fd);
	r2 = uv_pipe_open(&cp->out, pc->stdout_fd);
	if (r2 < 0)
		close(pc->stdout_fd);
	else if (r == 0)
		r2 = uv_read_start((uv_stream_t *)&cp->out, on_alloc, on_out_read);
	if (r == 0 && r2 < 0)
		r = r2;
	if (r < 0) {
		cp->out_eof = true;
		child_release(cp->child);
	}
	return r;
}

/* Its stderr, in lines for the err_line hook. */
static void on_child_stderr(struct child *c, const char *p, size_t n)
{
	struct pipe_coproc *cp = child_data(c);

	for (size_t i = 0; i < n && cp->hooks.err_line; i++) {
		if (p[i] != '\n')
			cp->err[cp->err_len++] = p[i];
		if (p[i] == '\n' || cp->err_len == sizeof(cp->err)) {
			if (cp->err_len)
				cp->hooks.err_line(cp, cp->err, cp->err_len);
			cp->err_len = 0;
		}
	}
}

int pipe_coproc_start(uv_loop_t *loop, struct child_reaper *reaper, char *const argv[],
		      const struct proc_user *as, const struct pipe_coproc_hooks *hooks,
		      struct pipe_coproc **ret)
{
	struct child_opts opts = { .group = true, .settle_ms = SETTLE_MS, .on_gone = on_child_gone,
				   .on_stderr = on_child_stderr };
	struct proc_child pc = { .pid = 0, .stdin_fd = -1, .stderr_fd = -1, .stdout_fd = -1,
				 .channel_fd = -1 };
	struct handler_util_env env;
	struct pipe_coproc *cp = calloc(1, sizeof(*cp));
	int r = -ENOMEM;

	if (!cp)
		return r;
	cp->hooks = *hooks;
	r = handler_util_env(NULL, -1, &env);
	if (r == 0) {
		r = proc_spawn_io(argv, env.vars, PROC_SPAWN_STDOUT, as, &pc);
		handler_util_env_free(&env);
	}
	opts.stderr_fd = pc.stderr_fd;
	opts.data = cp;
	if (r == 0 && (r = child_new(reaper, pc.pid, &opts, &cp->child)) < 0) {
		proc_kill_group(pc.pid, SIGKILL);  /* unwatched: the worker reaps it at exit */
		close(pc.stdin_fd);
		close(pc.stdout_fd);
	}
	if (r < 0) {
		free(cp);
		return r;
	}
	r = watch_pipes(cp, loop, &pc);
	if (r < 0) {
		child_kill(cp->child);
		pipe_coproc_free(cp);
		return r;
	}
	*ret = cp;
	return 0;
}

void pipe_coproc_stop(struct pipe_coproc *cp, unsigned grace_ms)
{
	if (cp->stopping)
		return;
	cp->stopping = true;
	child_stop(cp->child, grace_ms);
}

void pipe_coproc_kill(struct pipe_coproc *cp)
{
	cp->stopping = true;
	child_kill(cp->child);
}

bool pipe_coproc_usable(const struct pipe_coproc *cp)
{
	return cp && !cp->stopping && !child_exited(cp->child);
}

bool pipe_coproc_stopping(const struct pipe_coproc *cp)
{
	return cp->stopping;
}

pid_t pipe_coproc_pgid(const struct pipe_coproc *cp)
{
	return child_pid(cp->child);
}

int pipe_coproc_status(const struct pipe_coproc *cp)
{
	return child_status(cp->child);
}

const struct child_tail *pipe_coproc_tail(const struct pipe_coproc *cp)
{
	return child_tail(cp->child);
}

void *pipe_coproc_data(const struct pipe_coproc *cp)
{
	return cp->hooks.data;
}
