/* render — rows and queues as claimctl prints them and as the HTTP API answers: text for
 * people, JSON for programs. Pure: appends to a buf. */
#ifndef CLAIMD_RENDER_H
#define CLAIMD_RENDER_H

#include <jansson.h>
#include <stddef.h>

#include "common/buf.h"
#include "store/store.h"

/* A row's JSON object (jansson; the caller owns it): the fields of render.c's job table, then
 * the payload's start as "payload" when it is UTF-8, else "payload_b64", with "payload_bytes"
 * (the whole payload's size) and "payload_truncated"; "result" as the JSON value it is (with
 * result_type application/json), else a string, else "result_b64"; "progress" likewise;
 * null for none. NULL when out of memory. */
json_t *render_job_object(const struct store_job *j);

void render_job_text(const struct store_job *j, struct buf *out);
/* Its two parts: a line per field with a value (the job table's, then the payload's size,
 * progress, result), and the payload's start (when it is text). */
void render_job_text_fields(const struct store_job *j, struct buf *out);
void render_job_text_payload(const struct store_job *j, struct buf *out);
/* render_job_object, compact, and a newline. */
void render_job_json(const struct store_job *j, struct buf *out);

/* The queues (store_queue), described once in render.c's queue table: a text table; a JSON
 * array of objects: name, ready, claimed, done, dead, oldest_ready_s, paused,
 * min_interval_ms, retry_base_ms, retry_max_ms, retry_jitter_pct (null: not set). */
void render_queues_text(const struct store_queue *qs, size_t n, struct buf *out);
void render_queues_json(const struct store_queue *qs, size_t n, struct buf *out);
/* A queue's back-off, the retry_* fields of the queue's table: "queue NAME retry_base_ms B
 * retry_max_ms M retry_jitter_pct J" ("-" where not set) and a newline; or one JSON object
 * {"queue":NAME,"retry_base_ms":B,...} (null where not set) and a newline. */
void render_backoff_text(const char *queue, const struct store_backoff *bo, struct buf *b);
void render_backoff_json(const char *queue, const struct store_backoff *bo, struct buf *b);

void render_supervisors_text(const struct store_supervisor *svs, size_t n, struct buf *out);
/* Every supervisor and its pool (claimctl status --all): a line each, and a table of its
 * workers read from its row's JSON. */
void render_pools_text(const struct store_supervisor *svs, size_t n, struct buf *out);
/* A JSON array of objects: id, host, pid, version, queues, http (null: none), started_at,
 * seen_at, seen_ago_s, lost, and status: its pool as claimctl status --json has it. */
void render_supervisors_json(const struct store_supervisor *svs, size_t n, struct buf *out);

/* Rows as claimctl jobs prints them: a table; a JSON array of render_job_json's objects. */
void render_jobs_text(const struct store_job *jobs, size_t n, struct buf *out);
void render_jobs_json(const struct store_job *jobs, size_t n, struct buf *out);

#endif
