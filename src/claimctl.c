/* claimctl — talks to a running claimd over its control socket.
 *
 *   claimctl [--control PATH] status [--json]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"

static void usage(FILE *f)
{
	fputs("usage: claimctl [--control PATH] status [--json]\n"
	      "\n"
	      "  status         the worker pool and the queue counts, as a table\n"
	      "  status --json  the same as one JSON object\n"
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

int main(int argc, char **argv)
{
	char control[CONFIG_PATH_MAX] = "", req[256];
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
	if (strcmp(argv[i], "status") != 0) {
		fprintf(stderr, "claimctl: unknown command '%s'\n", argv[i]);
		usage(stderr);
		return 2;
	}
	if ((i + 1 < argc && strcmp(argv[i + 1], "--json") != 0) || i + 2 < argc) {
		fprintf(stderr, "claimctl: status: unexpected argument '%s'\n", argv[i + 1]);
		usage(stderr);
		return 2;
	}
	snprintf(req, sizeof(req), "status%s\n", i + 1 < argc ? " --json" : "");
	if (!*control && config_default_control(control, sizeof(control)) < 0) {
		fprintf(stderr, "claimctl: default control socket path too long; use --control\n");
		return 2;
	}
	fd = connect_to(control);
	if (fd < 0)
		return 1;
	if (write_all(fd, req, strlen(req)) < 0) {
		fprintf(stderr, "claimctl: write: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	r = relay(fd);
	close(fd);
	return r;
}
