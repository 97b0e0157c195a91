/* Answers that come bit by bit (Server-Sent Events): a response whose reader callback gives
 * MHD what was written, and suspends the connection while there is nothing new. */
#include "supervisor/http_int.h"

#include <errno.h>
#include <string.h>

/* MHD wants more of the body: what is there, else the end, else nothing yet (the connection
 * waits, suspended, for http_stream_write). */
static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_request *r = cls;
	size_t n = r->stream.len - r->stream_sent;

	(void)pos;
	if (n == 0) {
		if (r->stream_ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		r->stream_waiting = true;
		mhd.suspend_connection(r->conn);
		return 0;
	}
	if (n > max)
		n = max;
	memcpy(out, r->stream.data + r->stream_sent, n);
	r->stream_sent += n;
	if (r->stream_sent == r->stream.len) {
		buf_reset(&r->stream);
		r->stream_sent = 0;
	}
	return (ssize_t)n;
}

static void stream_wake(struct http_request *r)
{
	if (!r->stream_waiting)
		return;
	r->stream_waiting = false;
	mhd.resume_connection(r->conn);
	http_kick(r->dmn);
}

int http_stream_start(struct http_request *r, const char *type, void (*on_gone)(void *data),
		      void *data)
{
	if (r->resp || r->queued || r->orphan || r->owed)
		return -EINVAL;
	r->resp = mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, r, NULL);
	if (!r->resp)
		return -ENOMEM;
	r->status = 200;
	r->streaming = true;
	r->on_gone = on_gone;
	r->gone_data = data;
	buf_init(&r->stream);
	if (r->srv->o.on_answer)
		r->srv->o.on_answer(r->srv->o.data, r->tag ? r->tag : "other", 200);
	mhd.add_response_header(r->resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	http_add_common_headers(r->resp);
	for (size_t i = 0; i < r->nhdrs; i++)
		mhd.add_response_header(r->resp, r->hdr_names[i], r->hdr_values[i]);
	if (r->suspended) {
		r->suspended = false;
		mhd.resume_connection(r->conn);
		http_kick(r->dmn);
	}
	return 0;
}

int http_stream_write(struct http_request *r, const void *data, size_t len)
{
	if (!r->streaming || r->stream_ended)
		return -EINVAL;
	if (r->stream.len > HTTP_STREAM_MAX)
		return -ENOBUFS;  /* the client does not read: it is cut off by the caller */
	buf_append(&r->stream, data, len);
	if (buf_failed(&r->stream))
		return -ENOMEM;
	stream_wake(r);
	return 0;
}

void http_stream_end(struct http_request *r)
{
	if (!r->streaming || r->stream_ended)
		return;
	r->stream_ended = true;
	r->on_gone = NULL;
	stream_wake(r);
}
