/* jobline — one line of a batch of jobs (the HTTP API's jobs:batch, newline-delimited JSON)
 * read into the named parameters of an add request (common/ctl.h, ctl_from_params):
 *
 *     {"payload": {"to": "a@b"}, "delay": "30s", "priority": -1, "group": "user-7"}
 *
 * "payload": a string is the payload's bytes; any other JSON value is written as compact
 * JSON (with content_type application/json unless the line gives one); absent, the payload is
 * empty. The other keys are the add parameters (run_at, delay, period, timeout, priority,
 * group, dedupe, max_attempts, content_type, traceparent, retry_base, retry_max, dedupe_for)
 * as strings or whole numbers; what
 * they may hold is ctl_from_params's to check. A line is read by jansson (duplicate keys
 * refused). Pure: no I/O, does not log.
 *
 * A line of a graph or a batch may also have: "ref": a name other lines use for it (1 to
 * JOBLINE_REF_MAX bytes); "after": an array of the refs of the lines it waits for (at most
 * JOBLINE_AFTER_MAX); "on_dead": "cancel" (the default) or "run", what a dead one of those
 * does to it; "callback": true, the batch's callback (it waits for every other line).
 *
 * And "queue": the queue it goes to (1 to JOBLINE_QUEUE_MAX bytes), where its reader lets a
 * line name it (common/jobset.h). */
#ifndef CLAIMD_JOBLINE_H
#define CLAIMD_JOBLINE_H

#include <stdbool.h>
#include <stddef.h>

#define JOBLINE_PARAMS_MAX 16
#define JOBLINE_REF_MAX 64
#define JOBLINE_AFTER_MAX 32
#define JOBLINE_QUEUE_MAX 64

struct jobline {
	const char *names[JOBLINE_PARAMS_MAX];
	const char *values[JOBLINE_PARAMS_MAX];
	size_t n;
	const unsigned char *payload;  /* never NULL after a parse */
	size_t payload_len;
	const char *queue;             /* NULL: none */
	const char *ref;               /* NULL: none */
	const char *after[JOBLINE_AFTER_MAX];
	size_t nafter;
	bool on_dead_run;              /* "on_dead": "run" */
	bool callback;
	/* owned */
	void *root;                    /* the parsed line (a json_t) */
	char *payload_text;            /* a payload written as JSON, malloc'd */
	char num[JOBLINE_PARAMS_MAX][24];
};

/* Parse line[0..len). Returns 0, or -EINVAL with err naming what is wrong (then nothing is
 * to be freed). On success the caller calls jobline_free. */
int jobline_parse(const char *line, size_t len, struct jobline *out, char *err, size_t errlen);
void jobline_free(struct jobline *j);

#endif
