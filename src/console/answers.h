/* answers — the small answers of the commands (an add, a retry, a pause, a cancel, a bulk
 * action, ...), each a struct with its entity table, so that their JSON is rendered like
 * every other thing claimd shows and held to openapi.json by the same check. Pure. */
#ifndef CLAIMD_ANSWERS_H
#define CLAIMD_ANSWERS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/row_state.h"
#include "console/entity.h"

struct answer_added {          /* Added */
	uint64_t id;
	bool duplicate;            /* written only when true */
};

struct answer_deleted {        /* Deleted: a ready row cancelled, a dead one discarded */
	uint64_t id;
	bool deleted;
};

struct answer_retried {        /* Retried */
	int64_t retried;
	unsigned transactions;
	bool whole_queue;          /* transactions written only for a whole queue's retry */
};

struct answer_paused {         /* Paused (a queue), SchedulePaused (a schedule) */
	const char *name;
	bool paused;
};

struct answer_cancelling {     /* Cancelling: a claimed row, its run being stopped */
	uint64_t id;
	enum row_state state;
	bool cancelling;
	const char *claimed_by;
};

struct answer_bulk {           /* Bulk */
	const char *action;
	uint64_t count;
	bool confirmed;            /* acted and transactions written only when true */
	int64_t acted;
	unsigned transactions;
};

struct answer_mismatch {       /* BulkMismatch: a confirm that is not the count */
	const char *error;
	uint64_t count;
};

struct answer_error {          /* Error: every refusal, whatever the route */
	const char *error;
};

struct answer_count {          /* ScheduleDeleted */
	int64_t deleted;
};

extern const struct entity added_entity, deleted_entity, retried_entity, paused_entity,
	schedule_paused_entity, cancelling_entity, bulk_entity, mismatch_entity,
	schedule_deleted_entity, error_entity;

/* rec as e's JSON object, and a newline, onto out. */
void answer_json(const struct entity *e, const void *rec, struct buf *out);

#endif
