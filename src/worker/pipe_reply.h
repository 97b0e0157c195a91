/* pipe_reply — one reply line of a pipe: co-process (handler_pipe.h has the protocol), parsed
 * with jansson: untrusted bytes from a user's program, so a fuzzed, widely used parser reads
 * them. A reply is exactly one JSON object (whitespace around it allowed, nothing else, no
 * duplicate keys, valid UTF-8); its values may be nested (a result object, progress), and
 * fields other than these are ignored:
 *
 *     "id"           the item's id: a non-negative integer                   (required)
 *     "ok"           true or false                                           (required)
 *     "error"        with "ok":false, why: a string (or null)
 *     "retry_in_ms"  with "ok":false, run it again after this many ms, not counting as a
 *                    failed attempt: an integer from 0 to 4294967295 (or null)
 *     "result"       with "ok":true, what the run returned: any JSON value (null: none),
 *                    kept compact in the row's result, at most PIPE_RESULT_MAX bytes so
 *     "enqueue"      with "ok":true, jobs the run adds, committed in the same transaction as
 *                    its outcome (follow-up jobs): an array of 1 to PIPE_ENQUEUE_MAX objects,
 *                    each a line of a jobs:batch ({"queue":"mail","payload":{...},
 *                    "delay":"30s", ...}; "ref"/"after" make them a graph), checked when
 *                    the reply is taken (a bad one fails the run, naming it)
 *
 * Before its reply, the co-process may report the item's progress, any number of times:
 *
 *     {"id":N,"progress":P}   P any JSON value but null, at most PIPE_PROGRESS_MAX bytes
 *                             compact (a fraction, a count, an object); no "ok"
 *
 * And once, when it can take items (the worker waits for it with --pipe-ready, and ignores
 * it without):
 *
 *     {"ready":true}          no "id"
 *
 * A result or progress over its limit makes the line a bad reply. Pure: no I/O, does not
 * log. */
#ifndef CLAIMD_PIPE_REPLY_H
#define CLAIMD_PIPE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/handler_job.h"

#define PIPE_REPLY_MAX (1024 * 1024)   /* bytes of one reply line */
#define PIPE_RESULT_MAX HANDLER_RESULT_MAX
#define PIPE_PROGRESS_MAX HANDLER_PROGRESS_MAX
#define PIPE_ENQUEUE_MAX 1000          /* jobs one reply adds (store_graph.h: STORE_GRAPH_MAX) */

/* A line read: a reply, or a progress report. */
struct pipe_reply {
	uint64_t id;                /* the item it is for */
	bool progress;              /* a progress report, not the reply */
	bool ready;                 /* the ready line: no id, nothing else */
	struct handler_result res;  /* the reply; its result points into text */
	char *text;                 /* malloc'd compact JSON of "result" or "progress", or NULL */
	size_t text_len;
	char *enqueue;              /* malloc'd: "enqueue"'s objects, compact, a line each */
};

/* Read line[0..len) (without its newline) into *ret (which pipe_reply_clear frees); whether
 * ret->id is an item outstanding is the caller's to check. Returns 0, or -EPROTO for a bad
 * line: ret->res is then HANDLER_FAILED with what is wrong and the start of the line, quoted,
 * in its error. */
int pipe_reply_parse(const char *line, size_t len, struct pipe_reply *ret);
/* Make *ret (read from line[0..len)) a bad reply after all, for what (its id is not an item
 * outstanding): as pipe_reply_parse's. Returns -EPROTO. */
int pipe_reply_refuse(struct pipe_reply *ret, const char *line, size_t len, const char *what);
void pipe_reply_clear(struct pipe_reply *r);

#endif
