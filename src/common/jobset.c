#include "common/jobset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(JOBLINE_QUEUE_MAX == CTL_QUEUE_MAX, "a line's queue is an add's");

void jobset_free(struct jobset *set)
{
	for (size_t i = 0; i < set->n; i++)
		jobline_free(&set->lines[i]);
	free(set->lines);
	free(set->reqs);
	free(set->edges);
	memset(set, 0, sizeof(*set));
}

/* The line whose ref is ref, or -1. */
static long line_of(const struct jobset *set, const char *ref)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->lines[i].ref && !strcmp(set->lines[i].ref, ref))
			return (long)i;
	return -1;
}

/* The refs into edges, and the callback. */
static int resolve(struct jobset *set, char *err, size_t errlen)
{
	size_t nedges = 0;

	for (size_t i = 0; i < set->n; i++)
		nedges += set->lines[i].nafter;
	set->edges = calloc(nedges ? nedges : 1, sizeof(*set->edges));
	if (!set->edges) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < set->n; i++) {
		const struct jobline *jl = &set->lines[i];
		set->graph |= jl->ref || jl->nafter || jl->callback;
		if (jl->ref && line_of(set, jl->ref) != (long)i) {
			snprintf(err, errlen, "line %zu: ref '%s' is another line's too", i + 1,
				 jl->ref);
			return -EINVAL;
		}
		if (jl->callback) {
			if (set->callback >= 0) {
				snprintf(err, errlen, "line %zu: a batch has one callback (line %ld is)",
					 i + 1, set->callback + 1);
				return -EINVAL;
			}
			set->callback = (long)i;
		}
		for (size_t a = 0; a < jl->nafter; a++) {
			long p = line_of(set, jl->after[a]);
			if (p < 0) {
				snprintf(err, errlen, "line %zu: after: no line has ref '%s'", i + 1,
					 jl->after[a]);
				return -EINVAL;
			}
			set->edges[set->nedges++] = (struct jobset_edge){ (size_t)p, i, jl->on_dead_run };
		}
	}
	return 0;
}

int jobset_parse(const char *text, size_t len, size_t max, const char *queue, unsigned flags,
		 struct jobset *out, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;
	size_t n = 0;
	char lerr[256];
	int r = -EINVAL;

	memset(out, 0, sizeof(*out));
	out->callback = -1;
	for (const char *q = p; q < end; q++)
		n += *q == '\n';
	n += len && end[-1] != '\n';
	if (n > max)
		return -E2BIG;
	out->lines = calloc(n ? n : 1, sizeof(*out->lines));
	out->reqs = calloc(n ? n : 1, sizeof(*out->reqs));
	if (!out->lines || !out->reqs) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	for (size_t line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *names[JOBLINE_PARAMS_MAX + 1], *values[JOBLINE_PARAMS_MAX + 1];
		struct jobline *jl = &out->lines[out->n];
		if (l && p[l - 1] == '\r')
			l--;
		if (l == 0) {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (jobline_parse(p, l, jl, lerr, sizeof(lerr)) < 0) {
			snprintf(err, errlen, "line %zu: %s", line, lerr);
			goto fail;
		}
		out->n++;
		if (jl->queue && !(flags & JOBSET_LINE_QUEUE)) {
			snprintf(err, errlen, "line %zu: unknown key 'queue' (the queue is the "
				 "request's)", line);
			goto fail;
		}
		names[0] = "queue";
		values[0] = jl->queue ? jl->queue : queue;
		memcpy(names + 1, jl->names, jl->n * sizeof(*names));
		memcpy(values + 1, jl->values, jl->n * sizeof(*values));
		if (ctl_from_params(CTL_ADD, names, values, jl->n + 1, jl->payload, jl->payload_len,
				    &out->reqs[out->n - 1], lerr, sizeof(lerr)) < 0) {
			snprintf(err, errlen, "line %zu: %s", line, lerr);
			goto fail;
		}
		p = nl ? nl + 1 : end;
	}
	r = resolve(out, err, errlen);
	if (r == 0)
		return 0;
fail:
	jobset_free(out);
	return r;
}
