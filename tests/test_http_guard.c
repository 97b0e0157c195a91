/* test_http_guard — table-driven tests of http_guard_check: the Host a request names (the
 * listening address, localhost, names the operator listed, any IP of a wildcard address), a
 * change from another origin (Origin, Sec-Fetch-Site), the full and the read-only token, and
 * the paths that need less. Every case names what it shows. */
#include "console/http_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "check.h"

#define TOKEN "full-token-0123456789"
#define READ "read-token-0123456789"

struct policy {
	const char *addr;      /* "127.0.0.1", "::1", "0.0.0.0", "::" */
	unsigned port;
	bool tls;
	const char *hosts;
	bool no_auth;
};

struct cse {
	const char *name;
	const struct policy *p;
	const char *method, *host, *origin, *fetch_site, *auth;
	enum http_path_access access;
	enum http_verdict want;
};

static const struct policy lo = { "127.0.0.1", 8080, false, NULL, false };
static const struct policy lo_open = { "127.0.0.1", 8080, false, NULL, true };
static const struct policy lo6 = { "::1", 8080, false, NULL, false };
static const struct policy any = { "0.0.0.0", 8443, true, "claimd.example,proxy.example:80", false };
static const struct policy any6 = { "::", 8080, false, NULL, false };
static const struct policy star = { "10.0.0.5", 8080, false, "*", false };
static const struct policy https80 = { "127.0.0.1", 443, true, NULL, false };

#define B "Bearer " TOKEN
#define R "Bearer " READ

static const struct cse cases[] = {
	/* the Host */
	{ "host_is_the_address", &lo, "GET", "127.0.0.1:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_is_localhost", &lo, "GET", "localhost:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_localhost_any_case", &lo, "GET", "LocalHost:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_missing", &lo, "GET", NULL, NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_NO_HOST },
	{ "host_empty", &lo, "GET", "", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_NO_HOST },
	{ "host_rebound_name", &lo, "GET", "evil.example:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_other_port", &lo, "GET", "127.0.0.1:8081", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_without_port", &lo, "GET", "localhost", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_other_loopback_ip", &lo, "GET", "127.0.0.2:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_localhost_suffix", &lo, "GET", "localhost.evil.example:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_bad_port", &lo, "GET", "localhost:80x", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_port_too_big", &lo, "GET", "localhost:65536", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_empty_port", &lo, "GET", "localhost:", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_two_colons", &lo, "GET", "::1:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_v6_address", &lo6, "GET", "[::1]:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_v6_unclosed", &lo6, "GET", "[::1:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_v6_junk_after", &lo6, "GET", "[::1]x8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_v4_on_v6_loopback", &lo6, "GET", "127.0.0.1:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_any_ip_on_wildcard", &any, "GET", "192.0.2.7:8443", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_name_on_wildcard", &any, "GET", "evil.example:8443", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_listed_any_port", &any, "GET", "Claimd.Example:8443", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_listed_no_port", &any, "GET", "claimd.example", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_listed_with_port", &any, "GET", "proxy.example:80", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_listed_wrong_port", &any, "GET", "proxy.example:8443", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	{ "host_v4_on_v6_wildcard", &any6, "GET", "192.0.2.7:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_v6_on_v6_wildcard", &any6, "GET", "[2001:db8::1]:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_star_takes_any", &star, "GET", "whatever.example", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_default_https_port", &https80, "GET", "localhost", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "host_not_checked_for_healthz", &lo, "GET", "evil.example", NULL, NULL, NULL, HTTP_PATH_PUBLIC, HTTP_ALLOW },
	{ "host_checked_for_the_dashboard", &lo, "GET", "evil.example:8080", NULL, NULL, NULL, HTTP_PATH_OPEN, HTTP_FOREIGN_HOST },
	{ "host_checked_without_auth", &lo_open, "GET", "evil.example:8080", NULL, NULL, NULL, HTTP_PATH_TOKEN, HTTP_FOREIGN_HOST },
	/* a change from elsewhere */
	{ "post_same_origin", &lo_open, "POST", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", NULL, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "post_no_origin_curl", &lo_open, "POST", "127.0.0.1:8080", NULL, NULL, NULL, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "post_foreign_origin", &lo_open, "POST", "127.0.0.1:8080", "http://evil.example", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_origin_null", &lo_open, "POST", "127.0.0.1:8080", "null", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_origin_other_port", &lo_open, "POST", "localhost:8080", "http://localhost:3000", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_origin_https_on_http", &lo_open, "POST", "localhost:8080", "https://localhost:8080", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_origin_other_host_name", &lo_open, "POST", "localhost:8080", "http://127.0.0.1:8080", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_cross_site_fetch", &lo_open, "POST", "127.0.0.1:8080", NULL, "cross-site", NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_same_site_fetch", &lo_open, "POST", "127.0.0.1:8080", NULL, "same-site", NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_typed_by_user", &lo_open, "POST", "127.0.0.1:8080", NULL, "none", NULL, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "delete_foreign_origin", &lo_open, "DELETE", "127.0.0.1:8080", "http://evil.example", NULL, NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "put_cross_site", &lo_open, "PUT", "127.0.0.1:8080", NULL, "cross-site", NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "patch_cross_site", &lo_open, "PATCH", "127.0.0.1:8080", NULL, "cross-site", NULL, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "get_from_another_origin", &lo_open, "GET", "127.0.0.1:8080", "http://evil.example", "cross-site", NULL, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "post_foreign_origin_with_token", &lo, "POST", "127.0.0.1:8080", "http://evil.example", NULL, B, HTTP_PATH_TOKEN, HTTP_CROSS_SITE },
	{ "post_https_origin", &any, "POST", "claimd.example", "https://claimd.example", "same-origin", B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	/* the token */
	{ "no_token", &lo, "GET", "127.0.0.1:8080", NULL, NULL, NULL, HTTP_PATH_TOKEN, HTTP_NO_TOKEN },
	{ "wrong_token", &lo, "GET", "127.0.0.1:8080", NULL, NULL, "Bearer full-token-0123456780", HTTP_PATH_TOKEN, HTTP_NO_TOKEN },
	{ "token_prefix", &lo, "GET", "127.0.0.1:8080", NULL, NULL, "Bearer full-token-012345678", HTTP_PATH_TOKEN, HTTP_NO_TOKEN },
	{ "token_longer", &lo, "GET", "127.0.0.1:8080", NULL, NULL, B "x", HTTP_PATH_TOKEN, HTTP_NO_TOKEN },
	{ "token_not_bearer", &lo, "GET", "127.0.0.1:8080", NULL, NULL, "Basic " TOKEN, HTTP_PATH_TOKEN, HTTP_NO_TOKEN },
	{ "token_bearer_any_case", &lo, "GET", "127.0.0.1:8080", NULL, NULL, "bearer " TOKEN, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "full_token_changes", &lo, "POST", "127.0.0.1:8080", NULL, NULL, B, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "read_token_reads", &lo, "GET", "127.0.0.1:8080", NULL, NULL, R, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "read_token_head", &lo, "HEAD", "127.0.0.1:8080", NULL, NULL, R, HTTP_PATH_TOKEN, HTTP_ALLOW },
	{ "read_token_post", &lo, "POST", "127.0.0.1:8080", NULL, NULL, R, HTTP_PATH_TOKEN, HTTP_READ_ONLY },
	{ "read_token_delete", &lo, "DELETE", "127.0.0.1:8080", NULL, NULL, R, HTTP_PATH_TOKEN, HTTP_READ_ONLY },
	{ "dashboard_files_need_no_token", &lo, "GET", "127.0.0.1:8080", NULL, NULL, NULL, HTTP_PATH_OPEN, HTTP_ALLOW },
	{ "no_auth_needs_no_token", &lo_open, "POST", "localhost:8080", NULL, NULL, NULL, HTTP_PATH_TOKEN, HTTP_ALLOW },
};

static socklen_t address(const char *text, unsigned port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(text, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, text, &a->sin6_addr);
		return sizeof(*a);
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, text, &a->sin_addr);
	return sizeof(*a);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);

	for (size_t i = 0; i < n; i++) {
		const struct cse *c = &cases[i];
		struct sockaddr_storage ss;
		address(c->p->addr, c->p->port, &ss);
		struct http_guard g = { .addr = (const struct sockaddr *)&ss, .port = c->p->port,
					.tls = c->p->tls, .hosts = c->p->hosts,
					.token = c->p->no_auth ? NULL : TOKEN,
					.read_token = c->p->no_auth ? NULL : READ };
		struct http_guard_request q = { .method = c->method, .host = c->host,
						.origin = c->origin, .fetch_site = c->fetch_site,
						.authorization = c->auth, .access = c->access };
		enum http_verdict got = http_guard_check(&g, &q);
		CHECK(got == c->want, "%s: got %u (%s), want %u (%s)", c->name, got,
		      http_verdict_message(got), c->want, http_verdict_message(c->want));
	}
	CHECK(http_verdict_status(HTTP_FOREIGN_HOST) == 421, "a foreign Host is 421");
	CHECK(http_verdict_status(HTTP_NO_TOKEN) == 401, "no token is 401");
	CHECK(http_verdict_status(HTTP_READ_ONLY) == 403, "the read-only token changing is 403");
	CHECK(http_verdict_status(HTTP_CROSS_SITE) == 403, "a cross-site change is 403");
	CHECK(http_verdict_status(HTTP_NO_HOST) == 400, "no Host is 400");
	if (!failures)
		printf("ok - %zu cases\n", n);
	return failures ? 1 : 0;
}
