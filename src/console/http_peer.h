/* http_peer — who a client is when its connections are counted (--http-max-connections-per-ip):
 * an IPv4 address, or an IPv6 address's /64. A host given IPv6 is given a /64 (or more), all of
 * it: counted per address, it could open as many connections as it has addresses. An
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a listener on [::] sees of an IPv4 client) is
 * that IPv4 address. And a table of counts per client. Pure: no I/O, no logging. */
#ifndef CLAIMD_HTTP_PEER_H
#define CLAIMD_HTTP_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HTTP_PEER_TEXT_MAX 48   /* "ffff:ffff:ffff:ffff::/64" and its NUL, with room */

struct http_peer {
	unsigned char v6;         /* 0: IPv4, 1: IPv6 */
	unsigned char bytes[8];   /* IPv4: the address, then zeros; IPv6: the first 64 bits */
};

/* The client of address a (len bytes; its port, flow and scope ignored) into *ret. Returns 0,
 * -EINVAL (len too short for its family) or -EAFNOSUPPORT (neither IPv4 nor IPv6). */
int http_peer_of(const struct sockaddr *a, socklen_t len, struct http_peer *ret);

bool http_peer_same(const struct http_peer *a, const struct http_peer *b);

/* "192.0.2.7", "2001:db8:1:2::/64" (for the log). */
void http_peer_format(const struct http_peer *p, char *out, size_t outlen);

/* ---- how many connections each client holds ---- */

struct http_peers {
	struct http_peers_slot *slots;   /* cap of them; a count of 0 is an empty slot */
	size_t cap, used;
	uint64_t seed;
};

/* An empty table. seed varies the hash (random at each start: a client that chooses its /64s
 * cannot choose them to collide). Allocates nothing yet. */
void http_peers_init(struct http_peers *t, uint64_t seed);
/* The connections p holds (0 when it is not in the table). */
unsigned http_peers_count(const struct http_peers *t, const struct http_peer *p);
/* One more for p. Returns its count now, or -ENOMEM (the table unchanged). */
int http_peers_add(struct http_peers *t, const struct http_peer *p);
/* One fewer for p (removed at 0). Returns its count now; a p not in the table: 0, nothing
 * changes. */
unsigned http_peers_del(struct http_peers *t, const struct http_peer *p);
/* Clients in the table. */
size_t http_peers_size(const struct http_peers *t);
/* Frees the slots; t is empty (and usable) after. */
void http_peers_free(struct http_peers *t);

#endif
