/* The options are one table: each entry's flag, environment variable and config-file key,
 * its type and range, where it lives in struct config, what applies a new value (the
 * supervisor at once, the workers by replacing them, or only a restart) and its help. Parsing
 * from every source, the usage text and the example config file all read it. */
#include "common/config_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AT(f) offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define NONE 0, 0
#define H24 (24ul * 3600ul * 1000ul)

const struct option_def config_defs[] = {
	{ "config", K_ACTION, "PATH", AT(config_file), 0, 0, A_RESTART,
	  "read settings from this INI file (or $CLAIMD_CONFIG): a key per option, e.g.\n"
	  "workers = 8; flags and CLAIMD_* variables override it" },
	{ "dsn", K_TEXT, "DSN", AT(dsn_text), 1, 0, A_RESTART,
	  "mysql://user@host:port/db?socket=/path; the password from CLAIMD_DB_PASSWORD\n"
	  "or ?password_file=PATH" },
	{ "handler", K_TEXT, "SPEC", AT(handler), 1, 0, A_WORKERS,
	  "noop | exec:/path/cmd [args] (a process per item, no shell) | pipe:/path/cmd\n"
	  "[args] (a co-process per worker, JSON lines) | so:/path/plugin.so [args]" },
	{ "workers", K_UINT, "N", AT(workers), 1, 1024, A_SUPERVISOR,
	  "worker processes (default 4)" },
	{ "queue", K_QUEUES, "NAME", AT(queues), 0, 0, A_RESTART,
	  "a queue to serve (default \"default\"); repeat it (or a,b) for several;\n"
	  "in the environment CLAIMD_QUEUES" },
	{ "batch", K_UINT_AUTO, "N|auto", AT(batch), 1, 256, A_WORKERS,
	  "rows a worker claims per round trip, 1..256, or auto: sized from what its\n"
	  "items have cost, many while they take microseconds, one when they take\n"
	  "long (default auto)" },
	{ "concurrency", K_UINT, "N", AT(concurrency), 1, 256, A_WORKERS,
	  "items one worker runs at once, 1..256 (default 1): exec: processes, pipe:\n"
	  "requests outstanding to its co-process, so: threads (a plugin that is not\n"
	  "thread-safe runs one at a time); raise it for items that mostly wait" },
	{ "claimers", K_UINT, "N", AT(claimers), 1, 1024, A_SUPERVISOR,
	  "claim transactions at once per supervisor (default: CPUs, at least 2)" },
	{ "control", K_TEXT, "PATH", AT(control), 1, 0, A_RESTART,
	  "control socket for claimctl (default " CONFIG_CONTROL_SERVICE_DIR "/claimd.sock where\n"
	  "claimd may write, else $XDG_RUNTIME_DIR/claimd.sock; never /tmp)" },
	{ "control-group", K_TEXT, "NAME", AT(control_group), 1, 0, A_RESTART,
	  "the control socket is 0660 with this group: its members may use claimctl\n"
	  "(default none: 0600, claimd's user and root only)" },
	{ "http", K_LISTEN, "HOST:PORT", AT(http), 0, 0, A_RESTART,
	  "serve the HTTP API, /metrics, /healthz and the dashboard (off by default)" },
	{ "http-token-file", K_TEXT, "PATH", AT(http_token_file), 1, 0, A_RESTART,
	  "HTTP requests need Authorization: Bearer <its first line> (default: one made at\n"
	  "start, 0600, at the control socket's path with the extension .http-token)" },
	{ "http-read-token-file", K_TEXT, "PATH", AT(http_read_token_file), 1, 0, A_RESTART,
	  "a second token, read-only: GET routes, /metrics and event streams, never a\n"
	  "change (403)" },
	{ "http-insecure-no-auth", K_FLAG, NULL, AT(http_no_auth), 0, 1, A_RESTART,
	  "no token (a loopback --http only); the Host header, and Origin and\n"
	  "Sec-Fetch-Site of a change, are still checked" },
	{ "http-host", K_TEXT, "NAMES", AT(http_hosts), 1, 0, A_RESTART,
	  "more names the Host header may give (a,b; NAME:PORT or NAME for any port;\n"
	  "* for any) besides the --http address and localhost with its port" },
	{ "http-tls-cert", K_TEXT, "FILE", AT(http_tls_cert), 1, 0, A_RESTART,
	  "serve HTTPS with this PEM certificate (chain); read again on SIGHUP" },
	{ "http-tls-key", K_TEXT, "FILE", AT(http_tls_key), 1, 0, A_RESTART,
	  "the PEM private key of --http-tls-cert; read again on SIGHUP" },
	{ "http-insecure-cleartext", K_FLAG, NULL, AT(http_cleartext), 0, 1, A_RESTART,
	  "let a non-loopback --http serve plain HTTP (the token readable on the network)\n"
	  "instead of requiring --http-tls-cert" },
	{ "http-max-connections", K_UINT, "N", AT(http_max_conns), 1, 65536, A_RESTART,
	  "HTTP connections at once (default 256); when fewer than an eighth are left,\n"
	  "connections idle for a second are closed to take new ones in" },
	{ "http-max-connections-per-ip", K_UINT, "N", AT(http_max_conns_per_ip), 1, 65536,
	  A_RESTART, "HTTP connections at once from one client: an IPv4 address, an IPv6\n"
	  "/64 (default 32)" },
	{ "http-max-streams", K_UINT_AUTO, "N|auto", AT(http_max_streams), 1, 65535, A_RESTART,
	  "event streams and ?wait requests at once, a share of --http-max-connections\n"
	  "(under it: the rest is for /healthz, /metrics and short requests); more are\n"
	  "answered 503 with Retry-After (default auto: half of --http-max-connections)" },
	{ "exec-result", K_FLAG, NULL, AT(exec_result), 0, 1, A_WORKERS,
	  "an exec: handler's stdout (at most 64 KiB) is the row's result" },
	{ "pipe-ready", K_FLAG, NULL, AT(pipe_ready), 0, 1, A_WORKERS,
	  "a pipe: co-process is started with its worker and writes {\"ready\":true} when it\n"
	  "can take items; the worker claims none before" },
	{ "lease", K_DURATION, "DUR", AT(lease_ms), 1000, UINT_MAX, A_WORKERS,
	  "claim lease, renewed while a handler runs (default 30s, at least 1s)" },
	{ "timeout", K_DURATION, "DUR", AT(timeout_ms), 1, UINT_MAX, A_WORKERS,
	  "handler time limit per item (default 300s)" },
	{ "hang-timeout", K_DURATION, "DUR", AT(hang_ms), 1, UINT_MAX, A_SUPERVISOR,
	  "a heartbeat unanswered this long: the worker is hung (default 10s)" },
	{ "kill-grace", K_DURATION, "DUR", AT(kill_grace_ms), 1, UINT_MAX, A_SUPERVISOR,
	  "SIGTERM to SIGKILL, for hung workers and timed-out handlers (default 2s)" },
	{ "grace", K_DURATION, "DUR", AT(grace_ms), 1, UINT_MAX, A_SUPERVISOR,
	  "on SIGTERM/SIGINT, the time in-flight items get (default 30s)" },
	{ "heartbeat", K_DURATION, "DUR", AT(heartbeat_ms), 1, UINT_MAX, A_SUPERVISOR,
	  "heartbeat interval (default 1s)" },
	{ "wake", K_WAKE, "MODE", AT(wake), 0, 2, A_RESTART,
	  "how idle workers learn of new rows: binlog, from the server's row-based binary\n"
	  "log as it is written (needs REPLICATION SLAVE); poll, every --poll-interval;\n"
	  "auto, the binary log where the server offers it, else polling (default auto)" },
	{ "poll-interval", K_DURATION, "DUR", AT(poll_ms), 1, UINT_MAX, A_SUPERVISOR,
	  "idle poll interval, one poller per supervisor, while it polls (default 100ms)" },
	{ "retry-base", K_DURATION, "DUR", AT(retry_base_ms), 1, UINT_MAX, A_WORKERS,
	  "retry back-off base: base*2^(attempt-1) +-25% (default 1s)" },
	{ "keep-done", K_DURATION, "DUR", AT(keep_done_ms), 0, UINT_MAX, A_SUPERVISOR,
	  "delete done rows this long after they finished (default 24h; 0 keeps them)" },
	{ "keep-dead", K_DURATION, "DUR", AT(keep_dead_ms), 0, UINT_MAX, A_SUPERVISOR,
	  "delete dead rows this long after they finished, as --keep-done does done rows\n"
	  "(default 0: dead rows are kept until deleted by hand)" },
	{ "dedupe-window", K_DURATION, "DUR", AT(dedupe_window_ms), 0, UINT_MAX, A_WORKERS,
	  "a finished row keeps its dedupe_key this long (default 5m)" },
	{ "maintenance-interval", K_DURATION, "DUR", AT(maintenance_ms), 1, UINT_MAX,
	  A_SUPERVISOR, "how often pruning, dedupe-key expiry, FIFO-group repair and the\n"
	  "check of rows that wait for others run (default 1m)" },
	{ "keep-history", K_DURATION, "DUR", AT(keep_history_ms), 0, UINT_MAX, A_SUPERVISOR,
	  "delete the queues' history (per minute: done, failed, dead, run and wait\n"
	  "times; GET /v1/stats, claimctl stats) this long after (default 14d; 0 keeps it)" },
	{ "history-flush", K_DURATION, "DUR", AT(history_flush_ms), 1000, 3600000, A_SUPERVISOR,
	  "how often this claimd adds what its workers finished to the history, and at a\n"
	  "clean stop (default 1m; 1s..1h)" },
	{ "log-level", K_LEVEL, "LEVEL", AT(log_level), 0, 3, A_WORKERS,
	  "error, warn, info or debug (default info)" },
	{ "log-format", K_FORMAT, "FORMAT", AT(log_format), 0, 2, A_WORKERS,
	  "text, logfmt or json (default text); under systemd each line gets its priority\n"
	  "for the journal" },
	{ "log-items", K_FLAG, NULL, AT(log_items), 0, 1, A_WORKERS,
	  "a log line per finished item: id, queue, attempt, outcome, duration (never the\n"
	  "payload)" },
	{ "user", K_TEXT, "NAME", AT(user), 1, 0, A_RESTART,
	  "started as root: become this user (with its groups) once the control socket\n"
	  "and the HTTP port are open, before any worker or handler starts" },
	{ "allow-root", K_FLAG, NULL, AT(allow_root), 0, 1, A_RESTART,
	  "let handlers run as root (refused otherwise)" },
	{ "handler-user", K_TEXT, "NAME", AT(handler_user), 1, 0, A_RESTART,
	  "run exec: and pipe: handlers as this user (its groups, gid and uid), away from\n"
	  "claimd's secret files and control socket; needs claimd to keep root (no --user)\n"
	  "or to have CAP_SETUID, CAP_SETGID and CAP_KILL" },
	{ "verbose", K_SET_LEVEL, NULL, NONE, 3, 0, A_WORKERS, "log-level debug" },
	{ "quiet", K_SET_LEVEL, NULL, NONE, 1, 0, A_WORKERS, "log-level warn" },
	{ "help", K_ACTION, NULL, NONE, CONFIG_HELP, 0, A_RESTART, "this text" },
	{ "version", K_ACTION, NULL, NONE, CONFIG_VERSION, 0, A_RESTART, "claimd's version" },
	{ "migrate", K_MODE, NULL, AT(migrate), 0, 1, A_RESTART,
	  "bring the database's schema up to this claimd's (its migrations, in order, while the\n"
	  "database is in use; what runs long on stderr), then exit; exit status 3: stop the\n"
	  "claimds running on it, then run it again. The DSN's user must be allowed to create\n"
	  "and alter tables and triggers" },
	{ "doctor", K_MODE, NULL, AT(doctor), 0, 1, A_RESTART,
	  "check what claimd needs, as it would connect, then exit: the schema, privileges,\n"
	  "isolation level, binary log, clock skew, the control socket and HTTP" },
	{ "json", K_MODE, NULL, AT(json), 0, 1, A_RESTART,
	  "with --migrate or --doctor: the report as one JSON object on stdout" },
	{ "example-config", K_ACTION, NULL, NONE, CONFIG_EXAMPLE, 0, A_RESTART,
	  "print an example config file (every key, commented, with its help)" },
	{ "fork-server-fd", K_HIDDEN, "FD", AT(fork_fd), 0, INT_MAX, A_RESTART, NULL },
	{ "parent-pid", K_HIDDEN, "PID", AT(parent_pid), 0, INT_MAX, A_RESTART, NULL },
};
#define NDEFS (sizeof(config_defs) / sizeof(config_defs[0]))
const size_t config_ndefs = NDEFS;


/* Where a value came from, in precedence order: each source overrides the ones before. */
enum source { S_DEFAULT, S_FILE, S_ENV, S_FLAG };

struct parse {
	struct config *c;
	enum source queue_source;   /* the one whose queues are in c (a later one replaces) */
	char where[CONFIG_FILE_MAX + 32];
	char msg[300];              /* the first error, without where */
	char err[420];
	int result;                 /* a K_ACTION's config_result */
};

/* As many claim transactions at once as there are cores, and at least 2. */
static unsigned default_claimers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 2 ? 2u : n > 1024 ? 1024u : (unsigned)n;
}

static void set_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->workers = 4;
	c->batch = 0;   /* auto */
	c->concurrency = 1;
	c->claimers = default_claimers();
	c->lease_ms = 30000;
	c->timeout_ms = 300000;
	c->hang_ms = 10000;
	c->kill_grace_ms = 2000;
	c->grace_ms = 30000;
	c->heartbeat_ms = 1000;
	c->poll_ms = 100;
	c->retry_base_ms = 1000;
	c->keep_done_ms = 24u * 3600u * 1000u;
	c->dedupe_window_ms = 5u * 60u * 1000u;
	c->maintenance_ms = 60u * 1000u;
	c->keep_history_ms = 14u * 24u * 3600u * 1000u;
	c->history_flush_ms = 60u * 1000u;
	c->log_level = 2; /* info */
	c->http_max_conns = 256;
	c->http_max_conns_per_ip = 32;
	c->fork_fd = -1;
	c->worker_slot = -1;
	c->worker_fd = -1;
}

static int fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	if (p->err[0])
		return -EINVAL;  /* the first error is the one told */
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, sizeof(p->err), "%.100s: %s", p->where, p->msg);
	return -EINVAL;
}

static bool valid_queue(const char *q, size_t n)
{
	if (n == 0 || n > CONFIG_QUEUE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)q[i] < 0x20 || q[i] == 0x7f)
			return false;
	return true;
}

/* "a,b": each a queue, added to those this source gave (a later source replaces them). */
static int add_queues(struct parse *p, enum source src, const char *v)
{
	struct config *c = p->c;

	if (src > p->queue_source) {
		c->nqueues = 0;
		p->queue_source = src;
	}
	for (const char *s = v; ; ) {
		size_t n = strcspn(s, ",");
		while (n && isspace((unsigned char)*s))
			s++, n--;
		while (n && isspace((unsigned char)s[n - 1]))
			n--;
		if (!valid_queue(s, n))
			return fail(p, "invalid queue name '%.*s'", (int)(n > 80 ? 80 : n), s);
		for (unsigned i = 0; i < c->nqueues; i++)
			if (strlen(c->queues[i]) == n && !memcmp(c->queues[i], s, n))
				return fail(p, "queue '%.*s' given twice", (int)n, s);
		if (c->nqueues == CONFIG_QUEUES_MAX)
			return fail(p, "at most %d queues", CONFIG_QUEUES_MAX);
		snprintf(c->queues[c->nqueues++], sizeof(c->queues[0]), "%.*s", (int)n, s);
		s = strchr(s, ',');
		if (!s)
			return 0;
		s++;
	}
}

static int parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = { "1", "true", "yes", "on" }, *const no[] = { "0",
		"false", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *ret = true, 0;
		if (!strcasecmp(v, no[i]))
			return *ret = false, 0;
	}
	return -EINVAL;
}

static int pick(const char *v, const char *const *names, size_t n, int *ret)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(v, names[i]))
			return *ret = (int)i, 0;
	return -EINVAL;
}

/* One value of option d from src into p->c. v is NULL for a bare flag. */
static int apply(struct parse *p, const struct option_def *d, enum source src, const char *v)
{
	static const char *const levels[] = { "error", "warn", "info", "debug" };
	static const char *const formats[] = { "text", "logfmt", "json" };
	static const char *const wakes[] = { "auto", "binlog", "poll" };
	void *field = (char *)p->c + d->off;
	unsigned u;

	switch (d->kind) {
	case K_TEXT:
		if (!*v)
			return fail(p, "must not be empty");
		if (strlen(v) >= d->size)
			return fail(p, "longer than %zu bytes", d->size - 1);
		memcpy(field, v, strlen(v) + 1);
		return 0;
	case K_UINT_AUTO:
		if (!strcmp(v, "auto")) {
			*(unsigned *)field = 0;
			return 0;
		}
		if (config_parse_uint(v, d->min, d->max, &u) < 0)
			return fail(p, "'%s' is not auto or a number from %lu to %lu", v, d->min,
				    d->max);
		*(unsigned *)field = u;
		return 0;
	case K_UINT:
	case K_HIDDEN:
		if (config_parse_uint(v, d->min, d->max, &u) < 0)
			return fail(p, "'%s' is not a number from %lu to %lu", v, d->min, d->max);
		if (d->size == sizeof(int) && d->kind == K_HIDDEN)
			*(int *)field = (int)u;
		else
			*(unsigned *)field = u;
		return 0;
	case K_DURATION:
		if (config_parse_duration(v, &u) < 0 || u < d->min)
			return fail(p, "'%s' is not a duration%s (e.g. 30s, 500ms, 5m)", v,
				    d->min >= 1000 ? " of at least 1s" : d->min ? " above 0" : "");
		*(unsigned *)field = u;
		return 0;
	case K_FLAG:
		if (!v)
			return *(bool *)field = true, 0;
		if (parse_bool(v, (bool *)field) < 0)
			return fail(p, "'%s' is not true or false", v);
		return 0;
	case K_QUEUES:
		return add_queues(p, src, v);
	case K_LISTEN:
		if (strlen(v) >= sizeof(p->c->http) ||
		    config_parse_listen(v, &p->c->http_addr, &p->c->http_addrlen,
					&p->c->http_loopback) < 0)
			return fail(p, "'%s' is not HOST:PORT (e.g. 127.0.0.1:8080, [::1]:8080)", v);
		snprintf(p->c->http, sizeof(p->c->http), "%s", v);
		return 0;
	case K_LEVEL:
		if (pick(v, levels, 4, &p->c->log_level) < 0)
			return fail(p, "'%s' is not error, warn, info or debug", v);
		return 0;
	case K_FORMAT:
		if (pick(v, formats, 3, &p->c->log_format) < 0)
			return fail(p, "'%s' is not text, logfmt or json", v);
		return 0;
	case K_WAKE:
		if (pick(v, wakes, 3, &p->c->wake) < 0)
			return fail(p, "'%s' is not auto, binlog or poll", v);
		return 0;
	case K_SET_LEVEL:
		p->c->log_level = (int)d->min;
		return 0;
	case K_MODE:
		*(bool *)field = true;
		return 0;
	case K_ACTION:
		if (d->off || d->size) {  /* --config: read before the rest */
			return 0;
		}
		p->result = (int)d->min;
		return 0;
	}
	return fail(p, "cannot be set here");
}

static const struct option_def *find(const char *name)
{
	for (size_t i = 0; i < config_ndefs; i++)
		if (!strcmp(config_defs[i].name, name))
			return &config_defs[i];
	return NULL;
}

bool config_flag_only(const struct option_def *d)
{
	return d->kind == K_ACTION || d->kind == K_SET_LEVEL || d->kind == K_HIDDEN ||
	       d->kind == K_MODE;
}

/* ---- the file ---- */

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	const struct option_def *d;
	char key[64];
	size_t n = strlen(name);

	/* Keys as flags ("hang-timeout") or with '_' ("hang_timeout"); sections are allowed
	 * for the reader's sake ([claimd]) and ignored. */
	(void)section;
	if (n >= sizeof(key))
		n = sizeof(key) - 1;
	for (size_t i = 0; i < n; i++)
		key[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
	key[n] = '\0';
	d = find(key);
	if (!d || config_flag_only(d)) {
		fail(p, "unknown key '%s' (see claimd --help)", name);
		return 0;
	}
	return apply(p, d, S_FILE, value) < 0 ? 0 : 1;
}

static int read_file(struct parse *p, const char *path)
{
	int line;

	snprintf(p->where, sizeof(p->where), "%s", path);
	line = ini_parse(path, on_key, p);
	if (line == 0)
		return 0;
	if (line < 0) {
		snprintf(p->err, sizeof(p->err), "--config %.200s: %s", path,
			 line == -1 ? strerror(errno) : "out of memory");
		return -EINVAL;
	}
	/* The line of the first error; the handler said what it was (else it is the syntax). */
	snprintf(p->err, sizeof(p->err), "%.100s:%d: %s", path, line,
		 p->msg[0] ? p->msg : "not a key = value line or a [section]");
	return -EINVAL;
}

/* ---- the environment and the command line ---- */

/* CLAIMD_ and the name in capitals; the queues are CLAIMD_QUEUES (handlers have an item's
 * queue in CLAIMD_QUEUE, and a claimd started by one must not take it for its own). */
static void env_name(const char *name, char *out, size_t outlen)
{
	size_t k = (size_t)snprintf(out, outlen, "CLAIMD_");

	if (!strcmp(name, "queue"))
		name = "queues";
	for (; *name && k + 1 < outlen; name++)
		out[k++] = *name == '-' ? '_' : (char)toupper((unsigned char)*name);
	out[k] = '\0';
}

static int read_env(struct parse *p)
{
	char var[80];

	for (size_t i = 0; i < config_ndefs; i++) {
		const char *v;
		if (config_flag_only(&config_defs[i]))
			continue;
		env_name(config_defs[i].name, var, sizeof(var));
		v = getenv(var);
		if (!v || !*v)
			continue;
		snprintf(p->where, sizeof(p->where), "%s", var);
		if (apply(p, &config_defs[i], S_ENV, v) < 0)
			return -EINVAL;
	}
	return 0;
}

/* getopt_long's table from defs (the index is the def's). */
static void long_options(struct option *out)
{
	for (size_t i = 0; i < NDEFS; i++) {
		bool arg = config_defs[i].meta != NULL;
		out[i] = (struct option){ config_defs[i].name, arg ? required_argument : no_argument, NULL,
					  (int)(256 + i) };
	}
	out[NDEFS] = (struct option){ NULL, 0, NULL, 0 };
}

/* Pass 1 finds --config (every other flag waits for pass 2, after the file and the
 * environment); pass 2 applies the rest. */
static int read_argv(struct parse *p, int argc, char **argv, bool config_only)
{
	struct option opts[NDEFS + 1];
	int opt;

	long_options(opts);
	optind = 0; /* full reset, glibc */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		const struct option_def *d;
		if (opt == '?' || opt == ':') {
			snprintf(p->err, sizeof(p->err), opt == ':' ? "option '%s' needs a value" :
				 "unknown option '%s' (see --help)", argv[optind - 1]);
			return -EINVAL;
		}
		d = &config_defs[opt - 256];
		if (config_only != !strcmp(d->name, "config"))
			continue;
		if (config_only) {
			snprintf(p->c->config_file, sizeof(p->c->config_file), "%s", optarg);
			continue;
		}
		snprintf(p->where, sizeof(p->where), "--%s", d->name);
		if (apply(p, d, S_FLAG, optarg) < 0)
			return -EINVAL;
	}
	if (!config_only && optind < argc) {
		snprintf(p->err, sizeof(p->err), "unexpected argument '%s' (see --help)",
			 argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* ---- after every source ---- */

static int finish(struct parse *p)
{
	struct config *c = p->c;
	char derr[256];

	p->where[0] = '\0';
	if (!*c->dsn_text) {
		snprintf(p->err, sizeof(p->err), "no database given: use --dsn "
			 "mysql://user@host/db, CLAIMD_DSN or dsn = in the config file");
		return -EINVAL;
	}
	if (dsn_parse(c->dsn_text, &c->dsn, derr, sizeof(derr)) < 0) {
		snprintf(p->err, sizeof(p->err), "bad DSN: %s", derr);
		return -EINVAL;
	}
	if (c->nqueues == 0)
		snprintf(c->queues[c->nqueues++], sizeof(c->queues[0]), "default");
	c->queue_list[0] = '\0';
	for (unsigned i = 0; i < c->nqueues; i++) {
		size_t len = strlen(c->queue_list);
		snprintf(c->queue_list + len, sizeof(c->queue_list) - len, "%s%s", i ? "," : "",
			 c->queues[i]);
	}
	snprintf(c->queue, sizeof(c->queue), "%s", c->queues[0]);
	/* What the handler spec says is the handler module's to check (handler_check). */
	if (c->json && !c->migrate && !c->doctor) {
		snprintf(p->err, sizeof(p->err), "--json goes with --migrate or --doctor");
		return -EINVAL;
	}
	if (c->migrate && c->doctor) {
		snprintf(p->err, sizeof(p->err), "--migrate and --doctor are two runs: give one");
		return -EINVAL;
	}
	if (!*c->handler && !c->migrate && !c->doctor) {
		snprintf(p->err, sizeof(p->err), "--handler is required (noop, exec:CMD, pipe:CMD "
			 "or so:LIB)");
		return -EINVAL;
	}
	if (!*c->control && config_control_settle(c, p->err, sizeof(p->err)) < 0)
		return -EINVAL;
	if (c->hang_ms <= c->heartbeat_ms) {
		snprintf(p->err, sizeof(p->err), "--hang-timeout must be longer than --heartbeat");
		return -EINVAL;
	}
	return config_check_http(c, p->err, sizeof(p->err));
}

int config_parse(int argc, char **argv, struct config *ret, char *err, size_t errlen)
{
	static struct config c;   /* large: not on the stack */
	struct parse p = { .c = &c };
	const char *env_file;

	set_defaults(&c);
	if (read_argv(&p, argc, argv, true) < 0)
		goto fail;
	env_file = getenv("CLAIMD_CONFIG");
	if (!*c.config_file && env_file && *env_file)
		snprintf(c.config_file, sizeof(c.config_file), "%s", env_file);
	if ((*c.config_file && read_file(&p, c.config_file) < 0) || read_env(&p) < 0 ||
	    read_argv(&p, argc, argv, false) < 0)
		goto fail;
	if (p.result != CONFIG_RUN)
		return p.result;
	if (finish(&p) < 0)
		goto fail;
	*ret = c;
	return CONFIG_RUN;
fail:
	snprintf(err, errlen, "%s", p.err);
	return -EINVAL;
}

/* ---- what a reload changes ---- */

static bool differs(const struct config *a, const struct config *b, const struct option_def *d)
{
	if (d->kind == K_QUEUES)
		return strcmp(a->queue_list, b->queue_list) != 0;
	return d->size && memcmp((const char *)a + d->off, (const char *)b + d->off, d->size);
}

void config_needs_restart(const struct config *a, const struct config *b, char *out,
			  size_t outlen)
{
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < config_ndefs && k < outlen; i++)
		if (config_defs[i].applies == A_RESTART && config_defs[i].kind != K_ACTION &&
		    config_defs[i].kind != K_HIDDEN && differs(a, b, &config_defs[i]))
			k += (size_t)snprintf(out + k, outlen - k, "%s%s", k ? ", " : "",
					      config_defs[i].name);
}

bool config_workers_differ(const struct config *a, const struct config *b)
{
	for (size_t i = 0; i < config_ndefs; i++)
		if (config_defs[i].applies == A_WORKERS && config_defs[i].size && differs(a, b, &config_defs[i]))
			return true;
	return false;
}

void config_apply_live(struct config *cur, const struct config *next)
{
	for (size_t i = 0; i < NDEFS; i++) {
		const struct option_def *d = &config_defs[i];
		if (d->applies == A_RESTART || !d->size || d->kind == K_HIDDEN)
			continue;
		memcpy((char *)cur + d->off, (const char *)next + d->off, d->size);
	}
}
