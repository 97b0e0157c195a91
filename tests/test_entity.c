/* test_entity — the one module that renders what claimd shows (console/entity): a record's
 * JSON object (every type, each "none" rule as null, reals rounded, invalid UTF-8 as U+FFFD,
 * a JSON field put in as its value or else as a string), the text table (heads, widths,
 * alignment, "-" for none, words for a bool), a row read back from JSON (a member missing or
 * of another type is none), the "name: value" lines. Exits 1 on a failure. */
#include "console/entity.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct rec {
	char name[16];
	const char *note;
	uint64_t n;
	uint64_t opt;
	int pid;
	int64_t ms;
	double real;
	bool lost;
	char *json;
};

#define F(name, head, width, type, none, member, prec, words) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct rec, member), prec, words, \
	  NULL, 0 }

static const struct entity_field fields[] = {
	F("name", "NAME", -6, STR, ALWAYS, name, 0, NULL),
	F("note", NULL, 0, PSTR, ALWAYS, note, 0, NULL),
	F("n", "N", 4, U64, ALWAYS, n, 0, NULL),
	F("opt", "OPT", 4, U64, ZERO, opt, 0, NULL),
	F("pid", "PID", 5, INT, ZERO, pid, 0, NULL),
	F("ms", "MS", 5, I64, NEG, ms, 0, NULL),
	F("real", "REAL", 7, REAL, ALWAYS, real, 2, NULL),
	F("lost", "STATE", -5, BOOL, ALWAYS, lost, 0, "lost|live"),
	F("status", NULL, 0, JSON, ZERO, json, 0, NULL),
};
static const struct entity e = ENTITY(fields, struct rec, NULL, NULL);

/* The rules for an enum's names, a value a flag says is none, a string always set. */
struct rec2 {
	int kind;
	char text[8];
	bool text_null;
	const char *always;
};
static const char *const kinds[] = { "latest", "all", "none" };
static const struct entity_field fields2[] = {
	{ "kind", "KIND", -6, ENTITY_NAME, ENTITY_ALWAYS, offsetof(struct rec2, kind), 0, NULL,
	  kinds, 0 },
	{ "text", "TEXT", -5, ENTITY_STR, ENTITY_FLAG, offsetof(struct rec2, text), 0, NULL, NULL,
	  offsetof(struct rec2, text_null) },
	{ "always", NULL, 0, ENTITY_PSTR, ENTITY_NEVER, offsetof(struct rec2, always), 0, NULL,
	  NULL, 0 },
};
static const struct entity e2 = ENTITY(fields2, struct rec2, NULL, NULL);

static char *text_of(struct buf *b)
{
	char *s = strndup(b->data ? b->data : "", b->len);

	buf_free(b);
	buf_init(b);
	return s;
}

static void check_text(struct buf *b, const char *want, const char *what)
{
	char *got = text_of(b);

	CHECK(strcmp(got, want) == 0, "%s:\n got  [%s]\n want [%s]", what, got, want);
	free(got);
}

int main(void)
{
	char pool[] = "{\"workers\":[1,2]}", bad[] = "{not json";
	struct rec recs[] = {
		{ "a", "x", 7, 0, 0, -1, 1.006, false, pool },
		{ "b\xff", NULL, 8, 9, 42, 1500, 2.0, true, bad },
	};
	struct buf b;

	buf_init(&b);
	entity_dump(entity_json_array(&e, recs, 2), &b);
	check_text(&b, "[{\"name\":\"a\",\"note\":\"x\",\"n\":7,\"opt\":null,\"pid\":null,\"ms\":null,"
		   "\"real\":1.01,\"lost\":false,\"status\":{\"workers\":[1,2]}},"
		   "{\"name\":\"b\xef\xbf\xbd\",\"note\":null,\"n\":8,\"opt\":9,\"pid\":42,"
		   "\"ms\":1500,\"real\":2.0,\"lost\":true,\"status\":\"{not json\"}]\n",
		   "the JSON array");
	entity_text_table(&e, recs, 2, "  ", &b);
	check_text(&b, "  NAME      N  OPT   PID    MS    REAL STATE\n"
		   "  a         7    -     -     -    1.01 live\n"
		   "  b\xef\xbf\xbd        8    9    42  1500    2.00 lost\n", "the text table");
	{
		json_t *o = json_loads("{\"name\":\"c\",\"n\":\"seven\",\"lost\":true}", 0, NULL);
		entity_text_row_json(&e, o, "", &b);
		json_decref(o);
		check_text(&b, "c         -    -     -     -       - lost\n",
			   "a row from JSON with members missing or of another type");
	}
	entity_text_fields(&e, &recs[0], &b);
	check_text(&b, "name: a\nnote: x\nn: 7\nopt: -\npid: -\nms: -\nreal: 1.01\nlost: live\n"
		   "status: -\n", "name: value lines");
	entity_dump(NULL, &b);
	check_text(&b, "null\n", "out of memory");
	{
		struct rec2 r2[] = { { 1, "", false, NULL }, { 2, "x", true, "set" } };
		entity_dump(entity_json_array(&e2, r2, 2), &b);
		check_text(&b, "[{\"kind\":\"all\",\"text\":\"\",\"always\":\"\"},"
			   "{\"kind\":\"none\",\"text\":null,\"always\":\"set\"}]\n",
			   "names, a flagged none, a string always set");
		entity_text_table(&e2, r2, 2, "", &b);
		check_text(&b, "KIND   TEXT\nall    \nnone   -\n", "names and a flagged none as text");
	}
	buf_free(&b);
	if (failures == 0)
		printf("ok - entity\n");
	return failures ? 1 : 0;
}
