/* Unit tests for proto: round trips, byte order, partial input fed byte by byte, and every
 * way a frame or a message can be rejected. One line per case; exit 1 if any case fails. */
#include "common/proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRAME_MAX (PROTO_HEADER_SIZE + PROTO_MAX_BODY)
#define DEFAULT_N (-1)
#define FEED_ALL 0u

static int n_run, n_failed;
static char why_buf[256];

/* Formats a failure reason; cases return it, or NULL on success. */
static const char *why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why_buf, sizeof(why_buf), fmt, ap);
	va_end(ap);
	return why_buf;
}

static void report(const char *name, const char *reason)
{
	n_run++;
	if (reason) {
		n_failed++;
		printf("FAIL %s: %s\n", name, reason);
	} else {
		printf("ok   %s\n", name);
	}
}

/* A valid message of each type, with values that exercise every byte of each field. */
static void make_msg(unsigned type, int n, struct proto_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->id = 0x81020304u + type;
	switch (type) {
	case PROTO_ACK: m->u.ack.acked_id = 0xDEADBEEFu; break;
	case PROTO_HELLO: m->u.hello.pid = 0x7FFFFFFEu; m->u.hello.slot = 0x80000003u; break;
	case PROTO_PING: m->u.ping.sent_ms = 0x0102030405060708u; break;
	case PROTO_STATE: m->u.state.state = PROTO_W_STOPPING; break;
	case PROTO_WAKE:
		for (int i = 0; i < PLACE_SIZE; i++)
			m->u.wake.cursor.b[i] = (uint8_t)(0xA1 + i);
		break;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
	case PROTO_HOLDING:
	case PROTO_CANCEL:
		if (type == PROTO_CLAIMED) {
			for (int i = 0; i < PLACE_SIZE; i++)
				m->u.items.cursor.b[i] = (uint8_t)(0xB1 + i);
			m->u.items.claim_us = 0xC1C2C3C4u;
			m->u.items.more = 1;
			m->u.items.state = PROTO_W_IDLE;
		}
		m->u.items.n = (uint16_t)(n == DEFAULT_N ? PROTO_OUT_MAX + 1 : n);
		for (unsigned i = 0; i < m->u.items.n; i++) {
			m->u.items.items[i].id = 0xF000000000000000u + i;
			m->u.items.items[i].token = 0x0123456789ABCDEFu ^ i;
			if (type == PROTO_FINISHED) {
				m->u.items.items[i].outcome = (uint8_t)(i % (PROTO_OUT_MAX + 1));
				m->u.items.items[i].queue = (uint8_t)(i % PROTO_MAX_QUEUES);
				m->u.items.items[i].run_us = 0xD1D2D3D4u ^ i;
				m->u.items.items[i].wait_us = 0xE1E2E3E4u ^ i;
			}
		}
		break;
	case PROTO_STOP: m->u.stop.grace_ms = 30000; break;
	default: break;
	}
}

static int items_equal(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->u.items.n != b->u.items.n || a->u.items.claim_us != b->u.items.claim_us ||
	    a->u.items.more != b->u.items.more || a->u.items.state != b->u.items.state ||
	    memcmp(a->u.items.cursor.b, b->u.items.cursor.b, PLACE_SIZE) != 0)
		return 0;
	for (unsigned i = 0; i < a->u.items.n; i++) {
		const struct proto_item *x = &a->u.items.items[i], *y = &b->u.items.items[i];
		if (x->id != y->id || x->token != y->token || x->outcome != y->outcome ||
		    x->queue != y->queue || x->run_us != y->run_us || x->wait_us != y->wait_us)
			return 0;
	}
	return 1;
}

static int msg_equal(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->type != b->type || a->id != b->id)
		return 0;
	switch (a->type) {
	case PROTO_ACK: return a->u.ack.acked_id == b->u.ack.acked_id;
	case PROTO_HELLO: return a->u.hello.pid == b->u.hello.pid && a->u.hello.slot == b->u.hello.slot;
	case PROTO_PING: return a->u.ping.sent_ms == b->u.ping.sent_ms;
	case PROTO_STATE:
		return a->u.state.state == b->u.state.state;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
	case PROTO_HOLDING:
	case PROTO_CANCEL: return items_equal(a, b);
	case PROTO_STOP: return a->u.stop.grace_ms == b->u.stop.grace_ms;
	case PROTO_WAKE:
		return memcmp(a->u.wake.cursor.b, b->u.wake.cursor.b, PLACE_SIZE) == 0;
	default: return 1;
	}
}

static size_t body_size(unsigned type, unsigned n)
{
	static const unsigned fixed[] = { 0, 4, 8, 8, 1, 28, 2, 20, 4, 0, 2, 2 };
	return fixed[type] + n * (type == PROTO_CLAIMED || type == PROTO_HOLDING ||
				  type == PROTO_CANCEL ? 16u :
				  type == PROTO_FINISHED ? 26u : 0u);
}

/* Decodes exactly len bytes from a heap copy, so a read past the end shows under ASan/valgrind. */
static int decode_exact(const uint8_t *src, size_t len, struct proto_msg *m)
{
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	if (!copy) {
		perror("malloc");
		exit(2);
	}
	memcpy(copy, src, len);
	r = proto_decode(copy, len, m);
	free(copy);
	return r;
}

/* ---- round trips ---- */

struct rt_case {
	const char *name;
	unsigned type;
	int n;
};

static const struct rt_case rt_cases[] = {
	{ "round_trips_ack", PROTO_ACK, DEFAULT_N },
	{ "round_trips_hello", PROTO_HELLO, DEFAULT_N },
	{ "round_trips_ping", PROTO_PING, DEFAULT_N },
	{ "round_trips_state", PROTO_STATE, DEFAULT_N },
	{ "round_trips_claimed", PROTO_CLAIMED, DEFAULT_N },
	{ "round_trips_claimed_empty", PROTO_CLAIMED, 0 },
	{ "round_trips_claimed_max_items", PROTO_CLAIMED, PROTO_MAX_ITEMS },
	{ "round_trips_finished", PROTO_FINISHED, DEFAULT_N },
	{ "round_trips_finished_empty", PROTO_FINISHED, 0 },
	{ "round_trips_finished_max_items", PROTO_FINISHED, PROTO_MAX_ITEMS },
	{ "round_trips_wake", PROTO_WAKE, DEFAULT_N },
	{ "round_trips_stop", PROTO_STOP, DEFAULT_N },
	{ "round_trips_want", PROTO_WANT, DEFAULT_N },
	{ "round_trips_holding", PROTO_HOLDING, DEFAULT_N },
	{ "round_trips_holding_max_items", PROTO_HOLDING, PROTO_MAX_ITEMS },
	{ "round_trips_cancel", PROTO_CANCEL, DEFAULT_N },
	{ "round_trips_cancel_empty", PROTO_CANCEL, 0 },
	{ "round_trips_cancel_max_items", PROTO_CANCEL, PROTO_MAX_ITEMS },
};

static const char *run_round_trip(const struct rt_case *c)
{
	struct proto_msg in, out;
	uint8_t buf[FRAME_MAX];
	size_t want;
	unsigned n;
	int len, r;

	make_msg(c->type, c->n, &in);
	n = c->type == PROTO_CLAIMED || c->type == PROTO_FINISHED || c->type == PROTO_HOLDING ||
	    c->type == PROTO_CANCEL ?
	    in.u.items.n : 0;
	want = PROTO_HEADER_SIZE + body_size(c->type, n);
	len = proto_encode(&in, buf, sizeof(buf));
	if (len < 0 || (size_t)len != want)
		return why("encode returned %d, want %zu", len, want);
	r = decode_exact(buf, (size_t)len, &out);
	if (r != len)
		return why("decode returned %d, want %d", r, len);
	return msg_equal(&in, &out) ? NULL : "decoded message differs from the encoded one";
}

/* ---- byte order: golden frames ---- */

static const uint8_t golden_hello[] = {
	0xC1, 0xD0, 0x07, 0x02, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00, 0x08,
	0x0A, 0x0B, 0x0C, 0x0D, 0x00, 0x00, 0x00, 0x07,
};

static const uint8_t golden_finished[] = {
	0xC1, 0xD0, 0x07, 0x06, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1C,
	0x00, 0x01,
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x00,
	0x02, 0x0F,
	0x01, 0x02, 0x03, 0x04,
	0xFF, 0xFF, 0xFF, 0xFE,
};

/* CANCEL: two rows, id and token each; no outcome, queue or times on the wire. */
static const uint8_t golden_cancel[] = {
	0xC1, 0xD0, 0x07, 0x0B, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x22,
	0x00, 0x02,
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,
};

static void golden_msg(unsigned type, struct proto_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	if (type == PROTO_HELLO) {
		m->id = 0x01020304u;
		m->u.hello.pid = 0x0A0B0C0Du;
		m->u.hello.slot = 7;
		return;
	}
	m->id = 1;
	m->u.items.n = 1;
	m->u.items.items[0].id = 0x1122334455667788u;
	m->u.items.items[0].token = 0x99AABBCCDDEEFF00u;
	if (type == PROTO_CANCEL) {
		m->u.items.n = 2;
		m->u.items.items[1].id = 42;
		m->u.items.items[1].token = 7;
		return;
	}
	m->u.items.items[0].outcome = PROTO_OUT_DEAD;
	m->u.items.items[0].queue = 15;
	m->u.items.items[0].run_us = 0x01020304u;
	m->u.items.items[0].wait_us = 0xFFFFFFFEu;
}

static const char *run_golden(unsigned type, const uint8_t *golden, size_t glen, int decode)
{
	struct proto_msg m, out;
	uint8_t buf[FRAME_MAX];
	int r;

	golden_msg(type, &m);
	if (decode) {
		r = decode_exact(golden, glen, &out);
		if (r != (int)glen)
			return why("decode returned %d, want %zu", r, glen);
		return msg_equal(&m, &out) ? NULL : "decoded fields differ from the golden message";
	}
	r = proto_encode(&m, buf, sizeof(buf));
	if (r != (int)glen)
		return why("encode returned %d, want %zu", r, glen);
	for (size_t i = 0; i < glen; i++)
		if (buf[i] != golden[i])
			return why("byte %zu is 0x%02x, want 0x%02x", i, buf[i], golden[i]);
	return NULL;
}

/* ---- partial input ---- */

/* Every strict prefix of a valid frame is "need more" and leaves ret_msg untouched. */
static const char *run_prefixes(unsigned type)
{
	struct proto_msg in, out, sentinel;
	uint8_t buf[FRAME_MAX];
	int len, r;

	make_msg(type, DEFAULT_N, &in);
	len = proto_encode(&in, buf, sizeof(buf));
	if (len <= 0)
		return why("encode returned %d", len);
	memset(&sentinel, 0xA5, sizeof(sentinel));
	for (int k = 0; k < len; k++) {
		out = sentinel;
		r = decode_exact(buf, (size_t)k, &out);
		if (r != 0)
			return why("prefix of %d/%d bytes returned %d, want 0", k, len, r);
		if (memcmp(&out, &sentinel, sizeof(out)) != 0)
			return why("prefix of %d bytes wrote to ret_msg", k);
	}
	r = decode_exact(buf, (size_t)len, &out);
	return r == len ? NULL : why("whole frame returned %d, want %d", r, len);
}

/* All types back to back in one buffer decode in order, each consuming exactly its frame. */
static const char *run_stream(void)
{
	static uint8_t buf[(PROTO_TYPE_MAX + 1) * FRAME_MAX];
	struct proto_msg in, out;
	size_t used = 0, off = 0;
	int r;

	for (unsigned t = PROTO_ACK; t <= PROTO_TYPE_MAX; t++) {
		make_msg(t, DEFAULT_N, &in);
		r = proto_encode(&in, buf + used, sizeof(buf) - used);
		if (r <= 0)
			return why("encode %s returned %d", proto_type_name(t), r);
		used += (size_t)r;
	}
	for (unsigned t = PROTO_ACK; t <= PROTO_TYPE_MAX; t++) {
		make_msg(t, DEFAULT_N, &in);
		r = proto_decode(buf + off, used - off, &out);
		if (r <= 0 || !msg_equal(&in, &out))
			return why("frame %s at offset %zu: decode returned %d", proto_type_name(t), off, r);
		off += (size_t)r;
	}
	return off == used ? NULL : why("consumed %zu of %zu bytes", off, used);
}

/* A complete frame followed by the first bytes of the next: decode takes the first only. */
static const char *run_frame_then_partial(void)
{
	struct proto_msg a, b, out;
	uint8_t buf[2 * FRAME_MAX];
	int la, lb, r;

	make_msg(PROTO_PING, DEFAULT_N, &a);
	make_msg(PROTO_FINISHED, DEFAULT_N, &b);
	la = proto_encode(&a, buf, sizeof(buf));
	lb = proto_encode(&b, buf + la, sizeof(buf) - (size_t)la);
	r = proto_decode(buf, (size_t)(la + lb - 1), &out);
	if (r != la || !msg_equal(&a, &out))
		return why("first frame: decode returned %d, want %d", r, la);
	r = proto_decode(buf + la, (size_t)lb - 1, &out);
	if (r != 0)
		return why("truncated second frame returned %d, want 0", r);
	r = proto_decode(buf + la, (size_t)lb, &out);
	return r == lb && msg_equal(&b, &out) ? NULL : why("second frame returned %d", r);
}

/* ---- rejected frames ---- */

/* A valid frame of `type`, with `width` bytes at `off` overwritten by `value` (big-endian),
 * fed `feed` bytes (FEED_ALL: the whole frame). */
struct bad_case {
	const char *name;
	unsigned type;
	unsigned off, width;
	uint32_t value;
	unsigned feed;
	int expect;
};

#define HDR PROTO_HEADER_SIZE
#define OUTCOME_OFF(i) (HDR + 2 + (i) * 26 + 16)
#define QUEUE_OFF(i) (HDR + 2 + (i) * 26 + 17)

static const struct bad_case bad_cases[] = {
	{ "rejects_bad_magic", PROTO_PING, 0, 2, 0xC1D1, HDR, -EBADMSG },
	{ "rejects_byte_swapped_magic", PROTO_PING, 0, 2, 0xD0C1, HDR, -EBADMSG },
	{ "rejects_newer_version", PROTO_PING, 2, 1, PROTO_VERSION + 1, HDR, -EPROTONOSUPPORT },
	{ "rejects_version_zero", PROTO_PING, 2, 1, 0, HDR, -EPROTONOSUPPORT },
	{ "rejects_type_zero", PROTO_PING, 3, 1, 0, HDR, -EBADMSG },
	{ "rejects_unknown_type", PROTO_PING, 3, 1, PROTO_TYPE_MAX + 1, HDR, -EBADMSG },
	{ "rejects_type_255", PROTO_PING, 3, 1, 255, HDR, -EBADMSG },
	{ "rejects_message_id_zero", PROTO_ACK, 4, 4, 0, HDR, -EBADMSG },
	{ "rejects_oversized_frame", PROTO_CLAIMED, 8, 4, PROTO_MAX_BODY + 1, HDR, -EMSGSIZE },
	{ "rejects_length_4g", PROTO_WAKE, 8, 4, 0xFFFFFFFFu, HDR, -EMSGSIZE },
	{ "rejects_ack_with_short_body", PROTO_ACK, 8, 4, 3, HDR, -EBADMSG },
	{ "rejects_hello_with_long_body", PROTO_HELLO, 8, 4, 9, HDR, -EBADMSG },
	{ "rejects_ping_with_short_body", PROTO_PING, 8, 4, 4, HDR, -EBADMSG },
	{ "rejects_state_without_body", PROTO_STATE, 8, 4, 0, HDR, -EBADMSG },
	{ "rejects_state_with_v4_body", PROTO_STATE, 8, 4, 13, HDR, -EBADMSG },
	{ "rejects_wake_without_cursor", PROTO_WAKE, 8, 4, 0, HDR, -EBADMSG },
	{ "rejects_wake_with_long_body", PROTO_WAKE, 8, 4, 17, HDR, -EBADMSG },
	{ "rejects_want_with_body", PROTO_WANT, 8, 4, 4, HDR, -EBADMSG },
	{ "rejects_stop_with_empty_body", PROTO_STOP, 8, 4, 0, HDR, -EBADMSG },
	{ "rejects_claimed_without_count", PROTO_CLAIMED, 8, 4, 1, HDR, -EBADMSG },
	{ "rejects_claimed_partial_item", PROTO_CLAIMED, 8, 4, 22 + 16 + 1, HDR, -EBADMSG },
	{ "rejects_claimed_without_claim_time", PROTO_CLAIMED, 8, 4, 18 + 16, HDR, -EBADMSG },
	{ "rejects_claimed_finished_sized_items", PROTO_CLAIMED, 8, 4, 22 + 26, HDR, -EBADMSG },
	{ "rejects_claimed_with_v5_head", PROTO_CLAIMED, 8, 4, 26 + 16 * 3, HDR, -EBADMSG },
	{ "rejects_claimed_with_v6_head", PROTO_CLAIMED, 8, 4, 27 + 16 * 3, HDR, -EBADMSG },
	{ "rejects_claimed_more_not_0_or_1", PROTO_CLAIMED, HDR + 26, 1, 2, FEED_ALL, -EBADMSG },
	{ "rejects_claimed_state_out_of_range", PROTO_CLAIMED, HDR + 27, 1, PROTO_W_MAX + 1, FEED_ALL, -EBADMSG },
	{ "rejects_finished_partial_item", PROTO_FINISHED, 8, 4, 2 + 25, HDR, -EBADMSG },
	{ "rejects_finished_v2_sized_items", PROTO_FINISHED, 8, 4, 2 + 17, HDR, -EBADMSG },
	{ "rejects_claimed_too_many_items", PROTO_CLAIMED, 8, 4, 22 + 257 * 16, HDR, -EBADMSG },
	{ "rejects_finished_too_many_items", PROTO_FINISHED, 8, 4, 2 + 257 * 26, HDR, -EBADMSG },
	{ "rejects_claimed_count_above_length", PROTO_CLAIMED, HDR, 2, PROTO_OUT_MAX + 2, FEED_ALL, -EBADMSG },
	{ "rejects_claimed_count_below_length", PROTO_CLAIMED, HDR, 2, PROTO_OUT_MAX, FEED_ALL, -EBADMSG },
	{ "rejects_claimed_count_over_max", PROTO_CLAIMED, HDR, 2, PROTO_MAX_ITEMS + 1, FEED_ALL, -EBADMSG },
	{ "rejects_finished_count_65535", PROTO_FINISHED, HDR, 2, 0xFFFF, FEED_ALL, -EBADMSG },
	{ "rejects_state_out_of_range", PROTO_STATE, HDR, 1, PROTO_W_MAX + 1, FEED_ALL, -EBADMSG },
	{ "rejects_state_255", PROTO_STATE, HDR, 1, 255, FEED_ALL, -EBADMSG },
	{ "rejects_first_outcome_out_of_range", PROTO_FINISHED, OUTCOME_OFF(0), 1, PROTO_OUT_MAX + 1,
	  FEED_ALL, -EBADMSG },
	{ "rejects_last_outcome_out_of_range", PROTO_FINISHED, OUTCOME_OFF(PROTO_OUT_MAX), 1, 255,
	  FEED_ALL, -EBADMSG },
	{ "rejects_queue_out_of_range", PROTO_FINISHED, QUEUE_OFF(1), 1, PROTO_MAX_QUEUES,
	  FEED_ALL, -EBADMSG },
};

static void patch(uint8_t *p, unsigned width, uint32_t value)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(value >> (8 * (width - 1 - i)));
}

static const char *run_bad(const struct bad_case *c)
{
	struct proto_msg m, out, sentinel;
	uint8_t buf[FRAME_MAX];
	int len, r;

	make_msg(c->type, DEFAULT_N, &m);
	len = proto_encode(&m, buf, sizeof(buf));
	if (len <= 0 || c->off + c->width > (unsigned)len)
		return why("bad test case: encode returned %d", len);
	patch(buf + c->off, c->width, c->value);
	memset(&sentinel, 0x5A, sizeof(sentinel));
	out = sentinel;
	r = decode_exact(buf, c->feed == FEED_ALL ? (size_t)len : c->feed, &out);
	if (r != c->expect)
		return why("decode returned %d (%s), want %d", r, r < 0 ? strerror(-r) : "not an error",
		           c->expect);
	return memcmp(&out, &sentinel, sizeof(out)) ? "ret_msg written on error" : NULL;
}

/* ---- rejected messages (encode) ---- */

enum enc_mutation { MUT_NONE, MUT_TYPE_0, MUT_TYPE_MAX1, MUT_ID_0, MUT_N_OVER, MUT_STATE, MUT_OUTCOME,
		   MUT_QUEUE };

struct enc_case {
	const char *name;
	unsigned type;
	enum enc_mutation mut;
	int cap_delta; /* cap = exact frame size + cap_delta */
	int expect;    /* 0: expect the frame size */
};

static const struct enc_case enc_cases[] = {
	{ "encode_fits_exact_cap", PROTO_FINISHED, MUT_NONE, 0, 0 },
	{ "encode_fails_when_cap_one_short", PROTO_FINISHED, MUT_NONE, -1, -ENOSPC },
	{ "encode_wake_fails_when_cap_one_short", PROTO_WAKE, MUT_NONE, -1, -ENOSPC },
	{ "encode_ack_fails_with_header_only_cap", PROTO_ACK, MUT_NONE, -4, -ENOSPC },
	{ "encode_rejects_type_zero", PROTO_PING, MUT_TYPE_0, 0, -EINVAL },
	{ "encode_rejects_unknown_type", PROTO_PING, MUT_TYPE_MAX1, 0, -EINVAL },
	{ "encode_rejects_id_zero", PROTO_ACK, MUT_ID_0, 0, -EINVAL },
	{ "encode_rejects_too_many_claimed", PROTO_CLAIMED, MUT_N_OVER, FRAME_MAX, -EINVAL },
	{ "encode_rejects_too_many_finished", PROTO_FINISHED, MUT_N_OVER, FRAME_MAX, -EINVAL },
	{ "encode_rejects_state_out_of_range", PROTO_STATE, MUT_STATE, 0, -EINVAL },
	{ "encode_rejects_outcome_out_of_range", PROTO_FINISHED, MUT_OUTCOME, 0, -EINVAL },
	{ "encode_rejects_queue_out_of_range", PROTO_FINISHED, MUT_QUEUE, 0, -EINVAL },
	{ "encode_rejects_invalid_before_cap", PROTO_ACK, MUT_ID_0, -1, -EINVAL },
};

static void mutate(struct proto_msg *m, enum enc_mutation mut)
{
	switch (mut) {
	case MUT_TYPE_0: m->type = 0; break;
	case MUT_TYPE_MAX1: m->type = PROTO_TYPE_MAX + 1; break;
	case MUT_ID_0: m->id = 0; break;
	case MUT_N_OVER: m->u.items.n = PROTO_MAX_ITEMS + 1; break;
	case MUT_STATE: m->u.state.state = PROTO_W_MAX + 1; break;
	case MUT_OUTCOME: m->u.items.items[m->u.items.n - 1].outcome = PROTO_OUT_MAX + 1; break;
	case MUT_QUEUE: m->u.items.items[0].queue = PROTO_MAX_QUEUES; break;
	default: break;
	}
}

static const char *run_enc(const struct enc_case *c)
{
	struct proto_msg m;
	uint8_t buf[2 * FRAME_MAX + 64], ref[FRAME_MAX];
	int exact, r;

	make_msg(c->type, DEFAULT_N, &m);
	exact = proto_encode(&m, ref, sizeof(ref));
	if (exact <= 0)
		return why("bad test case: valid encode returned %d", exact);
	mutate(&m, c->mut);
	memset(buf, 0xEE, sizeof(buf));
	r = proto_encode(&m, buf, (size_t)(exact + c->cap_delta));
	if (r != (c->expect ? c->expect : exact))
		return why("encode returned %d, want %d", r, c->expect ? c->expect : exact);
	for (size_t i = r < 0 ? 0 : (size_t)r; i < sizeof(buf); i++)
		if (buf[i] != 0xEE)
			return why("byte %zu written outside the frame", i);
	return NULL;
}

/* ---- names ---- */

static const char *run_names(void)
{
	static const struct {
		const char *(*fn)(unsigned);
		unsigned v;
		const char *want;
	} t[] = {
		{ proto_type_name, PROTO_ACK, "ack" },
		{ proto_type_name, PROTO_FINISHED, "finished" },
		{ proto_type_name, PROTO_STOP, "stop" },
		{ proto_type_name, 0, "?" },
		{ proto_type_name, PROTO_TYPE_MAX + 1, "?" },
		{ proto_wstate_name, PROTO_W_STARTING, "starting" },
		{ proto_wstate_name, PROTO_W_DB_DOWN, "db-down" },
		{ proto_wstate_name, PROTO_W_MAX + 1, "?" },
		{ proto_outcome_name, PROTO_OUT_DONE, "done" },
		{ proto_outcome_name, PROTO_OUT_RETRY, "retried" },
		{ proto_outcome_name, PROTO_OUT_LOST, "lost" },
		{ proto_outcome_name, PROTO_OUT_DEFERRED, "deferred" },
		{ proto_outcome_name, PROTO_OUT_MAX + 1, "?" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].fn(t[i].v), t[i].want) != 0)
			return why("entry %zu: got \"%s\", want \"%s\"", i, t[i].fn(t[i].v), t[i].want);
	return NULL;
}

#define N_ELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	char name[64];

	for (size_t i = 0; i < N_ELEM(rt_cases); i++)
		report(rt_cases[i].name, run_round_trip(&rt_cases[i]));
	report("encodes_hello_big_endian", run_golden(PROTO_HELLO, golden_hello, sizeof(golden_hello), 0));
	report("decodes_hello_big_endian", run_golden(PROTO_HELLO, golden_hello, sizeof(golden_hello), 1));
	report("encodes_finished_big_endian",
	       run_golden(PROTO_FINISHED, golden_finished, sizeof(golden_finished), 0));
	report("decodes_finished_big_endian",
	       run_golden(PROTO_FINISHED, golden_finished, sizeof(golden_finished), 1));
	report("encodes_cancel_big_endian",
	       run_golden(PROTO_CANCEL, golden_cancel, sizeof(golden_cancel), 0));
	report("decodes_cancel_big_endian",
	       run_golden(PROTO_CANCEL, golden_cancel, sizeof(golden_cancel), 1));
	for (unsigned t = PROTO_ACK; t <= PROTO_TYPE_MAX; t++) {
		snprintf(name, sizeof(name), "needs_more_for_every_prefix_of_%s", proto_type_name(t));
		report(name, run_prefixes(t));
	}
	report("decodes_all_types_back_to_back", run_stream());
	report("decodes_frame_followed_by_partial_frame", run_frame_then_partial());
	for (size_t i = 0; i < N_ELEM(bad_cases); i++)
		report(bad_cases[i].name, run_bad(&bad_cases[i]));
	for (size_t i = 0; i < N_ELEM(enc_cases); i++)
		report(enc_cases[i].name, run_enc(&enc_cases[i]));
	report("names_types_states_outcomes", run_names());
	printf("%d/%d cases passed\n", n_run - n_failed, n_run);
	return n_failed ? 1 : 0;
}
