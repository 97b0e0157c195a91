/* Values of options: durations, numbers, listen addresses. */
#include "common/config_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int config_parse_duration(const char *s, unsigned *ret_ms)
{
	char *end;
	double v, mult = 1000.0;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (!strcmp(end, "ms"))
		mult = 1.0;
	else if (!strcmp(end, "s") || !*end)
		mult = 1000.0;
	else if (!strcmp(end, "m"))
		mult = 60000.0;
	else if (!strcmp(end, "h"))
		mult = 3600000.0;
	else if (!strcmp(end, "d"))
		mult = 86400000.0;
	else
		return -EINVAL;
	v *= mult;
	if (v > (double)UINT_MAX)
		return -EINVAL;
	*ret_ms = (unsigned)(v + 0.5);
	return 0;
}

int config_parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

int config_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			bool *ret_loopback)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	size_t hlen;
	unsigned port;

	if (!colon || config_parse_uint(colon + 1, 0, 65535, &port) < 0)
		return -EINVAL;
	hlen = (size_t)(colon - s);
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (host[0] == '[' && hlen > 2 && host[hlen - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
		host[hlen - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(*a);
		*ret_loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
		return 0;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ret;
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		return -EINVAL;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	*ret_len = sizeof(*a);
	*ret_loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	return 0;
}
