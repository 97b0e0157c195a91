/* cmd_batch — the batches' verbs: batch (one) and batches (the newest), read from the
 * store and rendered here (the fields once, in the table below; the JSON by jansson). */
#include "supervisor/cmd_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_batch_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	int r;

	if (q->verb == CTL_BATCHES) {
		return store_batches(s, ctl_has(q, CTL_F_BEFORE) ? q->before : 0,
				     ctl_has(q, CTL_F_LIMIT) ? q->limit : 50, &call->batches,
				     &call->nbatches, err, errlen);
	}
	call->batches = calloc(1, sizeof(*call->batches));
	if (!call->batches) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = store_batch_get(s, q->id, call->batches, err, errlen);
	if (r == 0) {
		snprintf(err, errlen, "no batch %llu", (unsigned long long)q->id);
		return -ENOENT;
	}
	if (r > 0)
		call->nbatches = 1;
	return r;
}

void cmd_batch_after(struct call *call)
{
	call->res.batches = call->batches;
	call->res.nbatches = call->nbatches;
}

static json_t *batch_object(const struct store_batch *b)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_integer((json_int_t)b->id));
	json_object_set_new(o, "queue", json_string(b->queue));
	json_object_set_new(o, "description", *b->description ? json_string(b->description) :
			    json_null());
	json_object_set_new(o, "size", json_integer(b->size));
	json_object_set_new(o, "ready", json_integer((json_int_t)b->ready));
	json_object_set_new(o, "claimed", json_integer((json_int_t)b->claimed));
	json_object_set_new(o, "done", json_integer((json_int_t)b->done));
	json_object_set_new(o, "dead", json_integer((json_int_t)b->dead));
	json_object_set_new(o, "finished", json_boolean(b->finished));
	json_object_set_new(o, "callback_id", b->callback_id ?
			    json_integer((json_int_t)b->callback_id) : json_null());
	json_object_set_new(o, "callback_state", *b->callback_state ?
			    json_string(b->callback_state) : json_null());
	json_object_set_new(o, "created_at", json_string(b->created_at));
	return o;
}

void cmd_batch_json(const struct store_batch *b, struct buf *out)
{
	json_t *o = batch_object(b);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	buf_puts(out, s ? s : "null");
	buf_puts(out, "\n");
	free(s);
	json_decref(o);
}

void cmd_batch_text(const struct ctl_request *req, const struct cmd_result *res,
		    struct buf *out)
{
	if (req->verb == CTL_BATCH && res->nbatches) {
		const struct store_batch *b = &res->batches[0];
		if (req->json) {
			cmd_batch_json(b, out);
			return;
		}
		buf_printf(out, "id: %llu\nqueue: %s\ndescription: %s\nsize: %u\nready: %llu\n"
			   "claimed: %llu\ndone: %llu\ndead: %llu\nfinished: %s\ncallback_id: %llu\n"
			   "callback_state: %s\ncreated_at: %s\n", (unsigned long long)b->id, b->queue,
			   b->description, b->size, (unsigned long long)b->ready,
			   (unsigned long long)b->claimed, (unsigned long long)b->done,
			   (unsigned long long)b->dead, b->finished ? "yes" : "no",
			   (unsigned long long)b->callback_id, b->callback_state, b->created_at);
		return;
	}
	if (req->json) {
		json_t *a = json_array();
		char *s;
		for (size_t i = 0; a && i < res->nbatches; i++)
			json_array_append_new(a, batch_object(&res->batches[i]));
		s = a ? json_dumps(a, JSON_COMPACT) : NULL;
		buf_puts(out, s ? s : "[]");
		buf_puts(out, "\n");
		free(s);
		json_decref(a);
		return;
	}
	buf_printf(out, "%-10s %-16s %8s %8s %8s %8s %8s %-9s %s\n", "ID", "QUEUE", "SIZE", "READY",
		   "CLAIMED", "DONE", "DEAD", "FINISHED", "CALLBACK");
	for (size_t i = 0; i < res->nbatches; i++) {
		const struct store_batch *b = &res->batches[i];
		buf_printf(out, "%-10llu %-16s %8u %8llu %8llu %8llu %8llu %-9s %s\n",
			   (unsigned long long)b->id, b->queue, b->size, (unsigned long long)b->ready,
			   (unsigned long long)b->claimed, (unsigned long long)b->done,
			   (unsigned long long)b->dead, b->finished ? "yes" : "no",
			   *b->callback_state ? b->callback_state : "-");
	}
}
