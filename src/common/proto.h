/* proto — the IPC protocol between the supervisor and its workers.
 *
 * This is the only module that knows the wire format. It is pure: no I/O, no allocation,
 * no logging. Every frame is
 *
 *     magic   u16  0xC1D0
 *     version u8   PROTO_VERSION
 *     type    u8   enum proto_type
 *     id      u32  sender's message id, never 0 (ACK frames carry their own id too)
 *     length  u32  body length in bytes, <= PROTO_MAX_BODY
 *     body    length bytes, fields encoded one by one, big-endian
 *
 * The header is checked (magic, version, type, length against PROTO_MAX_BODY and against
 * the type's own size rules) before any body byte is looked at.
 */
#ifndef CLAIMD_PROTO_H
#define CLAIMD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "common/place.h"

#define PROTO_MAGIC 0xC1D0u
#define PROTO_VERSION 7u
#define PROTO_HEADER_SIZE 12u
#define PROTO_MAX_ITEMS 256u
#define PROTO_MAX_QUEUES 16u /* a FINISHED item's queue is an index below this */
#define PROTO_MAX_BODY 8192u /* >= the largest legal body: 2 + 256 * 26 = 6658 */

enum proto_type {
	PROTO_ACK = 1,  /* either way: body { u32 acked_id } */
	PROTO_HELLO,    /* worker -> supervisor: { u32 pid, u32 slot } */
	PROTO_PING,     /* supervisor -> worker: { u64 sent_ms } */
	PROTO_STATE,    /* worker -> supervisor: { u8 state } (which items it runs, and their
	                 * handlers' processes, are in the scoreboard: common/scoreboard.h) */
	PROTO_CLAIMED,  /* worker -> supervisor: { u16 n, cursor, u32 claim_us, u8 more,
	                 *                         u8 state, n * { u64 id, u64 token } };
	                 * cursor: PLACE_SIZE bytes, the place in claim order the claim reached;
	                 * claim_us: how long the claim took (its round trips); more (0 or 1):
	                 * other rows may be due (the claim was full, or another queue was not
	                 * asked): another worker should claim; state: what the worker does
	                 * now it holds them (enum proto_wstate: its STATE, not sent apart) */
	PROTO_FINISHED, /* worker -> supervisor: { u16 n, n * { u64 id, u64 token, u8 outcome,
	                 *   u8 queue, u32 run_us, u32 wait_us } }: queue, an index into the
	                 *   supervisor's --queue list (< PROTO_MAX_QUEUES); run_us, how long the
	                 *   handler ran; wait_us, from when the row could run to its start (both
	                 *   saturated at UINT32_MAX; 0 for rows that never started) */
	PROTO_WAKE,     /* supervisor -> worker: { cursor } claim now (a claim permit; answered by
	                 * CLAIMED), starting after cursor; from here the worker counts as busy
	                 * (idle or starting before) without a STATE to say so */
	PROTO_STOP,     /* supervisor -> worker: { u32 grace_ms } drain and exit */
	PROTO_WANT,     /* worker -> supervisor: {} ready for more work: asks for a WAKE */
	PROTO_HOLDING,  /* worker -> supervisor: { u16 n, n * { u64 id, u64 token } }: rows locked
	                 * by a claim about to commit, with the tokens it writes; should the
	                 * worker die from here on, the supervisor releases them (fenced: nothing
	                 * happens to rows the commit did not reach). CLAIMED follows the commit. */
	PROTO_CANCEL,   /* supervisor -> worker: { u16 n, n * { u64 id, u64 token } }: rows an
	                 * operator cancelled (their cancel request is in the database): stop
	                 * their runs; a row not started yet is not run. A row the worker does
	                 * not hold (with that token) is ignored, and so is a second cancel. */
	PROTO_TYPE_MAX = PROTO_CANCEL,
};

/* What a worker tells the supervisor it is doing. */
enum proto_wstate {
	PROTO_W_STARTING = 0,
	PROTO_W_IDLE,       /* it has room for more work and the last claim took every due row
			     * it could (or none): asleep
			     * until woken (items it holds may still run) */
	PROTO_W_BUSY,       /* claiming, or as many items as it runs at once and prefetches */
	PROTO_W_DB_DOWN,
	PROTO_W_STOPPING,
	PROTO_W_MAX = PROTO_W_STOPPING,
};

/* How an item a worker claimed ended, as reported in FINISHED. */
enum proto_outcome {
	PROTO_OUT_DONE = 0,  /* handler succeeded, row completed */
	PROTO_OUT_RETRY,     /* handler failed, row back to ready after a back-off */
	PROTO_OUT_DEAD,      /* handler failed on its last attempt, row is dead */
	PROTO_OUT_RELEASED,  /* not run (or cut short by shutdown), row back to ready now */
	PROTO_OUT_LOST,      /* the row's claim was no longer ours (fenced out), nothing written */
	PROTO_OUT_DEFERRED,  /* the handler asked to run it again later: not a failure */
	PROTO_OUT_MAX = PROTO_OUT_DEFERRED,
};


struct proto_item {
	uint64_t id;
	uint64_t token;
	/* FINISHED only */
	uint8_t outcome;
	uint8_t queue;
	uint32_t run_us;
	uint32_t wait_us;
};

struct proto_msg {
	uint8_t type;  /* enum proto_type */
	uint32_t id;   /* set by the sender; decode fills it */
	union {
		struct { uint32_t acked_id; } ack;
		struct { uint32_t pid; uint32_t slot; } hello;
		struct { uint64_t sent_ms; } ping;
		struct { uint8_t state; } state;
		struct {
			uint16_t n;
			struct place cursor; /* CLAIMED only */
			uint32_t claim_us;   /* CLAIMED only */
			uint8_t more;        /* CLAIMED only: 0 or 1 */
			uint8_t state;       /* CLAIMED only: enum proto_wstate */
			struct proto_item items[PROTO_MAX_ITEMS];
		} items; /* CLAIMED, FINISHED, HOLDING, CANCEL */
		struct { struct place cursor; } wake;
		struct { uint32_t grace_ms; } stop;
	} u;
};

/* Encode m into buf. Returns the frame length (> 0), -ENOSPC if cap is too small,
 * -EINVAL if m is not a valid message (unknown type, id 0, n > PROTO_MAX_ITEMS,
 * state, outcome or queue out of range). Writes nothing to buf on error. */
int proto_encode(const struct proto_msg *m, uint8_t *buf, size_t cap);

/* Decode one frame from the start of buf. Returns the number of bytes the frame took (> 0)
 * and fills *ret_msg; 0 if buf holds only part of a frame (read more; ret_msg untouched);
 * or a negative error for a frame that can never become valid (ret_msg untouched):
 * -EBADMSG (bad magic, unknown type, id 0, body size wrong for the type, item count or
 * field value out of range), -EPROTONOSUPPORT (other version), -EMSGSIZE (length >
 * PROTO_MAX_BODY). Header errors are returned as soon as the 12 header bytes are in buf,
 * without waiting for the body; the item count and state/outcome values are checked once
 * the whole body is there. For CLAIMED, decode sets each item's FINISHED fields to 0.
 * After an error the stream cannot be resynchronised; the caller drops the connection. */
int proto_decode(const uint8_t *buf, size_t len, struct proto_msg *ret_msg);

/* Names for logs and status output; "?" for values out of range. */
const char *proto_type_name(unsigned type);
const char *proto_wstate_name(unsigned state);
const char *proto_outcome_name(unsigned outcome);

#endif
