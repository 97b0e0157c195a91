/* cmd_batch — the batches' verbs: batch (one) and batches (the newest), read from the
 * store and rendered here (the fields once, in the table below; the JSON by jansson). */
#include "console/cmd_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "console/entities.h"

int cmd_batch_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	int r;

	if (q->verb == CTL_BATCHES) {
		return store_batches(s, ctl_has(q, CTL_F_BEFORE) ? q->before : 0, cmd_page(q),
				     &call->batches, &call->nbatches, err, errlen);
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

/* ---- a batch ---- */

#define BF(name, head, width, type, none, member) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct store_batch, member), \
	  0, NULL, NULL, 0 }

static const struct entity_field batch_fields[] = {
	BF("id", "ID", -10, U64, ALWAYS, id),
	BF("queue", "QUEUE", -16, STR, ALWAYS, queue),
	BF("description", NULL, 0, STR, ZERO, description),
	BF("size", "SIZE", 8, U32, ALWAYS, size),
	BF("ready", "READY", 8, U64, ALWAYS, members[ROW_READY]),
	BF("claimed", "CLAIMED", 8, U64, ALWAYS, members[ROW_CLAIMED]),
	BF("done", "DONE", 8, U64, ALWAYS, members[ROW_DONE]),
	BF("dead", "DEAD", 8, U64, ALWAYS, members[ROW_DEAD]),
	BF("finished", "FINISHED", -8, BOOL, ALWAYS, finished),
	BF("callback_id", NULL, 0, U64, ZERO, callback_id),
	BF("callback_state", "CALLBACK", -8, STATE, NEG, callback_state),
	BF("created_at", NULL, 0, STR, ALWAYS, created_at),
};
const struct entity batch_entity = ENTITY(batch_fields, struct store_batch, "Batch", NULL);

json_t *cmd_batch_object(const struct store_batch *b)
{
	return entity_json(&batch_entity, b);
}

void cmd_batch_json(const struct store_batch *b, struct buf *out)
{
	entity_dump(cmd_batch_object(b), out);
}

void cmd_batch_text(const struct ctl_request *req, const struct cmd_result *res,
		    struct buf *out)
{
	if (req->verb == CTL_BATCH && res->nbatches) {
		if (req->json)
			cmd_batch_json(&res->batches[0], out);
		else
			entity_text_fields(&batch_entity, &res->batches[0], out);
	} else if (req->json) {
		entity_dump(entity_json_array(&batch_entity, res->batches, res->nbatches), out);
	} else {
		entity_text_table(&batch_entity, res->batches, res->nbatches, "", out);
	}
}
