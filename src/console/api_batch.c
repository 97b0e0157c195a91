/* POST /v1/queues/{queue}/jobs:batch: newline-delimited JSON, one job a line (common/jobline
 * reads each), every line checked before anything is written, then each an add: the adds go
 * to the database together (cmd.c writes up to 256 rows per transaction). With ?batch=1, or
 * lines that name each other ("ref", "after") or a "callback", the lines are a graph: written
 * in one transaction, all or nothing (cmd_add_graph), with a batch of them if asked. */
#include "console/api_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jobset.h"
#include "console/entity.h"

#define BATCH_LINES_MAX 1000

/* A batch on its way: every line's request, and what became of each. */
struct batch {
	struct http_request *r;
	char queue[CTL_QUEUE_MAX + 1];
	size_t pending;
	struct jobset set;          /* the lines, their requests (set.reqs) and graph */
	struct cmd_result *res;     /* rc, id, duplicate, err of each */
};

static void batch_free(struct batch *b)
{
	jobset_free(&b->set);
	free(b->res);
	free(b);
}

static void batch_answer(struct batch *b)
{
	bool all = true;
	json_t *jobs = json_array();
	struct buf out;

	for (size_t i = 0; i < b->set.n; i++) {
		const struct cmd_result *res = &b->res[i];
		all &= res->rc >= 0;
		json_array_append_new(jobs, res->rc < 0 ? json_pack("{s:o}", "error",
								      entity_string(res->err)) :
					    cmd_added_object(res));
	}
	buf_init(&out);
	entity_dump(jobs ? json_pack("{s:o}", "jobs", jobs) : NULL, &out);
	/* 202 when every line was added (or was a duplicate); 422 when the database refused
	 * some: the others are written, with their ids. */
	api_respond_buf(b->r, all ? 202 : 422, &out);
	batch_free(b);
}

/* ---- a graph ---- */

struct graph {
	struct batch *b;
	struct cmd_graph g;
	struct store_edge *edges;
	uint64_t *ids;
	char description[STORE_BATCH_DESC_MAX + 1];
};

static void graph_free(struct graph *gr)
{
	batch_free(gr->b);
	free(gr->edges);
	free(gr->ids);
	free(gr);
}

static void on_graph_done(void *data, struct cmd_graph *g)
{
	struct graph *gr = data;
	struct http_request *r = gr->b->r;
	char head[64];
	json_t *jobs;
	struct buf out;

	if (g->rc < 0) {
		http_respond_error(r, api_status_of(g->rc), g->err);
		graph_free(gr);
		return;
	}
	jobs = json_array();
	if (g->batch) {
		snprintf(head, sizeof(head), "/v1/batches/%llu", (unsigned long long)g->batch_id);
		http_add_header(r, "Location", head);
	}
	for (size_t i = 0; jobs && i < g->n; i++) {
		json_t *o = json_pack("{s:I}", "id", (json_int_t)g->ids[i]);
		if (o && gr->b->set.lines[i].ref)
			json_object_set_new(o, "ref", entity_string(gr->b->set.lines[i].ref));
		json_array_append_new(jobs, o);
	}
	buf_init(&out);
	entity_dump(jobs ? json_pack("{s:o, s:o}", "batch", g->batch ?
				     json_integer((json_int_t)g->batch_id) : json_null(), "jobs",
				     jobs) : NULL, &out);
	api_respond_buf(r, 202, &out);
	graph_free(gr);
}

/* The query's batch=1 and description; whether the lines are a graph. Returns 0, or -1 with
 * err filled. */
static int graph_args(struct http_request *r, const struct batch *b, bool *ret_graph,
		      bool *ret_batch, const char **ret_desc, char *err, size_t errlen)
{
	const char *const *qn, *const *qv;
	size_t n = http_args(r, &qn, &qv);

	*ret_graph = *ret_batch = false;
	*ret_desc = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(qn[i], "batch") && (!strcmp(qv[i], "1") || !strcmp(qv[i], "true"))) {
			*ret_batch = true;
		} else if (!strcmp(qn[i], "batch") && (!strcmp(qv[i], "0") || !strcmp(qv[i], "false"))) {
			*ret_batch = false;
		} else if (!strcmp(qn[i], "description") && strlen(qv[i]) <= STORE_BATCH_DESC_MAX &&
			   api_utf8_valid(qv[i])) {
			*ret_desc = qv[i];
		} else {
			snprintf(err, errlen, "jobs:batch takes batch=1 and description (UTF-8, at "
				 "most %d bytes) only", STORE_BATCH_DESC_MAX);
			return -1;
		}
	}
	*ret_batch |= b->set.callback >= 0;
	*ret_graph = b->set.graph || *ret_batch;
	if (*ret_desc && !*ret_batch) {
		snprintf(err, errlen, "description is a batch's (batch=1)");
		return -1;
	}
	return 0;
}

/* The lines as a graph (their refs resolved by jobset). Returns 0 (the graph is on its way,
 * or answered) or -1: out of memory. */
static int graph_start(struct api_host *h, struct batch *b, bool batch, const char *desc)
{
	struct graph *gr = calloc(1, sizeof(*gr));
	size_t k = b->set.nedges;

	if (gr) {
		gr->edges = calloc(k ? k : 1, sizeof(*gr->edges));
		gr->ids = calloc(b->set.n, sizeof(*gr->ids));
	}
	if (!gr || !gr->edges || !gr->ids) {
		if (gr) {
			free(gr->edges);
			free(gr->ids);
			free(gr);
		}
		return -1;
	}
	for (size_t i = 0; i < k; i++)
		gr->edges[i] = (struct store_edge){ b->set.edges[i].parent, b->set.edges[i].child,
						    b->set.edges[i].on_dead_run };
	if (desc)
		snprintf(gr->description, sizeof(gr->description), "%s", desc);
	gr->b = b;
	gr->g = (struct cmd_graph){ .reqs = b->set.reqs, .n = b->set.n, .edges = gr->edges,
				    .nedges = k, .batch = batch,
				    .description = desc ? gr->description : NULL,
				    .callback = b->set.callback, .ids = gr->ids };
	cmd_add_graph(h->cmds, &gr->g, on_graph_done, gr);
	return 0;
}

static void on_line_done(void *data, const struct ctl_request *req, const struct cmd_result *res)
{
	struct batch *b = data;
	size_t i = (size_t)(req - b->set.reqs);

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
	size_t len;
	const unsigned char *body = http_body(r, &len);
	struct batch *b = calloc(1, sizeof(*b));
	char err[300];
	int rc;

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
	rc = jobset_parse((const char *)body, len, BATCH_LINES_MAX, b->queue, 0, &b->set, err,
			  sizeof(err));
	if (rc == -E2BIG) {
		snprintf(err, sizeof(err), "at most %d lines per batch", BATCH_LINES_MAX);
		http_respond_error(r, 413, err);
		batch_free(b);
		return;
	}
	if (rc == -ENOMEM)
		goto oom;
	if (rc < 0)
		goto bad;
	b->res = calloc(b->set.n ? b->set.n : 1, sizeof(*b->res));
	if (!b->res)
		goto oom;
	for (size_t i = 0; i < b->set.n; i++)
		api_trace_default(r, &b->set.reqs[i]);
	if (b->set.n == 0) {
		http_respond_error(r, 400, "the batch has no jobs (one JSON object per line)");
		batch_free(b);
		return;
	}
	bool graph, batch;
	const char *desc;
	if (graph_args(r, b, &graph, &batch, &desc, err, sizeof(err)) < 0)
		goto bad;
	if (graph) {
		if (graph_start(h, b, batch, desc) < 0)
			goto oom;
		return;
	}
	/* One more than the lines, so that answers given at once cannot end it mid-loop. */
	b->pending = b->set.n + 1;
	for (size_t i = 0; i < b->set.n; i++)
		cmd_run(h->cmds, &b->set.reqs[i], on_line_done, b);
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
