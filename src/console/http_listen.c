/* The listeners: libmicrohttpd in "external epoll" mode, its epoll descriptor one uv_poll on
 * our loop and its timeouts one uv_timer; MHD_run does the work of both. With HTTPS, a reload
 * starts a new daemon on the same listening socket (a dup of it) with the certificate read
 * again, then tells the old one to stop accepting (MHD_quiesce_daemon): it serves the
 * connections it has until they end, at most HTTP_DRAIN_S, and is stopped then. */
#include "console/http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"

#define PEM_MAX (1024 * 1024)

/* ---- a daemon on the loop ---- */

static void schedule(struct http_daemon *d);
static void daemon_stop(struct http_daemon *d);

static unsigned connections(struct http_daemon *d)
{
	const union MHD_DaemonInfo *info =
		mhd.get_daemon_info(d->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

static void run(struct http_daemon *d)
{
	unsigned n;

	if (!d->d)
		return;
	mhd.run(d->d);
	http_conn_shed(d);
	if (!d->draining || ((n = connections(d)) > 0 && uv_now(d->poll.loop) < d->drain_until)) {
		schedule(d);
		return;
	}
	if (n)
		log_info("http: the listener from before the reload stopped: %u connections cut "
			 "after %d s", n, HTTP_DRAIN_S);
	else
		log_info("http: the listener from before the reload stopped: its connections ended");
	daemon_stop(d);
}

static void on_timer(uv_timer_t *t)
{
	run(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	run(p->data);
}

static void kick(struct http_daemon *d)
{
	if (d->d)
		uv_timer_start(&d->timer, on_timer, 0, 0);
}

static void schedule(struct http_daemon *d)
{
	MHD_UNSIGNED_LONG_LONG ms = 0;
	bool has = mhd.get_timeout(d->d, &ms) == MHD_YES;
	uint64_t now = uv_now(d->poll.loop);

	if (d->again) {
		d->again = false;
		ms = 0;
		has = true;
	}
	if (d->shed_at) {
		uint64_t left = d->shed_at > now ? d->shed_at - now : 0;
		if (!has || left < ms)
			ms = left;
		has = true;
	}
	if (d->draining) {
		uint64_t left = d->drain_until > now ? d->drain_until - now : 0;
		if (!has || left < ms)
			ms = left;
		has = true;
	}
	if (has)
		uv_timer_start(&d->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&d->timer);
}

static void free_server(struct http_server *s)
{
	free(s->hosts);
	free(s->cert_file);
	free(s->key_file);
	http_peers_free(&s->peers);
	explicit_bzero(s->token, sizeof(s->token));
	explicit_bzero(s->read_token, sizeof(s->read_token));
	free(s);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct http_daemon *d = h->data;
	struct http_server *s = d->srv;

	if (--d->open_handles > 0)
		return;
	free(d);
	if (--s->ndaemons == 0 && s->closing)
		free_server(s);
}

/* Stop d: requests whose command has not answered yet are answered 503 first (MHD stops
 * only with no connection suspended; the command's answer, when it comes, frees the request),
 * then every connection is closed. The handles close on the loop; d is freed after. */
static void daemon_stop(struct http_daemon *d)
{
	struct http_server *s = d->srv;
	bool resumed = false;

	if (!d->d)
		return;
	uv_poll_stop(&d->poll);
	for (struct http_request *r = d->requests; r; r = r->next) {
		if (r->state == HTTP_S_WAITING) {
			http_respond_error(r, 503, "claimd is stopping");
			http_enter(r, HTTP_S_OWED);
		}
		resumed |= r->resp != NULL;
	}
	/* Answers given but not yet taken up by MHD: a few turns to send them, best effort. */
	for (int i = 0; resumed && i < 3; i++)
		mhd.run(d->d);
	mhd.stop_daemon(d->d);
	d->d = NULL;
	for (struct http_daemon **p = &s->old; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	if (s->cur == d)
		s->cur = NULL;
	uv_close((uv_handle_t *)&d->poll, on_handle_closed);
	uv_close((uv_handle_t *)&d->timer, on_handle_closed);
}

/* ---- starting one ---- */

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *s = cls;
	char msg[sizeof(s->mhd_said)];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == '.'))
		msg[--n] = '\0';
	/* What a failed start said, all of it: GnuTLS's reason first, then MHD's. */
	n = strlen(s->mhd_said);
	snprintf(s->mhd_said + n, sizeof(s->mhd_said) - n, "%s%s", n ? "; " : "", msg);
	log_debug("http: %s", msg);
}

/* A PEM file's text (NUL-terminated, malloc'd). Returns 0 or a negative errno with err. */
static int read_pem(const char *what, const char *path, char **ret, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	char *text = NULL;
	size_t len = 0;
	ssize_t n = 1;
	int r;

	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s \"%s\": %s", what, path, strerror(-r));
		return r;
	}
	text = malloc(PEM_MAX + 1);
	while (text && len < PEM_MAX && (n = read(fd, text + len, PEM_MAX - len)) > 0)
		len += (size_t)n;
	r = !text ? -ENOMEM : n < 0 ? -errno : len == PEM_MAX ? -EFBIG : len == 0 ? -ENODATA : 0;
	close(fd);
	if (r < 0) {
		snprintf(err, errlen, "%s \"%s\": %s", what, path,
			 r == -EFBIG ? "over 1 MiB" : r == -ENODATA ? "empty" : strerror(-r));
		free(text);
		return r;
	}
	text[len] = '\0';
	*ret = text;
	return 0;
}

static void forget(char *secret)
{
	if (secret)
		explicit_bzero(secret, strlen(secret));
	free(secret);
}

/* A new daemon: on listen_fd (a socket it then owns, also when it fails once libmicrohttpd
 * took it up) or, when it is -1, on a socket of its own bound to the server's address; with
 * HTTPS, the certificate and key read now. Returns 0 or a negative errno with err filled. */
static int daemon_start(struct http_server *s, int listen_fd, struct http_daemon **ret,
			char *err, size_t errlen)
{
	struct http_daemon *d = calloc(1, sizeof(*d));
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	char *cert = NULL, *key = NULL;
	bool given = false;   /* listen_fd is libmicrohttpd's */
	int r = -ENOMEM;

	if (!d)
		goto fail;
	d->srv = s;
	d->kick = kick;
	if (s->cert_file) {
		if (mhd.is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errlen, "http: this libmicrohttpd has no TLS: cannot serve HTTPS");
			r = -ENOTSUP;
			goto fail;
		}
		if ((r = read_pem("--http-tls-cert", s->cert_file, &cert, err, errlen)) < 0 ||
		    (r = read_pem("--http-tls-key", s->key_file, &key, err, errlen)) < 0)
			goto fail;
		flags |= MHD_USE_TLS;
	}
	if (s->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->mhd_said[0] = '\0';
	errno = 0;
	/* The options a listening socket of MHD's own needs, or the one it is given. */
	struct MHD_OptionItem where[] = {
		listen_fd >= 0 ? (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL }
			       : (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, &s->addr },
		{ cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, cert },
		{ key ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, key },
		{ MHD_OPTION_END, 0, NULL },
	};
	given = true;
	/* The accept policy counts the connections per client (MHD's per-IP limit cannot count
	 * an IPv6 /64 as one): http_conn.c. */
	d->d = mhd.start_daemon(flags, 0, http_conn_accept, d, http_on_access, d,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				MHD_OPTION_ARRAY, where,
				MHD_OPTION_CONNECTION_LIMIT, s->o.max_conns,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, d,
				MHD_OPTION_NOTIFY_CONNECTION, http_conn_notify, d,
				MHD_OPTION_END);
	r = errno;
	forget(key);
	free(cert);
	key = cert = NULL;
	if (!d->d) {
		r = r ? -r : -EIO;
		snprintf(err, errlen, "http: cannot %s on %s: %s",
			 s->cert_file ? "serve HTTPS" : "listen", s->address,
			 *s->mhd_said ? s->mhd_said : strerror(-r));
		goto fail;
	}
	info = mhd.get_daemon_info(d->d, MHD_DAEMON_INFO_EPOLL_FD);
	r = info ? uv_poll_init(s->o.loop, &d->poll, info->epoll_fd) : -EIO;
	if (r < 0) {
		snprintf(err, errlen, "http: cannot watch the server: %s", uv_strerror(r));
		mhd.stop_daemon(d->d);
		goto fail;
	}
	uv_timer_init(s->o.loop, &d->timer);
	d->timer.data = d->poll.data = d;
	d->open_handles = 2;
	s->ndaemons++;
	uv_poll_start(&d->poll, UV_READABLE, on_poll);
	schedule(d);
	*ret = d;
	return 0;
fail:
	if (listen_fd >= 0 && !given)
		close(listen_fd);
	forget(key);
	free(cert);
	free(d);
	return r;
}

/* ---- the server ---- */

static unsigned port_of(const struct sockaddr *a)
{
	return ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port :
		     ((const struct sockaddr_in *)a)->sin_port);
}

static void format_address(struct http_server *s, unsigned port)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (s->addr.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)&s->addr)->sin6_addr, host,
			  sizeof(host));
		snprintf(s->address, sizeof(s->address), "[%s]:%u", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)&s->addr)->sin_addr, host,
			  sizeof(host));
		snprintf(s->address, sizeof(s->address), "%s:%u", host, port);
	}
}

static char *dup_or_null(const char *v, bool *failed)
{
	char *c = v ? strdup(v) : NULL;

	*failed |= v && !c;
	return c;
}

int http_open(const struct http_opts *o, struct http_server **ret, char *err, size_t errlen)
{
	struct http_server *s = calloc(1, sizeof(*s));
	const union MHD_DaemonInfo *info;
	bool failed = false;
	uint64_t seed;
	int r;

	if (!s)
		return -ENOMEM;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
		seed = uv_hrtime() ^ ((uint64_t)getpid() << 32);
	http_peers_init(&s->peers, seed);
	r = http_load_mhd(err, errlen);
	if (r < 0) {
		free(s);
		return r;
	}
	s->o = *o;
	memcpy(&s->addr, o->addr, o->addrlen < sizeof(s->addr) ? o->addrlen : sizeof(s->addr));
	snprintf(s->token, sizeof(s->token), "%s", o->token ? o->token : "");
	snprintf(s->read_token, sizeof(s->read_token), "%s", o->read_token ? o->read_token : "");
	s->hosts = dup_or_null(o->hosts, &failed);
	s->cert_file = dup_or_null(o->tls_cert_file, &failed);
	s->key_file = dup_or_null(o->tls_key_file, &failed);
	s->o.token = o->token ? s->token : NULL;
	s->o.read_token = o->read_token ? s->read_token : NULL;
	s->o.hosts = s->hosts;
	s->o.tls_cert_file = s->cert_file;
	s->o.tls_key_file = s->key_file;
	s->closing = true;   /* freed with its last daemon from here, or now */
	format_address(s, port_of(o->addr));
	r = failed ? -ENOMEM : daemon_start(s, -1, &s->cur, err, errlen);
	if (r < 0) {
		free_server(s);
		return r;
	}
	s->closing = false;
	info = mhd.get_daemon_info(s->cur->d, MHD_DAEMON_INFO_BIND_PORT);
	format_address(s, info ? info->port : 0);
	s->guard = (struct http_guard){ .addr = (const struct sockaddr *)&s->addr,
					.port = info ? info->port : 0, .tls = s->cert_file != NULL,
					.hosts = s->hosts, .token = s->o.token,
					.read_token = s->o.read_token };
	*ret = s;
	return 0;
}

const char *http_address(const struct http_server *s)
{
	return s->address;
}

const char *http_scheme(const struct http_server *s)
{
	return s->cert_file ? "https" : "http";
}

unsigned http_in_flight(const struct http_server *s)
{
	return s->in_flight;
}

void http_stats(const struct http_server *s, struct http_stats *ret)
{
	struct http_stats st = {
		.streams = s->nstreams, .max_streams = s->o.max_streams,
		.streams_refused = s->streams_refused, .peers_refused = s->peers_refused,
		.shed = s->shed,
	};

	if (s->cur)
		st.connections += s->cur->nconns;
	for (const struct http_daemon *d = s->old; d; d = d->next)
		st.connections += d->nconns;
	*ret = st;
}

int http_reload_tls(struct http_server *s, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info;
	struct http_daemon *d;
	int fd, r;

	if (!s || !s->cert_file || !s->cur)
		return 0;
	info = mhd.get_daemon_info(s->cur->d, MHD_DAEMON_INFO_LISTEN_FD);
	fd = info ? fcntl(info->listen_fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (fd < 0) {
		r = info ? -errno : -EIO;
		snprintf(err, errlen, "http: cannot reload the certificate: %s", strerror(-r));
		return r;
	}
	/* A start that fails has closed fd itself, once it took it up (a certificate that does
	 * not load); one that fails before (out of descriptors) leaves it open: one descriptor
	 * lost then, rather than closing a number someone may have been given again since. */
	r = daemon_start(s, fd, &d, err, errlen);
	if (r < 0)
		return r;
	/* The old one takes no more connections; its socket (the new one's is a dup) closed. */
	struct http_daemon *old = s->cur;
	int old_fd = mhd.quiesce_daemon(old->d);
	if (old_fd >= 0)
		close(old_fd);
	old->draining = true;
	old->drain_until = uv_now(s->o.loop) + HTTP_DRAIN_S * 1000u;
	old->next = s->old;
	s->old = old;
	s->cur = d;
	kick(old);
	return 0;
}

void http_close(struct http_server *s)
{
	if (!s)
		return;
	s->closing = true;
	while (s->old)
		daemon_stop(s->old);
	if (s->cur)
		daemon_stop(s->cur);
	if (s->ndaemons == 0)
		free_server(s);
}
