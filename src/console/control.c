#include "console/control.h"

#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59   /* Linux 4.13 */
#endif

struct control {
	uv_pipe_t server;
	struct cmds *cmds;
	char path[108];
	char group[64];   /* "" = none */
	gid_t gid;
};

/* A connection: reading its request line, then the request is carried out, then the reply
 * is written and the connection closed. A line over CTL_LINE_MAX is answered at once and the
 * rest of what the client sends is read and dropped until its EOF (closing with unread data
 * would reset the connection, and the client would lose the answer), DRAIN_MAX at most. */
struct control_conn {
	uv_pipe_t pipe;
	struct control *ctl;
	size_t len, cap;
	char *line;
	struct ctl_request req;   /* points into line */
	bool answered;            /* a reply is on its way */
	bool written;             /* and written */
	bool draining;            /* reading to EOF after a request too long */
	bool eof;
	size_t drained;
};

#define DRAIN_MAX (64u * 1024 * 1024)

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

static void conn_close(struct control_conn *c)
{
	if (!uv_is_closing((uv_handle_t *)&c->pipe))
		uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

/* Closes c once its reply is out and nothing more is to be read. */
static void conn_maybe_close(struct control_conn *c)
{
	if (c->written && (!c->draining || c->eof))
		conn_close(c);
}

static void on_reply_written(uv_write_t *req, int status)
{
	struct reply *r = (struct reply *)req;
	struct control_conn *c = r->conn;

	free(r);
	c->written = true;
	if (status < 0)
		conn_close(c);
	else
		conn_maybe_close(c);
}

static void reply(struct control_conn *c, const char *text, size_t len)
{
	struct reply *r;
	uv_buf_t b;

	if (c->answered)
		return;
	c->answered = true;
	r = malloc(sizeof(*r) + len);
	if (!r) {
		conn_close(c);
		return;
	}
	r->conn = c;
	memcpy(r->text, text, len);
	b = uv_buf_init(r->text, (unsigned)len);
	if (uv_write(&r->req, (uv_stream_t *)&c->pipe, &b, 1, on_reply_written) < 0) {
		free(r);
		conn_close(c);
	}
}

static void reply_error(struct control_conn *c, const char *message)
{
	struct buf b;

	buf_init(&b);
	ctl_reply_error(&b, message);
	if (buf_failed(&b))
		reply(c, "error: out of memory\n", 21);
	else
		reply(c, b.data, b.len);
	buf_free(&b);
}

static void on_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct control_conn *c = data;
	struct buf body, out;

	if (res->rc < 0) {
		reply_error(c, res->err);
		return;
	}
	buf_init(&body);
	buf_init(&out);
	cmd_render(req, res, &body);
	ctl_reply_ok(&out, body.data ? body.data : "", body.len);
	if (buf_failed(&body) || buf_failed(&out))
		reply_error(c, "out of memory");
	else
		reply(c, out.data, out.len);
	buf_free(&body);
	buf_free(&out);
}

/* A whole request line of len bytes (line[len] is writable: where its LF was). */
static void on_request(struct control_conn *c, size_t len)
{
	char err[300];

	if (ctl_decode(c->line, len, &c->req, err, sizeof(err)) < 0) {
		reply_error(c, err);
		return;
	}
	cmd_run(c->ctl->cmds, &c->req, on_done, c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char scratch[65536];
	struct control_conn *c = h->data;
	size_t cap = c->cap ? c->cap : 4096;
	char *p;

	if (c->draining) {
		*buf = uv_buf_init(scratch, sizeof(scratch));
		return;
	}
	/* Grow by doubling up to CTL_LINE_MAX; a full buffer ends the request (too long). */
	while (cap - c->len < 4096 && cap < CTL_LINE_MAX)
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

	if (nread == 0)
		return;
	if (nread < 0) {
		uv_read_stop(s);
		c->eof = true;
		if (nread == UV_EOF && c->len > 0 && !c->answered) {
			/* EOF before a whole line: what came is the request. */
			c->line[c->len] = '\0';
			on_request(c, c->len);
		} else if (!c->answered || nread != UV_EOF) {
			conn_close(c);
		} else {
			conn_maybe_close(c);
		}
		return;
	}
	if (c->draining) {
		c->drained += (size_t)nread;
		if (c->drained > DRAIN_MAX)
			conn_close(c);
		return;
	}
	c->len += (size_t)nread;
	c->line[c->len] = '\0';
	nl = memchr(c->line, '\n', c->len);
	if (!nl && c->len < CTL_LINE_MAX - 1)
		return;
	if (!nl) {
		c->draining = true;
		reply_error(c, "request too long");
		return;
	}
	uv_read_stop(s);
	*nl = '\0';
	on_request(c, (size_t)(nl - c->line));
}

/* Is the peer at fd (credentials cred) a member of the control group: its gid, or one of
 * its supplementary groups as they were when it connected? */
static bool peer_in_group(const struct control *ctl, int fd, const struct ucred *cred)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool in = cred->gid == ctl->gid;
	int r;

	if (in)
		return true;
	r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (r < 0 && errno == ERANGE && (groups = malloc(len)) != NULL)
		r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	for (size_t i = 0; r == 0 && i < len / sizeof(gid_t) && !in; i++)
		in = groups[i] == ctl->gid;
	if (groups != small)
		free(groups);
	return in;
}

/* Whether the peer of c may use the socket; if not, why into why (for it and the log). */
static bool peer_allowed(struct control_conn *c, char *why, size_t whylen)
{
	const struct control *ctl = c->ctl;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uid_t self = geteuid();
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(why, whylen, "cannot tell who connected: %s", strerror(errno));
		return false;
	}
	if (cred.uid == self || cred.uid == 0 || (*ctl->group && peer_in_group(ctl, fd, &cred)))
		return true;
	snprintf(why, whylen, "uid %u (gid %u, pid %d) is not claimd's user (uid %u), root%s%s%s",
		 (unsigned)cred.uid, (unsigned)cred.gid, (int)cred.pid, (unsigned)self,
		 *ctl->group ? " or a member of group " : "", ctl->group,
		 *ctl->group ? "" : " (no --control-group)");
	return false;
}

/* A peer that may not use the socket: told why and logged; what it sends is read and
 * dropped until its EOF, so that it gets the answer. */
static void refuse(struct control_conn *c, const char *why)
{
	char msg[400];

	log_warn("control socket: refused a connection: %s; closed it", why);
	snprintf(msg, sizeof(msg), "permission denied: %s", why);
	c->draining = true;
	if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0) {
		conn_close(c);
		return;
	}
	reply_error(c, msg);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct control *ctl = server->data;
	struct control_conn *c;
	char why[300];

	if (status < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->ctl = ctl;
	uv_pipe_init(server->loop, &c->pipe, 0);
	c->pipe.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
		conn_close(c);
		return;
	}
	if (!peer_allowed(c, why, sizeof(why))) {
		refuse(c, why);
		return;
	}
	if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) < 0)
		conn_close(c);
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

/* The control group's gid into ctl. Start-up only: the lookup may ask NSS. */
static int resolve_group(struct control *ctl, const char *group, char *err, size_t errlen)
{
	struct group gr, *found = NULL;
	char buf[16384];
	int r;

	if (strlen(group) >= sizeof(ctl->group)) {
		snprintf(err, errlen, "--control-group %.80s: name too long", group);
		return -ENAMETOOLONG;
	}
	r = getgrnam_r(group, &gr, buf, sizeof(buf), &found);
	if (r != 0 || !found) {
		snprintf(err, errlen, "--control-group %s: %s", group, r ? strerror(r) :
			 "no such group");
		return r ? -r : -ENOENT;
	}
	snprintf(ctl->group, sizeof(ctl->group), "%s", group);
	ctl->gid = gr.gr_gid;
	return 0;
}

/* The socket file's group and mode: 0660 and the control group, or 0600. */
static int set_access(const struct control *ctl, char *err, size_t errlen)
{
	int r;

	if (*ctl->group && chown(ctl->path, (uid_t)-1, ctl->gid) < 0) {
		r = -errno;
		snprintf(err, errlen, "--control-group %s: cannot give it the control socket %s: %s "
			 "(claimd's user must be a member, or claimd started as root)", ctl->group,
			 ctl->path, strerror(-r));
		return r;
	}
	if (chmod(ctl->path, *ctl->group ? 0660 : 0600) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot set the mode of the control socket %s: %s", ctl->path,
			 strerror(-r));
		return r;
	}
	return 0;
}

int control_open(uv_loop_t *loop, const char *path, const char *group, struct cmds *cmds,
		 struct control **ret, char *err, size_t errlen)
{
	struct control *ctl;
	bool bound;
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
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	if (group && *group && (r = resolve_group(ctl, group, err, errlen)) < 0) {
		free(ctl);
		return r;
	}
	unlink(path);
	snprintf(ctl->path, sizeof(ctl->path), "%s", path);
	ctl->cmds = cmds;
	uv_pipe_init(loop, &ctl->server, 0);
	ctl->server.data = ctl;
	old = umask(0077); /* the socket file is created 0600; its group and mode are set next */
	r = uv_pipe_bind(&ctl->server, path);
	umask(old);
	bound = r == 0;
	if (r < 0)
		snprintf(err, errlen, "cannot listen on control socket %s: %s", path, uv_strerror(r));
	else
		r = set_access(ctl, err, errlen);
	if (r == 0) {
		r = uv_listen((uv_stream_t *)&ctl->server, 64, on_connection);
		if (r < 0)
			snprintf(err, errlen, "cannot listen on control socket %s: %s", path,
				 uv_strerror(r));
	}
	if (r < 0) {
		if (bound)
			unlink(path);
		uv_close((uv_handle_t *)&ctl->server, on_server_closed);
		return r;
	}
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
