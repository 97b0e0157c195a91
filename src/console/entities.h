/* entities — every entity table claimd renders (entity.h), in one list: what the check of
 * openapi.json against the tables (tests/check_openapi_entities.py, through
 * tests/dump_entities.c) walks. Each table lives beside what fills its struct. */
#ifndef CLAIMD_ENTITIES_H
#define CLAIMD_ENTITIES_H

#include "console/entity.h"

extern const struct entity job_entity;            /* render.c */
extern const struct entity queue_entity;          /* render.c */
extern const struct entity supervisor_entity;     /* render.c */
extern const struct entity worker_entity;         /* status.c */
extern const struct entity status_entity;         /* status.c */
extern const struct entity batch_entity;          /* cmd_batch.c */
extern const struct entity attempt_error_entity;  /* cmd_browse.c */
extern const struct entity limits_entity;         /* render_limits.c */
extern const struct entity key_limit_entity;      /* render_limits.c */
extern const struct entity schedule_entity;       /* render_schedule.c */

/* The tables above and the answers' (answers.h), NULL-terminated. */
extern const struct entity *const entity_catalogue[];

#endif
