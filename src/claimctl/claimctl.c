/* claimctl — talks to a running claimd over its control socket: turns its command line into
 * one request (common/ctl: the grammar and the commands' usage live there), sends it, and
 * prints the reply's body on stdout, or its error on stderr. What it prints for people has
 * its control characters and escape sequences taken out (termsafe.h): a row's payload or a
 * queue's name, written by anyone who can insert a row, must not drive the terminal. --json
 * prints the reply as it came: JSON escapes them. doctor and migrate are not requests:
 * claimctl runs claimd --doctor or --migrate, which read the settings as the service
 * does. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "claimctl/termsafe.h"
#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"

#define REPLY_MAX (64u * 1024 * 1024)

/* The exit codes (documented in the usage and claimctl(1)). */
enum {
	EXIT_DONE = 0,
	EXIT_REFUSED = 1,      /* claimd answered with an error */
	EXIT_USAGE = 2,        /* a bad command line */
	EXIT_UNREACHABLE = 3,  /* no answer from claimd on the control socket */
};

/* Where the control socket path came from: the hint for a socket nobody answers on. */
static const char *const from_hint[] = {
	[CONFIG_FROM_ENV] = "from $CLAIMD_CONTROL",
	[CONFIG_FROM_FILE] = "the config file's control key",
	[CONFIG_FROM_DEFAULT] = "by default: " CONFIG_CONTROL_SERVICE_DIR "/claimd.sock where it "
				"is, else $XDG_RUNTIME_DIR/claimd.sock",
};

/* Prints "claimctl: " and the message on stderr, with what could drive a terminal taken
 * out: it may hold what claimd, or whatever answers on the socket, sent. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "claimctl: out of memory\n");
		return;
	}
	n = (int)termsafe(text, (size_t)n);
	fprintf(stderr, "claimctl: %.*s\n", n, text);
	free(text);
}

/* from: NULL when --control named the path. */
static int connect_to(const char *path, const char *from)
{
	struct sockaddr_un sa;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "claimctl: control socket path too long: %s\n", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "claimctl: socket: %s\n", strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		say("cannot connect to claimd at %s%s%s%s: %s (%s)", path, from ? " (" : "",
		    from ? from : "", from ? ")" : "", strerror(errno), errno == EACCES ?
		    "claimd's user, root and the members of its --control-group may use it" :
		    "is claimd running? use --control PATH");
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads fd to EOF into b, at most max bytes. Returns 0, or -errno (-EFBIG over max). */
static int read_all(int fd, struct buf *b, size_t max)
{
	char chunk[65536];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (b->len + (size_t)n > max)
			return -EFBIG;
		buf_append(b, chunk, (size_t)n);
		if (buf_failed(b))
			return -ENOMEM;
	}
	return 0;
}

/* Prints the reply: its body on stdout (EXIT_DONE), or its error on stderr (EXIT_REFUSED);
 * the body for people made safe for a terminal, JSON (exact) as it came. */
static int show_reply(struct buf *reply, bool json)
{
	const char *body;
	size_t len;
	int r;

	if (reply->len == 0) {
		fprintf(stderr, "claimctl: claimd closed the connection without an answer\n");
		return EXIT_UNREACHABLE;
	}
	r = ctl_reply_parse(reply->data, reply->len, &body, &len);
	if (r < 0) {
		say("claimd's answer is not in the control protocol: %.*s",
		    (int)(reply->len > 200 ? 200 : reply->len), reply->data);
		return EXIT_UNREACHABLE;
	}
	if (r == 0) {
		say("%.*s", (int)len, body);
		return EXIT_REFUSED;
	}
	if (!json) {
		char *text = reply->data + (body - reply->data);   /* the body is in reply */
		len = termsafe(text, len);
	}
	fwrite(body, 1, len, stdout);
	return EXIT_DONE;
}

/* Sends request (one line) to the supervisor at path (from: where the path came from, NULL
 * for --control) and reads its reply into reply (initialised). Returns EXIT_DONE, or
 * EXIT_UNREACHABLE (said). */
static int exchange(const char *path, const char *from, const struct buf *request,
		    struct buf *reply)
{
	int fd = connect_to(path, from), r;

	if (fd < 0)
		return EXIT_UNREACHABLE;
	if (write_all(fd, request->data, request->len) < 0) {
		fprintf(stderr, "claimctl: write: %s\n", strerror(errno));
		close(fd);
		return EXIT_UNREACHABLE;
	}
	shutdown(fd, SHUT_WR);
	r = read_all(fd, reply, REPLY_MAX);
	close(fd);
	if (r < 0) {
		fprintf(stderr, "claimctl: reading the answer: %s\n", strerror(-r));
		return EXIT_UNREACHABLE;
	}
	return EXIT_DONE;
}

/* Sends request and prints its reply. Returns the exit code. */
static int ask(const char *path, const char *from, const struct buf *request, bool json)
{
	struct buf reply;
	int r;

	buf_init(&reply);
	r = exchange(path, from, request, &reply);
	if (r == EXIT_DONE)
		r = show_reply(&reply, json);
	buf_free(&reply);
	return r;
}

/* bulk without a confirm: the count first (printed), then with --yes, or the answer y on a
 * terminal, the same request confirming that count (*req changed so). Returns -1 to go on
 * and send *req, or the exit code. */
static int bulk_count(const char *path, const char *from, struct ctl_request *req, bool yes)
{
	struct ctl_request count = *req;
	struct buf request, reply;
	const char *body;
	char err[512], answer[16];
	unsigned long long n;
	size_t len;
	int r;

	count.json = false;
	count.have &= ~(1ull << CTL_F_JSON);
	buf_init(&request);
	buf_init(&reply);
	r = ctl_encode(&count, &request, err, sizeof(err));
	if (r < 0) {
		say("%s", r == -ENOMEM ? "out of memory" : err);
		r = EXIT_USAGE;
		goto out;
	}
	r = exchange(path, from, &request, &reply);
	if (r != EXIT_DONE)
		goto out;
	if (ctl_reply_parse(reply.data, reply.len, &body, &len) != 1 ||
	    sscanf(body, "%llu row", &n) != 1) {
		r = show_reply(&reply, false);
		if (r == EXIT_DONE)
			r = EXIT_UNREACHABLE;
		goto out;
	}
	if (!yes && !(isatty(0) && isatty(2))) {
		r = show_reply(&reply, false);   /* the count, and that nothing was done */
		goto out;
	}
	if (!yes) {
		fprintf(stderr, "claimctl: %llu row%s to %s: go on? [y/N] ", n, n == 1 ? "" : "s",
			req->action);
		if (!fgets(answer, sizeof(answer), stdin) || (answer[0] != 'y' && answer[0] != 'Y')) {
			fprintf(stderr, "claimctl: nothing done\n");
			r = EXIT_DONE;
			goto out;
		}
	} else if (!req->json) {
		printf("%llu row%s to %s\n", n, n == 1 ? "" : "s", req->action);
		fflush(stdout);
	}
	req->confirm = n;
	req->have |= 1ull << CTL_F_CONFIRM;
	r = -1;
out:
	buf_free(&request);
	buf_free(&reply);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: claimctl [--control PATH] [--config PATH] [--json] COMMAND [ARGS]\n"
		"       claimctl doctor|migrate [CLAIMD OPTIONS]\n"
		"       claimctl --version | -h\n\n"
		"Commands, answered by the claimd at the control socket:\n%s\n"
		"Commands that run claimd here (claimd --doctor, --migrate) with the options\n"
		"given, reading the settings as the service does (--config, CLAIMD_*):\n"
		"  doctor [--config PATH] [--dsn DSN] ...\n"
		"      check the set-up: the database, schema, privileges, isolation level,\n"
		"      binary log, clocks, the control socket and HTTP\n"
		"  migrate [--config PATH] [--dsn DSN] ...\n"
		"      bring the database's schema up to this claimd's\n\n"
		"Options go anywhere on the line:\n"
		"  --control PATH  claimd's control socket; by default $CLAIMD_CONTROL, else the\n"
		"                  control key of the config file, else " CONFIG_CONTROL_SERVICE_DIR
		"/claimd.sock\n"
		"                  when it is there, else $XDG_RUNTIME_DIR/claimd.sock\n"
		"  --config PATH   the config file whose control key names the socket (default\n"
		"                  $CLAIMD_CONFIG, else " CONFIG_DEFAULT_FILE " when readable)\n"
		"  --json          the answer in JSON (every command; lists as arrays), exactly as\n"
		"                  claimd gave it; without it, control characters and escape\n"
		"                  sequences in what claimctl prints are left out\n"
		"  --version       claimctl's version\n"
		"  -h, --help      this text\n\n"
		"Exit status: 0 done; 1 claimd refused or failed the request (the reason on\n"
		"stderr); 2 a bad command line; 3 no answer from claimd on the control socket.\n"
		"doctor and migrate exit as claimd does: 0 fine, 1 a problem found, 2 bad\n"
		"settings or no connection, 3 (migrate) a claimd of an earlier release to stop\n"
		"first.\n", ctl_usage());
}

/* doctor and migrate: claimd from the directory claimctl is in, else from PATH, with
 * --doctor or --migrate, --json, --control and --config when given, and the rest of the
 * line. */
static int run_claimd(char *mode, char *control, char *config, bool json, int argc,
		      char **argv)
{
	char self[4096], path[4096 + 16];
	char **args = calloc((size_t)argc + 8, sizeof(*args));
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int k = 0;

	if (!args) {
		fprintf(stderr, "claimctl: out of memory\n");
		return EXIT_USAGE;
	}
	path[0] = '\0';
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/claimd", self);
		}
	}
	if (!*path || access(path, X_OK) != 0)
		snprintf(path, sizeof(path), "claimd");
	args[k++] = path;
	args[k++] = mode;
	if (json)
		args[k++] = "--json";
	if (*control) {
		args[k++] = "--control";
		args[k++] = control;
	}
	if (*config) {
		args[k++] = "--config";
		args[k++] = config;
	}
	for (int i = 0; i < argc; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	execvp(path, args);
	fprintf(stderr, "claimctl: cannot run %s: %s\n", path, strerror(errno));
	free(args);
	return EXIT_USAGE;
}

/* --NAME VALUE or --NAME=VALUE at argv[*i] into out: 1 taken (*i moved past it), 0 not that
 * option, -1 a bad value (said). */
static int path_option(const char *name, int argc, char **argv, int *i, char *out,
		       size_t outlen)
{
	const char *a = argv[*i], *v;
	size_t n = strlen(name);

	if (strncmp(a, name, n) || (a[n] && a[n] != '='))
		return 0;
	v = a[n] == '=' ? a + n + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	if (!v || !*v) {
		fprintf(stderr, "claimctl: %s needs a path\n", name);
		return -1;
	}
	if (strlen(v) >= outlen) {
		fprintf(stderr, "claimctl: %s path too long\n", name);
		return -1;
	}
	snprintf(out, outlen, "%s", v);
	return 1;
}

/* The command line (rest: room for argc + 1 of its words). Returns the exit code. */
static int claimctl(int argc, char **argv, char **rest)
{
	char control[CONFIG_PATH_MAX] = "", config[CONFIG_FILE_MAX] = "", err[512] = "";
	enum config_control_from from = CONFIG_FROM_DEFAULT;
	struct ctl_request req;
	struct buf request, payload;
	bool json = false, named = false, yes = false;
	int nrest = 0, r;

	/* claimctl's own options, anywhere; the rest is the command and its arguments. */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if ((r = path_option("--control", argc, argv, &i, control, sizeof(control))) ||
		    (r = path_option("--config", argc, argv, &i, config, sizeof(config)))) {
			if (r < 0)
				return EXIT_USAGE;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return EXIT_DONE;
		} else if (!strcmp(a, "--version")) {
			printf("claimctl %s\n", CLAIMD_VERSION);
			return EXIT_DONE;
		} else {
			rest[nrest++] = argv[i];
		}
	}
	if (nrest == 0) {
		fprintf(stderr, "claimctl: no command given (see claimctl --help)\n");
		return EXIT_USAGE;
	}
	if (!strcmp(rest[0], "doctor") || !strcmp(rest[0], "migrate")) {
		static char doctor[] = "--doctor", migrate[] = "--migrate";
		return run_claimd(rest[0][0] == 'd' ? doctor : migrate, control, config, json,
				  nrest - 1, rest + 1);
	}
	/* bulk's --yes is claimctl's: the count it is shown is confirmed. */
	for (int i = 1; !strcmp(rest[0], "bulk") && i < nrest; i++) {
		if (strcmp(rest[i], "--yes"))
			continue;
		yes = true;
		memmove(rest + i, rest + i + 1, (size_t)(nrest - i - 1) * sizeof(*rest));
		nrest--;
		i--;
	}
	if (json)
		rest[nrest++] = "--json";
	if (ctl_from_argv(nrest, rest, &req, err, sizeof(err)) < 0) {
		say("%s (see claimctl --help)", err);
		return EXIT_USAGE;
	}
	buf_init(&payload);
	if (ctl_wants_stdin(&req)) {
		r = read_all(0, &payload, CTL_PAYLOAD_MAX);
		if (r < 0) {
			fprintf(stderr, "claimctl: %s: cannot read the payload from stdin: %s (at most "
				"%u bytes)\n", ctl_verb_name(req.verb),
				r == -EFBIG ? "too long" : strerror(-r), CTL_PAYLOAD_MAX);
			buf_free(&payload);
			return EXIT_USAGE;
		}
		req.payload = (const unsigned char *)(payload.data ? payload.data : "");
		req.payload_len = payload.len;
		req.have |= 1ull << CTL_F_PAYLOAD;
	}
	named = *control != '\0';
	if (!named && config_control_find(config, control, sizeof(control), &from, err,
					  sizeof(err)) < 0) {
		say("%s (or give --control PATH)", err);
		buf_free(&payload);
		return EXIT_USAGE;
	}
	if (yes && ctl_has(&req, CTL_F_CONFIRM)) {
		say("bulk takes --yes or --confirm N, not both");
		buf_free(&payload);
		return EXIT_USAGE;
	}
	if (req.verb == CTL_BULK && !ctl_has(&req, CTL_F_CONFIRM) &&
	    (r = bulk_count(control, named ? NULL : from_hint[from], &req, yes)) >= 0) {
		buf_free(&payload);
		return r;
	}
	buf_init(&request);
	r = ctl_encode(&req, &request, err, sizeof(err));
	buf_free(&payload);
	if (r < 0) {
		say("%s", r == -ENOMEM ? "out of memory" : err);
		buf_free(&request);
		return EXIT_USAGE;
	}
	r = ask(control, named ? NULL : from_hint[from], &request, json);
	buf_free(&request);
	return r;
}

int main(int argc, char **argv)
{
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int r;

	if (!rest) {
		fprintf(stderr, "claimctl: out of memory\n");
		return EXIT_USAGE;
	}
	r = claimctl(argc, argv, rest);
	free(rest);
	return r;
}
