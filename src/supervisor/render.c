#include "supervisor/render.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "supervisor/entity.h"
#include "supervisor/status.h"

void render_json_bytes(struct buf *b, const void *s, size_t n)
{
	char *tmp = malloc(JSON_ESCAPE_MAX(n) + 1);

	if (!tmp) {
		buf_puts(b, "null");
		return;
	}
	buf_puts(b, "\"");
	buf_append(b, tmp, json_escape(s, n, tmp));
	buf_puts(b, "\"");
	free(tmp);
}

static void json_time(struct buf *b, const char *name, const char *t)
{
	buf_printf(b, ",\"%s\":", name);
	if (*t)
		buf_json_str(b, t);
	else
		buf_puts(b, "null");
}

static void json_text_or_null(struct buf *b, const char *name, const char *t)
{
	json_time(b, name, t ? t : "");
}

/* ,"name":<value>: s[0..n) as it is when json says it is JSON and it parses as one value
 * (a row may have been written by anyone), else as a string when it is UTF-8, else as
 * "name_b64"; null when s is NULL. */
static void json_value(struct buf *b, const char *name, const void *s, size_t n, bool json)
{
	json_t *v = json && s ? json_loadb(s, n, JSON_DECODE_ANY, NULL) : NULL;

	if (!s) {
		buf_printf(b, ",\"%s\":null", name);
	} else if (v) {
		buf_printf(b, ",\"%s\":", name);
		buf_append(b, s, n);
	} else if (json_utf8_valid(s, n)) {
		buf_printf(b, ",\"%s\":", name);
		render_json_bytes(b, s, n);
	} else {
		char *tmp = malloc(JSON_BASE64_LEN(n));
		buf_printf(b, ",\"%s\":null,\"%s_b64\":\"", name, name);
		if (tmp)
			buf_append(b, tmp, json_base64(s, n, tmp));
		buf_puts(b, "\"");
		free(tmp);
	}
	json_decref(v);
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

static void job_object(const struct store_job *j, struct buf *b)
{
	size_t preview = preview_len(j);

	buf_printf(b, "{\"id\":%llu,\"queue\":", (unsigned long long)j->id);
	buf_json_str(b, j->queue);
	buf_printf(b, ",\"state\":\"%s\",\"attempts\":%u,\"max_attempts\":%u,\"priority\":%d",
		   j->state, j->attempts, j->max_attempts, j->priority);
	if (j->period_s >= 0)
		buf_printf(b, ",\"period_s\":%lld", (long long)j->period_s);
	else
		buf_puts(b, ",\"period_s\":null");
	if (j->timeout_s >= 0)
		buf_printf(b, ",\"timeout_s\":%lld", (long long)j->timeout_s);
	else
		buf_puts(b, ",\"timeout_s\":null");
	json_time(b, "run_at", j->run_at);
	json_time(b, "visible_at", j->visible_at);
	json_time(b, "created_at", j->created_at);
	json_time(b, "claimed_at", j->claimed_at);
	json_time(b, "finished_at", j->finished_at);
	json_text_or_null(b, "claimed_by", j->claimed_by);
	json_text_or_null(b, "group", j->group_key);
	if (j->group_key[0])
		buf_printf(b, ",\"group_seq\":%llu", (unsigned long long)j->group_seq);
	json_text_or_null(b, "dedupe", j->dedupe_key);
	buf_puts(b, ",\"last_error\":");
	if (j->last_error)
		render_json_bytes(b, j->last_error, strlen(j->last_error));
	else
		buf_puts(b, "null");
	json_text_or_null(b, "content_type", j->content_type);
	json_text_or_null(b, "traceparent", j->traceparent);
	if (!j->payload || json_utf8_valid(j->payload, preview)) {
		buf_puts(b, ",\"payload\":");
		render_json_bytes(b, j->payload ? j->payload : (const unsigned char *)"", preview);
	} else {
		char *tmp = malloc(JSON_BASE64_LEN(j->payload_len));
		buf_puts(b, ",\"payload_b64\":\"");
		if (tmp)
			buf_append(b, tmp, json_base64(j->payload, j->payload_len, tmp));
		buf_puts(b, "\"");
		free(tmp);
	}
	buf_printf(b, ",\"payload_bytes\":%llu,\"payload_truncated\":%s",
		   (unsigned long long)j->payload_size,
		   j->payload_size > j->payload_len ? "true" : "false");
	json_value(b, "result", j->result, j->result_len,
		   !strcmp(j->result_type, "application/json"));
	json_text_or_null(b, "result_type", j->result_type);
	json_value(b, "progress", j->progress, j->progress ? strlen(j->progress) : 0, true);
	buf_puts(b, "}");
}

void render_job_json(const struct store_job *j, struct buf *b)
{
	job_object(j, b);
	buf_puts(b, "\n");
}

void render_jobs_json(const struct store_job *jobs, size_t n, struct buf *b)
{
	buf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_puts(b, ",");
		job_object(&jobs[i], b);
	}
	buf_puts(b, "]\n");
}

void render_jobs_text(const struct store_job *jobs, size_t n, struct buf *b)
{
	buf_printf(b, "%-10s %-16s %-8s %-9s %-26s %s\n", "ID", "QUEUE", "STATE", "ATTEMPTS",
		   "FINISHED", "LAST_ERROR");
	for (size_t i = 0; i < n; i++) {
		const struct store_job *j = &jobs[i];
		buf_printf(b, "%-10llu %-16s %-8s %4u/%-4u %-26s ", (unsigned long long)j->id,
			   j->queue, j->state, j->attempts, j->max_attempts,
			   j->finished_at[0] ? j->finished_at : "-");
		/* The start of the error, on one line. */
		size_t k = 0;
		for (const char *p = j->last_error ? j->last_error : "-"; *p && k < 80; p++, k++)
			buf_append(b, *p == '\n' || *p == '\r' || *p == '\t' ? " " : p, 1);
		buf_puts(b, "\n");
	}
}

static void text_line(struct buf *b, const char *name, const char *value)
{
	if (value && *value)
		buf_printf(b, "%-13s %s\n", name, value);
}

void render_job_text(const struct store_job *j, struct buf *b)
{
	render_job_text_fields(j, b);
	render_job_text_payload(j, b);
}

void render_job_text_fields(const struct store_job *j, struct buf *b)
{
	buf_printf(b, "%-13s %llu\n%-13s %s\n%-13s %s\n%-13s %u of %u\n%-13s %d\n", "id",
		   (unsigned long long)j->id, "queue", j->queue, "state", j->state, "attempts",
		   j->attempts, j->max_attempts, "priority", j->priority);
	if (j->period_s >= 0)
		buf_printf(b, "%-13s %lld s\n", "period", (long long)j->period_s);
	if (j->timeout_s >= 0)
		buf_printf(b, "%-13s %lld s\n", "timeout", (long long)j->timeout_s);
	text_line(b, "created_at", j->created_at);
	text_line(b, "run_at", j->run_at);
	text_line(b, "visible_at", j->visible_at);
	text_line(b, "claimed_at", j->claimed_at);
	text_line(b, "claimed_by", j->claimed_by);
	text_line(b, "finished_at", j->finished_at);
	if (j->group_key[0])
		buf_printf(b, "%-13s %s #%llu\n", "group", j->group_key,
			   (unsigned long long)j->group_seq);
	text_line(b, "dedupe", j->dedupe_key);
	if (j->last_error) {
		/* One line: the error's line breaks would look like more fields. */
		buf_printf(b, "%-13s ", "last_error");
		for (const char *p = j->last_error; *p; p++)
			buf_append(b, *p == '\n' || *p == '\r' ? " " : p, 1);
		buf_puts(b, "\n");
	}
	buf_printf(b, "%-13s %llu bytes%s\n", "payload", (unsigned long long)j->payload_size,
		   j->payload_size > j->payload_len ? " (the start below)" : "");
	text_line(b, "content_type", j->content_type);
	text_line(b, "traceparent", j->traceparent);
	text_line(b, "progress", j->progress);
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
	  prec, NULL }

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
static const struct entity queue_entity = ENTITY(queue_fields, struct store_queue);

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
	  offsetof(struct store_supervisor, member), prec, NULL }

static const struct entity_field supervisor_fields[] = {
	SF("id", NULL, 0, STR, ALWAYS, id, 0),
	SF("host", "HOST", -20, STR, ALWAYS, host, 0),
	SF("pid", "PID", 8, U32, ALWAYS, pid, 0),
	SF("version", "VERSION", -8, STR, ALWAYS, version, 0),
	SF("queues", "QUEUES", -20, STR, ALWAYS, queues, 0),
	SF("http", "HTTP", -22, STR, ZERO, http, 0),
	SF("started_at", "STARTED", -26, STR, ZERO, started_at, 0),
	SF("seen_at", NULL, 0, STR, ZERO, seen_at, 0),
	SF("seen_ago_s", "SEEN_AGO_S", 10, REAL, ALWAYS, seen_ago_s, 1),
	{ "lost", "STATE", -5, ENTITY_BOOL, ENTITY_ALWAYS, offsetof(struct store_supervisor, lost),
	  0, "lost|live" },
	SF("status", NULL, 0, JSON, ZERO, workers, 0),
};
static const struct entity supervisor_entity = ENTITY(supervisor_fields, struct store_supervisor);

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
