/* The HTTP options checked together (config.c's finish calls it once every source is read). */
#include "common/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "a,b": names a Host header may give (letters, digits, '.', '-', ':', '[', ']', '_'), or
 * "*". */
static bool valid_hosts(const char *v)
{
	for (const char *s = v; *s;) {
		size_t n = strcspn(s, ",");
		if (n == 0 || n > 255)
			return false;
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)s[i]) && !strchr(".-:[]_*", s[i]))
				return false;
		if (memchr(s, '*', n) && n != 1)
			return false;
		s += n + (s[n] == ',');
	}
	return true;
}

/* The HTTP options together: a token unless refused on purpose (loopback only), and a
 * non-loopback address only with HTTPS or the cleartext acknowledged. */
unsigned config_http_max_streams(const struct config *c)
{
	return c->http_max_streams ? c->http_max_streams : c->http_max_conns / 2;
}

int config_check_http(const struct config *c, char *err, size_t errlen)
{
	const char *given = *c->http_token_file ? "--http-token-file" :
			    *c->http_read_token_file ? "--http-read-token-file" :
			    c->http_no_auth ? "--http-insecure-no-auth" :
			    *c->http_hosts ? "--http-host" : *c->http_tls_cert ? "--http-tls-cert" :
			    *c->http_tls_key ? "--http-tls-key" :
			    c->http_cleartext ? "--http-insecure-cleartext" : NULL;
	const char *why = NULL;

	if (!*c->http) {
		if (given)
			snprintf(err, errlen, "%s needs --http", given);
		return given ? -EINVAL : 0;
	}
	if (c->http_no_auth && !c->http_loopback)
		why = "--http-insecure-no-auth is for a loopback address only (anyone who can reach "
		      "this one could add, cancel and read jobs)";
	else if (c->http_no_auth && (*c->http_token_file || *c->http_read_token_file))
		why = "--http-insecure-no-auth and a token file: give one of them";
	else if (c->http_no_auth && strchr(c->http_hosts, '*'))
		why = "--http-host * needs a token (not --http-insecure-no-auth)";
	else if (!*c->http_tls_cert != !*c->http_tls_key)
		why = "--http-tls-cert and --http-tls-key go together";
	else if (!c->http_loopback && !*c->http_tls_cert && !c->http_cleartext)
		why = "not a loopback address: give --http-tls-cert and --http-tls-key (HTTPS), or "
		      "--http-insecure-cleartext to send the token over plain HTTP";
	else if (!valid_hosts(c->http_hosts))
		why = "--http-host takes names (a,b), each NAME, NAME:PORT, [IPv6]:PORT or *";

	if (why) {
		snprintf(err, errlen, "--http %s: %s", c->http, why);
		return -EINVAL;
	}
	if (c->http_max_streams && c->http_max_streams >= c->http_max_conns) {
		snprintf(err, errlen, "--http-max-streams %u: must be under --http-max-connections "
			 "(%u): what is left is for /healthz, /metrics and short requests",
			 c->http_max_streams, c->http_max_conns);
		return -EINVAL;
	}
	return 0;
}
