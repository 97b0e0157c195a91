/* http_guard — who may do what over HTTP, decided from a request's headers before any of its
 * body is read: the Host it names (a page of another site that made its name point at us —
 * DNS rebinding — names its own), where a request that changes something comes from (Origin,
 * Sec-Fetch-Site: a page of another site may send one, never read the answer), and its token
 * (the full one, or the read-only one that may not change anything). Pure: strings in, a
 * verdict out; no I/O, no logging. */
#ifndef CLAIMD_HTTP_GUARD_H
#define CLAIMD_HTTP_GUARD_H

#include <stdbool.h>
#include <sys/socket.h>

#define HTTP_GUARD_TOKEN_MAX 256

enum http_verdict {
	HTTP_ALLOW,          /* go on */
	HTTP_NO_HOST,        /* 400: no Host header */
	HTTP_FOREIGN_HOST,   /* 421: a Host that does not name this server */
	HTTP_CROSS_SITE,     /* 403: a change asked for by a page of another origin */
	HTTP_NO_TOKEN,       /* 401: no token, or a wrong one */
	HTTP_READ_ONLY,      /* 403: the read-only token asking for a change */
	HTTP_VERDICT_COUNT
};

/* What a path needs. */
enum http_path_access {
	HTTP_PATH_TOKEN,     /* the token (when there is one), the Host checked: the API */
	HTTP_PATH_OPEN,      /* no token, the Host checked: the dashboard's files */
	HTTP_PATH_PUBLIC,    /* no token, any Host: /healthz (load balancers' probes) */
};

/* The policy. */
struct http_guard {
	const struct sockaddr *addr; /* where the server listens (its port, its address) */
	unsigned port;               /* the port it listens on (the kernel's for port 0) */
	bool tls;                    /* https: the Origin's scheme, 443 for a Host without port */
	const char *hosts;           /* more names the Host may give, "a,b": NAME (any port),
				      * NAME:PORT, or "*" (any Host); NULL or "" for none */
	const char *token;           /* NULL: no token needed (--http-insecure-no-auth) */
	const char *read_token;      /* NULL: none */
};

/* What the guard reads of a request: its method and headers (NULL when absent). */
struct http_guard_request {
	const char *method;
	const char *host;
	const char *origin;
	const char *fetch_site;      /* Sec-Fetch-Site */
	const char *authorization;
	enum http_path_access access;
};

/* Whether method changes something (POST, PUT, DELETE, PATCH): with the read-only token it
 * is refused, and from another origin too. */
bool http_guard_changes(const char *method);

/* The verdict on q. Tokens are compared in time that does not depend on where they differ. */
enum http_verdict http_guard_check(const struct http_guard *g, const struct http_guard_request *q);

/* The HTTP status of a verdict (200 for HTTP_ALLOW) and its message for the client. */
unsigned http_verdict_status(enum http_verdict v);
const char *http_verdict_message(enum http_verdict v);

#endif
