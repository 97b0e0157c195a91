#include "console/entities.h"

#include <stddef.h>

const struct entity *const entity_catalogue[] = {
	&job_entity, &queue_entity, &supervisor_entity, &worker_entity, &batch_entity,
	&attempt_error_entity, &limits_entity, &key_limit_entity, &schedule_entity, NULL,
};
