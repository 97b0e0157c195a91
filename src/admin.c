/* admin — what claimd does instead of running: check a set-up (--doctor), and the start-up
 * check of the database (preflight); admin_migrate.c brings the schema up to date. */
#include "admin.h"
#include "admin_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "store/store.h"
#include "store/store_migrate.h"

int admin_connect(const struct config *cfg, bool migrating, struct store **ret, char *err,
		  size_t errlen)
{
	struct store *s = NULL;
	int r = store_new(&cfg->dsn, "admin", &s);

	if (r == 0 && migrating)
		store_set_migrating(s);
	if (r == 0)
		r = store_connect(s, err, errlen);
	if (r < 0) {
		store_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

int admin_check_server(struct store *s, char *version, size_t vlen, char *err, size_t errlen)
{
	char comment[128];
	int r = store_server_version(s, version, vlen, comment, sizeof(comment), err, errlen);

	return r < 0 ? r : store_server_supported(version, comment, err, errlen);
}

static void needs_migration(unsigned have)
{
	fprintf(stderr, "claimd: the database's schema is version %u, this claimd needs version "
		"%u: run `claimd --migrate` with the same settings (as a user allowed to create and "
		"alter tables and triggers), or load migrations %03u to %03u of share/claimd/"
		"migrations with the mariadb client, in order\n", have, store_nmigrations,
		have + 1, store_nmigrations);
}

int admin_preflight(const struct config *cfg)
{
	struct store *s = NULL;
	char err[600] = "";
	unsigned have = 0;
	int r = admin_connect(cfg, false, &s, err, sizeof(err));

	if (r == -ENOTCONN) {
		fprintf(stderr, "claimd: the database does not answer yet (%s); starting anyway, "
			"the workers connect when it does\n", err);
		return 0;
	}
	if (r == -EPERM) {
		fprintf(stderr, "claimd: %s\n", err);   /* the password file, before any connection */
		return -1;
	}
	if (r < 0) {
		fprintf(stderr, "claimd: the database refused the connection: %s\n",
			*err ? err : strerror(-r));
		return -1;
	}
	char version[80];
	r = admin_check_server(s, version, sizeof(version), err, sizeof(err));
	if (r == 0)
		r = store_schema_version(s, &have, err, sizeof(err));
	store_free(s);
	if (r < 0) {
		fprintf(stderr, "claimd: %s%s\n", r == -ENOTSUP ? "" : "cannot read the schema's "
			"version: ", err);
		return -1;
	}
	if (have < store_nmigrations) {
		needs_migration(have);
		return -1;
	}
	if (have > store_nmigrations)
		fprintf(stderr, "claimd: the database's schema is version %u, newer than this "
			"claimd's %u: starting anyway\n", have, store_nmigrations);
	return 0;
}

void admin_error(const struct config *cfg, const char *what, const char *err)
{
	struct buf b;

	fprintf(stderr, "claimd %s: %s\n", what, err);
	if (!cfg->json)
		return;
	buf_init(&b);
	buf_puts(&b, "{\"error\":");
	buf_json_str(&b, err);
	buf_puts(&b, "}\n");
	fwrite(b.data, 1, b.len, stdout);
	buf_free(&b);
}

/* ---- --doctor ---- */

struct report {
	int fails, warns;
	bool unsupported;   /* not a server claimd supports: exit 2 */
	struct buf *json;   /* --json: the checks so far, else NULL */
};

static void say(struct report *rep, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct report *rep, const char *kind, const char *fmt, ...)
{
	char text[1200];
	va_list ap;

	rep->fails += !strcmp(kind, "FAIL");
	rep->warns += !strcmp(kind, "warn");
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (!rep->json) {
		printf("%-4s %s\n", kind, text);
		return;
	}
	buf_puts(rep->json, rep->json->len ? ",{\"level\":" : "{\"level\":");
	buf_json_str(rep->json, !strcmp(kind, "FAIL") ? "fail" : kind);
	buf_puts(rep->json, ",\"text\":");
	buf_json_str(rep->json, text);
	buf_puts(rep->json, "}");
}

/* A claimd at the control socket answers a status request. */
static void check_control(struct report *rep, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char reply[8] = "";
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { 3, 0 };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (write(fd, "status\n", 7) == 7 && read(fd, reply, 3) == 3 && !memcmp(reply, "ok\n", 3))
			say(rep, "ok", "a claimd answers on the control socket %s", path);
		else
			say(rep, "warn", "something at %s does not answer as claimd does", path);
	} else {
		say(rep, "info", "no claimd answers on the control socket %s (%s): not running, "
		    "or --control differs", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

/* GET /healthz on the --http address. */
static void check_http(struct report *rep, const struct config *cfg)
{
	char reply[256] = "";
	struct timeval tv = { 3, 0 };
	int fd;
	ssize_t n = -1;

	if (*cfg->http_tls_cert) {   /* a plain request would look like nothing answering */
		say(rep, "info", "http %s serves HTTPS: /healthz not asked (curl --cacert ... "
		    "https://%s/healthz)", cfg->http, cfg->http);
		return;
	}
	fd = socket(cfg->http_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (const struct sockaddr *)&cfg->http_addr, cfg->http_addrlen) == 0) {
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (write(fd, "GET /healthz HTTP/1.0\r\n\r\n", 25) == 25)
			n = read(fd, reply, sizeof(reply) - 1);
	}
	if (n > 0) {
		reply[n] = '\0';
		reply[strcspn(reply, "\r\n")] = '\0';
		say(rep, strstr(reply, " 200 ") ? "ok" : "warn", "http %s: /healthz says %s", cfg->http,
		    reply);
	} else {
		say(rep, "info", "nothing answers on http %s (claimd not running?)", cfg->http);
	}
	if (fd >= 0)
		close(fd);
}

int admin_doctor(const struct config *cfg)
{
	struct buf json;
	struct report rep = { .fails = 0 };
	struct store_doctor d;
	struct store *s = NULL;
	char err[800] = "";
	unsigned have = 0;
	struct timeval now;
	char version[80];
	int r;

	buf_init(&json);
	rep.json = cfg->json ? &json : NULL;
	say(&rep, "ok", "settings read%s%s", *cfg->config_file ? " from " : "", cfg->config_file);
	if (admin_connect(cfg, false, &s, err, sizeof(err)) < 0) {
		say(&rep, "FAIL", "cannot connect as claimd would: %s", err);
		goto local;
	}
	const char *cipher = store_tls_cipher(s);
	char at[DSN_FIELD_MAX + 32] = "";
	if (cfg->dsn.nhosts > 1) {
		char srv[DSN_FIELD_MAX + 16];
		snprintf(at, sizeof(at), " at %s", store_server(s, srv, sizeof(srv)));
	}
	if (cipher)
		say(&rep, "ok", "connected to the database%s over TLS (%s)", at, cipher);
	else
		say(&rep, dsn_may_use_tls(&cfg->dsn) ? "warn" : "ok", "connected to the database%s "
		    "without TLS%s", at, dsn_may_use_tls(&cfg->dsn) ? " (the DSN asks for it where "
		    "the server offers it: it does not)" : "");
	r = admin_check_server(s, version, sizeof(version), err, sizeof(err));
	if (r == -ENOTSUP) {
		/* The checks below would fail half-way on it, and say less. */
		say(&rep, "FAIL", "unsupported server: %s", err);
		rep.unsupported = true;
		store_free(s);
		goto local;
	}
	if (r < 0)
		say(&rep, "FAIL", "cannot read the server's version: %s", err);
	else
		say(&rep, "ok", "server %s (claimd supports MariaDB %d.%d or later)", version,
		    STORE_MARIADB_MIN_MAJOR, STORE_MARIADB_MIN_MINOR);
	if (store_schema_version(s, &have, err, sizeof(err)) < 0)
		say(&rep, "FAIL", "cannot read the schema's version: %s", err);
	else if (have < store_nmigrations)
		say(&rep, "FAIL", "the schema is version %u, claimd needs %u: run claimd --migrate",
		    have, store_nmigrations);
	else
		say(&rep, "ok", "the schema is version %u (claimd needs %u)", have, store_nmigrations);
	if (store_doctor(s, &d, err, sizeof(err)) < 0) {
		say(&rep, "FAIL", "cannot read the server's settings: %s", err);
	} else {
		gettimeofday(&now, NULL);
		double skew = d.server_time - ((double)now.tv_sec + now.tv_usec / 1e6);
		say(&rep, d.missing[0] ? "FAIL" : "ok", "%s%s", d.missing[0] ?
		    "privileges missing: " : "every privilege claimd uses (tried in a transaction "
		    "rolled back)", d.missing);
		say(&rep, strcmp(d.isolation, "READ-COMMITTED") ? "warn" : "ok",
		    "isolation level of claimd's sessions: %s", d.isolation);
		if (d.idle_trx_timeout > 0)
			say(&rep, "ok", "a session cut off inside a transaction frees its rows after "
			    "%ld s (idle_transaction_timeout)", d.idle_trx_timeout);
		else
			say(&rep, "info", "the server keeps a session cut off inside a transaction, "
			    "and the rows it locked, until wait_timeout (no idle_transaction_timeout)");
		say(&rep, "info", "binary log: %s, format %s, row image %s%s", d.log_bin ? "on" : "off",
		    d.binlog_format, d.binlog_row_image, d.log_bin && !strcmp(d.binlog_format, "ROW") ?
		    " (--wake auto follows it, given REPLICATION SLAVE)" :
		    " (no row-based log: claimd polls)");
		say(&rep, skew > 1 || skew < -1 ? "warn" : "ok", "clock: the server is %.3f s %s "
		    "this host (claimd uses the server's clock; other tools may not)",
		    skew < 0 ? -skew : skew, skew < 0 ? "behind" : "ahead of");
	}
	store_free(s);
local:
	check_control(&rep, cfg->control);
	if (*cfg->http)
		check_http(&rep, cfg);
	if (rep.json)
		printf("{\"checks\":[%.*s],\"problems\":%d,\"warnings\":%d}\n", (int)json.len,
		       json.data ? json.data : "", rep.fails, rep.warns);
	else
		printf("%d problem%s, %d warning%s\n", rep.fails, rep.fails == 1 ? "" : "s",
		       rep.warns, rep.warns == 1 ? "" : "s");
	buf_free(&json);
	return rep.unsupported ? 2 : rep.fails ? 1 : 0;
}
