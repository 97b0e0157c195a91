/* claimctl — talks to a running claimd over its control socket.
 *
 *   claimctl [--control PATH] status [--json]
 *   claimctl [--control PATH] add [--queue NAME] [PAYLOAD]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/config.h"
#include "supervisor/control.h"
#include "store/store.h"

#define ADD_PAYLOAD_MAX CONTROL_ADD_MAX

static void usage(FILE *f)
{
	fputs("usage: claimctl [--control PATH] status [--json]\n"
	      "       claimctl [--control PATH] add [--queue NAME] [--run-at 'YYYY-MM-DD HH:MM:SS']\n"
	      "                [--delay DUR] [--period DUR] [--max-attempts N] [--timeout DUR]\n"
	      "                [--dedupe KEY] [--priority N] [--group KEY] [PAYLOAD]\n"
	      "       claimctl [--control PATH] retry ID | retry --queue NAME --dead\n"
	      "       claimctl [--control PATH] pause NAME | resume NAME\n"
	      "       claimctl [--control PATH] limit NAME --interval MS\n"
	      "\n"
	      "  status         the worker pool and the queue counts, as a table\n"
	      "  status --json  the same as one JSON object\n"
	      "  add            enqueue one item (payload from the argument, else stdin) through\n"
	      "                 claimd, which wakes an idle worker for it; prints the new id (with\n"
	      "                 --dedupe, the id of the row holding KEY if there is one);\n"
	      "                 --priority -10..10, smaller first; --group KEY: one at a time, in order\n"
	      "  retry          put a dead row (or every dead row of a queue) back to ready with\n"
	      "                 its attempts reset; prints how many rows\n"
	      "  pause, resume  stop and restart new starts of a queue's items on every claimd\n"
	      "                 sharing the database (running items finish)\n"
	      "  limit          start the queue's items at least MS apart across every claimd\n"
	      "                 sharing the database (0: no limit)\n"
	      "\n"
	      "The control socket defaults to $CLAIMD_CONTROL, $XDG_RUNTIME_DIR/claimd.sock or\n"
	      "/tmp/claimd-UID.sock, as for claimd.\n", f);
}

static int connect_to(const char *path)
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
		fprintf(stderr, "claimctl: cannot connect to claimd at %s: %s (is claimd running? "
			"use --control PATH)\n", path, strerror(errno));
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

/* Copies the reply to stdout. Returns 0, or 1 when the reply is an error. */
static int relay(int fd)
{
	char buf[8192];
	bool first = true, error = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "claimctl: read: %s\n", strerror(errno));
			return 1;
		}
		if (first && n >= 6 && !memcmp(buf, "error:", 6))
			error = true;
		first = false;
		fwrite(buf, 1, (size_t)n, error ? stderr : stdout);
	}
	if (first) {
		fprintf(stderr, "claimctl: claimd closed the connection without an answer\n");
		return 1;
	}
	return error ? 1 : 0;
}

/* Reads all of stdin into a malloc'd buffer. Returns NULL on error or over max bytes. */
static unsigned char *read_stdin(size_t max, size_t *ret_len)
{
	size_t len = 0, cap = 4096;
	unsigned char *p = malloc(cap), *q;
	ssize_t n;

	while (p && (n = read(0, p + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || len + (size_t)n > max)
			goto fail;
		len += (size_t)n;
		if (len == cap) {
			cap *= 2;
			if (!(q = realloc(p, cap)))
				goto fail;
			p = q;
		}
	}
	*ret_len = len;
	return p;
fail:
	free(p);
	return NULL;
}

static void put_hex(struct buf *b, const void *p, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *u = p;

	for (size_t i = 0; i < len; i++) {
		char two[2] = { digits[u[i] >> 4], digits[u[i] & 15] };
		buf_append(b, two, 2);
	}
}

/* "add QUEUE HEX [name=value ...]\n" into a malloc'd string; opts already "name=value"
 * words each starting with a space. */
static char *add_request(const char *queue, const unsigned char *payload, size_t len,
			 const struct buf *opts)
{
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "add %s ", queue);
	put_hex(&b, payload, len);
	if (opts->len)
		buf_append(&b, opts->data, opts->len);
	buf_puts(&b, "\n");
	if (buf_failed(&b)) {
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

static bool whole_number(const char *v, unsigned long max)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	return *v >= '0' && *v <= '9' && !*end && !errno && n <= max;
}

static bool signed_number(const char *v, long min, long max)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	return *v && !*end && !errno && n >= min && n <= max;
}

/* One add option (argv[i], its value argv[i + 1]) onto opts. Returns false after saying why. */
static bool add_option(const char *name, const char *v, struct buf *opts, const char **queue)
{
	unsigned ms;

	if (!strcmp(name, "--queue")) {
		*queue = v;
	} else if (!strcmp(name, "--run-at") || !strcmp(name, "--dedupe") ||
		   !strcmp(name, "--group")) {
		if (!*v || strlen(v) > 255)
			goto bad;
		buf_puts(opts, name[2] == 'r' ? " run_at=" : name[2] == 'g' ? " group=" : " dedupe=");
		put_hex(opts, v, strlen(v));
	} else if (!strcmp(name, "--delay")) {
		if (config_parse_duration(v, &ms) < 0)
			goto bad;
		buf_printf(opts, " delay_ms=%u", ms);
	} else if (!strcmp(name, "--period") || !strcmp(name, "--timeout")) {
		if (config_parse_duration(v, &ms) < 0 || (ms == 0 && name[2] == 't'))
			goto bad;
		buf_printf(opts, name[2] == 'p' ? " period_s=%u" : " timeout_s=%u", ms / 1000);
	} else if (!strcmp(name, "--priority")) {
		if (!signed_number(v, STORE_PRIORITY_MIN, STORE_PRIORITY_MAX))
			goto bad;
		buf_printf(opts, " priority=%s", v);
	} else if (!strcmp(name, "--max-attempts")) {
		if (!whole_number(v, 1000000))
			goto bad;
		buf_printf(opts, " max_attempts=%s", v);
	} else {
		fprintf(stderr, "claimctl: add: unknown option '%s'\n", name);
		return false;
	}
	return true;
bad:
	fprintf(stderr, "claimctl: add: bad value for %s: '%s'\n", name, v);
	return false;
}

/* retry ID | retry --queue NAME --dead */
static char *retry_request(int argc, char **argv, int i)
{
	char *req = NULL;

	if (i + 1 == argc && strspn(argv[i], "0123456789") == strlen(argv[i]) && *argv[i]) {
		if (asprintf(&req, "retry %s\n", argv[i]) < 0)
			return NULL;
		return req;
	}
	if (i + 3 == argc && !strcmp(argv[i], "--queue") && !strcmp(argv[i + 2], "--dead") &&
	    *argv[i + 1] && !strchr(argv[i + 1], '\n')) {
		if (asprintf(&req, "retry-dead %s\n", argv[i + 1]) < 0)
			return NULL;
		return req;
	}
	fprintf(stderr, "claimctl: retry takes an item id, or --queue NAME --dead\n");
	return NULL;
}

/* Builds the request for argv[i...]; NULL after printing why. */
static char *build_request(int argc, char **argv, int i)
{
	const char *queue = "default";
	unsigned char *payload;
	struct buf opts;
	size_t len;
	char *req;

	if (!strcmp(argv[i], "status")) {
		if ((i + 1 < argc && strcmp(argv[i + 1], "--json") != 0) || i + 2 < argc) {
			fprintf(stderr, "claimctl: status: unexpected argument '%s'\n", argv[i + 1]);
			return NULL;
		}
		return strdup(i + 1 < argc ? "status --json\n" : "status\n");
	}
	if (!strcmp(argv[i], "retry"))
		return retry_request(argc, argv, i + 1);
	if (!strcmp(argv[i], "limit")) {
		unsigned ms;
		req = NULL;
		if (i + 4 != argc || strcmp(argv[i + 2], "--interval") != 0 || !*argv[i + 1] ||
		    strlen(argv[i + 1]) > 64 || strpbrk(argv[i + 1], " \n") ||
		    config_parse_duration(argv[i + 3], &ms) < 0) {
			fprintf(stderr, "claimctl: usage: limit NAME --interval DUR (0 = no limit; "
				"a bare number is milliseconds here)\n");
			return NULL;
		}
		if (strspn(argv[i + 3], "0123456789") == strlen(argv[i + 3]))
			ms = (unsigned)strtoul(argv[i + 3], NULL, 10);
		if (asprintf(&req, "limit %s %u\n", argv[i + 1], ms) < 0)
			return NULL;
		return req;
	}
	if (!strcmp(argv[i], "pause") || !strcmp(argv[i], "resume")) {
		req = NULL;
		if (i + 2 != argc || !*argv[i + 1] || strlen(argv[i + 1]) > 64 ||
		    strpbrk(argv[i + 1], " \n")) {
			fprintf(stderr, "claimctl: %s takes one queue name\n", argv[i]);
			return NULL;
		}
		if (asprintf(&req, "%s %s\n", argv[i], argv[i + 1]) < 0)
			return NULL;
		return req;
	}
	if (strcmp(argv[i], "add") != 0) {
		fprintf(stderr, "claimctl: unknown command '%s'\n", argv[i]);
		return NULL;
	}
	buf_init(&opts);
	for (i++; i < argc && !strncmp(argv[i], "--", 2); i += 2) {
		if (i + 1 >= argc) {
			fprintf(stderr, "claimctl: add: %s needs a value\n", argv[i]);
			goto fail;
		}
		if (!add_option(argv[i], argv[i + 1], &opts, &queue))
			goto fail;
	}
	if (!*queue || strlen(queue) > 64 || strchr(queue, ' ') || strchr(queue, '\n')) {
		fprintf(stderr, "claimctl: add: bad queue name '%s'\n", queue);
		goto fail;
	}
	if (i + 1 < argc) {
		fprintf(stderr, "claimctl: add: unexpected argument '%s'\n", argv[i + 1]);
		goto fail;
	}
	if (i < argc) {
		payload = (unsigned char *)strdup(argv[i]);
		len = payload ? strlen(argv[i]) : 0;
	} else if (!(payload = read_stdin(ADD_PAYLOAD_MAX, &len))) {
		fprintf(stderr, "claimctl: add: cannot read the payload from stdin (at most %u "
			"bytes)\n", ADD_PAYLOAD_MAX);
		goto fail;
	}
	req = add_request(queue, payload, len, &opts);
	free(payload);
	buf_free(&opts);
	return req;
fail:
	buf_free(&opts);
	return NULL;
}

int main(int argc, char **argv)
{
	char control[CONFIG_PATH_MAX] = "", *req;
	int i = 1, fd, r;

	if (i + 1 < argc && !strcmp(argv[i], "--control")) {
		snprintf(control, sizeof(control), "%s", argv[i + 1]);
		i += 2;
	}
	if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (i >= argc) {
		fprintf(stderr, "claimctl: no command given\n");
		usage(stderr);
		return 2;
	}
	req = build_request(argc, argv, i);
	if (!req) {
		usage(stderr);
		return 2;
	}
	if (!*control && config_default_control(control, sizeof(control)) < 0) {
		fprintf(stderr, "claimctl: default control socket path too long; use --control\n");
		return 2;
	}
	fd = connect_to(control);
	if (fd < 0) {
		free(req);
		return 1;
	}
	r = write_all(fd, req, strlen(req));
	free(req);
	if (r < 0) {
		fprintf(stderr, "claimctl: write: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	r = relay(fd);
	close(fd);
	return r;
}
