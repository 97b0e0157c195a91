#include "worker/outcomes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "store/store_graph.h"
#include "worker/handler_job.h"

void outcomes_init(struct outcomes *o, void (*send)(void *data, struct proto_msg *m),
		   void *data)
{
	memset(o, 0, sizeof(*o));
	o->send = send;
	o->data = data;
}

/* FINISHED for list[at[0..n)] (at NULL: list[0..n)), what became of each in outs (NULL: done). */
static void report(struct outcomes *o, const struct outcome *list, const size_t *at,
		   const uint8_t *outs, size_t n)
{
	struct proto_msg m;

	/* At most PROTO_MAX_ITEMS a message. */
	for (size_t k = 0; k < n;) {
		memset(&m, 0, sizeof(m));
		m.type = PROTO_FINISHED;
		for (; k < n && m.u.items.n < PROTO_MAX_ITEMS; k++) {
			const struct outcome *x = &list[at ? at[k] : k];
			struct proto_item *it = &m.u.items.items[m.u.items.n++];
			it->id = x->ref.id;
			it->token = x->ref.token;
			it->outcome = outs ? outs[k] : PROTO_OUT_DONE;
			it->queue = x->queue;
			it->run_us = x->run_us;
			it->wait_us = x->wait_us;
			if (o->finished)
				o->finished(o->data, x, it->outcome);
		}
		o->send(o->data, &m);
	}
}

static void outcome_free(struct outcome *x)
{
	free(x->error);
	free(x->result);
	free(x->progress);
	free(x->group);
	if (x->enqueue)
		jobset_free(x->enqueue);
	free(x->enqueue);
}

struct outcome *outcomes_add(struct outcomes *o, const struct store_item *it,
			     enum outcome_kind kind, unsigned retry_ms, const char *error)
{
	struct outcome *x;

	if (o->n == 0) {
		o->since_ns = uv_hrtime();
		o->urgent = false;
		o->result_bytes = 0;
	}
	if (kind != OUTCOME_SUCCESS)
		o->urgent = true;
	x = &o->list[o->n++];
	memset(x, 0, sizeof(*x));
	x->ref = (struct store_ref){ .id = it->id, .token = it->token, .grouped = it->group != NULL,
				     .dependents = it->has_dependents,
				     .key_fill = it->group && it->key_concurrency != 1,
				     .key_limit = it->key_concurrency };
	/* Its key and number: the claim that writes it hands on the key's next rows by number
	 * (without them, or out of memory, it walks the key's rows instead). */
	if (x->ref.key_fill && x->ref.key_limit >= 2 && (x->group = strdup(it->group))) {
		x->ref.group = x->group;
		x->ref.group_seq = it->group_seq;
	}
	x->kind = kind;
	x->retry_ms = retry_ms;
	x->error = error && *error ? strdup(error) : NULL;
	x->attempt = it->attempt;
	trace_log_field(it->traceparent, x->trace);
	return x;
}

int outcome_set_result(struct outcomes *o, struct outcome *x, const unsigned char *result,
		       size_t len, const char *type, const char *progress)
{
	if (result) {
		x->result = malloc(len ? len : 1);
		if (!x->result)
			goto oom;
		memcpy(x->result, result, len);
		x->ref.result = x->result;
		x->ref.result_len = len;
		x->ref.result_type = type;
		o->result_bytes += len;
		if (o->result_bytes > OUTCOMES_RESULT_BYTES)
			o->urgent = true;
	}
	if (progress) {
		x->progress = strdup(progress);
		if (!x->progress)
			goto oom;
		x->ref.progress = x->progress;
	}
	return 0;
oom:
	free(x->result);
	x->result = NULL;
	x->ref.result = NULL;
	x->ref.progress = NULL;
	return -ENOMEM;
}

void outcome_set_enqueue(struct outcomes *o, struct outcome *x, struct jobset *set,
			 unsigned retry_ms)
{
	x->enqueue = set;
	x->retry_ms = retry_ms;
	o->urgent = true;
}

bool outcomes_due(const struct outcomes *o)
{
	return o->n > 0 &&
	       (o->urgent || uv_hrtime() - o->since_ns >= OUTCOMES_FLUSH_MS * 1000000ull);
}

/* A release or a deferral into the store; *ret_out: what became of the row. */
static int write_one(struct store *s, const struct outcome *x, uint8_t *ret_out, char *err,
		     size_t errlen)
{
	int r;

	if (x->kind == OUTCOME_RELEASE) {
		r = store_release(s, &x->ref, 1, false, NULL, NULL, err, errlen);
		*ret_out = r == 0 ? PROTO_OUT_LOST : PROTO_OUT_RELEASED;
		return r;
	}
	r = store_defer(s, x->ref, x->retry_ms, err, errlen);
	*ret_out = r == 0 ? PROTO_OUT_LOST : PROTO_OUT_DEFERRED;
	return r;
}

/* A success and the jobs it adds (x->enqueue), in one transaction; *ret_out: what became of
 * the row. Jobs the database refuses make it a failure, with why. */
static int write_adding(struct store *s, const struct outcome *x, uint8_t *ret_out, char *err,
			size_t errlen)
{
	const struct jobset *set = x->enqueue;
	struct store_add_row *rows = calloc(set->n ? set->n : 1, sizeof(*rows));
	struct store_add_opts *opts = calloc(set->n ? set->n : 1, sizeof(*opts));
	struct store_edge *edges = calloc(set->nedges ? set->nedges : 1, sizeof(*edges));
	struct store_batch_def batch = { .description = NULL, .callback = set->callback };
	char why[HANDLER_ERR_MAX + 1];
	int r = -ENOMEM;

	if (!rows || !opts || !edges) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < set->n; i++)
		rows[i] = store_add_row_from(&set->reqs[i], &opts[i]);
	for (size_t i = 0; i < set->nedges; i++)
		edges[i] = (struct store_edge){ set->edges[i].parent, set->edges[i].child,
						set->edges[i].on_dead_run };
	r = store_complete_adding(s, &x->ref, rows, set->n, edges, set->nedges,
				  set->callback >= 0 ? &batch : NULL, err, errlen);
	*ret_out = r == 1 ? PROTO_OUT_DONE : r == 2 ? PROTO_OUT_DEAD : PROTO_OUT_LOST;
	if (r == -EINVAL || r == -EDOM || r == -EMSGSIZE) {
		snprintf(why, sizeof(why), "the jobs it adds were refused: %s", err);
		r = store_fail(s, x->ref, x->retry_ms, why, err, errlen);
		*ret_out = r == 2 ? PROTO_OUT_DEAD : r == 1 ? PROTO_OUT_RETRY : PROTO_OUT_LOST;
	}
out:
	free(rows);
	free(opts);
	free(edges);
	return r;
}

/* list[at[0..n)] are in the store, each as outs[k]: report them (in one message) and forget
 * them (marked gone). */
static void written(struct outcomes *o, const size_t *at, const uint8_t *outs, size_t n,
		    bool *gone)
{
	for (size_t k = 0; k < n; k++) {
		if (outs[k] == PROTO_OUT_LOST && o->list[at[k]].kind != OUTCOME_RELEASE)
			o->lost++;
		gone[at[k]] = true;
	}
	report(o, o->list, at, outs, n);
	for (size_t k = 0; k < n; k++)
		outcome_free(&o->list[at[k]]);
}

/* The failures list[at[0..n)) (f: the same, for the store), in one transaction; those written
 * are reported in one message and marked gone. Returns 0 or the store's error. */
static int write_failures(struct outcomes *o, struct store *s, struct store_failure *f,
			  const size_t *at, size_t n, bool *gone, char *err, size_t errlen)
{
	int r = n ? store_fail_many(s, f, n, err, errlen) : 0;
	size_t done_at[STORE_FAIL_MAX] = { 0 }, nd = 0;
	uint8_t outs[STORE_FAIL_MAX] = { 0 };

	if (r < 0 && r != -EIO)
		return r;   /* none was written */
	for (size_t j = 0; j < n; j++) {
		if (f[j].result < 0)
			continue;
		outs[nd] = f[j].result == 2 ? PROTO_OUT_DEAD :
			   f[j].result == 1 ? PROTO_OUT_RETRY : PROTO_OUT_LOST;
		done_at[nd++] = at[j];
	}
	written(o, done_at, outs, nd, gone);
	return r;
}

int outcomes_write_slow(struct outcomes *o, struct store *s, char *err, size_t errlen)
{
	bool gone[OUTCOMES_MAX] = { false };
	struct store_failure f[STORE_FAIL_MAX];
	size_t at[STORE_FAIL_MAX], nf = 0, keep = 0;
	uint8_t out;
	int r = 0;

	/* Failures go STORE_FAIL_MAX to a transaction; releases and deferrals one each. */
	for (size_t i = 0; i < o->n && r == 0; i++) {
		struct outcome *x = &o->list[i];
		if (x->kind == OUTCOME_SUCCESS && x->enqueue) {
			r = write_adding(s, x, &out, err, errlen);
			if (r >= 0) {
				r = 0;
				written(o, &i, &out, 1, gone);
			}
			continue;
		}
		if (x->kind == OUTCOME_SUCCESS)
			continue;
		if (x->kind == OUTCOME_FAILURE) {
			f[nf] = (struct store_failure){ .ref = x->ref, .retry_ms = x->retry_ms,
							.error = x->error };
			at[nf++] = i;
			if (nf == STORE_FAIL_MAX) {
				r = write_failures(o, s, f, at, nf, gone, err, errlen);
				nf = 0;
			}
			continue;
		}
		r = write_one(s, x, &out, err, errlen);
		if (r >= 0) {
			r = 0;
			written(o, &i, &out, 1, gone);
		}
	}
	if (r == 0)
		r = write_failures(o, s, f, at, nf, gone, err, errlen);
	for (size_t i = 0; i < o->n; i++)
		if (!gone[i])
			o->list[keep++] = o->list[i];
	o->n = keep;
	return r < 0 ? r : 0;
}

size_t outcomes_done_refs(const struct outcomes *o, struct store_ref *out)
{
	return outcomes_refs(o, out, 0);
}

size_t outcomes_refs(const struct outcomes *o, struct store_ref *out, size_t at)
{
	for (size_t i = 0; i < o->n; i++)
		out[at++] = o->list[i].ref;
	return at;
}

void outcomes_done_written(struct outcomes *o, size_t n)
{
	if (n > o->n)
		n = o->n;
	report(o, o->list, NULL, NULL, n);
	for (size_t i = 0; i < n; i++)
		outcome_free(&o->list[i]);
	memmove(o->list, o->list + n, (o->n - n) * sizeof(o->list[0]));
	o->n -= n;
	/* What is left came while they were written: due OUTCOMES_FLUSH_MS from now at the
	 * latest (their own times are not kept), at once for a failure among them or results
	 * past the bound. */
	o->since_ns = uv_hrtime();
	o->urgent = false;
	o->result_bytes = 0;
	for (size_t i = 0; i < o->n; i++) {
		o->urgent |= o->list[i].kind != OUTCOME_SUCCESS || o->list[i].enqueue;
		o->result_bytes += o->list[i].ref.result ? o->list[i].ref.result_len : 0;
	}
	o->urgent |= o->result_bytes > OUTCOMES_RESULT_BYTES;
}
