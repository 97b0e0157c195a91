/* chan — one end of a supervisor<->worker socketpair, on a libuv loop.
 *
 * Frames go through proto. Every message sent gets an id and, except ACKs, a row in the
 * channel's table of messages awaiting an ack (id, type, send time); every message received
 * is acknowledged at once, and an ACK received clears its row. The owner reads the table's
 * age to judge the peer's health. A frame that fails to decode closes the channel. Does not
 * log: the owner hears about everything through chan_ops. */
#ifndef CLAIMD_CHAN_H
#define CLAIMD_CHAN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/proto.h"

#define CHAN_MAX_PENDING 1024

struct chan;

struct chan_ops {
	/* A decoded message other than ACK (already acknowledged). */
	void (*on_msg)(void *data, const struct proto_msg *m);
	/* An ACK for one of our messages: its type and how long it took (ms, fractional). */
	void (*on_ack)(void *data, uint8_t type, double rtt_ms);
	/* The channel is closed: reason 0 for EOF, -EBADMSG etc. for a bad frame, or a libuv
	 * error. Called once, not after chan_close(). The chan is freed after this returns. */
	void (*on_close)(void *data, int reason);
};

/* Take ownership of fd (a connected stream socket) and start reading. Returns 0 or a
 * negative libuv/errno code (fd is closed on failure). */
int chan_open(uv_loop_t *loop, int fd, const struct chan_ops *ops, void *data, struct chan **ret);

/* Encode and queue m, assigning m->id. Returns 0, -ENOBUFS when CHAN_MAX_PENDING messages
 * are already unacknowledged, -EPIPE after close, or an encode error. */
int chan_send(struct chan *c, struct proto_msg *m);

/* How long (ms) the oldest unacknowledged message has waited; 0 if none. */
uint64_t chan_oldest_pending_ms(const struct chan *c);
size_t chan_pending(const struct chan *c);

/* Stop reading, drop the pending table, free once libuv is done. on_close is not called.
 * Accepts NULL. */
void chan_close(struct chan *c);

#endif
