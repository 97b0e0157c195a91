/* jobset — jobs added together: newline-delimited job lines (common/jobline), each an add
 * request (ctl_from_params, so the same rules as any add), and the graph their refs make: the
 * edges between the lines and the batch's callback. The HTTP API's jobs:batch reads its body
 * with it, and a worker a handler's follow-up jobs. Pure: no I/O, does not log. */
#ifndef CLAIMD_JOBSET_H
#define CLAIMD_JOBSET_H

#include <stdbool.h>
#include <stddef.h>

#include "common/ctl.h"
#include "common/jobline.h"

/* lines[child] waits for lines[parent]; on_dead_run: a dead parent counts as done for it. */
struct jobset_edge {
	size_t parent, child;
	bool on_dead_run;
};

struct jobset {
	size_t n;
	struct jobline *lines;
	struct ctl_request *reqs;   /* an add each; its strings point into lines and the queue */
	struct jobset_edge *edges;
	size_t nedges;
	long callback;              /* the line that is the batch's callback, or -1 */
	bool graph;                 /* a line has a ref, an after or is a callback */
};

/* A line may name its queue ("queue"); without, a line that does is refused. */
#define JOBSET_LINE_QUEUE 0x1u

/* Read text[0..len): lines that end with LF (a CR before it dropped; blank lines skipped), at
 * most max of them, each in queue unless it names its own (flags JOBSET_LINE_QUEUE). Refs are
 * resolved: a ref given twice, an after naming no line, or two callbacks are refused. Returns
 * 0 (jobset_free frees it; n may be 0), -E2BIG (more than max lines: nothing to free), or
 * -EINVAL / -ENOMEM with err filled ("line N: what", N counting blank lines for a line's own
 * fault, and the lines that are jobs for the graph's). */
int jobset_parse(const char *text, size_t len, size_t max, const char *queue, unsigned flags,
		 struct jobset *out, char *err, size_t errlen);
void jobset_free(struct jobset *set);

#endif
