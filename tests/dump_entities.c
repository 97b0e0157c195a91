/* dump_entities — every entity table claimd renders (console/entities.h) as JSON on stdout,
 * for tests/check_openapi_entities.py: each table's schema, the members its renderer adds,
 * and each field's name, JSON type and whether it may be null. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "console/entities.h"

static const char *type_name(enum entity_type t)
{
	switch (t) {
	case ENTITY_STR:
	case ENTITY_PSTR:
	case ENTITY_STATE:
	case ENTITY_NAME:
		return "string";
	case ENTITY_U64:
	case ENTITY_U32:
	case ENTITY_INT:
	case ENTITY_I64:
	case ENTITY_SIZE:
		return "integer";
	case ENTITY_REAL:
		return "number";
	case ENTITY_BOOL:
		return "boolean";
	case ENTITY_JSON:
		return "any";
	}
	return "?";
}

/* Whether value_json may give null: a none rule, or a string pointer that may be NULL. */
static int nullable(const struct entity_field *f)
{
	if (f->none == ENTITY_NEVER)
		return 0;
	if (f->none == ENTITY_FLAG)
		return 1;
	if (f->none == ENTITY_OMIT)
		return 0;
	return f->none != ENTITY_ALWAYS || f->type == ENTITY_PSTR || f->type == ENTITY_JSON;
}

int main(void)
{
	json_t *all = json_array();

	for (const struct entity *const *e = entity_catalogue; *e; e++) {
		json_t *fields = json_array();
		for (size_t i = 0; i < (*e)->nfields; i++) {
			const struct entity_field *f = &(*e)->fields[i];
			json_array_append_new(fields, json_pack("{s:s, s:s, s:b, s:b}", "name",
								f->name, "type", type_name(f->type),
								"nullable", nullable(f), "optional",
								f->none == ENTITY_OMIT));
		}
		json_array_append_new(all, json_pack("{s:s, s:s?, s:o}", "schema", (*e)->schema,
						     "extra", (*e)->extra, "fields", fields));
	}
	char *s = json_dumps(all, JSON_INDENT(1));
	if (!s)
		return 1;
	puts(s);
	free(s);
	json_decref(all);
	return 0;
}
