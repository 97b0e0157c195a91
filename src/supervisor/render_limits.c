#include "supervisor/render_limits.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* A number of the queue (uint32_t) or of a key (int64_t, -1: the queue's), its name (the JSON
 * key and the text label) and its column in the keys' table. */
struct field {
	const char *name;
	size_t off;
	int width;
};

static const struct field queue_fields[] = {
	{ "min_interval_ms", offsetof(struct store_limits, interval_ms), 0 },
	{ "burst", offsetof(struct store_limits, burst), 0 },
	{ "key_concurrency", offsetof(struct store_limits, key_concurrency), 0 },
	{ "key_interval_ms", offsetof(struct store_limits, key_interval_ms), 0 },
	{ "key_burst", offsetof(struct store_limits, key_burst), 0 },
};
#define NQUEUE (sizeof(queue_fields) / sizeof(queue_fields[0]))

static const struct field key_fields[] = {
	{ "concurrency", offsetof(struct store_key_limit, concurrency), 11 },
	{ "interval_ms", offsetof(struct store_key_limit, interval_ms), 11 },
	{ "burst", offsetof(struct store_key_limit, burst), 7 },
	{ "running", offsetof(struct store_key_limit, running), 7 },
	{ "waiting", offsetof(struct store_key_limit, waiting), 7 },
};
#define NKEY (sizeof(key_fields) / sizeof(key_fields[0]))

static uint32_t queue_value(const struct store_limits *l, const struct field *f)
{
	return *(const uint32_t *)(const void *)((const char *)l + f->off);
}

/* A key's number; -1 (its queue's) only for its settings, not its counts. */
static long long key_value(const struct store_key_limit *k, const struct field *f)
{
	const char *p = (const char *)k + f->off;

	if (f->off == offsetof(struct store_key_limit, running) ||
	    f->off == offsetof(struct store_key_limit, waiting))
		return (long long)*(const uint64_t *)(const void *)p;
	return *(const int64_t *)(const void *)p;
}

static void dump(json_t *v, struct buf *b)
{
	char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;

	buf_puts(b, s ? s : "null");
	buf_puts(b, "\n");
	free(s);
	json_decref(v);
}

void render_limits_json(const struct store_limits *l, struct buf *b)
{
	json_t *o = json_object(), *keys = json_array();

	if (o)
		json_object_set_new(o, "queue", json_string(l->queue));
	for (size_t i = 0; o && i < NQUEUE; i++)
		json_object_set_new(o, queue_fields[i].name,
				    json_integer(queue_value(l, &queue_fields[i])));
	for (size_t k = 0; keys && k < l->nkeys; k++) {
		json_t *ko = json_object();
		if (!ko)
			break;
		json_object_set_new(ko, "key", json_string(l->keys[k].key));
		for (size_t i = 0; i < NKEY; i++) {
			long long v = key_value(&l->keys[k], &key_fields[i]);
			json_object_set_new(ko, key_fields[i].name, v < 0 ? json_null() :
					    json_integer(v));
		}
		json_array_append_new(keys, ko);
	}
	if (o && keys)
		json_object_set_new(o, "keys", keys);
	else
		json_decref(keys);
	dump(o, b);
}

void render_limits_text(const struct store_limits *l, struct buf *b)
{
	buf_printf(b, "queue: %s\n", l->queue);
	for (size_t i = 0; i < NQUEUE; i++)
		buf_printf(b, "%s: %u\n", queue_fields[i].name, queue_value(l, &queue_fields[i]));
	if (l->nkeys == 0)
		return;
	buf_puts(b, "\n");
	for (size_t i = 0; i < NKEY; i++) {
		char up[16];
		size_t j = 0;
		for (; j < sizeof(up) - 1 && key_fields[i].name[j]; j++)
			up[j] = (char)(key_fields[i].name[j] - (key_fields[i].name[j] >= 'a' &&
							       key_fields[i].name[j] <= 'z' ? 32 : 0));
		up[j] = '\0';
		buf_printf(b, "%*s ", key_fields[i].width, up);
	}
	buf_puts(b, "KEY\n");
	for (size_t k = 0; k < l->nkeys; k++) {
		for (size_t i = 0; i < NKEY; i++) {
			long long v = key_value(&l->keys[k], &key_fields[i]);
			if (v < 0)
				buf_printf(b, "%*s ", key_fields[i].width, "queue's");
			else
				buf_printf(b, "%*lld ", key_fields[i].width, v);
		}
		buf_printf(b, "%s\n", l->keys[k].key);
	}
}
