#include "console/render_limits.h"

#include <stddef.h>

#include "console/entities.h"

#define QF(name, member) \
	{ name, NULL, 0, ENTITY_U32, ENTITY_ALWAYS, offsetof(struct store_limits, member), 0, \
	  NULL, NULL, 0 }

static const struct entity_field queue_fields[] = {
	{ "queue", NULL, 0, ENTITY_STR, ENTITY_ALWAYS, offsetof(struct store_limits, queue), 0,
	  NULL, NULL, 0 },
	QF("min_interval_ms", interval_ms),
	QF("burst", burst),
	QF("key_concurrency", key_concurrency),
	QF("key_interval_ms", key_interval_ms),
	QF("key_burst", key_burst),
};
const struct entity limits_entity = ENTITY(queue_fields, struct store_limits, "Limits", "keys");

/* A key's settings: none (-1) is its queue's. */
#define KF(name, head, width, type, none, member) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, \
	  offsetof(struct store_key_limit, member), 0, NULL, NULL, 0 }

static const struct entity_field key_fields[] = {
	KF("concurrency", "CONCURRENCY", 11, I64, NEG, concurrency),
	KF("interval_ms", "INTERVAL_MS", 11, I64, NEG, interval_ms),
	KF("burst", "BURST", 7, I64, NEG, burst),
	KF("running", "RUNNING", 7, U64, ALWAYS, running),
	KF("waiting", "WAITING", 7, U64, ALWAYS, waiting),
	KF("key", "KEY", -1, STR, ALWAYS, key),   /* last: the one column of any width */
};
const struct entity key_limit_entity = ENTITY(key_fields, struct store_key_limit, "KeyLimit",
					     NULL);

void render_limits_json(const struct store_limits *l, struct buf *b)
{
	json_t *o = entity_json(&limits_entity, l);
	json_t *keys = entity_json_array(&key_limit_entity, l->keys, l->nkeys);

	if (o && keys)
		json_object_set_new(o, "keys", keys);
	else
		json_decref(keys);
	entity_dump(o, b);
}

void render_limits_text(const struct store_limits *l, struct buf *b)
{
	entity_text_fields(&limits_entity, l, b);
	if (l->nkeys == 0)
		return;
	buf_puts(b, "\n(- : the queue's key settings)\n");
	entity_text_table(&key_limit_entity, l->keys, l->nkeys, "", b);
}
