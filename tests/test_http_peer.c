/* test_http_peer — who a client is when its connections are counted (http_peer.h): table-driven
 * pairs of addresses that are one client or two (an IPv4 address; an IPv6 /64, whatever the
 * rest of the address; IPv4 seen through a listener on [::]; the port never matters), how each
 * is written, addresses refused; then the table of counts against a plain model, through
 * growth and deletions (the clients after a removed one shifted back), with two seeds. */
#include "console/http_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/un.h>

#include "check.h"

/* An address as accept() gives it: text with a port. */
static socklen_t address(const char *text, unsigned port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, text, &a->sin6_addr) != 1)
			CHECK(0, "bad test address %s", text);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, text, &a->sin_addr) != 1)
		CHECK(0, "bad test address %s", text);
	return sizeof(*a);
}

static struct http_peer peer(const char *text, unsigned port)
{
	struct sockaddr_storage ss;
	socklen_t len = address(text, port, &ss);
	struct http_peer p;
	int r = http_peer_of((const struct sockaddr *)&ss, len, &p);

	CHECK(r == 0, "%s: http_peer_of returned %d", text, r);
	return p;
}

static const struct {
	const char *name, *a, *b;
	bool same;
} pairs[] = {
	{ "v4_one_address_two_ports", "192.0.2.7", "192.0.2.7", true },
	{ "v4_neighbours_are_two", "192.0.2.7", "192.0.2.8", false },
	{ "v4_other_network", "192.0.2.7", "198.51.100.7", false },
	{ "v4_loopbacks_are_two", "127.0.0.2", "127.0.0.3", false },
	{ "v6_one_64_low_bits_differ", "2001:db8:1:2::1", "2001:db8:1:2::2", true },
	{ "v6_one_64_all_low_bits", "2001:db8:1:2::", "2001:db8:1:2:ffff:ffff:ffff:ffff", true },
	{ "v6_one_64_privacy_address", "2001:db8:1:2:a1b2:c3d4:e5f6:789", "2001:db8:1:2::1", true },
	{ "v6_next_64_is_another", "2001:db8:1:2::1", "2001:db8:1:3::1", false },
	{ "v6_bit_64_is_the_hosts", "2001:db8:1:2::", "2001:db8:1:2:8000::", true },
	{ "v6_first_bit_differs", "2001:db8::1", "a001:db8::1", false },
	{ "v6_same_48_other_64", "2001:db8:1:0::1", "2001:db8:1:ffff::1", false },
	{ "v6_loopback_and_zero_64", "::1", "::2", true },
	{ "v6_link_local", "fe80::1", "fe80::2", true },
	{ "mapped_v4_is_the_v4", "::ffff:192.0.2.7", "192.0.2.7", true },
	{ "mapped_v4s_are_two", "::ffff:192.0.2.7", "::ffff:192.0.2.8", false },
	{ "mapped_v4_other_than_v4", "::ffff:192.0.2.7", "192.0.2.8", false },
	/* the same 64 bits, one IPv4 and one IPv6: two (32.1.13.184 is 2001:0db8's bytes) */
	{ "v4_bytes_like_a_v6_prefix", "32.1.13.184", "2001:db8::", false },
	{ "v4_zero_and_v6_zero_64", "0.0.0.0", "::", false },
	/* the deprecated IPv4-compatible form is IPv6 (::/64), not the IPv4 address */
	{ "v4_compatible_is_v6", "::192.0.2.7", "192.0.2.7", false },
	{ "v4_compatible_in_zero_64", "::192.0.2.7", "::1", true },
	{ "mapped_is_not_the_zero_64", "::ffff:0.0.0.1", "::1", false },
};

static const struct {
	const char *addr, *text;
} formats[] = {
	{ "192.0.2.7", "192.0.2.7" },
	{ "::ffff:192.0.2.7", "192.0.2.7" },
	{ "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64" },
	{ "2001:db8::1", "2001:db8::/64" },
	{ "::1", "::/64" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff::/64" },
};

static void test_pairs(void)
{
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct http_peer a = peer(pairs[i].a, 40000), b = peer(pairs[i].b, 40001 + (unsigned)i);
		CHECK(http_peer_same(&a, &b) == pairs[i].same, "%s: %s and %s %s", pairs[i].name,
		      pairs[i].a, pairs[i].b, pairs[i].same ? "are two clients" : "are one client");
		CHECK(http_peer_same(&b, &a) == pairs[i].same, "%s: not symmetric", pairs[i].name);
	}
}

static void test_formats(void)
{
	char text[HTTP_PEER_TEXT_MAX];

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct http_peer p = peer(formats[i].addr, 1);
		http_peer_format(&p, text, sizeof(text));
		CHECK(!strcmp(text, formats[i].text), "%s written %s, want %s", formats[i].addr, text,
		      formats[i].text);
	}
}

static void test_refused(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct http_peer p;
	socklen_t len;

	memset(&p, 0x5a, sizeof(p));
	len = address("192.0.2.7", 1, &ss);
	CHECK(http_peer_of((const struct sockaddr *)&ss, len - 1, &p) == -EINVAL,
	      "a short IPv4 address is refused");
	len = address("2001:db8::1", 1, &ss);
	CHECK(http_peer_of((const struct sockaddr *)&ss, sizeof(struct sockaddr_in), &p) == -EINVAL,
	      "an IPv6 address of an IPv4 length is refused");
	CHECK(http_peer_of((const struct sockaddr *)&un, sizeof(un), &p) == -EAFNOSUPPORT,
	      "a unix socket's address is refused");
	CHECK(http_peer_of(NULL, 0, &p) == -EINVAL, "no address is refused");
	CHECK(http_peer_of((const struct sockaddr *)&ss, 1, &p) == -EINVAL, "one byte is refused");
	CHECK(p.v6 == 0x5a && p.bytes[0] == 0x5a, "*ret untouched when refused");
	(void)len;
}

/* ---- the table against a model ---- */

#define CLIENTS 3000

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Client k: IPv4 for even k, an IPv6 /64 for odd k, each of them its own. */
static struct http_peer client(unsigned k)
{
	struct http_peer p;

	memset(&p, 0, sizeof(p));
	p.v6 = k & 1;
	p.bytes[0] = p.v6 ? 0x20 : 10;
	p.bytes[1] = (unsigned char)(k >> 16);
	p.bytes[2] = (unsigned char)(k >> 8);
	p.bytes[3] = (unsigned char)k;
	return p;
}

static void check_model(const struct http_peers *t, const unsigned *model, const char *when)
{
	size_t live = 0;

	for (unsigned k = 0; k < CLIENTS; k++) {
		struct http_peer p = client(k);
		unsigned got = http_peers_count(t, &p);
		live += model[k] > 0;
		if (got != model[k]) {
			CHECK(0, "%s: client %u holds %u, the table says %u", when, k, model[k], got);
			return;
		}
	}
	CHECK(http_peers_size(t) == live, "%s: %zu clients in the table, %zu in the model",
	      when, http_peers_size(t), live);
}

static void test_table(uint64_t seed, const char *name)
{
	static unsigned model[CLIENTS];
	struct http_peers t;
	struct http_peer p;

	memset(model, 0, sizeof(model));
	http_peers_init(&t, seed);
	p = client(1);
	CHECK(http_peers_count(&t, &p) == 0, "%s: an empty table counts 0", name);
	CHECK(http_peers_del(&t, &p) == 0, "%s: one fewer of an empty table is 0", name);
	/* 20000 random steps, adds twice as likely as removals: it grows and shrinks */
	for (int step = 0; step < 20000; step++) {
		unsigned k = (unsigned)(next() % CLIENTS);
		p = client(k);
		if (next() % 3) {
			int n = http_peers_add(&t, &p);
			model[k]++;
			if (n != (int)model[k]) {
				CHECK(0, "%s: add of client %u said %d, want %u", name, k, n, model[k]);
				break;
			}
		} else {
			unsigned n = http_peers_del(&t, &p);
			model[k] -= model[k] > 0;
			if (n != model[k]) {
				CHECK(0, "%s: del of client %u said %u, want %u", name, k, n, model[k]);
				break;
			}
		}
	}
	check_model(&t, model, name);
	/* every other client leaves entirely: deletions shift the rest back */
	for (unsigned k = 0; k < CLIENTS; k += 2) {
		p = client(k);
		while (model[k]) {
			http_peers_del(&t, &p);
			model[k]--;
		}
	}
	check_model(&t, model, name);
	for (unsigned k = 0; k < CLIENTS; k++) {
		p = client(k);
		while (model[k]) {
			http_peers_del(&t, &p);
			model[k]--;
		}
	}
	check_model(&t, model, name);
	CHECK(http_peers_size(&t) == 0, "%s: empty at the end", name);
	http_peers_free(&t);
	p = client(3);
	CHECK(http_peers_count(&t, &p) == 0 && http_peers_add(&t, &p) == 1,
	      "%s: usable after free", name);
	http_peers_free(&t);
}

/* Eight clients in 16 slots, removed in a random order, under 2000 seeds: probe runs that
 * wrap past the last slot are shifted back across it. */
static void test_small_tables(void)
{
	for (uint64_t seed = 1; seed <= 2000; seed++) {
		struct http_peers t;
		unsigned order[8], live[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
		http_peers_init(&t, seed * 0x9e3779b97f4a7c15ull);
		for (unsigned k = 0; k < 8; k++) {
			struct http_peer p = client(k);
			http_peers_add(&t, &p);
			order[k] = k;
		}
		for (unsigned k = 7; k > 0; k--) {
			unsigned j = (unsigned)(next() % (k + 1)), x = order[k];
			order[k] = order[j];
			order[j] = x;
		}
		for (unsigned n = 0; n < 8; n++) {
			struct http_peer p = client(order[n]);
			http_peers_del(&t, &p);
			live[order[n]] = 0;
			for (unsigned k = 0; k < 8; k++) {
				p = client(k);
				if (http_peers_count(&t, &p) != live[k]) {
					CHECK(0, "seed %llu: client %u counts %u after %u removals, want %u",
					      (unsigned long long)seed, k, http_peers_count(&t, &p), n + 1,
					      live[k]);
					http_peers_free(&t);
					return;
				}
			}
		}
		http_peers_free(&t);
	}
}

/* One /64 from many addresses is one count; its neighbour /64 another. */
static void test_one_64_counts_once(void)
{
	struct http_peers t;
	char text[64];
	struct http_peer p, other = peer("2001:db8:1:3::1", 1);

	http_peers_init(&t, 42);
	for (unsigned i = 1; i <= 40; i++) {
		snprintf(text, sizeof(text), "2001:db8:1:2::%x", i * 977);
		p = peer(text, 1000 + i);
		CHECK(http_peers_add(&t, &p) == (int)i, "address %s: count %u", text, i);
	}
	CHECK(http_peers_size(&t) == 1, "40 addresses of one /64: one client");
	CHECK(http_peers_count(&t, &other) == 0, "the next /64 holds none");
	CHECK(http_peers_add(&t, &other) == 1, "the next /64 has a count of its own");
	p = peer("2001:db8:1:2:dead:beef::1", 9);
	CHECK(http_peers_del(&t, &p) == 39, "one leaves, from another address of the /64");
	http_peers_free(&t);
}

int main(void)
{
	test_pairs();
	test_formats();
	test_refused();
	test_one_64_counts_once();
	test_small_tables();
	test_table(0x1234567890abcdefull, "seeded");
	test_table(0, "seed 0");
	if (!failures)
		printf("ok - %zu pairs, %zu formats, the table\n", sizeof(pairs) / sizeof(pairs[0]),
		       sizeof(formats) / sizeof(formats[0]));
	return failures ? 1 : 0;
}
