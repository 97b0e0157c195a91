/* dsn — parsing of mysql://user@host:port/db?socket=...&password_file=...
 *
 * The parser splits the raw string at its raw delimiters first (':', '@', '/', '?', '&',
 * '='), then percent-decodes each part, so an escaped delimiter (%40, %2F, %3A) is data,
 * never structure. Every error leaves *ret untouched: the result is built in a local copy.
 */
#include "common/dsn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A slice of the input, not NUL-terminated. */
struct span {
	const char *p;
	size_t len;
};

static int set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static const char *find(struct span sp, char c)
{
	return sp.len ? memchr(sp.p, c, sp.len) : NULL;
}

/* Percent-decode sp into out (DSN_FIELD_MAX bytes, NUL-terminated); what names the part
 * for the message. Control characters (a decoded NUL among them) are refused: none belongs
 * in a user, host, database or path, and a NUL would silently cut the value short. */
static int decode(struct span sp, char *out, const char *what, char *err, size_t errlen)
{
	size_t i, n = 0;

	for (i = 0; i < sp.len; i++) {
		unsigned char c = (unsigned char)sp.p[i];

		if (c == '%') {
			if (sp.len - i < 3 || hexval(sp.p[i + 1]) < 0 || hexval(sp.p[i + 2]) < 0)
				return set_err(err, errlen, "bad percent-escape \"%.*s\" in the %s",
					       (int)(sp.len - i < 3 ? sp.len - i : 3), sp.p + i, what);
			c = (unsigned char)(hexval(sp.p[i + 1]) * 16 + hexval(sp.p[i + 2]));
			i += 2;
		}
		if (c < 0x20 || c == 0x7f)
			return set_err(err, errlen, "control character 0x%02x in the %s", c, what);
		if (n + 1 >= DSN_FIELD_MAX)
			return set_err(err, errlen, "the %s is longer than %d bytes", what,
				       DSN_FIELD_MAX - 1);
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/* Digits only, 1..65535; no sign, no spaces, no escapes. */
static int parse_port(struct span sp, unsigned *ret, char *err, size_t errlen)
{
	unsigned long v = 0;
	size_t i;

	if (sp.len == 0)
		return set_err(err, errlen, "empty port after ':' (leave out the ':' for the default)");
	for (i = 0; i < sp.len; i++) {
		if (sp.p[i] < '0' || sp.p[i] > '9')
			return set_err(err, errlen, "port \"%.*s\" is not a number 1..65535",
				       (int)sp.len, sp.p);
		v = v * 10 + (unsigned long)(sp.p[i] - '0');
		if (v > 65535)
			return set_err(err, errlen, "port \"%.*s\" is out of range 1..65535",
				       (int)sp.len, sp.p);
	}
	if (v == 0)
		return set_err(err, errlen, "port 0 is out of range 1..65535");
	*ret = (unsigned)v;
	return 0;
}

/* host, "[v6addr]", host:port or [v6addr]:port; may be empty. */
static int parse_hostport(struct span sp, struct dsn_host *d, char *err, size_t errlen)
{
	struct span host = sp, port = { NULL, 0 };
	bool has_port = false;
	const char *c;

	if (sp.len > 0 && sp.p[0] == '[') {
		c = find(sp, ']');
		if (!c)
			return set_err(err, errlen, "missing ']' after IPv6 address in the host");
		host.p = sp.p + 1;
		host.len = (size_t)(c - host.p);
		if (host.len == 0)
			return set_err(err, errlen, "empty IPv6 address \"[]\" in the host");
		c++;
		if (c < sp.p + sp.len && *c != ':')
			return set_err(err, errlen, "unexpected \"%.*s\" after ']' in the host",
				       (int)(sp.p + sp.len - c), c);
	} else {
		c = find(sp, ':');
		if (c)
			host.len = (size_t)(c - sp.p);
	}
	if (c && c < sp.p + sp.len) {
		has_port = true;
		port.p = c + 1;
		port.len = (size_t)(sp.p + sp.len - port.p);
	}
	if (decode(host, d->host, "host", err, errlen) < 0)
		return -EINVAL;
	if (has_port && parse_port(port, &d->port, err, errlen) < 0)
		return -EINVAL;
	return 0;
}

/* hostport[,hostport...]: commas outside "[...]" separate hosts. */
static int parse_hosts(struct span sp, struct dsn *d, char *err, size_t errlen)
{
	size_t start = 0;
	int depth = 0;

	d->nhosts = 0;
	for (size_t i = 0; i <= sp.len; i++) {
		struct span one;
		if (i < sp.len && sp.p[i] == '[')
			depth = 1;
		else if (i < sp.len && sp.p[i] == ']')
			depth = 0;
		if (i < sp.len && (sp.p[i] != ',' || depth))
			continue;
		one.p = sp.p + start;
		one.len = i - start;
		if (one.len == 0 && (sp.len > 0))
			return set_err(err, errlen, "an empty host in the host list \"%.*s\"",
				       (int)sp.len, sp.p);
		if (d->nhosts == DSN_HOSTS_MAX)
			return set_err(err, errlen, "more than %d hosts", DSN_HOSTS_MAX);
		if (parse_hostport(one, &d->hosts[d->nhosts], err, errlen) < 0)
			return -EINVAL;
		d->nhosts++;
		start = i + 1;
	}
	return 0;
}

/* [user@]hostport. A ':' in the user part means a password: refused. */
static int parse_authority(struct span sp, struct dsn *d, char *err, size_t errlen)
{
	const char *at = find(sp, '@');
	struct span user, rest;

	if (!at)
		return parse_hosts(sp, d, err, errlen);
	user.p = sp.p;
	user.len = (size_t)(at - sp.p);
	rest.p = at + 1;
	rest.len = sp.len - user.len - 1;
	if (find(user, ':'))
		return set_err(err, errlen, "a password is not allowed in the DSN (it would show "
			       "in ps): set CLAIMD_DB_PASSWORD or use ?password_file=PATH");
	if (find(rest, '@'))
		return set_err(err, errlen, "more than one '@' (write an '@' in the user as %%40)");
	if (user.len == 0)
		return set_err(err, errlen, "empty user before '@' (leave out the '@' for the default)");
	if (decode(user, d->user, "user", err, errlen) < 0)
		return -EINVAL;
	return parse_hosts(rest, d, err, errlen);
}

/* The query parameters: their name ('_' may stand for '-') and where each goes. */
static const struct {
	const char *name;
	size_t off;
	const char *what;       /* in messages */
} params[] = {
	{ "socket", offsetof(struct dsn, socket), "socket path" },
	{ "password-file", offsetof(struct dsn, password_file), "password_file path" },
	{ "ssl-mode", 0, "ssl-mode" },
	{ "ssl-ca", offsetof(struct dsn, ssl_ca), "ssl-ca path" },
	{ "ssl-cert", offsetof(struct dsn, ssl_cert), "ssl-cert path" },
	{ "ssl-key", offsetof(struct dsn, ssl_key), "ssl-key path" },
	{ "option-file", offsetof(struct dsn, option_file), "option-file path" },
	{ "option-group", offsetof(struct dsn, option_group), "option-group" },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const char *const ssl_modes[] = { "", "DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA",
					 "VERIFY_IDENTITY" };

static int find_param(struct span key)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		size_t n = strlen(params[i].name);
		bool same = key.len == n;
		for (size_t k = 0; same && k < n; k++)
			same = key.p[k] == params[i].name[k] ||
			       (key.p[k] == '_' && params[i].name[k] == '-');
		if (same)
			return (int)i;
	}
	return -1;
}

/* One key=value of the query string. */
static int parse_param(struct span sp, struct dsn *d, bool *seen, char *err, size_t errlen)
{
	const char *eq = find(sp, '=');
	struct span key, val;
	char mode[DSN_FIELD_MAX];
	int i;

	if (sp.len == 0)
		return set_err(err, errlen, "empty query parameter (stray '&' or '?')");
	if (!eq)
		return set_err(err, errlen, "query parameter \"%.*s\" has no '=value'",
			       (int)sp.len, sp.p);
	key.p = sp.p;
	key.len = (size_t)(eq - sp.p);
	val.p = eq + 1;
	val.len = sp.len - key.len - 1;
	i = find_param(key);
	if (i < 0)
		return set_err(err, errlen, "unknown query parameter \"%.*s\" (known: socket, "
			       "password_file, ssl-mode, ssl-ca, ssl-cert, ssl-key, option-file, "
			       "option-group)", (int)(key.len > 64 ? 64 : key.len), key.p);
	if (seen[i])
		return set_err(err, errlen, "query parameter \"%.*s\" given twice",
			       (int)key.len, key.p);
	seen[i] = true;
	if (val.len == 0)
		return set_err(err, errlen, "query parameter \"%.*s\" has an empty value",
			       (int)key.len, key.p);
	if (find(val, '='))
		return set_err(err, errlen, "raw '=' in the value of \"%.*s\" (write it as %%3D)",
			       (int)key.len, key.p);
	if (params[i].off)
		return decode(val, (char *)d + params[i].off, params[i].what, err, errlen);
	if (decode(val, mode, "ssl-mode", err, errlen) < 0)
		return -EINVAL;
	for (size_t m = 1; m < sizeof(ssl_modes) / sizeof(ssl_modes[0]); m++)
		if (!strcasecmp(mode, ssl_modes[m])) {
			d->ssl_mode = (int)m;
			return 0;
		}
	return set_err(err, errlen, "ssl-mode \"%.40s\" is not DISABLED, PREFERRED, REQUIRED, "
		       "VERIFY_CA or VERIFY_IDENTITY", mode);
}

static int parse_query(struct span sp, struct dsn *d, char *err, size_t errlen)
{
	bool seen[NPARAMS] = { false };
	struct span param;
	const char *amp;

	for (;;) {
		amp = find(sp, '&');
		param.p = sp.p;
		param.len = amp ? (size_t)(amp - sp.p) : sp.len;
		if (parse_param(param, d, seen, err, errlen) < 0)
			return -EINVAL;
		if (!amp)
			break;
		sp.p = amp + 1;
		sp.len -= param.len + 1;
	}
	if ((d->ssl_mode == DSN_SSL_VERIFY_CA || d->ssl_mode == DSN_SSL_VERIFY_IDENTITY) &&
	    !d->ssl_ca[0])
		return set_err(err, errlen, "ssl-mode %s needs ssl-ca (the CA's certificate)",
			       ssl_modes[d->ssl_mode]);
	if (!d->ssl_cert[0] != !d->ssl_key[0])
		return set_err(err, errlen, "ssl-cert and ssl-key go together");
	return 0;
}

int dsn_may_use_tls(const struct dsn *d)
{
	return (d->ssl_mode != DSN_SSL_DEFAULT && d->ssl_mode != DSN_SSL_DISABLED) ||
	       (d->ssl_mode == DSN_SSL_DEFAULT && (d->option_file[0] || d->ssl_ca[0]));
}

const char *dsn_password_file(const struct dsn *d)
{
	const char *env = getenv("CLAIMD_DB_PASSWORD");

	return (env && *env) || !d->password_file[0] ? NULL : d->password_file;
}

/* Strips the scheme; returns the length of the prefix, or 0 if it is not ours. */
static size_t scheme_len(const char *s)
{
	static const char *const schemes[] = { "mysql://", "mariadb://" };
	size_t i, n;

	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		n = strlen(schemes[i]);
		if (strncasecmp(s, schemes[i], n) == 0)
			return n;
	}
	return 0;
}

int dsn_parse(const char *s, struct dsn *ret, char *err, size_t errlen)
{
	struct dsn d;
	struct span rest, auth, db, query = { NULL, 0 };
	const char *slash, *q;
	size_t n;

	if (!s || !ret)
		return set_err(err, errlen, "no DSN given");
	memset(&d, 0, sizeof(d));
	n = scheme_len(s);
	if (n == 0)
		return set_err(err, errlen, "DSN must start with mysql:// or mariadb:// "
			       "(mysql://user@host:port/db?socket=/path)");
	rest.p = s + n;
	rest.len = strlen(rest.p);
	if (find(rest, '#'))
		return set_err(err, errlen, "'#' is not allowed in a DSN (write it as %%23)");
	slash = find(rest, '/');
	q = find(rest, '?');
	if (!slash || (q && q < slash))
		return set_err(err, errlen, "missing \"/database\" after the host");
	auth.p = rest.p;
	auth.len = (size_t)(slash - rest.p);
	db.p = slash + 1;
	db.len = q ? (size_t)(q - db.p) : (size_t)(rest.p + rest.len - db.p);
	if (q) {
		query.p = q + 1;
		query.len = (size_t)(rest.p + rest.len - query.p);
	}
	if (parse_authority(auth, &d, err, errlen) < 0)
		return -EINVAL;
	if (db.len == 0)
		return set_err(err, errlen, "missing database name after '/'");
	if (find(db, '/'))
		return set_err(err, errlen, "'/' in the database name \"%.*s\"", (int)db.len, db.p);
	if (decode(db, d.db, "database name", err, errlen) < 0)
		return -EINVAL;
	if (q && parse_query(query, &d, err, errlen) < 0)
		return -EINVAL;
	*ret = d;
	return 0;
}
