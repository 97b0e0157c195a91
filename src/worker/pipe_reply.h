/* pipe_reply — one reply line of a pipe: co-process (handler_pipe.h has the protocol), parsed
 * with jansson: untrusted bytes from a user's program, so a fuzzed, widely used parser reads
 * them. A reply is exactly one JSON object (whitespace around it allowed, nothing else, no
 * duplicate keys, valid UTF-8); its values may be nested (a result object, progress), and
 * fields other than these are ignored:
 *
 *     "id"           the item's id: an integer, the one sent                 (required)
 *     "ok"           true or false                                           (required)
 *     "error"        with "ok":false, why: a string (or null)
 *     "retry_in_ms"  with "ok":false, run it again after this many ms, not counting as a
 *                    failed attempt: an integer from 0 to 4294967295 (or null)
 *
 * Pure: no I/O, does not log. */
#ifndef CLAIMD_PIPE_REPLY_H
#define CLAIMD_PIPE_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "worker/handler_job.h"

#define PIPE_REPLY_MAX (1024 * 1024)   /* bytes of one reply line */

/* Fill res from line[0..len) (without its newline), a reply to item want_id. Returns 0, or
 * -EPROTO for a bad reply: res is then HANDLER_FAILED with what is wrong and the start of
 * the line, quoted, in its error. */
int pipe_reply_parse(const char *line, size_t len, uint64_t want_id, struct handler_result *res);

#endif
