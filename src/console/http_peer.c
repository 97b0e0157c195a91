#include "console/http_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int http_peer_of(const struct sockaddr *a, socklen_t len, struct http_peer *ret)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct http_peer p;

	memset(&p, 0, sizeof(p));
	if (!a || len < (socklen_t)sizeof(sa_family_t))
		return -EINVAL;
	if (a->sa_family == AF_INET) {
		if (len < (socklen_t)sizeof(struct sockaddr_in))
			return -EINVAL;
		memcpy(p.bytes, &((const struct sockaddr_in *)a)->sin_addr, 4);
	} else if (a->sa_family == AF_INET6) {
		if (len < (socklen_t)sizeof(struct sockaddr_in6))
			return -EINVAL;
		const unsigned char *b = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
		if (!memcmp(b, mapped, sizeof(mapped))) {
			memcpy(p.bytes, b + 12, 4);   /* an IPv4 client of a listener on [::] */
		} else {
			p.v6 = 1;
			memcpy(p.bytes, b, 8);
		}
	} else {
		return -EAFNOSUPPORT;
	}
	*ret = p;
	return 0;
}

bool http_peer_same(const struct http_peer *a, const struct http_peer *b)
{
	return a->v6 == b->v6 && !memcmp(a->bytes, b->bytes, sizeof(a->bytes));
}

void http_peer_format(const struct http_peer *p, char *out, size_t outlen)
{
	char text[INET6_ADDRSTRLEN] = "?";

	if (p->v6) {
		unsigned char full[16] = { 0 };
		memcpy(full, p->bytes, 8);
		inet_ntop(AF_INET6, full, text, sizeof(text));
		snprintf(out, outlen, "%s/64", text);
	} else {
		inet_ntop(AF_INET, p->bytes, text, sizeof(text));
		snprintf(out, outlen, "%s", text);
	}
}

/* ---- the table: open addressing, linear probing, deletion by shifting back ---- */

struct http_peers_slot {
	struct http_peer peer;
	unsigned count;
};

static uint64_t hash(const struct http_peers *t, const struct http_peer *p)
{
	uint64_t x = 0;

	for (size_t i = 0; i < sizeof(p->bytes); i++)
		x = x << 8 | p->bytes[i];
	/* splitmix64's finaliser over the bytes and the seed */
	x ^= t->seed ^ (p->v6 ? 0x9e3779b97f4a7c15ull : 0);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Where p is, or the empty slot where it would go. t->cap > t->used. */
static size_t find(const struct http_peers *t, const struct http_peer *p)
{
	size_t mask = t->cap - 1, i = (size_t)hash(t, p) & mask;

	while (t->slots[i].count && !http_peer_same(&t->slots[i].peer, p))
		i = (i + 1) & mask;
	return i;
}

void http_peers_init(struct http_peers *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->seed = seed;
}

unsigned http_peers_count(const struct http_peers *t, const struct http_peer *p)
{
	return t->cap ? t->slots[find(t, p)].count : 0;
}

/* Twice as many slots (at least 16), every client moved. Returns 0 or -ENOMEM. */
static int grow(struct http_peers *t)
{
	size_t cap = t->cap ? t->cap * 2 : 16;
	struct http_peers old = *t;

	if (cap < t->cap)
		return -ENOMEM;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old.slots;
		return -ENOMEM;
	}
	t->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i].count)
			t->slots[find(t, &old.slots[i].peer)] = old.slots[i];
	free(old.slots);
	return 0;
}

int http_peers_add(struct http_peers *t, const struct http_peer *p)
{
	size_t i;

	/* at most half full: probes stay short */
	if ((t->used + 1) * 2 > t->cap && grow(t) < 0)
		return -ENOMEM;
	i = find(t, p);
	if (!t->slots[i].count) {
		t->slots[i].peer = *p;
		t->used++;
	}
	return (int)++t->slots[i].count;
}

unsigned http_peers_del(struct http_peers *t, const struct http_peer *p)
{
	size_t mask, i, j;

	if (!t->cap)
		return 0;
	mask = t->cap - 1;
	i = find(t, p);
	if (!t->slots[i].count)
		return 0;
	if (--t->slots[i].count)
		return t->slots[i].count;
	t->used--;
	/* The slot is empty now: the clients after it that probed past it move back, so that
	 * every client is still found from its home slot without crossing an empty one. */
	for (j = (i + 1) & mask; t->slots[j].count; j = (j + 1) & mask) {
		size_t home = (size_t)hash(t, &t->slots[j].peer) & mask;
		/* it stays when its home is cyclically in (i, j] */
		bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			t->slots[i] = t->slots[j];
			t->slots[j].count = 0;
			i = j;
		}
	}
	return 0;
}

size_t http_peers_size(const struct http_peers *t)
{
	return t->used;
}

void http_peers_free(struct http_peers *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->used = 0;
}
