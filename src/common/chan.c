#include "common/chan.h"

#include <errno.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define CHAN_RBUF (2 * (PROTO_HEADER_SIZE + PROTO_MAX_BODY))

struct pending {
	uint32_t id;
	uint8_t type;
	uint64_t sent_ns;
};

struct chan {
	uv_pipe_t pipe;
	const struct chan_ops *ops;
	void *data;
	uint32_t next_id;
	bool closing;
	/* Acks come back in send order over one stream, so the table is a FIFO ring. */
	struct pending ring[CHAN_MAX_PENDING];
	size_t head, count;
	size_t rlen;
	uint8_t rbuf[CHAN_RBUF];
};

struct wreq {
	uv_write_t req;
	size_t len;
	uint8_t frame[];
};

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

static void shut(struct chan *c, int reason, bool notify)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_read_stop((uv_stream_t *)&c->pipe);
	c->pipe.data = c;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
	if (notify && c->ops->on_close)
		c->ops->on_close(c->data, reason);
}

static void on_written(uv_write_t *req, int status)
{
	free(req);
}

static int send_raw(struct chan *c, struct proto_msg *m)
{
	uint8_t tmp[PROTO_HEADER_SIZE + PROTO_MAX_BODY];
	struct wreq *w;
	uv_buf_t b;
	int n, r;

	if (c->closing)
		return -EPIPE;
	if (++c->next_id == 0)
		c->next_id = 1;
	m->id = c->next_id;
	n = proto_encode(m, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	b = uv_buf_init((char *)tmp, (unsigned)n);
	r = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
	if (r == n)
		return 0;
	if (r < 0 && r != UV_EAGAIN)
		return r;
	if (r < 0)
		r = 0;
	w = malloc(sizeof(*w) + (size_t)(n - r));
	if (!w)
		return -ENOMEM;
	w->len = (size_t)(n - r);
	memcpy(w->frame, tmp + r, w->len);
	b = uv_buf_init((char *)w->frame, (unsigned)w->len);
	r = uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, on_written);
	if (r < 0)
		free(w);
	return r;
}

int chan_send(struct chan *c, struct proto_msg *m)
{
	struct pending *p;
	int r;

	if (m->type != PROTO_ACK && c->count == CHAN_MAX_PENDING)
		return -ENOBUFS;
	r = send_raw(c, m);
	if (r < 0 || m->type == PROTO_ACK)
		return r;
	p = &c->ring[(c->head + c->count) % CHAN_MAX_PENDING];
	p->id = m->id;
	p->type = m->type;
	p->sent_ns = uv_hrtime();
	c->count++;
	return 0;
}

static void handle_ack(struct chan *c, uint32_t acked)
{
	/* Drop rows up to and including the acked one: a peer answers in order. */
	for (size_t i = 0; i < c->count; i++) {
		struct pending *p = &c->ring[(c->head + i) % CHAN_MAX_PENDING];
		if (p->id != acked)
			continue;
		uint8_t type = p->type;
		double rtt = (double)(uv_hrtime() - p->sent_ns) / 1e6;
		c->head = (c->head + i + 1) % CHAN_MAX_PENDING;
		c->count -= i + 1;
		if (c->ops->on_ack)
			c->ops->on_ack(c->data, type, rtt);
		return;
	}
}

static void dispatch(struct chan *c, const struct proto_msg *m)
{
	struct proto_msg ack;

	if (m->type == PROTO_ACK) {
		handle_ack(c, m->u.ack.acked_id);
		return;
	}
	memset(&ack, 0, sizeof(ack));
	ack.type = PROTO_ACK;
	ack.u.ack.acked_id = m->id;
	/* A peer that already hung up cannot take the ack; its EOF follows, and what it said
	 * before going is still worth hearing. */
	(void)send_raw(c, &ack);
	c->ops->on_msg(c->data, m);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct chan *c = h->data;

	*buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(sizeof(c->rbuf) - c->rlen));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct chan *c = s->data;
	struct proto_msg m;
	size_t off = 0;
	int n = 0;

	if (nread == 0)
		return;
	if (nread < 0) {
		shut(c, nread == UV_EOF ? 0 : (int)nread, true);
		return;
	}
	c->rlen += (size_t)nread;
	while (!c->closing && (n = proto_decode(c->rbuf + off, c->rlen - off, &m)) > 0) {
		off += (size_t)n;
		dispatch(c, &m);
	}
	if (c->closing)
		return;
	if (n < 0) {
		shut(c, n, true);
		return;
	}
	memmove(c->rbuf, c->rbuf + off, c->rlen - off);
	c->rlen -= off;
}

int chan_open(uv_loop_t *loop, int fd, const struct chan_ops *ops, void *data, struct chan **ret)
{
	struct chan *c = calloc(1, sizeof(*c));
	int r;

	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->ops = ops;
	c->data = data;
	r = uv_pipe_init(loop, &c->pipe, 0);
	if (r < 0) {
		free(c);
		close(fd);
		return r;
	}
	c->pipe.data = c;
	r = uv_pipe_open(&c->pipe, fd);
	if (r == 0)
		r = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
	if (r < 0) {
		c->closing = true;
		uv_close((uv_handle_t *)&c->pipe, on_closed);
		return r;
	}
	*ret = c;
	return 0;
}

uint64_t chan_oldest_pending_ms(const struct chan *c)
{
	if (!c || c->count == 0)
		return 0;
	return (uv_hrtime() - c->ring[c->head].sent_ns) / 1000000u;
}

size_t chan_pending(const struct chan *c)
{
	return c ? c->count : 0;
}

void chan_close(struct chan *c)
{
	if (c)
		shut(c, 0, false);
}
