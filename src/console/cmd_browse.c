/* cmd_browse — the job browser's side of the commands: a job page (the row, each failed
 * attempt's error, the rows it waits for and that wait for it, its batch) as text and JSON,
 * and bulk actions (bulk retry|discard|cancel): the rows a filter picks counted, and with a
 * confirmation of that count acted on, a database job per span of ids counted and per chunk
 * of rows acted on, so that the supervisor's other database jobs run in between. */
#include "console/cmd_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/log.h"
#include "console/answers.h"
#include "console/entities.h"
#include "console/render.h"

/* ---- filters ---- */

int cmd_filter_of(const struct ctl_request *q, struct store_filter *f)
{
	bool finds = ctl_has(q, CTL_F_ID) || ctl_has(q, CTL_F_GROUP) ||
		     ctl_has(q, CTL_F_DEDUPE) || ctl_has(q, CTL_F_ERROR);
	const char *state = ctl_has(q, CTL_F_STATE) ? q->state :
			    q->verb == CTL_JOBS && !finds ? "dead" : "any";

	memset(f, 0, sizeof(*f));
	f->states = row_state_bit(state);
	if (!f->states && strcmp(state, "any") != 0)
		return -EINVAL;
	f->queue = ctl_has(q, CTL_F_QUEUE) ? q->queue : NULL;
	f->group = ctl_has(q, CTL_F_GROUP) ? q->group : NULL;
	f->dedupe = ctl_has(q, CTL_F_DEDUPE) ? q->dedupe : NULL;
	f->error = ctl_has(q, CTL_F_ERROR) ? q->error : NULL;
	f->id = ctl_has(q, CTL_F_ID) ? q->id : 0;
	return 0;
}

/* ---- a job page ---- */

static void link_list_text(struct buf *out, const char *name, const struct store_job_link *l,
			   size_t n, bool more)
{
	if (n == 0)
		return;
	buf_printf(out, "%-13s", name);
	for (size_t i = 0; i < n; i++)
		buf_printf(out, "%s %llu %s%s", i ? "," : "", (unsigned long long)l[i].id,
			   l[i].state[0] ? l[i].state : "gone", l[i].on_dead_run ? " (on dead: run)" :
			   "");
	buf_puts(out, more ? ", ...\n" : "\n");
}

/* s on one line: its line breaks would look like more fields. */
static void one_line(struct buf *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_append(out, s[i] == '\n' || s[i] == '\r' ? " " : s + i, 1);
}

void cmd_job_page_text(const struct store_job *j, const struct store_job_extra *x,
		       struct buf *out)
{
	render_job_text_fields(j, out);
	if (!x) {
		render_job_text_payload(j, out);
		return;
	}
	if (j->result && json_utf8_valid(j->result, j->result_len)) {
		buf_printf(out, "%-13s ", "result_text");
		one_line(out, (const char *)j->result, j->result_len > 1000 ? 1000 : j->result_len);
		buf_puts(out, j->result_len > 1000 ? " ...\n" : "\n");
	}
	for (size_t i = 0; i < x->nerrors; i++) {
		const struct store_attempt_error *e = &x->errors[i];
		buf_printf(out, "attempt %-5u %s ", e->attempt, e->failed_at);
		if (e->error)
			one_line(out, e->error, strlen(e->error));
		buf_puts(out, "\n");
	}
	link_list_text(out, "waits for", x->parents, x->nparents, x->more_parents);
	if (x->nparents)
		buf_printf(out, "%-13s %u\n", "waiting_for", x->waiting_for);
	link_list_text(out, "waited by", x->children, x->nchildren, x->more_children);
	if (x->has_batch) {
		const struct store_batch *b = &x->batch;
		buf_printf(out, "%-13s %llu: %u rows, %llu ready, %llu claimed, %llu done, %llu dead",
			   "batch", (unsigned long long)b->id, b->size,
			   (unsigned long long)b->members[ROW_READY],
			   (unsigned long long)b->members[ROW_CLAIMED],
			   (unsigned long long)b->members[ROW_DONE],
			   (unsigned long long)b->members[ROW_DEAD]);
		if (b->callback_id)
			buf_printf(out, "; callback %llu %s", (unsigned long long)b->callback_id,
				   b->callback_state != ROW_NONE ? row_state_name(b->callback_state) :
				   "gone");
		buf_puts(out, "\n");
	}
	render_job_text_payload(j, out);
}

/* Each failed attempt's error (json: the page's "attempt_errors"). */
static const struct entity_field error_fields[] = {
	{ "attempt", NULL, 0, ENTITY_U32, ENTITY_ALWAYS,
	  offsetof(struct store_attempt_error, attempt), 0, NULL, NULL, 0 },
	{ "failed_at", NULL, 0, ENTITY_STR, ENTITY_ALWAYS,
	  offsetof(struct store_attempt_error, failed_at), 0, NULL, NULL, 0 },
	{ "error", NULL, 0, ENTITY_PSTR, ENTITY_ALWAYS,
	  offsetof(struct store_attempt_error, error), 0, NULL, NULL, 0 },
};
const struct entity attempt_error_entity = ENTITY(error_fields, struct store_attempt_error,
						   "JobPage.attempt_errors[]", NULL);

static json_t *links_json(const struct store_job_link *l, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_pack("{s:I,s:o,s:s}", "id", (json_int_t)l[i].id,
						   "state", l[i].state[0] ? json_string(l[i].state) :
						   json_null(), "on_dead",
						   l[i].on_dead_run ? "run" : "cancel"));
	return a;
}

/* The row's object (render_job_object), and the page's parts. */
void cmd_job_page_json(const struct store_job *j, const struct store_job_extra *x,
		       struct buf *out)
{
	json_t *o = render_job_object(j);

	if (o && x) {
		json_object_set_new(o, "attempt_errors",
				    entity_json_array(&attempt_error_entity, x->errors, x->nerrors));
		json_object_set_new(o, "parents", links_json(x->parents, x->nparents));
		json_object_set_new(o, "parents_more", json_boolean(x->more_parents));
		json_object_set_new(o, "children", links_json(x->children, x->nchildren));
		json_object_set_new(o, "children_more", json_boolean(x->more_children));
		json_object_set_new(o, "waiting_for", json_integer(x->waiting_for));
		json_object_set_new(o, "batch", x->has_batch ? cmd_batch_object(&x->batch) :
				    json_null());
	}
	entity_dump(o, out);
}

/* ---- bulk actions ---- */

static const struct {
	const char *name, *done;
	enum store_bulk_action action;
} actions[] = {
	{ "retry", "retried", STORE_BULK_RETRY },
	{ "discard", "discarded", STORE_BULK_DISCARD },
	{ "cancel", "cancelled", STORE_BULK_CANCEL },
};

static size_t action_of(const char *name)
{
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(name, actions[i].name))
			return i;
	return 0;   /* the grammar let no other through */
}

/* The next span below hi: [lo, hi). */
static uint64_t span_low(uint64_t hi)
{
	return hi > STORE_BROWSE_SPAN ? hi - STORE_BROWSE_SPAN : 0;
}

/* One step, on the database queue's thread: the top and the first span counted, a span
 * counted, or a chunk acted on. */
static int bulk_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct call *call = container_of(j, struct call, job);
	struct cmd_bulk *b = &call->bulk;
	uint64_t k = 0, hi;
	int r;

	if (!b->started) {
		if (b->filter.id)
			b->top = b->filter.id + 1;   /* one span of one id */
		else if ((r = store_jobs_top(s, &b->top, err, errlen)) < 0)
			return r;
		b->hi = b->top;
		b->lo = b->filter.id ? b->filter.id : span_low(b->hi);
		b->started = true;
	}
	if (!b->acting) {
		r = store_bulk_count(s, &b->counted, b->lo, b->hi, &k, err, errlen);
		if (r < 0)
			return r;
		b->count += k;
		b->hi = b->lo;
		b->lo = span_low(b->hi);
		return 0;
	}
	r = store_bulk_chunk(s, actions[b->action].action, &b->filter, b->reason, b->lo, b->hi,
			     &hi, err, errlen);
	if (r < 0)
		return r;
	b->acted += (uint64_t)r;
	b->transactions += r > 0;
	b->hi = hi;
	if (hi == b->lo) {   /* the span is done */
		b->hi = b->lo;
		b->lo = span_low(b->hi);
	}
	return 0;
}

static void bulk_step(struct call *call);

static void bulk_done(struct dbq_job *j)
{
	struct call *call = container_of(j, struct call, job);
	struct cmd_bulk *b = &call->bulk;
	const struct ctl_request *q = call->req;

	if (j->rc < 0) {
		call->res.rc = j->rc;
		snprintf(call->res.err, sizeof(call->res.err), "%s", j->err);
		if (b->acting)
			cmd_changed(call->cmds);
		cmd_finish(call);
		return;
	}
	if (b->hi > 0 && (!b->filter.id || b->hi > b->filter.id)) {
		bulk_step(call);   /* more spans below */
		return;
	}
	call->res.count = b->count;
	call->res.rows = (long long)b->acted;
	call->res.transactions = b->transactions;
	if (b->acting) {
		call->res.confirmed = true;
		cmd_changed(call->cmds);
		log_info("bulk %s: %llu of %llu rows %s", actions[b->action].name,
			 (unsigned long long)b->acted, (unsigned long long)b->count,
			 actions[b->action].done);
		if (b->acted > 0 && actions[b->action].action == STORE_BULK_RETRY)
			call->cmds->host.wake(call->cmds->host.data);
		cmd_finish(call);
		return;
	}
	if (!ctl_has(q, CTL_F_CONFIRM)) {
		cmd_finish(call);
		return;
	}
	if (q->confirm != b->count) {
		call->res.rc = -ESTALE;
		snprintf(call->res.err, sizeof(call->res.err), "bulk %s: the filters pick %llu rows "
			 "now, not %llu: nothing done (confirm=%llu acts on them)",
			 actions[b->action].name, (unsigned long long)b->count,
			 (unsigned long long)q->confirm, (unsigned long long)b->count);
		cmd_finish(call);
		return;
	}
	/* Confirmed: from the top again, down to the bottom. */
	b->acting = true;
	b->hi = b->top;
	b->lo = b->filter.id ? b->filter.id : span_low(b->hi);
	if (b->count == 0 || b->top == 0) {
		b->hi = 0;
		bulk_done(j);
		return;
	}
	bulk_step(call);
}

static void bulk_step(struct call *call)
{
	call->job.run = bulk_run;
	call->job.done = bulk_done;
	call->job.rc = 0;
	call->job.err[0] = '\0';
	dbq_push(call->cmds->host.dbq, &call->job);
}

void cmd_bulk_now(struct call *call)
{
	struct cmd_bulk *b = &call->bulk;
	char host[64] = "";

	memset(b, 0, sizeof(*b));
	b->action = action_of(call->req->action);
	if (cmd_filter_of(call->req, &b->filter) < 0) {
		call->res.rc = -EINVAL;
		snprintf(call->res.err, sizeof(call->res.err), "bulk: bad state");
		cmd_finish(call);
		return;
	}
	/* What is counted is what the action applies to. */
	b->counted = b->filter;
	b->counted.states = (b->filter.states ? b->filter.states : ROW_STATE_ALL) &
			    store_bulk_states(actions[b->action].action);
	gethostname(host, sizeof(host) - 1);
	snprintf(b->reason, sizeof(b->reason), "cancelled (claimctl bulk cancel or POST "
		 "/v1/jobs/bulk, via %s)", host);
	bulk_step(call);
}

void cmd_bulk_retry_queue(struct call *call)
{
	struct cmd_bulk *b = &call->bulk;

	memset(b, 0, sizeof(*b));
	b->action = action_of("retry");
	b->filter.queue = call->req->queue;
	b->filter.states = ROW_STATE_BIT(ROW_DEAD);
	b->counted = b->filter;
	b->acting = true;   /* no count, no confirmation: straight to the chunks */
	bulk_step(call);
}

void cmd_bulk_text(const struct ctl_request *req, const struct cmd_result *res,
		   struct buf *out)
{
	size_t a = action_of(req->action);

	if (req->json) {
		answer_json(&bulk_entity, &(struct answer_bulk){
			.action = actions[a].name, .count = res->count, .confirmed = res->confirmed,
			.acted = res->rows, .transactions = res->transactions }, out);
	} else if (res->confirmed) {
		buf_printf(out, "%lld row%s %s (%llu counted)\n", res->rows, res->rows == 1 ? "" : "s",
			   actions[a].done, (unsigned long long)res->count);
	} else {
		buf_printf(out, "%llu row%s to %s: nothing done without --yes (or confirm=%llu)\n",
			   (unsigned long long)res->count, res->count == 1 ? "" : "s", actions[a].name,
			   (unsigned long long)res->count);
	}
}
