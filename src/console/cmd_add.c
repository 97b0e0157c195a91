/* Adds: the requests that come while the database is busy are written together, up to
 * ADDS_MAX rows in one transaction (store_add_many), on SUP_ADDS_PIPES connections of their
 * own, so that many clients share a commit (an fsync). */
#include "console/cmd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/answers.h"

#define ADDS_MAX 256  /* rows per transaction */
#define ADDS_CROWD 16 /* adds waiting that open a second transaction */

/* A value the database refused (-EDOM; err "column: op: mysql error N: text for column ..."):
 * a bad request, naming the parameter it came from and what the server said of the value. */
static void refused_value(const char *err, char *out, size_t outlen)
{
	static const char *const params[][2] = {
		{ "queue", "queue" }, { "payload", "payload" }, { "run_at", "run_at" },
		{ "period_s", "period" }, { "max_attempts", "max_attempts" },
		{ "timeout_s", "timeout" }, { "priority", "priority" },
		{ "priority_range", "priority" }, { "group_key", "group" },
		{ "dedupe_key", "dedupe" }, { "content_type", "content_type" },
		{ "traceparent", "traceparent" },
	};
	size_t n = strcspn(err, ":"), len;
	const char *param = "a value", *text = strstr(err, "mysql error "), *end;

	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (strlen(params[i][0]) == n && !strncmp(err, params[i][0], n))
			param = params[i][1];
	text = text && strchr(text, ':') ? strchr(text, ':') + 2 : err;
	end = strstr(text, " for column ");
	end = end ? end : strstr(text, " for `");
	len = end ? (size_t)(end - text) : strlen(text);
	snprintf(out, outlen, "%s: the database refused the value (%.*s)", param,
		 (int)(len > 200 ? 200 : len), text);
}

static void add_after(struct call *call)
{
	if (!call->res.duplicate)
		call->cmds->host.wake(call->cmds->host.data);
}

/* Adds are written together: the requests that came while the database was busy go in one
 * transaction (store_add_many), so that many clients get one commit (one fsync) between
 * them. When that transaction fails, each row is written on its own, and each request
 * gets its own answer. */
static void adds_start(struct cmds *c);

static int adds_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct adds_batch *b = container_of(j, struct adds_batch, job);
	int r;

	for (size_t i = 0; i < b->n; i++) {
		const struct ctl_request *q = b->calls[i]->req;
		b->rows[i] = (struct store_add_row){ .queue = q->queue, .payload = q->payload,
						     .len = q->payload_len, .opts = &b->calls[i]->add };
	}
	r = store_add_many(s, b->rows, b->n, err, errlen);
	if (r == -ENOTCONN || r == -ENOMEM)
		return r;
	if (r < 0 && b->n > 1) {
		for (size_t i = 0; i < b->n; i++) {
			struct store_add_row *row = &b->rows[i];
			row->rc = store_add(s, row->queue, row->payload, row->len, row->opts, &row->id,
					    row->err, sizeof(row->err));
			row->duplicate = row->rc == 1;
			if (row->rc == -ENOTCONN)
				return row->rc;
		}
		return 0;
	}
	if (r < 0) {
		b->rows[0] = (struct store_add_row){ .rc = r };
		snprintf(b->rows[0].err, sizeof(b->rows[0].err), "%s", err);
	}
	return 0;
}

static void adds_done(struct dbq_job *j)
{
	struct adds_batch *b = container_of(j, struct adds_batch, job);
	struct cmds *c = b->c;
	size_t n = b->n;

	b->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct call *call = b->calls[i];
		const struct store_add_row *row = &b->rows[i];
		if (j->rc < 0) {
			call->res.rc = j->rc;
			snprintf(call->res.err, sizeof(call->res.err), "%s", j->err);
		} else if (row->rc == -EDOM) {
			call->res.rc = -EINVAL;
			refused_value(row->err, call->res.err, sizeof(call->res.err));
		} else if (row->rc < 0) {
			call->res.rc = row->rc == -EMSGSIZE ? -EINVAL : row->rc;
			snprintf(call->res.err, sizeof(call->res.err), "%s", row->err);
		} else {
			call->res.id = row->id;
			call->res.duplicate = row->duplicate;
			add_after(call);
		}
		cmd_finish(call);
	}
	adds_start(c);
}

/* The adds waiting go to a free connection, up to ADDS_MAX in one transaction: with
 * SUP_ADDS_PIPES transactions in flight, one commits while the next is written (the server
 * groups their commits), and many clients get few fsyncs between them. */
static void adds_start(struct cmds *c)
{
	for (int k = 0; k < SUP_ADDS_PIPES && c->nadds; k++) {
		struct adds_batch *b = &c->batch[k];
		size_t n;
		/* A second transaction only for a crowd: a few adds wait for the first to commit
		 * and go together. */
		if (b->n || !b->dbq || (k > 0 && c->nadds < ADDS_CROWD))
			continue;
		n = c->nadds < ADDS_MAX ? c->nadds : ADDS_MAX;
		memcpy(b->calls, c->adds, n * sizeof(*c->adds));
		memmove(c->adds, c->adds + n, (c->nadds - n) * sizeof(*c->adds));
		c->nadds -= n;
		b->n = n;
		b->job.run = adds_run;
		b->job.done = adds_done;
		dbq_push(b->dbq, &b->job);
	}
}

void cmd_add_now(struct call *call)
{
	struct cmds *c = call->cmds;

	if (c->nadds == c->capadds) {
		size_t cap = c->capadds ? c->capadds * 2 : 64;
		void *p = realloc(c->adds, cap * sizeof(*c->adds));
		if (!p) {
			call->res.rc = -ENOMEM;
			snprintf(call->res.err, sizeof(call->res.err), "out of memory");
			cmd_finish(call);
			return;
		}
		c->adds = p;
		c->capadds = cap;
	}
	store_add_opts_from(call->req, &call->add);
	c->adds[c->nadds++] = call;
	adds_start(c);
}

json_t *cmd_added_object(const struct cmd_result *res)
{
	struct answer_added a = { .id = res->id, .duplicate = res->duplicate };

	return entity_json(&added_entity, &a);
}

void cmd_add_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out)
{
	if (req->json) {
		entity_dump(cmd_added_object(res), out);
	} else {
		buf_printf(out, "%llu\n", (unsigned long long)res->id);
	}
}

int cmd_adds_init(struct cmds *c)
{
	for (int k = 0; k < SUP_ADDS_PIPES; k++) {
		struct adds_batch *b = &c->batch[k];
		b->c = c;
		b->dbq = c->host.adds_dbq[k] ? c->host.adds_dbq[k] : k == 0 ? c->host.dbq : NULL;
		b->calls = calloc(ADDS_MAX, sizeof(*b->calls));
		b->rows = calloc(ADDS_MAX, sizeof(*b->rows));
		if (!b->calls || !b->rows)
			return -ENOMEM;
	}
	return 0;
}

void cmd_adds_flush(struct cmds *c)
{
	size_t n = c->nadds;

	c->nadds = 0;
	for (size_t i = 0; i < n; i++) {
		c->adds[i]->res.rc = -ECANCELED;
		snprintf(c->adds[i]->res.err, sizeof(c->adds[i]->res.err), "claimd is stopping");
		cmd_finish(c->adds[i]);
	}
}

void cmd_adds_free(struct cmds *c)
{
	free(c->adds);
	for (int k = 0; k < SUP_ADDS_PIPES; k++) {
		free(c->batch[k].calls);
		free(c->batch[k].rows);
	}
}

/* ---- a graph, or a batch: one transaction (store_add_graph) ---- */

struct graph_job {
	struct dbq_job job;
	struct cmds *c;
	struct cmd_graph *g;
	struct store_add_row *rows;
	struct store_add_opts *opts;
	void (*done)(void *data, struct cmd_graph *g);
	void *data;
};

static int graph_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct graph_job *gj = container_of(j, struct graph_job, job);
	struct cmd_graph *g = gj->g;
	struct store_batch_def def = { .description = g->description, .callback = g->callback };

	return store_add_graph(s, gj->rows, g->n, g->edges, g->nedges, g->batch ? &def : NULL,
			       &g->batch_id, err, errlen);
}

static void graph_done(struct dbq_job *j)
{
	struct graph_job *gj = container_of(j, struct graph_job, job);
	struct cmd_graph *g = gj->g;

	g->rc = j->rc;
	if (j->rc == -EDOM) {
		g->rc = -EINVAL;
		refused_value(j->err, g->err, sizeof(g->err));
	} else if (j->rc < 0) {
		g->rc = j->rc == -EMSGSIZE ? -EINVAL : j->rc;
		snprintf(g->err, sizeof(g->err), "%s", j->err);
	} else {
		for (size_t i = 0; i < g->n; i++)
			g->ids[i] = gj->rows[i].id;
		gj->c->host.wake(gj->c->host.data);
	}
	gj->done(gj->data, g);
	free(gj->rows);
	free(gj->opts);
	free(gj);
}

void cmd_add_graph(struct cmds *c, struct cmd_graph *g,
		   void (*done)(void *data, struct cmd_graph *g), void *data)
{
	struct graph_job *gj = calloc(1, sizeof(*gj));

	if (gj) {
		gj->rows = calloc(g->n ? g->n : 1, sizeof(*gj->rows));
		gj->opts = calloc(g->n ? g->n : 1, sizeof(*gj->opts));
	}
	if (!gj || !gj->rows || !gj->opts) {
		if (gj) {
			free(gj->rows);
			free(gj->opts);
		}
		free(gj);
		g->rc = -ENOMEM;
		snprintf(g->err, sizeof(g->err), "out of memory");
		done(data, g);
		return;
	}
	for (size_t i = 0; i < g->n; i++)
		gj->rows[i] = store_add_row_from(&g->reqs[i], &gj->opts[i]);
	gj->c = c;
	gj->g = g;
	gj->done = done;
	gj->data = data;
	gj->job.run = graph_run;
	gj->job.done = graph_done;
	dbq_push(c->batch[0].dbq, &gj->job);
}
