/* POST /v1/queues/{queue}/jobs:batch: newline-delimited JSON, one job a line (common/jobline
 * reads each), every line checked before anything is written, then each an add: the adds go
 * to the database together (cmd.c writes up to 256 rows per transaction). */
#include "supervisor/api_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobline.h"

#define BATCH_LINES_MAX 1000

/* A batch on its way: every line's request, and what became of each. */
struct batch {
	struct http_request *r;
	char queue[CTL_QUEUE_MAX + 1];
	size_t n, pending;
	struct jobline *lines;
	struct ctl_request *reqs;
	struct cmd_result *res;     /* rc, id, duplicate, err of each */
};

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		jobline_free(&b->lines[i]);
	free(b->lines);
	free(b->reqs);
	free(b->res);
	free(b);
}

static void batch_answer(struct batch *b)
{
	bool all = true;
	struct buf out;

	buf_init(&out);
	buf_puts(&out, "{\"jobs\":[");
	for (size_t i = 0; i < b->n; i++) {
		const struct cmd_result *res = &b->res[i];
		buf_puts(&out, i ? ",{" : "{");
		if (res->rc < 0) {
			all = false;
			buf_puts(&out, "\"error\":");
			buf_json_str(&out, res->err);
		} else {
			buf_printf(&out, "\"id\":%llu%s", (unsigned long long)res->id,
				   res->duplicate ? ",\"duplicate\":true" : "");
		}
		buf_puts(&out, "}");
	}
	buf_puts(&out, "]}\n");
	/* 202 when every line was added (or was a duplicate); 422 when the database refused
	 * some: the others are written, with their ids. */
	api_respond_buf(b->r, all ? 202 : 422, &out);
	batch_free(b);
}

static void on_line_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct batch *b = data;
	size_t i = (size_t)(req - b->reqs);

	b->res[i].rc = res->rc;
	b->res[i].id = res->id;
	b->res[i].duplicate = res->duplicate;
	snprintf(b->res[i].err, sizeof(b->res[i].err), "%s", res->err);
	if (--b->pending == 0)
		batch_answer(b);
}

/* Every line is read and checked first: one that is not a valid job makes the answer 400,
 * naming its line, and nothing is written. Then each is an add; the adds go to the database
 * together (cmd.c writes up to 256 rows per transaction). */
void api_batch(struct api_host *h, struct http_request *r, const char *queue)
{
	size_t len, n = 0;
	const unsigned char *body = http_body(r, &len);
	const char *p = (const char *)body, *end = p + len;
	struct batch *b = calloc(1, sizeof(*b));
	char err[300], lerr[256];

	if (!b)
		goto oom;
	b->r = r;
	snprintf(b->queue, sizeof(b->queue), "%s", queue);
	if (strlen(queue) > CTL_QUEUE_MAX || !api_utf8_valid(queue)) {
		http_respond_error(r, 400, api_utf8_valid(queue) ? "add: queue must be 1 to 64 bytes" :
				   "queue: not UTF-8");
		batch_free(b);
		return;
	}
	for (const char *q = p; q < end; q++)
		n += *q == '\n';
	n += len && end[-1] != '\n';
	if (n > BATCH_LINES_MAX) {
		snprintf(err, sizeof(err), "at most %d lines per batch", BATCH_LINES_MAX);
		http_respond_error(r, 413, err);
		batch_free(b);
		return;
	}
	b->lines = calloc(n ? n : 1, sizeof(*b->lines));
	b->reqs = calloc(n ? n : 1, sizeof(*b->reqs));
	b->res = calloc(n ? n : 1, sizeof(*b->res));
	if (!b->lines || !b->reqs || !b->res)
		goto oom;
	for (size_t line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *names[JOBLINE_PARAMS_MAX + 1], *values[JOBLINE_PARAMS_MAX + 1];
		struct jobline *jl = &b->lines[b->n];
		if (l && p[l - 1] == '\r')
			l--;
		if (l == 0) {
			p = nl ? nl + 1 : end;
			continue;  /* blank lines are allowed */
		}
		if (jobline_parse(p, l, jl, lerr, sizeof(lerr)) < 0) {
			snprintf(err, sizeof(err), "line %zu: %s", line, lerr);
			goto bad;
		}
		b->n++;
		names[0] = "queue";
		values[0] = b->queue;
		memcpy(names + 1, jl->names, jl->n * sizeof(*names));
		memcpy(values + 1, jl->values, jl->n * sizeof(*values));
		if (ctl_from_params(CTL_ADD, names, values, jl->n + 1, jl->payload, jl->payload_len,
				    &b->reqs[b->n - 1], lerr, sizeof(lerr)) < 0) {
			snprintf(err, sizeof(err), "line %zu: %s", line, lerr);
			goto bad;
		}
		p = nl ? nl + 1 : end;
	}
	if (b->n == 0) {
		http_respond_error(r, 400, "the batch has no jobs (one JSON object per line)");
		batch_free(b);
		return;
	}
	/* One more than the lines, so that answers given at once cannot end it mid-loop. */
	b->pending = b->n + 1;
	for (size_t i = 0; i < b->n; i++)
		cmd_run(h->cmds, &b->reqs[i], on_line_done, b);
	if (--b->pending == 0)
		batch_answer(b);
	return;
bad:
	http_respond_error(r, 400, err);
	batch_free(b);
	return;
oom:
	http_respond_error(r, 500, "out of memory");
	if (b)
		batch_free(b);
}
