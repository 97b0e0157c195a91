#include "console/render_schedule.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_TEXT, K_TIME, K_UINT, K_INT, K_BOOL, K_CATCH_UP, K_PAYLOAD };

/* A field: its name (the JSON key and the text label), its kind, where it is, and its
 * column in the table (width; 0: not in the table). */
struct field {
	const char *name;
	enum kind kind;
	size_t off;
	int width;
};

#define AT(m) offsetof(struct store_schedule, m)

static const struct field fields[] = {
	{ "name", K_TEXT, AT(name), -24 },
	{ "cron", K_TEXT, AT(cron), -18 },
	{ "time_zone", K_TEXT, AT(time_zone), -16 },
	{ "queue", K_TEXT, AT(queue), -12 },
	{ "paused", K_BOOL, AT(paused), -6 },
	{ "next_tick_at", K_TIME, AT(next_tick_at), -27 },
	{ "last_tick_at", K_TIME, AT(last_tick_at), -27 },
	{ "ticks", K_UINT, AT(ticks), 6 },
	{ "error", K_TEXT, AT(error), 0 },
	{ "last_item_id", K_UINT, AT(last_item_id), 0 },
	{ "catch_up", K_CATCH_UP, AT(catch_up), 0 },
	{ "priority", K_INT, AT(priority), 0 },
	{ "max_attempts", K_UINT, AT(max_attempts), 0 },
	{ "timeout_s", K_UINT, AT(timeout_s), 0 },
	{ "group", K_TEXT, AT(group_key), 0 },
	{ "content_type", K_TEXT, AT(content_type), 0 },
	{ "payload", K_PAYLOAD, AT(payload), 0 },
	{ "payload_size", K_UINT, AT(payload_len), 0 },
	{ "created_at", K_TIME, AT(created_at), 0 },
	{ "updated_at", K_TIME, AT(updated_at), 0 },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static unsigned long long uint_of(const struct store_schedule *c, const struct field *f)
{
	const char *p = (const char *)c + f->off;

	if (f->off == AT(ticks) || f->off == AT(last_item_id))
		return *(const uint64_t *)(const void *)p;
	if (f->off == AT(payload_len))
		return *(const size_t *)(const void *)p;
	return *(const unsigned *)(const void *)p;
}

/* The field's text; "" for none. */
static const char *text_of(const struct store_schedule *c, const struct field *f, char *tmp,
			   size_t len)
{
	const char *p = (const char *)c + f->off;

	switch (f->kind) {
	case K_TEXT:
	case K_TIME:
	case K_PAYLOAD:
		return p;
	case K_BOOL:
		return *(const bool *)(const void *)p ? "yes" : "no";
	case K_CATCH_UP:
		return store_catch_up_names[c->catch_up];
	case K_INT:
		snprintf(tmp, len, "%d", *(const int *)(const void *)p);
		return tmp;
	default:
		if (f->off == AT(timeout_s) && !c->timeout_s)
			return "";
		if (f->off == AT(last_item_id) && !c->last_item_id)
			return "";
		snprintf(tmp, len, "%llu", uint_of(c, f));
		return tmp;
	}
}

static json_t *value_of(const struct store_schedule *c, const struct field *f)
{
	const char *p = (const char *)c + f->off;

	switch (f->kind) {
	case K_TEXT:
	case K_TIME:
		return *p ? json_string(p) : json_null();
	case K_PAYLOAD:
		return c->payload_null ? json_null() : json_string(p);
	case K_BOOL:
		return json_boolean(*(const bool *)(const void *)p);
	case K_CATCH_UP:
		return json_string(store_catch_up_names[c->catch_up]);
	case K_INT:
		return json_integer(*(const int *)(const void *)p);
	default:
		if ((f->off == AT(timeout_s) && !c->timeout_s) ||
		    (f->off == AT(last_item_id) && !c->last_item_id))
			return json_null();
		return json_integer((json_int_t)uint_of(c, f));
	}
}

static json_t *object_of(const struct store_schedule *c)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < NFIELDS; i++)
		json_object_set_new(o, fields[i].name, value_of(c, &fields[i]));
	return o;
}

static void dump(json_t *v, struct buf *b)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

	if (s) {
		buf_puts(b, s);
		buf_puts(b, "\n");
	} else {
		buf_puts(b, "null\n");
	}
	free(s);
	json_decref(v);
}

void render_schedule_json(const struct store_schedule *c, struct buf *b)
{
	dump(object_of(c), b);
}

void render_schedules_json(const struct store_schedule *cs, size_t n, struct buf *b)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, object_of(&cs[i]));
	dump(a, b);
}

void render_schedules_text(const struct store_schedule *cs, size_t n, struct buf *b)
{
	char tmp[32], up[32];

	for (size_t i = 0; i < NFIELDS; i++) {
		if (!fields[i].width)
			continue;
		snprintf(up, sizeof(up), "%s", fields[i].name);
		for (char *p = up; *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		buf_printf(b, "%*s ", fields[i].width, up);
	}
	buf_puts(b, "ERROR\n");
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < NFIELDS; i++)
			if (fields[i].width) {
				const char *t = text_of(&cs[k], &fields[i], tmp, sizeof(tmp));
				buf_printf(b, "%*s ", fields[i].width, *t ? t : "-");
			}
		buf_printf(b, "%s\n", cs[k].error[0] ? cs[k].error : "-");
	}
}

void render_schedule_text(const struct store_schedule *c, struct buf *b)
{
	char tmp[32];

	for (size_t i = 0; i < NFIELDS; i++)
		buf_printf(b, "%s: %s\n", fields[i].name, text_of(c, &fields[i], tmp, sizeof(tmp)));
}
