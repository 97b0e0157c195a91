#include "console/answers.h"

#include <stddef.h>

#define FIELD(type_, name, kind, none, member) \
	{ name, NULL, 0, ENTITY_##kind, ENTITY_##none, offsetof(type_, member), 0, NULL, NULL, 0 }
/* written only when the bool flag of the same struct is true */
#define OPTIONAL(type_, name, kind, member, flag) \
	{ name, NULL, 0, ENTITY_##kind, ENTITY_OMIT, offsetof(type_, member), 0, NULL, NULL, \
	  offsetof(type_, flag) }

static const struct entity_field added_fields[] = {
	FIELD(struct answer_added, "id", U64, ALWAYS, id),
	OPTIONAL(struct answer_added, "duplicate", BOOL, duplicate, duplicate),
};
const struct entity added_entity = ENTITY(added_fields, struct answer_added, "Added", NULL);

static const struct entity_field deleted_fields[] = {
	FIELD(struct answer_deleted, "id", U64, ALWAYS, id),
	FIELD(struct answer_deleted, "deleted", BOOL, ALWAYS, deleted),
};
const struct entity deleted_entity = ENTITY(deleted_fields, struct answer_deleted, "Deleted",
					    NULL);

static const struct entity_field retried_fields[] = {
	FIELD(struct answer_retried, "retried", I64, ALWAYS, retried),
	OPTIONAL(struct answer_retried, "transactions", U32, transactions, whole_queue),
};
const struct entity retried_entity = ENTITY(retried_fields, struct answer_retried, "Retried",
					    NULL);

static const struct entity_field paused_fields[] = {
	FIELD(struct answer_paused, "queue", PSTR, NEVER, name),
	FIELD(struct answer_paused, "paused", BOOL, ALWAYS, paused),
};
const struct entity paused_entity = ENTITY(paused_fields, struct answer_paused, "Paused", NULL);

static const struct entity_field schedule_paused_fields[] = {
	FIELD(struct answer_paused, "schedule", PSTR, NEVER, name),
	FIELD(struct answer_paused, "paused", BOOL, ALWAYS, paused),
};
const struct entity schedule_paused_entity = ENTITY(schedule_paused_fields, struct answer_paused,
						    "SchedulePaused", NULL);

static const struct entity_field cancelling_fields[] = {
	FIELD(struct answer_cancelling, "id", U64, ALWAYS, id),
	FIELD(struct answer_cancelling, "state", STATE, ALWAYS, state),
	FIELD(struct answer_cancelling, "cancelling", BOOL, ALWAYS, cancelling),
	FIELD(struct answer_cancelling, "claimed_by", PSTR, ZERO, claimed_by),
};
const struct entity cancelling_entity = ENTITY(cancelling_fields, struct answer_cancelling,
					       "Cancelling", NULL);

static const struct entity_field bulk_fields[] = {
	FIELD(struct answer_bulk, "action", PSTR, NEVER, action),
	FIELD(struct answer_bulk, "count", U64, ALWAYS, count),
	FIELD(struct answer_bulk, "confirmed", BOOL, ALWAYS, confirmed),
	OPTIONAL(struct answer_bulk, "acted", I64, acted, confirmed),
	OPTIONAL(struct answer_bulk, "transactions", U32, transactions, confirmed),
};
const struct entity bulk_entity = ENTITY(bulk_fields, struct answer_bulk, "Bulk", NULL);

static const struct entity_field mismatch_fields[] = {
	FIELD(struct answer_mismatch, "error", PSTR, NEVER, error),
	FIELD(struct answer_mismatch, "count", U64, ALWAYS, count),
};
const struct entity mismatch_entity = ENTITY(mismatch_fields, struct answer_mismatch,
					     "BulkMismatch", NULL);

static const struct entity_field count_fields[] = {
	FIELD(struct answer_count, "deleted", I64, ALWAYS, deleted),
};
const struct entity schedule_deleted_entity = ENTITY(count_fields, struct answer_count,
						     "ScheduleDeleted", NULL);

static const struct entity_field error_fields[] = {
	FIELD(struct answer_error, "error", PSTR, NEVER, error),
};
const struct entity error_entity = ENTITY(error_fields, struct answer_error, "Error", NULL);

void answer_json(const struct entity *e, const void *rec, struct buf *out)
{
	entity_dump(entity_json(e, rec), out);
}
