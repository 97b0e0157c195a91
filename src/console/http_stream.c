/* Answers that come bit by bit (Server-Sent Events): a response whose reader callback gives
 * MHD what was written, and suspends the connection while there is nothing new. */
#include "console/http_int.h"

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
		if (r->state == HTTP_S_STREAM_END)
			return MHD_CONTENT_READER_END_OF_STREAM;
		http_enter(r, HTTP_S_STREAM_IDLE);   /* suspended */
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

int http_stream_start(struct http_request *r, const char *type, void (*on_gone)(void *data),
		      void *data)
{
	if (r->state != HTTP_S_HANDLER && r->state != HTTP_S_WAITING)
		return -EINVAL;
	r->resp = mhd.create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, r, NULL);
	if (!r->resp)
		return -ENOMEM;
	r->status = 200;
	r->on_gone = on_gone;
	r->gone_data = data;
	buf_init(&r->stream);
	if (r->srv->o.on_answer)
		r->srv->o.on_answer(r->srv->o.data, r->tag ? r->tag : "other", 200);
	mhd.add_response_header(r->resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	http_add_common_headers(r->resp);
	for (size_t i = 0; i < r->nhdrs; i++)
		mhd.add_response_header(r->resp, r->hdr_names[i], r->hdr_values[i]);
	http_enter(r, HTTP_S_STREAM);   /* resumed if it waited */
	return 0;
}

int http_stream_write(struct http_request *r, const void *data, size_t len)
{
	if (r->state != HTTP_S_STREAM && r->state != HTTP_S_STREAM_IDLE)
		return -EINVAL;
	if (r->stream.len > HTTP_STREAM_MAX)
		return -ENOBUFS;  /* the client does not read: it is cut off by the caller */
	buf_append(&r->stream, data, len);
	if (buf_failed(&r->stream))
		return -ENOMEM;
	if (r->state == HTTP_S_STREAM_IDLE)
		http_enter(r, HTTP_S_STREAM);   /* resumed */
	return 0;
}

void http_stream_end(struct http_request *r)
{
	if (r->state != HTTP_S_STREAM && r->state != HTTP_S_STREAM_IDLE)
		return;
	r->on_gone = NULL;
	http_enter(r, HTTP_S_STREAM_END);   /* resumed if it waited */
}
