#include "console/entity.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/row_state.h"
#include "common/utf8.h"

typedef const char *cstr;  /* for AT(rec, f, cstr) */

#define AT(rec, f, type) (*(const type *)(const void *)((const char *)(rec) + (f)->off))
#define STR_AT(rec, f) ((const char *)(rec) + (f)->off)

/* s as a JSON string: invalid UTF-8 (a name another program wrote) as U+FFFD. */
json_t *entity_string(const char *s)
{
	size_t n = strlen(s);
	json_t *v = json_stringn(s, n);
	char *fixed;
	size_t w = 0;

	if (v || !(fixed = malloc(3 * n + 1)))
		return v;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len((const unsigned char *)s + i, n - i);
		if (k) {
			memcpy(fixed + w, s + i, k);
			w += k, i += k;
		} else {
			memcpy(fixed + w, "\xef\xbf\xbd", 3);
			w += 3, i++;
		}
	}
	v = json_stringn(fixed, w);
	free(fixed);
	return v;
}

/* v to prec (0..6) decimals, half away from zero. */
static double rounded(double v, int prec)
{
	static const double ten[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	double m = ten[prec < 0 ? 0 : prec > 6 ? 6 : prec], x = v * m;

	if (x >= 9e15 || x <= -9e15)
		return v;
	return (double)(long long)(x + (x >= 0 ? 0.5 : -0.5)) / m;
}

/* The value as a number, for ENTITY_ZERO and ENTITY_NEG (strings: their length). */
static double magnitude(const struct entity_field *f, const void *rec)
{
	switch (f->type) {
	case ENTITY_STR:
		return *STR_AT(rec, f) ? 1 : 0;
	case ENTITY_PSTR:
	case ENTITY_JSON:
		return AT(rec, f, cstr) && *AT(rec, f, cstr) ? 1 : 0;
	case ENTITY_U64:
		return (double)AT(rec, f, uint64_t);
	case ENTITY_U32:
		return AT(rec, f, uint32_t);
	case ENTITY_INT:
		return AT(rec, f, int);
	case ENTITY_I64:
		return (double)AT(rec, f, int64_t);
	case ENTITY_SIZE:
		return (double)AT(rec, f, size_t);
	case ENTITY_REAL:
		return AT(rec, f, double);
	case ENTITY_BOOL:
		return AT(rec, f, bool);
	case ENTITY_STATE:
		return AT(rec, f, enum row_state) == ROW_NONE ? -1 : 1;
	case ENTITY_NAME:
		return 1;
	}
	return 0;
}

static bool is_none(const struct entity_field *f, const void *rec)
{
	if ((f->type == ENTITY_PSTR || f->type == ENTITY_JSON) && !AT(rec, f, cstr))
		return f->none != ENTITY_NEVER;
	if (f->none == ENTITY_FLAG || f->none == ENTITY_OMIT)
		return *(const bool *)(const void *)((const char *)rec + f->flag_off) ==
		       (f->none == ENTITY_FLAG);
	return (f->none == ENTITY_ZERO && magnitude(f, rec) == 0) ||
	       (f->none == ENTITY_NEG && magnitude(f, rec) < 0);
}

static json_t *value_json(const struct entity_field *f, const void *rec)
{
	if (is_none(f, rec))
		return json_null();
	switch (f->type) {
	case ENTITY_STR:
		return entity_string(STR_AT(rec, f));
	case ENTITY_PSTR:
		return entity_string(AT(rec, f, cstr) ? AT(rec, f, cstr) : "");
	case ENTITY_U64:
		return json_integer((json_int_t)AT(rec, f, uint64_t));
	case ENTITY_U32:
		return json_integer((json_int_t)AT(rec, f, uint32_t));
	case ENTITY_INT:
		return json_integer(AT(rec, f, int));
	case ENTITY_I64:
		return json_integer((json_int_t)AT(rec, f, int64_t));
	case ENTITY_SIZE:
		return json_integer((json_int_t)AT(rec, f, size_t));
	case ENTITY_REAL:
		return json_real(rounded(AT(rec, f, double), f->prec));
	case ENTITY_BOOL:
		return json_boolean(AT(rec, f, bool));
	case ENTITY_STATE:
		return json_string(row_state_name(AT(rec, f, enum row_state)));
	case ENTITY_NAME:
		return json_string(f->names[AT(rec, f, int)]);
	case ENTITY_JSON: {
		const char *s = AT(rec, f, cstr) ? AT(rec, f, cstr) : "";
		json_t *v = *s == '{' || *s == '[' ? json_loads(s, 0, NULL) : NULL;
		return v ? v : entity_string(s);
	}
	}
	return json_null();
}

json_t *entity_json(const struct entity *e, const void *rec)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < e->nfields; i++) {
		if (e->fields[i].none == ENTITY_OMIT && is_none(&e->fields[i], rec))
			continue;
		json_t *v = value_json(&e->fields[i], rec);
		if (!v || json_object_set_new(o, e->fields[i].name, v) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *entity_json_array(const struct entity *e, const void *recs, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *o = entity_json(e, (const char *)recs + i * e->size);
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* words "true|false": the one for v into out. */
static void bool_text(const char *words, bool v, char *out, size_t outlen)
{
	const char *bar = strchr(words, '|');
	int n = bar ? (int)(bar - words) : (int)strlen(words);

	if (v)
		snprintf(out, outlen, "%.*s", n, words);
	else
		snprintf(out, outlen, "%s", bar ? bar + 1 : "");
}

/* The field's value as text into out ("-" for none). */
static const char *value_text(const struct entity_field *f, json_t *v, char *out, size_t outlen)
{
	bool text = f->type == ENTITY_STR || f->type == ENTITY_PSTR || f->type == ENTITY_STATE ||
		    f->type == ENTITY_NAME;
	bool number = !text && f->type != ENTITY_BOOL && f->type != ENTITY_JSON;

	/* what another claimd wrote may differ: a value of another type is none */
	if ((json_is_string(v) && !text) || (json_is_number(v) && !number) ||
	    (json_is_boolean(v) && f->type != ENTITY_BOOL))
		v = NULL;
	if (json_is_string(v))
		snprintf(out, outlen, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, outlen, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(out, outlen, "%.*f", f->prec, json_real_value(v));
	else if (json_is_boolean(v))
		bool_text(f->words ? f->words : "yes|no", json_is_true(v), out, outlen);
	else
		snprintf(out, outlen, "-");
	return out;
}

/* text padded to the column's width in characters (not bytes: a name may be UTF-8). */
static void cell(const struct entity_field *f, const char *text, bool last, struct buf *b)
{
	size_t chars = 0, width = (size_t)(f->width < 0 ? -f->width : f->width);

	for (const char *p = text; *p; p++)
		chars += ((unsigned char)*p & 0xc0) != 0x80;
	if (f->width > 0)
		for (size_t i = chars; i < width; i++)
			buf_puts(b, " ");
	buf_puts(b, text);
	if (f->width < 0 && !last)     /* no padding at the end of a line */
		for (size_t i = chars; i < width; i++)
			buf_puts(b, " ");
	buf_puts(b, last ? "\n" : " ");
}

static size_t last_column(const struct entity *e)
{
	size_t last = 0;

	for (size_t i = 0; i < e->nfields; i++)
		if (e->fields[i].head)
			last = i;
	return last;
}

void entity_text_head(const struct entity *e, const char *indent, struct buf *b)
{
	size_t last = last_column(e);

	buf_puts(b, indent);
	for (size_t i = 0; i < e->nfields; i++)
		if (e->fields[i].head)
			cell(&e->fields[i], e->fields[i].head, i == last, b);
}

void entity_text_row_json(const struct entity *e, json_t *obj, const char *indent,
			  struct buf *b)
{
	size_t last = last_column(e);
	char text[1200];

	buf_puts(b, indent);
	for (size_t i = 0; i < e->nfields; i++) {
		const struct entity_field *f = &e->fields[i];
		if (f->head)
			cell(f, value_text(f, json_object_get(obj, f->name), text, sizeof(text)),
			     i == last, b);
	}
}

void entity_text_row(const struct entity *e, const void *rec, const char *indent,
		     struct buf *b)
{
	json_t *o = entity_json(e, rec);

	if (!o) {
		buf_puts(b, "(out of memory)\n");
		return;
	}
	entity_text_row_json(e, o, indent, b);
	json_decref(o);
}

void entity_text_table(const struct entity *e, const void *recs, size_t n, const char *indent,
		       struct buf *b)
{
	entity_text_head(e, indent, b);
	for (size_t i = 0; i < n; i++)
		entity_text_row(e, (const char *)recs + i * e->size, indent, b);
}

void entity_text_fields(const struct entity *e, const void *rec, struct buf *b)
{
	json_t *o = entity_json(e, rec);
	char text[1200];

	for (size_t i = 0; o && i < e->nfields; i++) {
		const struct entity_field *f = &e->fields[i];
		buf_printf(b, "%s: %s\n", f->name,
			   value_text(f, json_object_get(o, f->name), text, sizeof(text)));
	}
	if (!o)
		buf_puts(b, "(out of memory)\n");
	json_decref(o);
}

void entity_text_lines(const struct entity *e, const void *rec, struct buf *b)
{
	json_t *o = entity_json(e, rec);
	char text[1200];

	for (size_t i = 0; o && i < e->nfields; i++) {
		const struct entity_field *f = &e->fields[i];
		json_t *v = json_object_get(o, f->name);
		if (json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
			continue;
		buf_printf(b, "%-13s ", f->name);
		/* one line: its line breaks would look like more fields */
		for (const char *p = value_text(f, v, text, sizeof(text)); *p; p++)
			buf_append(b, *p == '\n' || *p == '\r' ? " " : p, 1);
		buf_puts(b, "\n");
	}
	json_decref(o);
}

void entity_dump(json_t *v, struct buf *b)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_PRESERVE_ORDER) :
		      NULL;

	buf_puts(b, s ? s : "null");
	buf_puts(b, "\n");
	free(s);
	json_decref(v);
}
