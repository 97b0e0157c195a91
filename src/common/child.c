/* A child's life here: running -> (stop asked: SIGTERM sent -> SIGKILL sent) -> exited ->
 * gone (stderr at EOF and holds released, or the settle time over). Its timer is the
 * SIGTERM-to-SIGKILL grace while it runs and the settle wait after its exit. Signals and
 * waitpid go through proc, the only module that calls them. */
#include "common/child.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/proc.h"

struct child_reaper {
	uv_signal_t sig;
	bool any;
	void (*on_other)(void *data, pid_t pid, int status);
	void *data;
	struct child *head;
};

struct child {
	struct child_reaper *r;
	struct child *next;
	pid_t pid;
	bool group;
	bool exited, term_sent, err_eof, gone, freed;
	int status;
	unsigned holds, settle_ms, grace_ms;
	int open_handles;
	uv_timer_t timer;
	uv_pipe_t err;
	bool has_err;
	void (*on_exit)(struct child *c);
	void (*on_gone)(struct child *c);
	void (*on_stderr)(struct child *c, const char *p, size_t n);
	void *data;
	struct child_tail tail;
};

void child_tail_add(struct child_tail *t, const char *p, size_t n)
{
	if (n >= sizeof(t->buf)) {
		p += n - sizeof(t->buf);
		n = sizeof(t->buf);
	}
	if (t->len + n > sizeof(t->buf)) {
		size_t drop = t->len + n - sizeof(t->buf);
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
}

/* ---- a child ---- */

static void signal_it(struct child *c, int sig)
{
	if (c->group)
		proc_kill_group(c->pid, sig);
	else
		proc_kill(c->pid, sig);
}

static void unlink_child(struct child *c)
{
	struct child **pp;

	if (!c->r)
		return;  /* its reaper is gone */
	for (pp = &c->r->head; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->next = NULL;
}

static void go(struct child *c)
{
	if (c->gone)
		return;
	c->gone = true;
	uv_timer_stop(&c->timer);
	if (c->has_err && !c->err_eof)
		uv_read_stop((uv_stream_t *)&c->err);
	if (!c->freed && c->on_gone)
		c->on_gone(c);
}

static void maybe_gone(struct child *c)
{
	if (c->exited && (!c->has_err || c->err_eof) && c->holds == 0)
		go(c);
}

static void on_timer(uv_timer_t *t)
{
	struct child *c = t->data;

	if (c->exited)
		go(c);               /* the settle wait is over */
	else
		signal_it(c, SIGKILL); /* the grace after SIGTERM is over */
}

static void exited(struct child *c, int status)
{
	c->exited = true;
	c->status = status;
	unlink_child(c);
	uv_timer_stop(&c->timer);
	if (c->on_exit)
		c->on_exit(c);
	if (c->freed)
		return;
	maybe_gone(c);
	if (!c->gone)
		uv_timer_start(&c->timer, on_timer, c->settle_ms, 0);
}

static void on_err_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

static void on_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct child *c = s->data;

	if (nread > 0) {
		child_tail_add(&c->tail, buf->base, (size_t)nread);
		if (c->on_stderr)
			c->on_stderr(c, buf->base, (size_t)nread);
	} else if (nread < 0) {
		c->err_eof = true;
		uv_read_stop(s);
		maybe_gone(c);
	}
}

static void on_closed(uv_handle_t *h)
{
	struct child *c = h->data;

	if (--c->open_handles == 0)
		free(c);
}

int child_new(struct child_reaper *r, pid_t pid, const struct child_opts *o,
	      struct child **ret)
{
	struct child *c = calloc(1, sizeof(*c));
	uv_loop_t *loop = r->sig.loop;
	int e;

	if (!c) {
		if (o->stderr_fd >= 0)
			close(o->stderr_fd);
		return -ENOMEM;
	}
	c->r = r;
	c->pid = pid;
	c->group = o->group;
	c->settle_ms = o->settle_ms;
	c->on_exit = o->on_exit;
	c->on_gone = o->on_gone;
	c->on_stderr = o->on_stderr;
	c->data = o->data;
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 1;
	if (o->stderr_fd >= 0) {
		uv_pipe_init(loop, &c->err, 0);
		c->err.data = c;
		c->open_handles++;
		c->has_err = true;
		e = uv_pipe_open(&c->err, o->stderr_fd);
		if (e < 0)
			close(o->stderr_fd);  /* the handle did not take it */
		else
			e = uv_read_start((uv_stream_t *)&c->err, on_err_alloc, on_err_read);
		if (e < 0) {
			c->freed = true;
			uv_close((uv_handle_t *)&c->err, on_closed);
			uv_close((uv_handle_t *)&c->timer, on_closed);
			return e;
		}
	}
	c->next = r->head;
	r->head = c;
	*ret = c;
	return 0;
}

void child_free(struct child *c)
{
	if (!c)
		return;
	c->freed = true;
	if (!c->exited)
		unlink_child(c);
	uv_close((uv_handle_t *)&c->timer, on_closed);
	if (c->has_err)
		uv_close((uv_handle_t *)&c->err, on_closed);
}

void child_hold(struct child *c)
{
	c->holds++;
}

void child_release(struct child *c)
{
	if (c->holds > 0 && --c->holds == 0)
		maybe_gone(c);
}

void child_stop(struct child *c, unsigned grace_ms)
{
	if (c->exited || c->term_sent)
		return;
	c->term_sent = true;
	signal_it(c, SIGTERM);
	uv_timer_start(&c->timer, on_timer, grace_ms, 0);
}

void child_kill(struct child *c)
{
	if (!c->exited)
		signal_it(c, SIGKILL);
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}

void *child_data(const struct child *c)
{
	return c->data;
}

bool child_exited(const struct child *c)
{
	return c->exited;
}

int child_status(const struct child *c)
{
	return c->status;
}

bool child_stopping(const struct child *c)
{
	return c->term_sent;
}

const struct child_tail *child_tail(const struct child *c)
{
	return &c->tail;
}

/* ---- the reaper ---- */

static struct child *find(struct child_reaper *r, pid_t pid)
{
	for (struct child *c = r->head; c; c = c->next)
		if (c->pid == pid)
			return c;
	return NULL;
}

static void on_sigchld(uv_signal_t *h, int signum)
{
	struct child_reaper *r = h->data;
	struct child *c;
	int status;
	pid_t pid;

	if (r->any) {
		while (proc_reap_any(&pid, &status) == 1) {
			if ((c = find(r, pid)))
				exited(c, status);
			else if (r->on_other)
				r->on_other(r->data, pid, status);
		}
		return;
	}
	/* exited() unlinks the child and its on_gone may free others: look again from the head
	 * after each. */
	for (bool again = true; again; ) {
		again = false;
		for (c = r->head; c; c = c->next) {
			if (proc_reap(c->pid, &status) == 1) {
				exited(c, status);
				again = true;
				break;
			}
		}
	}
}

int child_reaper_new(uv_loop_t *loop, bool any,
		     void (*on_other)(void *data, pid_t pid, int status), void *data,
		     struct child_reaper **ret)
{
	struct child_reaper *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	r->any = any;
	r->on_other = on_other;
	r->data = data;
	e = uv_signal_init(loop, &r->sig);
	if (e < 0) {
		free(r);
		return e;
	}
	r->sig.data = r;
	e = uv_signal_start(&r->sig, on_sigchld, SIGCHLD);
	if (e < 0) {
		child_reaper_free(r);
		return e;
	}
	*ret = r;
	return 0;
}

static void on_reaper_closed(uv_handle_t *h)
{
	free(h->data);
}

void child_reaper_free(struct child_reaper *r)
{
	if (!r)
		return;
	/* Children still watched are nobody's to wait for now. */
	for (struct child *c = r->head, *next; c; c = next) {
		next = c->next;
		c->r = NULL;
		c->next = NULL;
	}
	uv_close((uv_handle_t *)&r->sig, on_reaper_closed);
}
