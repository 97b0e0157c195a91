#include "supervisor/render.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

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

/* One setting's number, or what says it is not set: null in JSON, "-" in text. */
static void setting(struct buf *b, bool json, bool set, long v)
{
	if (set)
		buf_printf(b, "%ld", v);
	else
		buf_puts(b, json ? "null" : "-");
}

void render_backoff_text(const struct store_backoff *bo, struct buf *b)
{
	buf_puts(b, " retry_base_ms ");
	setting(b, false, bo->base_ms > 0, (long)bo->base_ms);
	buf_puts(b, " retry_max_ms ");
	setting(b, false, bo->max_ms > 0, (long)bo->max_ms);
	buf_puts(b, " retry_jitter_pct ");
	setting(b, false, bo->jitter_pct >= 0, bo->jitter_pct);
}

void render_backoff_json(const struct store_backoff *bo, struct buf *b)
{
	buf_puts(b, ",\"retry_base_ms\":");
	setting(b, true, bo->base_ms > 0, (long)bo->base_ms);
	buf_puts(b, ",\"retry_max_ms\":");
	setting(b, true, bo->max_ms > 0, (long)bo->max_ms);
	buf_puts(b, ",\"retry_jitter_pct\":");
	setting(b, true, bo->jitter_pct >= 0, bo->jitter_pct);
}

void render_queues_text(const struct store_queue *qs, size_t n, struct buf *b)
{
	buf_printf(b, "%-20s %10s %10s %10s %10s %10s %-7s %15s %s\n", "QUEUE", "READY", "CLAIMED",
		   "DONE", "DEAD", "OLDEST_S", "PAUSED", "MIN_INTERVAL_MS",
		   "RETRY_BASE/MAX_MS/JITTER_PCT");
	for (size_t i = 0; i < n; i++) {
		const struct store_backoff *bo = &qs[i].backoff;
		buf_printf(b, "%-20s %10llu %10llu %10llu %10llu %10.1f %-7s %15u ", qs[i].name,
			   (unsigned long long)qs[i].ready, (unsigned long long)qs[i].claimed,
			   (unsigned long long)qs[i].done, (unsigned long long)qs[i].dead,
			   qs[i].oldest_ready_s, qs[i].paused ? "yes" : "no", qs[i].min_interval_ms);
		setting(b, false, bo->base_ms > 0, (long)bo->base_ms);
		buf_puts(b, "/");
		setting(b, false, bo->max_ms > 0, (long)bo->max_ms);
		buf_puts(b, "/");
		setting(b, false, bo->jitter_pct >= 0, bo->jitter_pct);
		buf_puts(b, "\n");
	}
}

void render_queues_json(const struct store_queue *qs, size_t n, struct buf *b)
{
	buf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
		buf_json_str(b, qs[i].name);
		buf_printf(b, ",\"ready\":%llu,\"claimed\":%llu,\"done\":%llu,\"dead\":%llu,"
			   "\"oldest_ready_s\":%.3f,\"paused\":%s,\"min_interval_ms\":%u",
			   (unsigned long long)qs[i].ready, (unsigned long long)qs[i].claimed,
			   (unsigned long long)qs[i].done, (unsigned long long)qs[i].dead,
			   qs[i].oldest_ready_s, qs[i].paused ? "true" : "false", qs[i].min_interval_ms);
		render_backoff_json(&qs[i].backoff, b);
		buf_puts(b, "}");
	}
	buf_puts(b, "]\n");
}

void render_supervisors_text(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	buf_printf(b, "%-20s %8s %-8s %-20s %-22s %-26s %9s %s\n", "HOST", "PID", "VERSION",
		   "QUEUES", "HTTP", "STARTED", "SEEN_AGO", "STATE");
	for (size_t i = 0; i < n; i++)
		buf_printf(b, "%-20s %8u %-8s %-20s %-22s %-26s %8.1fs %s\n", svs[i].host,
			   svs[i].pid, svs[i].version, svs[i].queues,
			   svs[i].http[0] ? svs[i].http : "-", svs[i].started_at, svs[i].seen_ago_s,
			   svs[i].lost ? "lost" : "live");
}

void render_supervisors_json(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	buf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		const struct store_supervisor *sv = &svs[i];
		buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
		buf_json_str(b, sv->id);
		buf_puts(b, ",\"host\":");
		buf_json_str(b, sv->host);
		buf_printf(b, ",\"pid\":%u,\"version\":", sv->pid);
		buf_json_str(b, sv->version);
		buf_puts(b, ",\"queues\":");
		buf_json_str(b, sv->queues);
		buf_puts(b, ",\"http\":");
		if (sv->http[0])
			buf_json_str(b, sv->http);
		else
			buf_puts(b, "null");
		json_time(b, "started_at", sv->started_at);
		json_time(b, "seen_at", sv->seen_at);
		buf_printf(b, ",\"seen_ago_s\":%.3f,\"lost\":%s,\"status\":", sv->seen_ago_s,
			   sv->lost ? "true" : "false");
		/* Written by a supervisor as JSON; anything else is passed on as a string. */
		if (sv->workers && sv->workers[0] == '{')
			buf_puts(b, sv->workers);
		else
			render_json_bytes(b, sv->workers ? sv->workers : "", sv->workers ? strlen(sv->workers) : 0);
		buf_puts(b, "}");
	}
	buf_puts(b, "]\n");
}

/* A worker's field from a supervisor's pool JSON, as text ("-" for null or missing). */
static const char *field(json_t *w, const char *name, char *out, size_t outlen)
{
	json_t *v = json_object_get(w, name);

	if (json_is_integer(v))
		snprintf(out, outlen, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(out, outlen, "%.2f", json_real_value(v));
	else if (json_is_string(v))
		snprintf(out, outlen, "%s", json_string_value(v));
	else
		snprintf(out, outlen, "-");
	return out;
}

void render_pools_text(const struct store_supervisor *svs, size_t n, struct buf *b)
{
	static const char *const cols[] = { "slot", "pid", "state", "inflight", "item", "item_ms",
					    "done", "failed", "restarts", "rtt_ms" };

	for (size_t i = 0; i < n; i++) {
		const struct store_supervisor *sv = &svs[i];
		json_t *pool = sv->workers ? json_loads(sv->workers, 0, NULL) : NULL;
		json_t *ws = json_object_get(pool, "workers");
		char v[10][64];

		buf_printf(b, "%s%s pid %u: %s, seen %.1f s ago; claimd %s, queues %s%s%s\n",
			   i ? "\n" : "", sv->host, sv->pid, sv->lost ? "LOST" : "live",
			   sv->seen_ago_s, sv->version, sv->queues, sv->http[0] ? ", http " : "",
			   sv->http);
		if (!json_is_array(ws) || json_array_size(ws) == 0) {
			buf_puts(b, "  (no pool reported)\n");
			json_decref(pool);
			continue;
		}
		buf_printf(b, "  %-4s %-8s %-13s %7s %-12s %9s %8s %7s %8s %9s\n", "SLOT", "PID",
			   "STATE", "RUNNING", "OLDEST", "FOR_MS", "DONE", "FAILED", "RESTARTS",
			   "RTT_MS");
		for (size_t k = 0; k < json_array_size(ws); k++) {
			json_t *w = json_array_get(ws, k);
			for (size_t c = 0; c < 10; c++)
				field(w, cols[c], v[c], sizeof(v[c]));
			buf_printf(b, "  %-4s %-8s %-13s %7s %-12s %9s %8s %7s %8s %9s\n", v[0], v[1],
				   v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
		}
		json_decref(pool);
	}
	if (n == 0)
		buf_puts(b, "no supervisor has written its row in the supervisors table yet\n");
}
