/* pipe_request — the line a pipe: co-process reads for one item (handler_pipe.h has the
 * protocol): one JSON object and a newline. No I/O but the clock (deadline_ms is the time
 * left), no allocation, does not log. */
#ifndef CLAIMD_PIPE_REQUEST_H
#define CLAIMD_PIPE_REQUEST_H

#include <stddef.h>

#include "worker/handler_job.h"

/* The line for job into out (NULL: only measure it). Returns its length in bytes. */
size_t pipe_request(const struct handler_job *job, char *out);

#endif
