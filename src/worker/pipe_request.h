/* pipe_request — the lines a pipe: co-process reads (handler_pipe.h has the protocol): an
 * item's request, and the cancel line for an item outstanding. One JSON object and a newline
 * each. No I/O, no clock (deadline_ms is the time left at now_ms), no allocation, no log. */
#ifndef CLAIMD_PIPE_REQUEST_H
#define CLAIMD_PIPE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "worker/handler_job.h"

/* Why an item is cancelled: its cancel line's "reason". */
enum pipe_cancel {
	PIPE_CANCEL_NONE,       /* not cancelled */
	PIPE_CANCEL_TIMEOUT,    /* "timeout": it ran past its timeout */
	PIPE_CANCEL_SHUTDOWN,   /* "shutdown": the worker is stopping */
	PIPE_CANCEL_OPERATOR,   /* "cancelled": an operator cancelled it */
	PIPE_CANCEL_COUNT,
};

/* The reason's name ("timeout"), "" for PIPE_CANCEL_NONE. */
const char *pipe_cancel_name(enum pipe_cancel why);

/* The line for job at now_ms (handler_util_now_ms) into out (NULL: only measure it). Returns
 * its length in bytes, the same for out NULL and not when now_ms is the same. */
size_t pipe_request(const struct handler_job *job, int64_t now_ms, char *out);

/* {"id":N,"cancel":true,"reason":"timeout"} and its newline into out (NULL: only measure it).
 * Returns its length in bytes. */
size_t pipe_request_cancel(uint64_t id, enum pipe_cancel why, char *out);

#endif
