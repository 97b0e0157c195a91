/* trace — W3C trace context (https://www.w3.org/TR/trace-context/): the form of a
 * traceparent, "00-<trace-id>-<parent-id>-<flags>", which a row may carry from the request that
 * added it to its handler and claimd's log lines. Pure: no I/O, no allocation. */
#ifndef CLAIMD_TRACE_H
#define CLAIMD_TRACE_H

#include <stdbool.h>

#define TRACE_PARENT_LEN 55    /* "00-" 32 "-" 16 "-" 2 */
#define TRACE_ID_LEN 32

/* Whether s is a traceparent as the specification has it: version 2 lower-case hex digits
 * but "ff", a trace id of 32 and a parent id of 16 that are not all zeros, flags of 2, '-'
 * between; exactly TRACE_PARENT_LEN bytes (a later version's longer form is not taken). */
bool trace_parent_valid(const char *s);

/* " trace=<trace-id>" for a log line about a row with traceparent tp (checked), or "" (NULL
 * or not valid): into buf (at least TRACE_LOG_FIELD bytes), returned. */
#define TRACE_LOG_FIELD (8 + TRACE_ID_LEN + 1)
const char *trace_log_field(const char *tp, char *buf);

#endif
