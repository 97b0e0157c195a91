#include "console/http_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 255

static const struct {
	unsigned status;
	const char *message;
} verdicts[HTTP_VERDICT_COUNT] = {
	[HTTP_ALLOW] = { 200, "ok" },
	[HTTP_NO_HOST] = { 400, "a Host header is required" },
	[HTTP_FOREIGN_HOST] = { 421, "the Host header does not name this server (see --http-host)" },
	[HTTP_CROSS_SITE] = { 403, "a change asked for by a page of another origin (Origin, "
				   "Sec-Fetch-Site): refused" },
	[HTTP_NO_TOKEN] = { 401, "this needs Authorization: Bearer <token>" },
	[HTTP_READ_ONLY] = { 403, "the read-only token cannot change anything" },
};

unsigned http_verdict_status(enum http_verdict v)
{
	return (unsigned)v < HTTP_VERDICT_COUNT ? verdicts[v].status : 500;
}

const char *http_verdict_message(enum http_verdict v)
{
	return (unsigned)v < HTTP_VERDICT_COUNT ? verdicts[v].message : "?";
}

bool http_guard_changes(const char *method)
{
	static const char *const changes[] = { "POST", "PUT", "DELETE", "PATCH" };

	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		if (method && !strcmp(method, changes[i]))
			return true;
	return false;
}

/* "name", "name:port", "[v6]", "[v6]:port" -> the name (without brackets) and the port (0
 * when not given). Returns false for anything else. */
static bool split_host(const char *s, size_t len, char *name, unsigned *port, bool *v6)
{
	const char *end = s + len, *colon;
	size_t n;

	*v6 = s < end && *s == '[';
	if (*v6) {
		const char *close = memchr(s, ']', len);
		if (!close)
			return false;
		n = (size_t)(close - s - 1);
		s++;
		colon = close + 1 < end ? close + 1 : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		colon = memchr(s, ':', len);
		n = colon ? (size_t)(colon - s) : len;
		if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
			return false;   /* an IPv6 address without brackets */
	}
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	memcpy(name, s, n);
	name[n] = '\0';
	*port = 0;
	if (!colon)
		return true;
	if (colon + 1 == end || end - colon > 6)
		return false;
	for (const char *p = colon + 1; p < end; p++) {
		if (*p < '0' || *p > '9')
			return false;
		*port = *port * 10 + (unsigned)(*p - '0');
	}
	return *port >= 1 && *port <= 65535;
}

/* Whether an IP literal names the address the server listens on (any address of the
 * machine when it listens on all of them). */
static bool is_our_ip(const struct sockaddr *addr, const char *name, bool v6)
{
	if (v6) {
		struct in6_addr a;
		const struct sockaddr_in6 *us = (const struct sockaddr_in6 *)addr;
		if (inet_pton(AF_INET6, name, &a) != 1 || addr->sa_family != AF_INET6)
			return false;
		return IN6_IS_ADDR_UNSPECIFIED(&us->sin6_addr) ||
		       !memcmp(&a, &us->sin6_addr, sizeof(a));
	}
	struct in_addr a;
	if (inet_pton(AF_INET, name, &a) != 1)
		return false;
	if (addr->sa_family == AF_INET6)   /* [::] takes IPv4 too */
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)addr)->sin6_addr);
	const struct sockaddr_in *us = (const struct sockaddr_in *)addr;
	return us->sin_addr.s_addr == htonl(INADDR_ANY) || us->sin_addr.s_addr == a.s_addr;
}

/* Whether one of the names the operator listed matches (a name without port: any port). */
static bool listed(const char *hosts, const char *name, unsigned port)
{
	char ename[NAME_MAX_LEN + 1];
	unsigned eport;
	bool v6;

	for (const char *e = hosts ? hosts : ""; *e;) {
		size_t n = strcspn(e, ",");
		if (n == 1 && *e == '*')
			return true;
		if (split_host(e, n, ename, &eport, &v6) && !strcasecmp(ename, name) &&
		    (!eport || eport == port))
			return true;
		e += n + (e[n] == ',');
	}
	return false;
}

static bool host_ok(const struct http_guard *g, const char *host)
{
	char name[NAME_MAX_LEN + 1];
	unsigned port;
	bool v6;

	if (!split_host(host, strlen(host), name, &port, &v6))
		return false;
	if (!port)
		port = g->tls ? 443 : 80;
	if (listed(g->hosts, name, port))
		return true;
	if (port != g->port)
		return false;
	return (!v6 && !strcasecmp(name, "localhost")) || is_our_ip(g->addr, name, v6);
}

/* Whether origin is scheme://host: the page that sent the request is this server's own. */
static bool same_origin(const char *origin, bool tls, const char *host)
{
	const char *scheme = tls ? "https://" : "http://";
	size_t n = strlen(scheme);

	return host && !strncasecmp(origin, scheme, n) && !strcasecmp(origin + n, host);
}

/* The token of "Bearer <token>", or NULL. */
static const char *bearer(const char *auth)
{
	if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
		return NULL;
	auth += 7;
	while (*auth == ' ')
		auth++;
	return auth;
}

/* Whether given is token, in time that depends on the token's length only. */
static bool same_token(const char *given, const char *token)
{
	size_t n = strlen(token), m = strnlen(given, HTTP_GUARD_TOKEN_MAX + 1);
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(token[i] ^ (i < m ? given[i] : 0));
	return diff == 0 && m == n;
}

enum http_verdict http_guard_check(const struct http_guard *g, const struct http_guard_request *q)
{
	bool changes = http_guard_changes(q->method);

	if (q->access != HTTP_PATH_PUBLIC) {
		if (!q->host || !*q->host)
			return HTTP_NO_HOST;
		if (!host_ok(g, q->host))
			return HTTP_FOREIGN_HOST;
	}
	if (changes && q->fetch_site && strcasecmp(q->fetch_site, "same-origin") != 0 &&
	    strcasecmp(q->fetch_site, "none") != 0)
		return HTTP_CROSS_SITE;
	if (changes && q->origin && !same_origin(q->origin, g->tls, q->host))
		return HTTP_CROSS_SITE;
	if (q->access != HTTP_PATH_TOKEN || !g->token)
		return HTTP_ALLOW;
	const char *given = bearer(q->authorization);
	bool full = given && same_token(given, g->token);
	bool read = given && g->read_token && same_token(given, g->read_token);
	if (!full && !read)
		return HTTP_NO_TOKEN;
	return !full && changes ? HTTP_READ_ONLY : HTTP_ALLOW;
}
