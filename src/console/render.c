#include "console/render.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "console/entities.h"
#include "console/status.h"

/* ---- a job ---- */

#define JF(name, head, width, type, none, member) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct store_job, member), 0, \
	  NULL, NULL, 0 }

/* A row's fields as they are; its payload, result and progress are added by job_object (as
 * the JSON value, text or base64 they are). */
static const struct entity_field job_fields[] = {
	JF("id", "ID", -10, U64, ALWAYS, id),
	JF("queue", "QUEUE", -16, STR, ALWAYS, queue),
	JF("state", "STATE", -8, STATE, ALWAYS, state),
	JF("attempts", "ATTEMPTS", 8, U32, ALWAYS, attempts),
	JF("max_attempts", "MAX", 4, U32, ALWAYS, max_attempts),
	JF("priority", NULL, 0, INT, ALWAYS, priority),
	JF("period_s", NULL, 0, I64, NEG, period_s),
	JF("timeout_s", NULL, 0, I64, NEG, timeout_s),
	JF("created_at", NULL, 0, STR, ALWAYS, created_at),
	JF("run_at", NULL, 0, STR, ALWAYS, run_at),
	JF("visible_at", NULL, 0, STR, ZERO, visible_at),
	JF("claimed_at", NULL, 0, STR, ZERO, claimed_at),
	JF("claimed_by", NULL, 0, STR, ZERO, claimed_by),
	JF("finished_at", "FINISHED", -27, STR, ZERO, finished_at),
	JF("group", NULL, 0, STR, ZERO, group_key),
	JF("group_seq", NULL, 0, U64, ZERO, group_seq),
	JF("dedupe", NULL, 0, STR, ZERO, dedupe_key),
	JF("content_type", NULL, 0, STR, ZERO, content_type),
	JF("traceparent", NULL, 0, STR, ZERO, traceparent),
	JF("result_type", NULL, 0, STR, ZERO, result_type),
	JF("last_error", "LAST_ERROR", -1, PSTR, ALWAYS, last_error),
};
const struct entity job_entity = ENTITY(job_fields, struct store_job, "Job",
				       "payload,payload_b64,payload_bytes,payload_truncated,result,"
				       "result_b64,progress");

/* name: s[0..n) as the JSON value it is when json says it is JSON and it parses as one value
 * (a row may have been written by anyone), else as a string when it is UTF-8, else as
 * "name_b64"; null when s is NULL. */
static void set_value(json_t *o, const char *name, const void *s, size_t n, bool json)
{
	json_t *v = json && s ? json_loadb(s, n, JSON_DECODE_ANY, NULL) : NULL;
	char key[40];

	if (!v && s)
		v = json_stringn(s, n);   /* NULL unless it is UTF-8 */
	if (!v && s) {
		char *tmp = malloc(JSON_BASE64_LEN(n));
		snprintf(key, sizeof(key), "%s_b64", name);
		json_object_set_new(o, name, json_null());
		if (tmp)
			json_object_set_new(o, key, json_stringn(tmp, json_base64(s, n, tmp)));
		free(tmp);
		return;
	}
	json_object_set_new(o, name, v ? v : json_null());
}

/* The bytes of the payload's preview to show: all of them, but when the preview was cut in
 * the middle of a UTF-8 character, not that character's first bytes (so that a text payload
 * stays text). */
static size_t preview_len(const struct store_job *j)
{
	size_t n = j->payload_len;

	if (!j->payload || j->payload_size <= n || json_utf8_valid(j->payload, n))
		return n;
	for (size_t cut = 1; cut <= 3 && cut < n; cut++)
		if (json_utf8_valid(j->payload, n - cut))
			return n - cut;
	return n;
}

json_t *render_job_object(const struct store_job *j)
{
	json_t *o = entity_json(&job_entity, j);
	size_t preview = preview_len(j);

	if (!o)
		return NULL;
	if (!j->payload || json_utf8_valid(j->payload, preview)) {
		json_object_set_new(o, "payload", json_stringn(j->payload ? (const char *)j->payload :
							       "", j->payload ? preview : 0));
	} else {
		char *tmp = malloc(JSON_BASE64_LEN(j->payload_len));
		if (tmp)
			json_object_set_new(o, "payload_b64",
					    json_stringn(tmp, json_base64(j->payload, j->payload_len,
									  tmp)));
		free(tmp);
	}
	json_object_set_new(o, "payload_bytes", json_integer((json_int_t)j->payload_size));
	json_object_set_new(o, "payload_truncated", json_boolean(j->payload_size > j->payload_len));
	set_value(o, "result", j->result, j->result_len, !strcmp(j->result_type, "application/json"));
	set_value(o, "progress", j->progress, j->progress ? strlen(j->progress) : 0, true);
	return o;
}

void render_job_json(const struct store_job *j, struct buf *b)
{
	entity_dump(render_job_object(j), b);
}

void render_jobs_json(const struct store_job *jobs, size_t n, struct buf *b)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *o = render_job_object(&jobs[i]);
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	entity_dump(a, b);
}

void render_jobs_text(const struct store_job *jobs, size_t n, struct buf *b)
{
	entity_text_head(&job_entity, "", b);
	for (size_t i = 0; i < n; i++) {
		/* the start of the error, on one line */
		struct store_job j = jobs[i];
		char err[81] = "-";
		size_t k = 0;
		for (const char *p = j.last_error; p && *p && k < 80; p++)
			err[k++] = *p == '\n' || *p == '\r' || *p == '\t' ? ' ' : *p;
		if (k)
			err[k] = '\0';
		j.last_error = err;
		entity_text_row(&job_entity, &j, "", b);
	}
}

void render_job_text(const struct store_job *j, struct buf *b)
{
	render_job_text_fields(j, b);
	render_job_text_payload(j, b);
}

void render_job_text_fields(const struct store_job *j, struct buf *b)
{
	entity_text_lines(&job_entity, j, b);
	buf_printf(b, "%-13s %llu bytes%s\n", "payload", (unsigned long long)j->payload_size,
		   j->payload_size > j->payload_len ? " (the start below)" : "");
	if (j->progress)
		buf_printf(b, "%-13s %s\n", "progress", j->progress);
	if (j->result)
		buf_printf(b, "%-13s %zu bytes%s%s\n", "result", j->result_len,
			   j->result_type[0] ? " of " : "", j->result_type);
}

void render_job_text_payload(const struct store_job *j, struct buf *b)
{
	if (j->payload && json_utf8_valid(j->payload, preview_len(j))) {
		buf_append(b, j->payload, preview_len(j));
		buf_puts(b, "\n");
	}
}

/* ---- a queue ---- */

#define QF(name, head, width, type, none, member, prec) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, offsetof(struct store_queue, member), \
	  prec, NULL, NULL, 0 }

static const struct entity_field queue_fields[] = {
	QF("name", "QUEUE", -20, STR, ALWAYS, name, 0),
	QF("ready", "READY", 10, U64, ALWAYS, rows[ROW_READY], 0),
	QF("claimed", "CLAIMED", 10, U64, ALWAYS, rows[ROW_CLAIMED], 0),
	QF("done", "DONE", 10, U64, ALWAYS, rows[ROW_DONE], 0),
	QF("dead", "DEAD", 10, U64, ALWAYS, rows[ROW_DEAD], 0),
	QF("oldest_ready_s", "OLDEST_S", 10, REAL, ALWAYS, oldest_ready_s, 3),
	QF("paused", "PAUSED", 6, BOOL, ALWAYS, paused, 0),
	QF("min_interval_ms", "MIN_INTERVAL_MS", 15, U32, ALWAYS, min_interval_ms, 0),
	QF("retry_base_ms", "RETRY_BASE_MS", 13, U32, ZERO, backoff.base_ms, 0),
	QF("retry_max_ms", "RETRY_MAX_MS", 12, U32, ZERO, backoff.max_ms, 0),
	QF("retry_jitter_pct", "JITTER_PCT", 10, INT, NEG, backoff.jitter_pct, 0),
};
const struct entity queue_entity = ENTITY(queue_fields, struct store_queue, "Queue", NULL);

void render_queues_text(const struct store_queue *qs, size_t n, struct buf *b)
{
	entity_text_table(&queue_entity, qs, n, "", b);
}

void render_queues_json(const struct store_queue *qs, size_t n, struct buf *b)
{
	entity_dump(entity_json_array(&queue_entity, qs, n), b);
}

/* A queue's back-off: the queue's table's retry_* fields of a queue with only those. */
static json_t *backoff_json(const char *queue, const struct store_backoff *bo)
{
	struct store_queue q = { .backoff = *bo };
	json_t *all, *o = json_object();

	snprintf(q.name, sizeof(q.name), "%s", queue);
	all = entity_json(&queue_entity, &q);
	if (o && all) {
		json_object_set(o, "queue", json_object_get(all, "name"));
		for (size_t i = 0; i < queue_entity.nfields; i++)
			if (!strncmp(queue_fields[i].name, "retry_", 6))
				json_object_set(o, queue_fields[i].name,
						json_object_get(all, queue_fields[i].name));
	}
	json_decref(all);
	return o;
}

void render_backoff_text(const char *queue, const struct store_backoff *bo, struct buf *b)
{
	json_t *o = backoff_json(queue, bo);
	const char *k;
	json_t *v;

	buf_printf(b, "queue %s", queue);
	json_object_foreach(o, k, v) {
		if (strcmp(k, "queue"))
			buf_printf(b, " %s %s", k, json_is_integer(v) ? "" : "-");
		if (json_is_integer(v))
			buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	}
	buf_puts(b, "\n");
	json_decref(o);
}

void render_backoff_json(const char *queue, const struct store_backoff *bo, struct buf *b)
{
	entity_dump(backoff_json(queue, bo), b);
}

/* ---- a supervisor ---- */

#define SF(name, head, width, type, none, member, prec) \
	{ name, head, width, ENTITY_##type, ENTITY_##none, \
	  offsetof(struct store_supervisor, member), prec, NULL, NULL, 0 }

static const struct entity_field supervisor_fields[] = {
	SF("id", NULL, 0, STR, ALWAYS, id, 0),
	SF("host", "HOST", -20, STR, ALWAYS, host, 0),
	SF("pid", "PID", 8, U32, ALWAYS, pid, 0),
	SF("version", "VERSION", -8, STR, ALWAYS, version, 0),
	SF("queues", "QUEUES", -20, STR, ALWAYS, queues, 0),
	SF("http", "HTTP", -22, STR, ZERO, http, 0),
	SF("started_at", "STARTED", -26, STR, ALWAYS, started_at, 0),
	SF("seen_at", NULL, 0, STR, ALWAYS, seen_at, 0),
	SF("seen_ago_s", "SEEN_AGO_S", 10, REAL, ALWAYS, seen_ago_s, 1),
	{ "lost", "STATE", -5, ENTITY_BOOL, ENTITY_ALWAYS, offsetof(struct store_supervisor, lost),
	  0, "lost|live", NULL, 0 },
	SF("status", NULL, 0, JSON, ZERO, workers, 0),
};
const struct entity supervisor_entity = ENTITY(supervisor_fields, struct store_supervisor,
					      "Supervisor", NULL);

void render_supervisors_text(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	entity_text_table(&supervisor_entity, svs, n, "", b);
}

void render_supervisors_json(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	entity_dump(entity_json_array(&supervisor_entity, svs, n), b);
}

void render_pools_text(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	for (size_t i = 0; i < n; i++) {
		const struct store_supervisor *sv = &svs[i];
		json_t *pool = sv->workers ? json_loads(sv->workers, 0, NULL) : NULL;
		json_t *ws = json_object_get(pool, "workers");

		buf_printf(b, "%s%s pid %u: %s, seen %.1f s ago; claimd %s, queues %s%s%s\n",
			   i ? "\n" : "", sv->host, sv->pid, sv->lost ? "LOST" : "live",
			   sv->seen_ago_s, sv->version, sv->queues, sv->http[0] ? ", http " : "",
			   sv->http);
		if (!json_is_array(ws) || json_array_size(ws) == 0) {
			buf_puts(b, "  (no pool reported)\n");
			json_decref(pool);
			continue;
		}
		status_worker_head("  ", b);
		for (size_t k = 0; k < json_array_size(ws); k++)
			status_worker_row_json(json_array_get(ws, k), "  ", b);
		json_decref(pool);
	}
	if (n == 0)
		buf_puts(b, "no supervisor has written its row in the supervisors table yet\n");
}
