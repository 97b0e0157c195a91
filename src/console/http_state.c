#include "console/http_state.h"

static const char *const names[HTTP_S_COUNT] = {
	[HTTP_S_HEADERS] = "headers", [HTTP_S_BODY] = "body", [HTTP_S_TOO_BIG] = "too_big",
	[HTTP_S_HANDLER] = "handler", [HTTP_S_WAITING] = "waiting",
	[HTTP_S_ANSWERED] = "answered", [HTTP_S_SENT] = "sent", [HTTP_S_STREAM] = "stream",
	[HTTP_S_STREAM_IDLE] = "stream_idle", [HTTP_S_STREAM_END] = "stream_end",
	[HTTP_S_OWED] = "owed", [HTTP_S_ORPHAN] = "orphan", [HTTP_S_DONE] = "done",
};

#define B(s) (1u << (s))

/* What may follow what. */
static const unsigned may_follow[HTTP_S_COUNT] = {
	[HTTP_S_HEADERS] = B(HTTP_S_BODY) | B(HTTP_S_ANSWERED) | B(HTTP_S_DONE),
	[HTTP_S_BODY] = B(HTTP_S_TOO_BIG) | B(HTTP_S_HANDLER) | B(HTTP_S_DONE),
	[HTTP_S_TOO_BIG] = B(HTTP_S_ANSWERED) | B(HTTP_S_DONE),
	[HTTP_S_HANDLER] = B(HTTP_S_WAITING) | B(HTTP_S_ANSWERED) | B(HTTP_S_STREAM),
	[HTTP_S_WAITING] = B(HTTP_S_ANSWERED) | B(HTTP_S_STREAM) | B(HTTP_S_ORPHAN),
	[HTTP_S_ANSWERED] = B(HTTP_S_SENT) | B(HTTP_S_OWED) | B(HTTP_S_DONE),
	[HTTP_S_SENT] = B(HTTP_S_DONE),
	[HTTP_S_STREAM] = B(HTTP_S_STREAM_IDLE) | B(HTTP_S_STREAM_END) | B(HTTP_S_DONE),
	[HTTP_S_STREAM_IDLE] = B(HTTP_S_STREAM) | B(HTTP_S_STREAM_END) | B(HTTP_S_DONE),
	[HTTP_S_STREAM_END] = B(HTTP_S_DONE),
	[HTTP_S_OWED] = B(HTTP_S_ORPHAN) | B(HTTP_S_ANSWERED) | B(HTTP_S_SENT),
	[HTTP_S_ORPHAN] = B(HTTP_S_DONE),
	[HTTP_S_DONE] = 0,
};

const char *http_state_name(enum http_state s)
{
	return (unsigned)s < HTTP_S_COUNT ? names[s] : "?";
}

bool http_state_may_follow(enum http_state from, enum http_state to)
{
	return (unsigned)from < HTTP_S_COUNT && (unsigned)to < HTTP_S_COUNT &&
	       (may_follow[from] & B(to));
}
