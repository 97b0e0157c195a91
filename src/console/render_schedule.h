/* render_schedule — a schedule (store_schedule) for people and programs: its fields are the
 * table in render_schedule.c, once, read by both the text (claimctl schedules) and the JSON
 * (claimctl --json, the HTTP API, the dashboard) forms; the JSON is built with jansson. */
#ifndef CLAIMD_RENDER_SCHEDULE_H
#define CLAIMD_RENDER_SCHEDULE_H

#include <stddef.h>

#include "common/buf.h"
#include "store/store.h"

/* A table: a header line, then a line per schedule. */
void render_schedules_text(const struct store_schedule *cs, size_t n, struct buf *b);
/* A JSON array of the schedules' objects, and a newline. */
void render_schedules_json(const struct store_schedule *cs, size_t n, struct buf *b);
/* One schedule's JSON object, and a newline. */
void render_schedule_json(const struct store_schedule *c, struct buf *b);
/* "name: value" lines, one field a line. */
void render_schedule_text(const struct store_schedule *c, struct buf *b);

#endif
