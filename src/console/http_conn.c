/* The connections, each from libmicrohttpd's accept to its close: how many each client holds
 * (http_peer: an IPv4 address, an IPv6 /64; MHD's own per-IP limit counts whole addresses, so
 * it is off and the accept policy counts instead), and which are idle. A connection that had
 * no request for HTTP_SHED_AFTER_MS (a keep-alive between requests, or one that never sent a
 * whole request) is closed when the listener runs short of places (fewer than an eighth of
 * --http-max-connections left): MHD stops accepting at its limit, and /healthz would wait in
 * the kernel's queue behind connections that do nothing. It is closed by shutdown() on its
 * socket, which MHD sees as the client's close at its next run (MHD cannot be told to close a
 * connection; the descriptor stays MHD's to close). */
#include "console/http_int.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "common/log.h"

static void idle_append(struct http_daemon *d, struct http_conn *hc)
{
	hc->idle_since = uv_now(d->poll.loop);
	hc->next = NULL;
	hc->prev = d->idle_tail;
	if (d->idle_tail)
		d->idle_tail->next = hc;
	else
		d->idle_head = hc;
	d->idle_tail = hc;
}

static void idle_remove(struct http_daemon *d, struct http_conn *hc)
{
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		d->idle_head = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	else
		d->idle_tail = hc->prev;
	hc->prev = hc->next = NULL;
}

static int peer_of(const struct sockaddr *a, struct http_peer *ret)
{
	socklen_t len = a && a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
			sizeof(struct sockaddr_in);

	return http_peer_of(a, len, ret);
}

enum MHD_Result http_conn_accept(void *cls, const struct sockaddr *a, socklen_t len)
{
	struct http_daemon *d = cls;
	struct http_server *s = d->srv;
	struct http_peer p;
	char text[HTTP_PEER_TEXT_MAX];

	if (http_peer_of(a, len, &p) < 0)
		return MHD_YES;   /* neither IPv4 nor IPv6: not counted */
	if (http_peers_count(&s->peers, &p) < s->o.max_conns_per_ip)
		return MHD_YES;
	s->peers_refused++;
	if (log_level() >= LOG_DEBUG) {
		http_peer_format(&p, text, sizeof(text));
		log_debug("http: %s holds %u connections (--http-max-connections-per-ip): one more "
			  "closed", text, s->o.max_conns_per_ip);
	}
	return MHD_NO;
}

static void started(struct http_daemon *d, struct MHD_Connection *c, void **ctx)
{
	struct http_conn *hc = calloc(1, sizeof(*hc));
	const union MHD_ConnectionInfo *info;

	d->nconns++;
	if (!hc) {
		log_debug("http: out of memory for a connection: not counted");
		return;
	}
	hc->dmn = d;
	hc->c = c;
	info = mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	hc->counted = info && peer_of(info->client_addr, &hc->peer) == 0 &&
		      http_peers_add(&d->srv->peers, &hc->peer) > 0;
	idle_append(d, hc);
	*ctx = hc;
}

static void closed(struct http_daemon *d, void **ctx)
{
	struct http_conn *hc = *ctx;

	/* At MHD's limit it took its listening socket out of its epoll set; it puts it back in
	 * its next run, which nothing else may cause soon. */
	if (d->nconns-- == d->srv->o.max_conns)
		d->again = true;
	if (!hc)
		return;
	*ctx = NULL;
	if (hc->counted)
		http_peers_del(&d->srv->peers, &hc->peer);
	if (hc->shed)
		d->nshed--;
	else if (!hc->busy)
		idle_remove(d, hc);
	free(hc);
}

void http_conn_notify(void *cls, struct MHD_Connection *c, void **ctx,
		      enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		started(cls, c, ctx);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		closed(cls, ctx);
}

struct http_conn *http_conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *info =
		mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

void http_conn_busy(struct http_conn *hc, bool busy)
{
	if (!hc || hc->busy == busy)
		return;
	hc->busy = busy;
	if (hc->shed)
		return;   /* closing: in no list */
	if (busy)
		idle_remove(hc->dmn, hc);
	else
		idle_append(hc->dmn, hc);
}

/* Whether d has fewer places left than it keeps free (connections shut down count as gone). */
static bool short_of_places(const struct http_daemon *d)
{
	unsigned max = d->srv->o.max_conns, keep = max / 8 ? max / 8 : 1;

	return d->nconns - d->nshed + keep > max;
}

void http_conn_shed(struct http_daemon *d)
{
	uint64_t now = uv_now(d->poll.loop);
	const union MHD_ConnectionInfo *info;
	struct http_conn *hc;
	unsigned n = 0;

	d->shed_at = 0;
	while (short_of_places(d) && (hc = d->idle_head)) {
		if (now < hc->idle_since + HTTP_SHED_AFTER_MS) {
			d->shed_at = hc->idle_since + HTTP_SHED_AFTER_MS;
			break;
		}
		idle_remove(d, hc);
		hc->shed = true;
		d->nshed++;
		info = mhd.get_connection_info(hc->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (info && shutdown(info->connect_fd, SHUT_RDWR) == 0)
			n++;
	}
	if (n) {
		d->srv->shed += n;
		log_debug("http: %u of %u connections in use: %u idle ones closed", d->nconns,
			  d->srv->o.max_conns, n);
	}
}
