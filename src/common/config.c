#include "common/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
	OPT_DSN = 256, OPT_WORKERS, OPT_CLAIMERS, OPT_HANDLER, OPT_QUEUE, OPT_CONTROL, OPT_BATCH, OPT_LEASE,
	OPT_TIMEOUT, OPT_HANG, OPT_KILL_GRACE, OPT_GRACE, OPT_HEARTBEAT, OPT_POLL,
	OPT_RETRY_BASE, OPT_KEEP_DONE, OPT_DEDUPE_WINDOW, OPT_MAINTENANCE, OPT_VERBOSE, OPT_QUIET, OPT_HELP, OPT_VERSION,
	OPT_FORK_FD, OPT_PARENT, OPT_HTTP, OPT_HTTP_TOKEN_FILE, OPT_HTTP_MAX_CONNS, OPT_EXEC_RESULT,
};

static const struct option long_opts[] = {
	{ "dsn", required_argument, NULL, OPT_DSN },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "claimers", required_argument, NULL, OPT_CLAIMERS },
	{ "handler", required_argument, NULL, OPT_HANDLER },
	{ "queue", required_argument, NULL, OPT_QUEUE },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "hang-timeout", required_argument, NULL, OPT_HANG },
	{ "kill-grace", required_argument, NULL, OPT_KILL_GRACE },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
	{ "poll-interval", required_argument, NULL, OPT_POLL },
	{ "retry-base", required_argument, NULL, OPT_RETRY_BASE },
	{ "keep-done", required_argument, NULL, OPT_KEEP_DONE },
	{ "dedupe-window", required_argument, NULL, OPT_DEDUPE_WINDOW },
	{ "maintenance-interval", required_argument, NULL, OPT_MAINTENANCE },
	{ "http", required_argument, NULL, OPT_HTTP },
	{ "http-token-file", required_argument, NULL, OPT_HTTP_TOKEN_FILE },
	{ "http-max-connections", required_argument, NULL, OPT_HTTP_MAX_CONNS },
	{ "exec-result", no_argument, NULL, OPT_EXEC_RESULT },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "fork-server-fd", required_argument, NULL, OPT_FORK_FD },
	{ "parent-pid", required_argument, NULL, OPT_PARENT },
	{ NULL, 0, NULL, 0 },
};

const char *config_usage(void)
{
	return
	"usage: claimd --dsn DSN --handler SPEC [options]\n"
	"\n"
	"Runs a supervised pool of workers that claim rows of work_items and run a handler on each.\n"
	"\n"
	"  --dsn DSN              mysql://user@host:port/db?socket=/path (or env CLAIMD_DSN);\n"
	"                         password from env CLAIMD_DB_PASSWORD or ?password_file=PATH\n"
	"  --handler SPEC         noop | exec:/path/to/cmd [args...] (run per item, no shell)\n"
	"                         | pipe:/path/to/cmd [args...] (one co-process per worker, JSON lines)\n"
	"                         | so:/path/to/plugin.so [args] (in-process plugin, claimd/handler.h)\n"
	"  --exec-result          an exec: handler's stdout (at most 64 KiB) is the row's\n"
	"                         result (default: stdout is claimd's)\n"
	"  --workers N            worker processes (default 4)\n"
	"  --queue NAME           queue to serve (default \"default\"); repeat it to serve\n"
	"                         several, each claimed in turn\n"
	"  --control PATH         control socket for claimctl (default $CLAIMD_CONTROL,\n"
	"                         $XDG_RUNTIME_DIR/claimd.sock or /tmp/claimd-UID.sock)\n"
	"  --http HOST:PORT       serve the HTTP API, /metrics, /healthz and the dashboard\n"
	"                         (e.g. 127.0.0.1:8080; off by default)\n"
	"  --http-token-file PATH every HTTP route but /healthz needs Authorization: Bearer\n"
	"                         <the file's first line>; required for a non-loopback HOST\n"
	"  --http-max-connections N  HTTP connections at once (default 256)\n"
	"  --batch N              rows a worker claims per round trip, 1..256 (default 1)\n"
	"  --claimers N           claim transactions at once per supervisor (default: the\n"
	"                         number of CPUs, at least 2)\n"
	"  --lease DUR            claim lease, renewed while a handler runs (default 30s)\n"
	"  --timeout DUR          handler time limit per item (default 300s)\n"
	"  --hang-timeout DUR     unanswered heartbeat this long = worker hung (default 10s)\n"
	"  --kill-grace DUR       SIGTERM to SIGKILL for a hung worker (default 2s)\n"
	"  --grace DUR            on SIGTERM/SIGINT, time in-flight items get (default 30s)\n"
	"  --heartbeat DUR        heartbeat interval (default 1s)\n"
	"  --poll-interval DUR    idle poll interval, one poller per supervisor (default 100ms)\n"
	"  --retry-base DUR       retry back-off base: base*2^(attempt-1) +-25% (default 1s)\n"
	"  --keep-done DUR        delete done rows this long after they finished (default 24h;\n"
	"                         0 keeps them); dead rows are never deleted\n"
	"  --dedupe-window DUR    a finished row keeps its dedupe_key this long (default 5m)\n"
	"  --maintenance-interval DUR  how often pruning and dedupe-key expiry run, each in\n"
	"                         place of one idle poll (default 1m)\n"
	"  --verbose, --quiet     more or less logging\n"
	"  --help, --version\n"
	"\n"
	"DUR is a number with a unit ms, s, m or h; a bare number is seconds.\n";
}

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
	else
		return -EINVAL;
	v *= mult;
	if (v > (double)UINT_MAX)
		return -EINVAL;
	*ret_ms = (unsigned)(v + 0.5);
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *ret)
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

	if (!colon || parse_uint(colon + 1, 0, 65535, &port) < 0)
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

int config_default_control(char *out, size_t outlen)
{
	const char *env = getenv("CLAIMD_CONTROL");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(out, outlen, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(out, outlen, "%s/claimd.sock", xdg);
	else
		n = snprintf(out, outlen, "/tmp/claimd-%u.sock", (unsigned)getuid());
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

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
	c->batch = 1;
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
	c->log_level = 2; /* LOG_INFO */
	c->http_max_conns = 256;
	c->fork_fd = -1;
	c->worker_slot = -1;
	c->worker_fd = -1;
}

static int copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(dst, src, n + 1);
	return 0;
}

static unsigned *duration_field(struct config *c, int opt)
{
	switch (opt) {
	case OPT_LEASE: return &c->lease_ms;
	case OPT_TIMEOUT: return &c->timeout_ms;
	case OPT_HANG: return &c->hang_ms;
	case OPT_KILL_GRACE: return &c->kill_grace_ms;
	case OPT_GRACE: return &c->grace_ms;
	case OPT_HEARTBEAT: return &c->heartbeat_ms;
	case OPT_POLL: return &c->poll_ms;
	case OPT_RETRY_BASE: return &c->retry_base_ms;
	case OPT_KEEP_DONE: return &c->keep_done_ms;
	case OPT_DEDUPE_WINDOW: return &c->dedupe_window_ms;
	case OPT_MAINTENANCE: return &c->maintenance_ms;
	default: return NULL;
	}
}

static bool valid_queue(const char *q)
{
	if (!*q)
		return false;
	for (; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return false;
	return true;
}

/* --queue, repeatable: the first replaces "default". */
static int add_queue(struct config *c, const char *name, char *err, size_t errlen)
{
	if (c->nqueues == CONFIG_QUEUES_MAX) {
		snprintf(err, errlen, "--queue: at most %d queues", CONFIG_QUEUES_MAX);
		return -EINVAL;
	}
	if (strlen(name) > CONFIG_QUEUE_MAX || !valid_queue(name) || strchr(name, ',')) {
		snprintf(err, errlen, "--queue: invalid queue name '%s'", name);
		return -EINVAL;
	}
	for (unsigned i = 0; i < c->nqueues; i++) {
		if (!strcmp(c->queues[i], name)) {
			snprintf(err, errlen, "--queue: '%s' given twice", name);
			return -EINVAL;
		}
	}
	snprintf(c->queues[c->nqueues++], sizeof(c->queues[0]), "%s", name);
	return 0;
}

/* One option; returns 0, a config_result > 0, or -EINVAL with err filled. */
static int apply_opt(struct config *c, int opt, const char *arg, const char **dsn_str,
		     char *err, size_t errlen)
{
	unsigned *dur = duration_field(c, opt);
	unsigned v;
	int w;

	if (dur) {
		if (config_parse_duration(arg, dur) < 0 ||
		    (*dur == 0 && opt != OPT_KEEP_DONE && opt != OPT_DEDUPE_WINDOW))
			goto bad;
		return 0;
	}
	switch (opt) {
	case OPT_DSN: *dsn_str = arg; return 0;
	case OPT_WORKERS:
		return parse_uint(arg, 1, 1024, &c->workers) < 0 ? (snprintf(err, errlen,
			"--workers: '%s' is not a number from 1 to 1024", arg), -EINVAL) : 0;
	case OPT_CLAIMERS:
		return parse_uint(arg, 1, 1024, &c->claimers) < 0 ? (snprintf(err, errlen,
			"--claimers: '%s' is not a number from 1 to 1024", arg), -EINVAL) : 0;
	case OPT_BATCH:
		return parse_uint(arg, 1, 256, &c->batch) < 0 ? (snprintf(err, errlen,
			"--batch: '%s' is not a number from 1 to 256", arg), -EINVAL) : 0;
	case OPT_HANDLER:
		if (copy_str(c->handler, sizeof(c->handler), arg) < 0)
			goto bad;
		return 0;
	case OPT_QUEUE:
		return add_queue(c, arg, err, errlen);
	case OPT_CONTROL:
		if (copy_str(c->control, sizeof(c->control), arg) < 0 || !*arg)
			goto bad;
		return 0;
	case OPT_HTTP:
		if (copy_str(c->http, sizeof(c->http), arg) < 0 ||
		    config_parse_listen(arg, &c->http_addr, &c->http_addrlen, &c->http_loopback) < 0) {
			snprintf(err, errlen, "--http: '%s' is not HOST:PORT (e.g. 127.0.0.1:8080, "
				 "[::1]:8080)", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_HTTP_TOKEN_FILE:
		if (copy_str(c->http_token_file, sizeof(c->http_token_file), arg) < 0 || !*arg)
			goto bad;
		return 0;
	case OPT_HTTP_MAX_CONNS:
		return parse_uint(arg, 1, 65536, &c->http_max_conns) < 0 ? (snprintf(err, errlen,
			"--http-max-connections: '%s' is not a number from 1 to 65536", arg), -EINVAL) : 0;
	case OPT_EXEC_RESULT: c->exec_result = true; return 0;
	case OPT_VERBOSE: c->log_level = 3; return 0;
	case OPT_QUIET: c->log_level = 1; return 0;
	case OPT_HELP: return CONFIG_HELP;
	case OPT_VERSION: return CONFIG_VERSION;
	case OPT_FORK_FD: case OPT_PARENT:
		if (parse_uint(arg, 0, INT_MAX, &v) < 0)
			goto bad;
		w = (int)v;
		if (opt == OPT_FORK_FD) c->fork_fd = w;
		else c->parent_pid = w;
		return 0;
	}
bad:
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == opt)
			snprintf(err, errlen, "--%s: invalid value '%s'", o->name, arg ? arg : "");
	return -EINVAL;
}

static int finish(struct config *c, const char *dsn_str, char *err, size_t errlen)
{
	char derr[256];

	if (!dsn_str || !*dsn_str)
		dsn_str = getenv("CLAIMD_DSN");
	if (!dsn_str || !*dsn_str) {
		snprintf(err, errlen, "no database given: use --dsn mysql://user@host/db or set CLAIMD_DSN");
		return -EINVAL;
	}
	if (dsn_parse(dsn_str, &c->dsn, derr, sizeof(derr)) < 0) {
		snprintf(err, errlen, "bad DSN: %s", derr);
		return -EINVAL;
	}
	if (c->nqueues == 0)
		add_queue(c, "default", err, errlen);
	for (unsigned i = 0; i < c->nqueues; i++) {
		size_t len = strlen(c->queue_list);
		snprintf(c->queue_list + len, sizeof(c->queue_list) - len, "%s%s", i ? "," : "",
			 c->queues[i]);
	}
	snprintf(c->queue, sizeof(c->queue), "%s", c->queues[0]);
	/* What the handler spec says is the handler module's to check (handler_check). */
	if (!*c->handler) {
		snprintf(err, errlen, "--handler is required (noop, exec:CMD, pipe:CMD or so:LIB)");
		return -EINVAL;
	}
	if (!*c->control && config_default_control(c->control, sizeof(c->control)) < 0) {
		snprintf(err, errlen, "default control socket path is too long; use --control");
		return -EINVAL;
	}
	if (c->hang_ms <= c->heartbeat_ms) {
		snprintf(err, errlen, "--hang-timeout must be longer than --heartbeat");
		return -EINVAL;
	}
	if (*c->http && !c->http_loopback && !*c->http_token_file) {
		snprintf(err, errlen, "--http %s is not a loopback address: give --http-token-file "
			 "too (anyone who can reach it could add, cancel and read jobs)", c->http);
		return -EINVAL;
	}
	if (*c->http_token_file && !*c->http) {
		snprintf(err, errlen, "--http-token-file needs --http");
		return -EINVAL;
	}
	if (c->lease_ms < 1000) {
		snprintf(err, errlen, "--lease must be at least 1s");
		return -EINVAL;
	}
	return 0;
}

int config_parse(int argc, char **argv, struct config *ret, char *err, size_t errlen)
{
	struct config c;
	const char *dsn_str = NULL;
	int opt, r;

	set_defaults(&c);
	optind = 0; /* full reset, glibc */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", long_opts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			const char *what = argv[optind - 1];
			snprintf(err, errlen, opt == ':' ? "option '%s' needs a value" :
				 "unknown option '%s' (see --help)", what);
			return -EINVAL;
		}
		r = apply_opt(&c, opt, optarg, &dsn_str, err, errlen);
		if (r != 0)
			return r;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
		return -EINVAL;
	}
	r = finish(&c, dsn_str, err, errlen);
	if (r < 0)
		return r;
	*ret = c;
	return CONFIG_RUN;
}
