/* proto — encode/decode of supervisor <-> worker frames. See proto.h for the format. */
#include "common/proto.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define ITEMS_HEAD 2u    /* u16 n in front of CLAIMED/FINISHED items */
#define ITEM_OUTCOME 16u /* offsets in a FINISHED item: outcome, queue, run_us, wait_us */
#define ITEM_QUEUE 17u
#define ITEM_RUN 18u
#define ITEM_WAIT 22u
#define CURSOR_SIZE PLACE_SIZE  /* a place in claim order, opaque bytes (common/place.h) */
#define CLAIMED_MORE (ITEMS_HEAD + CURSOR_SIZE + 4)  /* CLAIMED's u8 more, after claim_us */
#define CLAIMED_STATE (CLAIMED_MORE + 1)             /* and its u8 state, after more */

/* Body size per type: a fixed part, plus n * item bytes for the item lists (item 0: fixed). */
struct body_rule {
	uint16_t fixed;
	uint16_t item;
};

static const struct body_rule body_rules[PROTO_TYPE_MAX + 1] = {
	[PROTO_ACK] = { 4, 0 },
	[PROTO_HELLO] = { 8, 0 },
	[PROTO_PING] = { 8, 0 },
	[PROTO_STATE] = { 1, 0 },
	[PROTO_CLAIMED] = { CLAIMED_STATE + 1, 16 },
	[PROTO_FINISHED] = { ITEMS_HEAD, 26 },
	[PROTO_WAKE] = { CURSOR_SIZE, 0 },
	[PROTO_STOP] = { 4, 0 },
	[PROTO_WANT] = { 0, 0 },
	[PROTO_HOLDING] = { ITEMS_HEAD, 16 },
	[PROTO_CANCEL] = { ITEMS_HEAD, 16 },
};

static const char *const type_names[PROTO_TYPE_MAX + 1] = {
	[PROTO_ACK] = "ack",         [PROTO_HELLO] = "hello", [PROTO_PING] = "ping",
	[PROTO_STATE] = "state",     [PROTO_CLAIMED] = "claimed",
	[PROTO_FINISHED] = "finished", [PROTO_WAKE] = "wake", [PROTO_STOP] = "stop",
	[PROTO_WANT] = "want", [PROTO_HOLDING] = "holding", [PROTO_CANCEL] = "cancel",
};

static const char *const wstate_names[PROTO_W_MAX + 1] = {
	[PROTO_W_STARTING] = "starting", [PROTO_W_IDLE] = "idle",         [PROTO_W_BUSY] = "busy",
	[PROTO_W_DB_DOWN] = "db-down",   [PROTO_W_STOPPING] = "stopping",
};

static const char *const outcome_names[PROTO_OUT_MAX + 1] = {
	[PROTO_OUT_DONE] = "done",         [PROTO_OUT_RETRY] = "retried", [PROTO_OUT_DEAD] = "dead",
	[PROTO_OUT_RELEASED] = "released", [PROTO_OUT_LOST] = "lost",
	[PROTO_OUT_DEFERRED] = "deferred",
};

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, (uint16_t)(v >> 16));
	put_u16(p + 2, (uint16_t)v);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)(v >> 32));
	put_u32(p + 4, (uint32_t)v);
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)get_u16(p) << 16 | get_u16(p + 2);
}

static uint64_t get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

static int type_valid(unsigned type)
{
	return type >= PROTO_ACK && type <= PROTO_TYPE_MAX;
}

static int has_items(unsigned type)
{
	return type_valid(type) && body_rules[type].item != 0;
}

static size_t body_size(unsigned type, size_t n)
{
	return body_rules[type].fixed + n * body_rules[type].item;
}

/* ---- encode ---- */

static int msg_valid(const struct proto_msg *m)
{
	if (!type_valid(m->type) || m->id == 0)
		return 0;
	if (m->type == PROTO_STATE)
		return m->u.state.state <= PROTO_W_MAX;
	if (!has_items(m->type))
		return 1;
	if (m->u.items.n > PROTO_MAX_ITEMS || m->u.items.more > 1 ||
	    m->u.items.state > PROTO_W_MAX)
		return 0;
	for (unsigned i = 0; m->type == PROTO_FINISHED && i < m->u.items.n; i++)
		if (m->u.items.items[i].outcome > PROTO_OUT_MAX ||
		    m->u.items.items[i].queue >= PROTO_MAX_QUEUES)
			return 0;
	return 1;
}

static void put_cursor(uint8_t *p, const struct place *c)
{
	memcpy(p, c->b, PLACE_SIZE);
}

static void put_items(uint8_t *p, const struct proto_msg *m)
{
	put_u16(p, m->u.items.n);
	if (m->type == PROTO_CLAIMED) {
		put_cursor(p + ITEMS_HEAD, &m->u.items.cursor);
		put_u32(p + ITEMS_HEAD + CURSOR_SIZE, m->u.items.claim_us);
		p[CLAIMED_MORE] = m->u.items.more;
		p[CLAIMED_STATE] = m->u.items.state;
	}
	p += body_rules[m->type].fixed;
	for (unsigned i = 0; i < m->u.items.n; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		put_u64(p, it->id);
		put_u64(p + 8, it->token);
		if (m->type == PROTO_FINISHED) {
			p[ITEM_OUTCOME] = it->outcome;
			p[ITEM_QUEUE] = it->queue;
			put_u32(p + ITEM_RUN, it->run_us);
			put_u32(p + ITEM_WAIT, it->wait_us);
		}
		p += body_rules[m->type].item;
	}
}

static void put_body(uint8_t *p, const struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_ACK: put_u32(p, m->u.ack.acked_id); break;
	case PROTO_HELLO:
		put_u32(p, m->u.hello.pid);
		put_u32(p + 4, m->u.hello.slot);
		break;
	case PROTO_PING: put_u64(p, m->u.ping.sent_ms); break;
	case PROTO_STATE:
		p[0] = m->u.state.state;
		break;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
	case PROTO_HOLDING:
	case PROTO_CANCEL: put_items(p, m); break;
	case PROTO_STOP: put_u32(p, m->u.stop.grace_ms); break;
	case PROTO_WAKE: put_cursor(p, &m->u.wake.cursor); break;
	default: break; /* WANT: empty body */
	}
}

int proto_encode(const struct proto_msg *m, uint8_t *buf, size_t cap)
{
	size_t blen;

	if (!msg_valid(m))
		return -EINVAL;
	blen = body_size(m->type, has_items(m->type) ? m->u.items.n : 0);
	if (cap < PROTO_HEADER_SIZE + blen)
		return -ENOSPC;
	put_u16(buf, PROTO_MAGIC);
	buf[2] = PROTO_VERSION;
	buf[3] = m->type;
	put_u32(buf + 4, m->id);
	put_u32(buf + 8, (uint32_t)blen);
	put_body(buf + PROTO_HEADER_SIZE, m);
	return (int)(PROTO_HEADER_SIZE + blen);
}

/* ---- decode ---- */

/* Is len a possible body size for type? For item lists the count itself is in the body and
 * is checked against len once the body has arrived. */
static int body_len_valid(unsigned type, uint32_t len)
{
	const struct body_rule *r = &body_rules[type];

	if (r->item == 0)
		return len == r->fixed;
	if (len < r->fixed || (len - r->fixed) % r->item != 0)
		return 0;
	return (len - r->fixed) / r->item <= PROTO_MAX_ITEMS;
}

/* Checks the 12 header bytes at p; on success stores the body length in *ret_len. */
static int check_header(const uint8_t *p, uint32_t *ret_len)
{
	uint32_t len = get_u32(p + 8);

	if (get_u16(p) != PROTO_MAGIC)
		return -EBADMSG;
	if (p[2] != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (!type_valid(p[3]) || get_u32(p + 4) == 0)
		return -EBADMSG;
	if (len > PROTO_MAX_BODY)
		return -EMSGSIZE;
	if (!body_len_valid(p[3], len))
		return -EBADMSG;
	*ret_len = len;
	return 0;
}

/* Field checks that need the body: item count agrees with the length, enums in range. */
static int check_body(unsigned type, const uint8_t *b, uint32_t len)
{
	size_t n;

	if (type == PROTO_STATE)
		return b[0] <= PROTO_W_MAX ? 0 : -EBADMSG;
	if (!has_items(type))
		return 0;
	n = get_u16(b);
	if (body_size(type, n) != len)
		return -EBADMSG;
	if (type == PROTO_CLAIMED && (b[CLAIMED_MORE] > 1 || b[CLAIMED_STATE] > PROTO_W_MAX))
		return -EBADMSG;
	for (size_t i = 0; type == PROTO_FINISHED && i < n; i++)
		if (b[body_rules[type].fixed + i * body_rules[type].item + ITEM_OUTCOME] > PROTO_OUT_MAX ||
		    b[body_rules[type].fixed + i * body_rules[type].item + ITEM_QUEUE] >= PROTO_MAX_QUEUES)
			return -EBADMSG;
	return 0;
}

static void get_cursor(const uint8_t *b, struct place *c)
{
	memcpy(c->b, b, PLACE_SIZE);
}

static void get_items(const uint8_t *b, uint8_t type, struct proto_msg *m)
{
	m->u.items.n = get_u16(b);
	if (type == PROTO_CLAIMED) {
		get_cursor(b + ITEMS_HEAD, &m->u.items.cursor);
		m->u.items.claim_us = get_u32(b + ITEMS_HEAD + CURSOR_SIZE);
		m->u.items.more = b[CLAIMED_MORE];
		m->u.items.state = b[CLAIMED_STATE];
	} else {
		memset(&m->u.items.cursor, 0, sizeof(m->u.items.cursor));
		m->u.items.claim_us = 0;
		m->u.items.more = 0;
		m->u.items.state = 0;
	}
	b += body_rules[type].fixed;
	for (unsigned i = 0; i < m->u.items.n; i++) {
		struct proto_item *it = &m->u.items.items[i];
		bool fin = type == PROTO_FINISHED;
		it->id = get_u64(b);
		it->token = get_u64(b + 8);
		it->outcome = fin ? b[ITEM_OUTCOME] : 0;
		it->queue = fin ? b[ITEM_QUEUE] : 0;
		it->run_us = fin ? get_u32(b + ITEM_RUN) : 0;
		it->wait_us = fin ? get_u32(b + ITEM_WAIT) : 0;
		b += body_rules[type].item;
	}
}

/* Fills m from a body that check_body() accepted. */
static void get_body(const uint8_t *b, uint8_t type, struct proto_msg *m)
{
	switch (type) {
	case PROTO_ACK: m->u.ack.acked_id = get_u32(b); break;
	case PROTO_HELLO:
		m->u.hello.pid = get_u32(b);
		m->u.hello.slot = get_u32(b + 4);
		break;
	case PROTO_PING: m->u.ping.sent_ms = get_u64(b); break;
	case PROTO_STATE:
		m->u.state.state = b[0];
		break;
	case PROTO_CLAIMED:
	case PROTO_FINISHED:
	case PROTO_HOLDING:
	case PROTO_CANCEL: get_items(b, type, m); break;
	case PROTO_STOP: m->u.stop.grace_ms = get_u32(b); break;
	case PROTO_WAKE: get_cursor(b, &m->u.wake.cursor); break;
	default: break; /* WANT: empty body */
	}
}

int proto_decode(const uint8_t *buf, size_t len, struct proto_msg *ret_msg)
{
	uint32_t blen;
	int r;

	if (len < PROTO_HEADER_SIZE)
		return 0;
	r = check_header(buf, &blen);
	if (r < 0)
		return r;
	if (len - PROTO_HEADER_SIZE < blen)
		return 0;
	r = check_body(buf[3], buf + PROTO_HEADER_SIZE, blen);
	if (r < 0)
		return r;
	ret_msg->type = buf[3];
	ret_msg->id = get_u32(buf + 4);
	get_body(buf + PROTO_HEADER_SIZE, buf[3], ret_msg);
	return (int)(PROTO_HEADER_SIZE + blen);
}

/* ---- names ---- */

const char *proto_type_name(unsigned type)
{
	return type_valid(type) ? type_names[type] : "?";
}

const char *proto_wstate_name(unsigned state)
{
	return state <= PROTO_W_MAX ? wstate_names[state] : "?";
}

const char *proto_outcome_name(unsigned outcome)
{
	return outcome <= PROTO_OUT_MAX ? outcome_names[outcome] : "?";
}
