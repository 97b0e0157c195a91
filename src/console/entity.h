/* entity — what claimd shows of a thing (a worker, a supervisor, a queue, ...) described once:
 * a table of its fields, each with its JSON name, its text column and how its value reads,
 * from which one module renders the JSON (with jansson) for the control socket, the HTTP API
 * and the dashboard, and the text table for claimctl. An entity's table lives beside what
 * fills the struct (render.c for the store's rows, status.c for the pool). Pure: no I/O. */
#ifndef CLAIMD_ENTITY_H
#define CLAIMD_ENTITY_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"

/* How a field's value is held in its struct. */
enum entity_type {
	ENTITY_STR,     /* char[] */
	ENTITY_PSTR,    /* const char * */
	ENTITY_U64,     /* uint64_t */
	ENTITY_U32,     /* uint32_t (or unsigned) */
	ENTITY_INT,     /* int */
	ENTITY_I64,     /* int64_t */
	ENTITY_SIZE,    /* size_t */
	ENTITY_REAL,    /* double, shown to prec decimals */
	ENTITY_BOOL,    /* bool: true/false, text yes/no */
	ENTITY_STATE,   /* enum row_state: its name */
	ENTITY_JSON,    /* char * of JSON text claimd wrote (a supervisor's pool): put in as the
			 * value it is, else as a string */
	ENTITY_NAME,    /* an enum (int) named by the field's names table */
};

/* Which value means the field has none (JSON null, text "-"). */
enum entity_none {
	ENTITY_ALWAYS,  /* every value is one; a NULL string reads as none all the same */
	ENTITY_ZERO,    /* 0, "" or NULL */
	ENTITY_NEG,     /* below 0 */
	ENTITY_NEVER,   /* none: a string that is always set (a NULL one reads as "") */
	ENTITY_FLAG,    /* the bool at the field's flag_off is true (a NULL column beside a value
			 * the struct holds as text) */
	ENTITY_OMIT,    /* the bool at flag_off is false: then the member is left out of the JSON
			 * object altogether (an answer's optional member) */
};

struct entity_field {
	const char *name;          /* its JSON member */
	const char *head;          /* its text column's head; NULL: not in the text table */
	int width;                 /* the column's width; negative: left-aligned */
	enum entity_type type;
	enum entity_none none;
	size_t off;                /* offsetof its value in the struct */
	int prec;                  /* ENTITY_REAL: decimals */
	const char *words;         /* ENTITY_BOOL: its text for true and false, "lost|live";
				    * NULL: "yes|no" */
	const char *const *names;  /* ENTITY_NAME: the enum's names, by value */
	size_t flag_off;           /* ENTITY_FLAG, ENTITY_OMIT: offsetof the bool that says */
};

struct entity {
	const struct entity_field *fields;
	size_t nfields;
	size_t size;        /* sizeof the struct, to walk an array of them */
	/* Where openapi.json describes the object: a schema ("Job"), or a schema's array member
	 * ("JobPage.attempt_errors[]"); and the members its renderer adds beside the table
	 * ("payload,payload_b64"), or NULL. tests/check_openapi_entities.py holds the document
	 * to the table: every field a required member of its type and nullability, no member
	 * that is neither a field nor one of these. */
	const char *schema;
	const char *extra;
};

#define ENTITY(fields_, type_, schema_, extra_) \
	{ (fields_), sizeof(fields_) / sizeof((fields_)[0]), sizeof(type_), (schema_), (extra_) }

/* One JSON object of rec's fields (NULL when out of memory). */
json_t *entity_json(const struct entity *e, const void *rec);
/* A JSON array of n records (recs: an array of e->size bytes each). */
json_t *entity_json_array(const struct entity *e, const void *recs, size_t n);

/* The text table: a head line, then a line per record, each line after indent. */
void entity_text_head(const struct entity *e, const char *indent, struct buf *b);
void entity_text_row(const struct entity *e, const void *rec, const char *indent,
		     struct buf *b);
void entity_text_table(const struct entity *e, const void *recs, size_t n, const char *indent,
		       struct buf *b);
/* A line of the text table from a JSON object that entity_json made (or another claimd, of
 * this version or another, wrote): a member missing or of another type reads as none. */
void entity_text_row_json(const struct entity *e, json_t *obj, const char *indent,
			  struct buf *b);

/* One record as "name: value" lines, every field (its JSON name; none as "-"). */
void entity_text_fields(const struct entity *e, const void *rec, struct buf *b);
/* Its fields with a value as "name         value" lines (the name padded to 13), in order;
 * none left out (a job's page). */
void entity_text_lines(const struct entity *e, const void *rec, struct buf *b);

/* s as a JSON string, invalid UTF-8 (a message a server or another program wrote) as U+FFFD;
 * NULL when out of memory. */
json_t *entity_string(const char *s);

/* v compact and a newline onto b (null when v is NULL: out of memory); v is released. */
void entity_dump(json_t *v, struct buf *b);

#endif
