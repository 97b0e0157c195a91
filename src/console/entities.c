#include "console/entities.h"

#include <stddef.h>

#include "console/answers.h"

const struct entity *const entity_catalogue[] = {
	&job_entity, &queue_entity, &supervisor_entity, &worker_entity, &status_entity,
	&batch_entity,
	&attempt_error_entity, &limits_entity, &key_limit_entity, &schedule_entity,
	/* the commands' small answers (answers.h) */
	&added_entity, &deleted_entity, &retried_entity, &paused_entity, &schedule_paused_entity,
	&cancelling_entity, &bulk_entity, &mismatch_entity, &schedule_deleted_entity, &error_entity, NULL,
};
