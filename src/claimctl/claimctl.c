/* claimctl — talks to a running claimd over its control socket: turns its command line into
 * one request (common/ctl: the grammar and the usage text live there), sends it, and prints
 * the reply's body on stdout, or its error on stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"

#define REPLY_MAX (64u * 1024 * 1024)

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

/* Prints the reply: its body on stdout (exit 0), or its error on stderr (exit 1). */
static int show_reply(const struct buf *reply)
{
	const char *body;
	size_t len;
	int r;

	if (reply->len == 0) {
		fprintf(stderr, "claimctl: claimd closed the connection without an answer\n");
		return 1;
	}
	r = ctl_reply_parse(reply->data, reply->len, &body, &len);
	if (r < 0) {
		fprintf(stderr, "claimctl: claimd's answer is not in the control protocol: %.*s\n",
			(int)(reply->len > 200 ? 200 : reply->len), reply->data);
		return 1;
	}
	if (r == 0) {
		fprintf(stderr, "claimctl: %.*s\n", (int)len, body);
		return 1;
	}
	fwrite(body, 1, len, stdout);
	return 0;
}

/* Sends request (one line) to the supervisor at path and prints its reply. Returns the exit
 * code. */
static int ask(const char *path, const struct buf *request)
{
	struct buf reply;
	int fd = connect_to(path), r;

	if (fd < 0)
		return 1;
	if (write_all(fd, request->data, request->len) < 0) {
		fprintf(stderr, "claimctl: write: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	shutdown(fd, SHUT_WR);
	buf_init(&reply);
	r = read_all(fd, &reply, REPLY_MAX);
	close(fd);
	if (r < 0) {
		fprintf(stderr, "claimctl: reading the answer: %s\n", strerror(-r));
		r = 1;
	} else {
		r = show_reply(&reply);
	}
	buf_free(&reply);
	return r;
}

int main(int argc, char **argv)
{
	char control[CONFIG_PATH_MAX] = "", err[512] = "";
	struct ctl_request req;
	struct buf request, payload;
	int i = 1, r;

	if (i + 1 < argc && !strcmp(argv[i], "--control")) {
		snprintf(control, sizeof(control), "%s", argv[i + 1]);
		i += 2;
	}
	if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
		fputs(ctl_usage(), stdout);
		return 0;
	}
	if (i >= argc) {
		fprintf(stderr, "claimctl: no command given\n%s", ctl_usage());
		return 2;
	}
	if (ctl_from_argv(argc - i, argv + i, &req, err, sizeof(err)) < 0) {
		fprintf(stderr, "claimctl: %s (see claimctl --help)\n", err);
		return 2;
	}
	buf_init(&payload);
	if (ctl_wants_stdin(&req)) {
		r = read_all(0, &payload, CTL_PAYLOAD_MAX);
		if (r < 0) {
			fprintf(stderr, "claimctl: %s: cannot read the payload from stdin: %s (at most "
				"%u bytes)\n", ctl_verb_name(req.verb),
				r == -EFBIG ? "too long" : strerror(-r), CTL_PAYLOAD_MAX);
			buf_free(&payload);
			return 2;
		}
		req.payload = (const unsigned char *)(payload.data ? payload.data : "");
		req.payload_len = payload.len;
		req.have |= 1u << CTL_F_PAYLOAD;
	}
	if (!*control && config_default_control(control, sizeof(control)) < 0) {
		fprintf(stderr, "claimctl: default control socket path too long; use --control\n");
		buf_free(&payload);
		return 2;
	}
	buf_init(&request);
	r = ctl_encode(&req, &request, err, sizeof(err));
	buf_free(&payload);
	if (r < 0) {
		fprintf(stderr, "claimctl: %s\n", r == -ENOMEM ? "out of memory" : err);
		buf_free(&request);
		return 2;
	}
	r = ask(control, &request);
	buf_free(&request);
	return r;
}
