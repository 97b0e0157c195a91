/* What every route's answer uses (api.c's routes, api_watch.c's waits and streams,
 * api_batch.c's jobs:batch): a command's error as an HTTP status, a JSON answer, the checks
 * of text that goes into text columns, an add's trace context. Calls only down (http,
 * common). */
#include "console/api_int.h"

#include <errno.h>
#include <string.h>

#include "common/trace.h"
#include "common/utf8.h"

#define JSON "application/json"

unsigned api_status_of(int rc)
{
	switch (rc) {
	case -EINVAL: return 400;
	case -ENOENT: return 404;
	case -EBUSY: return 409;
	case -ENOLINK: return 409;   /* a retry of a row that waits for a dead one */
	case -ENOMEM: return 500;
	default: return 503;  /* the database, or stopping */
	}
}

void api_respond_buf(struct http_request *r, unsigned status, struct buf *b)
{
	if (buf_failed(b))
		http_respond_error(r, 500, "out of memory");
	else
		http_respond(r, status, JSON, b->data ? b->data : "", b->len);
	buf_free(b);
}

bool api_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	for (size_t k; n; p += k, n -= k)
		if (!(k = utf8_len(p, n)))
			return false;
	return true;
}

/* A traceparent header that is not a W3C traceparent is ignored, as the specification says. */
void api_trace_default(struct http_request *r, struct ctl_request *req)
{
	const char *tp = http_header(r, "traceparent");

	if (!ctl_has(req, CTL_F_TRACEPARENT) && tp && trace_parent_valid(tp)) {
		req->traceparent = tp;
		req->have |= 1ull << CTL_F_TRACEPARENT;
	}
}
