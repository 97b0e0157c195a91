/* test_dsn — table-driven tests of dsn_parse: accepted DSNs field by field, rejected DSNs
 * with the reason in err, *ret untouched on error, and every prefix of every case parsed
 * without crashing. Exits 1 on the first failing case set, after printing all failures. */
#include "common/dsn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ok_case {
	const char *name;
	const char *in;
	const char *user, *host;
	unsigned port;
	const char *db, *socket, *password_file;
};

struct bad_case {
	const char *name;
	const char *in;
	const char *err_contains; /* a piece of the message the user should see */
};

static const struct ok_case ok_cases[] = {
	{ "full_with_socket", "mysql://user@host:3306/db?socket=/path/to/sock",
	  "user", "host", 3306, "db", "/path/to/sock", "" },
	{ "localhost_socket", "mysql://app@localhost/claimd?socket=/run/mysqld/mysqld.sock",
	  "app", "localhost", 0, "claimd", "/run/mysqld/mysqld.sock", "" },
	{ "host_port", "mysql://app@db.example:3306/jobs", "app", "db.example", 3306, "jobs", "", "" },
	{ "mariadb_scheme", "mariadb://u@h/d", "u", "h", 0, "d", "", "" },
	{ "scheme_case_insensitive", "MySQL://u@h/d", "u", "h", 0, "d", "", "" },
	{ "no_user", "mysql://h:1/d", "", "h", 1, "d", "", "" },
	{ "empty_authority", "mysql:///d?socket=/s", "", "", 0, "d", "/s", "" },
	{ "port_max", "mysql://h:65535/d", "", "h", 65535, "d", "", "" },
	{ "port_leading_zero", "mysql://h:03306/d", "", "h", 3306, "d", "", "" },
	{ "port_without_host", "mysql://:3307/d", "", "", 3307, "d", "", "" },
	{ "ipv6", "mysql://u@[::1]:3306/d", "u", "::1", 3306, "d", "", "" },
	{ "ipv6_no_port", "mysql://[fe80::1]/d", "", "fe80::1", 0, "d", "", "" },
	{ "password_file", "mysql://u@h/d?password_file=/etc/claimd/pw",
	  "u", "h", 0, "d", "", "/etc/claimd/pw" },
	{ "both_params", "mysql://u@localhost/d?password_file=/p&socket=/s",
	  "u", "localhost", 0, "d", "/s", "/p" },
	{ "percent_user_at", "mysql://a%40b@h/d", "a@b", "h", 0, "d", "", "" },
	{ "percent_user_colon", "mysql://a%3Ab@h/d", "a:b", "h", 0, "d", "", "" },
	{ "percent_db", "mysql://h/my%2Ddb", "", "h", 0, "my-db", "", "" },
	{ "percent_socket_lower_hex", "mysql://h/d?socket=%2ftmp%2fa%20b.sock",
	  "", "h", 0, "d", "/tmp/a b.sock", "" },
	{ "percent_utf8", "mysql://j%C3%B6rg@h/d", "j\xc3\xb6rg", "h", 0, "d", "", "" },
	{ "plus_is_literal", "mysql://h/d?socket=/a+b", "", "h", 0, "d", "/a+b", "" },
};

static const struct bad_case bad_cases[] = {
	{ "empty", "", "mysql://" },
	{ "no_scheme", "user@host/db", "mysql://" },
	{ "wrong_scheme", "postgres://u@h/db", "mysql://" },
	{ "scheme_one_slash", "mysql:/h/db", "mysql://" },
	{ "password_rejected", "mysql://user:secret@h/db", "CLAIMD_DB_PASSWORD" },
	{ "password_rejected_names_file", "mysql://user:secret@h/db", "password_file" },
	{ "empty_password_rejected", "mysql://user:@h/db", "CLAIMD_DB_PASSWORD" },
	{ "no_db", "mysql://u@h", "database" },
	{ "no_db_with_query", "mysql://u@h?socket=/s", "database" },
	{ "empty_db", "mysql://u@h/", "database" },
	{ "empty_db_with_query", "mysql://u@h/?socket=/s", "database" },
	{ "slash_in_db", "mysql://u@h/a/b", "database" },
	{ "port_letters", "mysql://h:abc/d", "port" },
	{ "port_zero", "mysql://h:0/d", "port" },
	{ "port_too_big", "mysql://h:65536/d", "out of range" },
	{ "port_huge", "mysql://h:99999999999999999999999/d", "out of range" },
	{ "port_negative", "mysql://h:-1/d", "port" },
	{ "port_plus", "mysql://h:+3306/d", "port" },
	{ "port_space", "mysql://h: 3306/d", "port" },
	{ "port_empty", "mysql://h:/d", "port" },
	{ "port_percent", "mysql://h:%33306/d", "port" },
	{ "port_two_colons", "mysql://h:1:2/d", "port" },
	{ "ipv6_unclosed", "mysql://[::1/d", "]" },
	{ "ipv6_junk_after", "mysql://[::1]x/d", "after" },
	{ "ipv6_empty", "mysql://[]/d", "IPv6" },
	{ "two_at", "mysql://a@b@h/d", "@" },
	{ "empty_user", "mysql://@h/d", "user" },
	{ "unknown_param", "mysql://h/d?sslmode=require", "unknown query parameter \"sslmode\"" },
	{ "password_param", "mysql://h/d?password=x", "unknown query parameter" },
	{ "param_no_value", "mysql://h/d?socket", "=value" },
	{ "param_empty_value", "mysql://h/d?socket=", "empty value" },
	{ "param_twice", "mysql://h/d?socket=/a&socket=/b", "twice" },
	{ "empty_query", "mysql://h/d?", "empty query parameter" },
	{ "trailing_amp", "mysql://h/d?socket=/a&", "empty query parameter" },
	{ "double_amp", "mysql://h/d?socket=/a&&password_file=/p", "empty query parameter" },
	{ "ssl_mode_unknown", "mysql://h/d?ssl-mode=SOMETIMES", "is not DISABLED" },
	{ "verify_ca_without_ca", "mysql://h/d?ssl-mode=VERIFY_CA", "needs ssl-ca" },
	{ "verify_identity_without_ca", "mysql://h/d?ssl_mode=verify_identity", "needs ssl-ca" },
	{ "cert_without_key", "mysql://h/d?ssl-cert=/c.pem", "go together" },
	{ "ssl_mode_twice", "mysql://h/d?ssl-mode=REQUIRED&ssl_mode=REQUIRED", "given twice" },
	{ "raw_eq_in_value", "mysql://h/d?socket=/a=b", "%3D" },
	{ "fragment", "mysql://h/d#x", "#" },
	{ "bad_escape", "mysql://h/d%zz", "percent-escape" },
	{ "truncated_escape", "mysql://h/d%4", "percent-escape" },
	{ "truncated_escape_end", "mysql://h/d%", "percent-escape" },
	{ "escaped_nul", "mysql://h/d%00x", "control character" },
	{ "raw_control", "mysql://h/d\tx", "control character" },
	{ "escaped_newline_socket", "mysql://h/d?socket=/a%0A", "control character" },
	{ "empty_host_in_list", "mysql://u@h1,,h2/d", "an empty host" },
	{ "trailing_comma", "mysql://u@h1:1,/d", "an empty host" },
	{ "bad_port_in_list", "mysql://u@h1:1,h2:x/d", "port" },
	{ "too_many_hosts", "mysql://a,b,c,d,e,f,g,h,i/d", "more than 8 hosts" },
};

static int failures;

static void fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static void check_str(const char *name, const char *field, const char *got, const char *want)
{
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "FAIL %s: %s is \"%s\", want \"%s\"\n", name, field, got, want);
		failures++;
	}
}

static void test_ok(const struct ok_case *c)
{
	struct dsn d;
	char err[256] = "";
	int r;

	memset(&d, 0x5a, sizeof(d));
	r = dsn_parse(c->in, &d, err, sizeof(err));
	if (r != 0) {
		fail(c->name, "rejected: %s", err);
		return;
	}
	check_str(c->name, "user", d.user, c->user);
	check_str(c->name, "host", d.hosts[0].host, c->host);
	check_str(c->name, "db", d.db, c->db);
	check_str(c->name, "socket", d.socket, c->socket);
	check_str(c->name, "password_file", d.password_file, c->password_file);
	if (d.hosts[0].port != c->port) {
		fprintf(stderr, "FAIL %s: port is %u, want %u\n", c->name, d.hosts[0].port, c->port);
		failures++;
	}
}

static void test_bad(const struct bad_case *c)
{
	struct dsn d, orig;
	char err[256] = "";
	int r;

	memset(&d, 0x5a, sizeof(d));
	orig = d;
	r = dsn_parse(c->in, &d, err, sizeof(err));
	if (r != -EINVAL) {
		fail(c->name, "\"%s\" was not rejected with -EINVAL", c->in);
		return;
	}
	if (memcmp(&d, &orig, sizeof(d)) != 0)
		fail(c->name, "*ret was written on error");
	if (err[0] == '\0')
		fail(c->name, "err is empty");
	else if (!strstr(err, c->err_contains))
		fail(c->name, "err \"%s\" does not mention \"%s\"", err, c->err_contains);
}

/* Every prefix must either parse or be rejected with a message; a tiny err buffer must be
 * cut, not overrun; a NULL err is allowed. */
static void test_prefixes(const char *name, const char *in)
{
	char buf[1024], err[256], tiny[4];
	size_t len = strlen(in), i;
	struct dsn d;
	int r;

	if (len >= sizeof(buf))
		return;
	for (i = 0; i <= len; i++) {
		memcpy(buf, in, i);
		buf[i] = '\0';
		err[0] = '\0';
		r = dsn_parse(buf, &d, err, sizeof(err));
		if (r != 0 && (r != -EINVAL || err[0] == '\0'))
			fail(name, "prefix \"%s\": bad result or empty err", buf);
		memset(tiny, 'x', sizeof(tiny));
		r = dsn_parse(buf, &d, tiny, 3);
		if (r != 0 && (tiny[2] != '\0' || tiny[3] != 'x'))
			fail(name, "prefix \"%s\": err buffer overrun", buf);
		(void)dsn_parse(buf, &d, NULL, 0);
	}
}

/* Field length limits, built at run time: DSN_FIELD_MAX - 1 decoded bytes fit, one more
 * does not, whether the bytes are written raw or percent-escaped. */
static void test_lengths(void)
{
	char in[4 * DSN_FIELD_MAX], err[256];
	struct dsn d;
	size_t n;
	int r;

	n = (size_t)snprintf(in, sizeof(in), "mysql://h/");
	memset(in + n, 'a', DSN_FIELD_MAX - 1);
	in[n + DSN_FIELD_MAX - 1] = '\0';
	r = dsn_parse(in, &d, err, sizeof(err));
	if (r != 0 || strlen(d.db) != DSN_FIELD_MAX - 1)
		fail("db_255_bytes_fits", "rejected or cut: %s", r ? err : "");
	strcat(in, "a");
	r = dsn_parse(in, &d, err, sizeof(err));
	if (r != -EINVAL || !strstr(err, "database name is longer than 255"))
		fail("db_256_bytes_rejected", "err \"%s\"", err);

	n = (size_t)snprintf(in, sizeof(in), "mysql://");
	for (size_t i = 0; i < DSN_FIELD_MAX; i++)
		n += (size_t)snprintf(in + n, sizeof(in) - n, "%%61");
	snprintf(in + n, sizeof(in) - n, "/d");
	r = dsn_parse(in, &d, err, sizeof(err));
	if (r != -EINVAL || !strstr(err, "host is longer than 255"))
		fail("escaped_host_256_bytes_rejected", "err \"%s\"", err);
	memmove(in + 8, in + 11, strlen(in + 11) + 1); /* one escape fewer: 255 bytes */
	r = dsn_parse(in, &d, err, sizeof(err));
	if (r != 0 || strlen(d.hosts[0].host) != DSN_FIELD_MAX - 1 || d.hosts[0].host[0] != 'a')
		fail("escaped_host_255_bytes_fits", "rejected or cut: %s", r ? err : "");

	n = (size_t)snprintf(in, sizeof(in), "mysql://h/d?socket=/");
	memset(in + n, 's', DSN_FIELD_MAX - 1);
	in[n + DSN_FIELD_MAX - 1] = '\0';
	r = dsn_parse(in, &d, err, sizeof(err));
	if (r != -EINVAL || !strstr(err, "socket path is longer"))
		fail("socket_256_bytes_rejected", "err \"%s\"", err);
}

/* The TLS parameters, field by field ('_' for '-', modes in any case). */
static int test_tls(void)
{
	struct dsn d;
	char err[256];
	int fails = 0;

	memset(&d, 0, sizeof(d));
	if (dsn_parse("mysql://u@db/x?ssl-mode=verify_identity&ssl_ca=/ca.pem&ssl-cert=/c.pem&"
		      "ssl-key=/k.pem&option-file=/etc/my.cnf&option_group=claimd", &d, err,
		      sizeof(err)) < 0 || d.ssl_mode != DSN_SSL_VERIFY_IDENTITY ||
	    strcmp(d.ssl_ca, "/ca.pem") || strcmp(d.ssl_cert, "/c.pem") || strcmp(d.ssl_key, "/k.pem") ||
	    strcmp(d.option_file, "/etc/my.cnf") || strcmp(d.option_group, "claimd") ||
	    !dsn_may_use_tls(&d)) {
		printf("FAIL tls_fields: %s\n", err);
		fails++;
	}
	memset(&d, 0, sizeof(d));
	if (dsn_parse("mysql://u@db/x?ssl-mode=DISABLED", &d, err, sizeof(err)) < 0 ||
	    d.ssl_mode != DSN_SSL_DISABLED || dsn_may_use_tls(&d)) {
		printf("FAIL tls_disabled\n");
		fails++;
	}
	memset(&d, 0, sizeof(d));
	if (dsn_parse("mysql://u@db/x", &d, err, sizeof(err)) < 0 || dsn_may_use_tls(&d)) {
		printf("FAIL tls_none\n");
		fails++;
	}
	return fails;
}

/* Several hosts: each with its port, in order; host and port are the first's. */
static void test_hosts(void)
{
	static const struct {
		const char *in;
		unsigned n;
		const char *host[3];
		unsigned port[3];
	} cases[] = {
		{ "mysql://u@h1:3306,h2:3307,h3/d", 3, { "h1", "h2", "h3" }, { 3306, 3307, 0 } },
		{ "mysql://u@[::1]:1,[fe80::2],h/d", 3, { "::1", "fe80::2", "h" }, { 1, 0, 0 } },
		{ "mysql://u@only:9/d", 1, { "only" }, { 9 } },
		{ "mysql:///d?socket=/s", 1, { "" }, { 0 } },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dsn d;
		char err[256] = "";

		if (dsn_parse(cases[i].in, &d, err, sizeof(err)) != 0) {
			fail("hosts", "%s rejected: %s", cases[i].in, err);
			continue;
		}
		if (d.nhosts != cases[i].n) {
			fail("hosts", "%s: %u hosts, want %u", cases[i].in, d.nhosts, cases[i].n);
			continue;
		}
		for (unsigned k = 0; k < d.nhosts; k++) {
			check_str(cases[i].in, "hosts[k].host", d.hosts[k].host, cases[i].host[k]);
			if (d.hosts[k].port != cases[i].port[k])
				fail("hosts", "%s: host %u port %u, want %u", cases[i].in, k,
				     d.hosts[k].port, cases[i].port[k]);
		}
	}
}

int main(void)
{
	if (test_tls())
		return 1;
	size_t i, nok = sizeof(ok_cases) / sizeof(ok_cases[0]);
	size_t nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);
	struct dsn d;

	for (i = 0; i < nok; i++) {
		test_ok(&ok_cases[i]);
		test_prefixes(ok_cases[i].name, ok_cases[i].in);
	}
	for (i = 0; i < nbad; i++) {
		test_bad(&bad_cases[i]);
		test_prefixes(bad_cases[i].name, bad_cases[i].in);
	}
	test_lengths();
	test_hosts();
	if (dsn_parse(NULL, &d, NULL, 0) != -EINVAL)
		fail("null_input", "NULL DSN not rejected");
	if (failures) {
		fprintf(stderr, "test_dsn: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_dsn: %zu valid, %zu invalid cases passed\n", nok, nbad);
	return 0;
}
