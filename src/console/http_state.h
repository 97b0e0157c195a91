/* http_state — an HTTP request's life as one enum, and what may follow what (pure; the one
 * function that changes a request's state, http.c's req_enter, asks it). */
#ifndef CLAIMD_HTTP_STATE_H
#define CLAIMD_HTTP_STATE_H

#include <stdbool.h>

enum http_state {
	HTTP_S_HEADERS,      /* its headers are in: the guard and the early check run */
	HTTP_S_BODY,         /* its body comes in */
	HTTP_S_TOO_BIG,      /* its body went over max_body: dropped to its end, then 413 */
	HTTP_S_HANDLER,      /* the whole request is in: the handler runs (called, not yet back) */
	HTTP_S_WAITING,      /* the handler is back without an answer: the connection is
			      * suspended while a command runs */
	HTTP_S_ANSWERED,     /* the answer is made (MHD takes it up next) */
	HTTP_S_SENT,         /* MHD has the answer */
	HTTP_S_STREAM,       /* an answer that comes bit by bit: what is written is sent */
	HTTP_S_STREAM_IDLE,  /* nothing written is unsent: suspended until more is written */
	HTTP_S_STREAM_END,   /* the stream is over: what is left is sent */
	HTTP_S_OWED,         /* the server stopped while its command ran: answered 503, and
			      * the command's own answer, when it comes, is dropped */
	HTTP_S_ORPHAN,       /* its connection closed while its command ran: freed when the
			      * command answers */
	HTTP_S_DONE,         /* freed: the end */
	HTTP_S_COUNT
};

/* "headers", "body", ..., "done"; "?" for a value out of range. */
const char *http_state_name(enum http_state s);

/* Whether to may follow from. The transitions:
 *   headers -> body -> handler -> waiting -> answered -> sent -> done
 *   headers -> answered (refused before the body: the guard, the early check, a
 *              Content-Length over the limit)
 *   body -> too_big -> answered (413)
 *   handler -> answered | stream;  waiting -> stream
 *   stream <-> stream_idle -> stream_end -> done;  stream | stream_idle -> done (the client
 *              went away)
 *   answered -> owed -> orphan -> done;  waiting -> orphan
 *   owed -> answered | sent (the command answered: its answer dropped, nothing holds it)
 *   headers | body | too_big | answered -> done (the connection closed) */
bool http_state_may_follow(enum http_state from, enum http_state to);

#endif
