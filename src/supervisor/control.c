#include "supervisor/control.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct control {
	uv_pipe_t server;
	control_request_cb cb;
	void *data;
	char path[108];
};

struct control_conn {
	uv_pipe_t pipe;
	struct control *ctl;
	size_t len, cap;
	bool answered;
	char *line;
};

struct reply {
	uv_write_t req;
	struct control_conn *conn;
	char text[];
};

static void on_conn_closed(uv_handle_t *h)
{
	struct control_conn *c = h->data;

	free(c->line);
	free(c);
}

static void on_server_closed(uv_handle_t *h)
{
	free(h->data);
}

static void on_reply_written(uv_write_t *req, int status)
{
	struct reply *r = (struct reply *)req;

	uv_close((uv_handle_t *)&r->conn->pipe, on_conn_closed);
	free(r);
}

void control_reply(struct control_conn *conn, const char *text, size_t len)
{
	struct reply *r = malloc(sizeof(*r) + len);
	uv_buf_t b;

	if (!r || conn->answered) {
		free(r);
		return;
	}
	conn->answered = true;
	r->conn = conn;
	memcpy(r->text, text, len);
	b = uv_buf_init(r->text, (unsigned)len);
	if (uv_write(&r->req, (uv_stream_t *)&conn->pipe, &b, 1, on_reply_written) < 0) {
		free(r);
		uv_close((uv_handle_t *)&conn->pipe, on_conn_closed);
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct control_conn *c = h->data;
	size_t cap = c->cap ? c->cap : 4096;
	char *p;

	/* Grow by doubling up to CONTROL_LINE_MAX; a full buffer ends the read (too long). */
	while (cap - c->len < 4096 && cap < CONTROL_LINE_MAX)
		cap *= 2;
	if (cap != c->cap) {
		p = realloc(c->line, cap);
		if (!p) {
			*buf = uv_buf_init(NULL, 0);
			return;
		}
		c->line = p;
		c->cap = cap;
	}
	*buf = uv_buf_init(c->line + c->len, (unsigned)(c->cap - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct control_conn *c = s->data;
	char *nl;
	static const char too_long[] = "error: request too long\n";

	if (nread == 0)
		return;
	if (nread < 0) {
		/* EOF before a whole line: take what came as the request. */
		uv_read_stop(s);
		if (nread == UV_EOF && c->len > 0 && !c->answered) {
			c->line[c->len] = '\0';
			c->ctl->cb(c->ctl->data, c, c->line);
		} else if (!c->answered) {
			c->answered = true;
			uv_close((uv_handle_t *)s, on_conn_closed);
		}
		return;
	}
	c->len += (size_t)nread;
	c->line[c->len] = '\0';
	nl = memchr(c->line, '\n', c->len);
	if (!nl && c->len < CONTROL_LINE_MAX - 1)
		return;
	uv_read_stop(s);
	if (!nl) {
		control_reply(c, too_long, sizeof(too_long) - 1);
		return;
	}
	*nl = '\0';
	if (nl > c->line && nl[-1] == '\r')
		nl[-1] = '\0';
	c->ctl->cb(c->ctl->data, c, c->line);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct control *ctl = server->data;
	struct control_conn *c;

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->ctl = ctl;
	uv_pipe_init(server->loop, &c->pipe, 0);
	c->pipe.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0 ||
	    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0)
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

/* Is somebody answering on path? */
static bool socket_alive(const char *path)
{
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	alive = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return alive;
}

int control_open(uv_loop_t *loop, const char *path, control_request_cb cb, void *data,
		 struct control **ret, char *err, size_t errlen)
{
	struct control *ctl;
	mode_t old;
	int r;

	if (strlen(path) >= sizeof(ctl->path)) {
		snprintf(err, errlen, "control socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	if (socket_alive(path)) {
		snprintf(err, errlen, "control socket %s is in use: is another claimd running? "
			 "(use --control to pick another path)", path);
		return -EADDRINUSE;
	}
	unlink(path);
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	snprintf(ctl->path, sizeof(ctl->path), "%s", path);
	ctl->cb = cb;
	ctl->data = data;
	uv_pipe_init(loop, &ctl->server, 0);
	ctl->server.data = ctl;
	old = umask(0077); /* the socket file is created 0600 */
	r = uv_pipe_bind(&ctl->server, path);
	umask(old);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&ctl->server, 64, on_connection);
	if (r < 0) {
		snprintf(err, errlen, "cannot listen on control socket %s: %s", path, uv_strerror(r));
		ctl->server.data = ctl;
		uv_close((uv_handle_t *)&ctl->server, on_server_closed);
		return r;
	}
	chmod(path, 0600);
	*ret = ctl;
	return 0;
}

void control_close(struct control *c)
{
	if (!c)
		return;
	unlink(c->path);
	uv_close((uv_handle_t *)&c->server, on_server_closed);
}
