#include "console/render_schedule.h"

#include <jansson.h>
#include <stddef.h>

#include "console/entities.h"

#define CF(name, head, width, type, none, member) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct store_schedule, member), \
	  0, NULL, NULL, 0 }

/* A schedule's fields; the text table has those with a head, the error last (any width). */
static const struct entity_field schedule_fields[] = {
	CF("name", "NAME", -24, STR, ALWAYS, name),
	CF("cron", "CRON", -18, STR, ALWAYS, cron),
	CF("time_zone", "TIME_ZONE", -16, STR, ALWAYS, time_zone),
	CF("queue", "QUEUE", -12, STR, ALWAYS, queue),
	CF("paused", "PAUSED", -6, BOOL, ALWAYS, paused),
	CF("next_tick_at", "NEXT_TICK_AT", -27, STR, ZERO, next_tick_at),
	CF("last_tick_at", "LAST_TICK_AT", -27, STR, ZERO, last_tick_at),
	CF("ticks", "TICKS", 6, U64, ALWAYS, ticks),
	CF("error", "ERROR", -1, STR, ZERO, error),
	CF("last_item_id", NULL, 0, U64, ZERO, last_item_id),
	{ "catch_up", NULL, 0, ENTITY_NAME, ENTITY_ALWAYS, offsetof(struct store_schedule, catch_up),
	  0, NULL, store_catch_up_names, 0 },
	CF("priority", NULL, 0, INT, ALWAYS, priority),
	CF("max_attempts", NULL, 0, U32, ALWAYS, max_attempts),
	CF("timeout_s", NULL, 0, U32, ZERO, timeout_s),
	CF("group", NULL, 0, STR, ZERO, group_key),
	CF("content_type", NULL, 0, STR, ZERO, content_type),
	{ "payload", NULL, 0, ENTITY_STR, ENTITY_FLAG, offsetof(struct store_schedule, payload), 0,
	  NULL, NULL, offsetof(struct store_schedule, payload_null) },
	CF("payload_size", NULL, 0, SIZE, ALWAYS, payload_len),
	CF("created_at", NULL, 0, STR, ALWAYS, created_at),
	CF("updated_at", NULL, 0, STR, ALWAYS, updated_at),
};
const struct entity schedule_entity = ENTITY(schedule_fields, struct store_schedule, "Schedule",
					     NULL);

void render_schedule_json(const struct store_schedule *c, struct buf *b)
{
	entity_dump(entity_json(&schedule_entity, c), b);
}

void render_schedules_json(const struct store_schedule *cs, size_t n, struct buf *b)
{
	entity_dump(entity_json_array(&schedule_entity, cs, n), b);
}

void render_schedules_text(const struct store_schedule *cs, size_t n, struct buf *b)
{
	entity_text_table(&schedule_entity, cs, n, "", b);
}

void render_schedule_text(const struct store_schedule *c, struct buf *b)
{
	entity_text_fields(&schedule_entity, c, b);
}
