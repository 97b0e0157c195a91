/* The lines a pipe: co-process reads, written in two passes: measured (out NULL), then
 * written into a buffer of that size: both passes get the same now_ms, so they agree. */
#include "worker/pipe_request.h"

#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "worker/handler_util.h"

static const char *const cancel_names[PIPE_CANCEL_COUNT] = {
	"", "timeout", "shutdown", "cancelled",
};

const char *pipe_cancel_name(enum pipe_cancel why)
{
	return (unsigned)why < PIPE_CANCEL_COUNT ? cancel_names[why] : "";
}

static size_t emit(char *out, size_t at, const void *s, size_t n)
{
	if (out)
		memcpy(out + at, s, n);
	return n;
}

#define EMIT_LIT(out, at, lit) emit(out, at, lit, sizeof(lit) - 1)

static size_t emit_str(char *out, size_t at, const char *s, size_t n)
{
	size_t w = EMIT_LIT(out, at, "\"");

	w += json_escape(s, n, out ? out + at + w : NULL);
	return w + EMIT_LIT(out, at + w, "\"");
}

static size_t emit_payload(char *out, size_t w0, const struct handler_job *job)
{
	const unsigned char *pl = job->payload ? job->payload : (const unsigned char *)"";
	size_t w = w0;

	if (json_utf8_valid(pl, job->payload_len)) {
		w += EMIT_LIT(out, w, ",\"payload\":");
		w += emit_str(out, w, (const char *)pl, job->payload_len);
	} else {
		w += EMIT_LIT(out, w, ",\"payload\":null,\"payload_b64\":\"");
		w += json_base64(pl, job->payload_len, out ? out + w : NULL);
		w += EMIT_LIT(out, w, "\"");
	}
	return w - w0;
}

size_t pipe_request(const struct handler_job *job, int64_t now_ms, char *out)
{
	int64_t left = job->deadline_ms - now_ms;
	char num[240], when[40] = "null";
	size_t w = 0;
	int n;

	n = snprintf(num, sizeof(num), "{\"id\":%llu,\"queue\":", (unsigned long long)job->id);
	w += emit(out, w, num, (size_t)n);
	w += emit_str(out, w, job->queue, strlen(job->queue));
	w += EMIT_LIT(out, w, ",\"group\":");
	if (job->group)
		w += emit_str(out, w, job->group, strlen(job->group));
	else
		w += EMIT_LIT(out, w, "null");
	if (job->enqueued_at_ms > 0) {
		handler_util_iso_time(job->enqueued_at_ms, when + 1, sizeof(when) - 2);
		when[0] = '"';
		strcat(when, "\"");
	}
	n = snprintf(num, sizeof(num), ",\"attempt\":%u,\"max_attempts\":%u,\"seq\":%llu,"
		     "\"enqueued_at\":%s,\"deadline_ms\":%lld,\"deadline_at\":%lld",
		     job->attempt, job->max_attempts, (unsigned long long)job->seq, when,
		     (long long)(left > 0 ? left : 0), (long long)job->deadline_ms);
	w += emit(out, w, num, (size_t)n);
	w += EMIT_LIT(out, w, ",\"content_type\":");
	if (job->content_type)
		w += emit_str(out, w, job->content_type, strlen(job->content_type));
	else
		w += EMIT_LIT(out, w, "null");
	if (job->traceparent) {
		w += EMIT_LIT(out, w, ",\"traceparent\":");
		w += emit_str(out, w, job->traceparent, strlen(job->traceparent));
	}
	w += emit_payload(out, w, job);
	return w + EMIT_LIT(out, w, "}\n");
}

size_t pipe_request_cancel(uint64_t id, enum pipe_cancel why, char *out)
{
	char line[120];
	int n = snprintf(line, sizeof(line), "{\"id\":%llu,\"cancel\":true,\"reason\":\"%s\"}\n",
			 (unsigned long long)id, pipe_cancel_name(why));

	return emit(out, 0, line, (size_t)n);
}
