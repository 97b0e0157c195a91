/* test_pipe_request — the lines a pipe: co-process reads (worker/pipe_request): golden bytes
 * for a request (text payload, binary payload as base64, group, type, traceparent) and for
 * each cancel reason; the measuring pass and the writing pass agree byte for byte at every
 * time left, digit boundaries included (a line measured at 1000 ms left and written at 999
 * once sent a stray byte that began the next line); every line is one JSON object (jansson)
 * ending in its only newline. Exits 1 on a failure. */
#include "worker/pipe_request.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NOW 1795655877000LL

/* The line for job at now, written into a buffer one byte longer than measured (poisoned),
 * checked to fill exactly what was measured. Returns it malloc'd, NUL-terminated. */
static char *line_at(const struct handler_job *job, int64_t now)
{
	size_t n = pipe_request(job, now, NULL);
	char *buf = malloc(n + 2);
	size_t w;

	memset(buf, '#', n + 2);
	w = pipe_request(job, now, buf);
	CHECK(w == n, "job %llu at deadline-%lld: measured %zu bytes, wrote %zu",
	      (unsigned long long)job->id, (long long)(job->deadline_ms - now), n, w);
	CHECK(buf[n] == '#', "job %llu: wrote past what it measured", (unsigned long long)job->id);
	buf[n] = '\0';
	return buf;
}

static void check_one_object(const char *line, const char *what)
{
	size_t n = strlen(line);
	json_error_t err;
	json_t *v;

	CHECK(n > 0 && line[n - 1] == '\n', "%s: does not end in a newline", what);
	CHECK(strchr(line, '\n') == line + n - 1, "%s: a newline inside the line", what);
	v = json_loads(line, JSON_REJECT_DUPLICATES, &err);
	CHECK(v && json_is_object(v), "%s: not one JSON object: %s", what, err.text);
	json_decref(v);
}

static void golden(void)
{
	static const unsigned char bin[] = { 0x00, 0xff, 0x10 };
	struct handler_job text = {
		.id = 42, .queue = "mail", .group = "cart-\"7\"", .attempt = 2, .max_attempts = 5,
		.seq = 3, .enqueued_at_ms = 1795655876123LL, .payload = (const unsigned char *)"h\xc3\xa9\n",
		.payload_len = 4, .content_type = "text/plain",
		.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		.timeout_ms = 1000, .deadline_ms = NOW + 1000,
	};
	struct handler_job binary = {
		.id = 7, .queue = "default", .attempt = 1, .max_attempts = 1, .payload = bin,
		.payload_len = sizeof(bin), .timeout_ms = 5, .deadline_ms = NOW - 5,
	};
	static const struct { enum pipe_cancel why; const char *want; } cancels[] = {
		{ PIPE_CANCEL_TIMEOUT, "{\"id\":42,\"cancel\":true,\"reason\":\"timeout\"}\n" },
		{ PIPE_CANCEL_SHUTDOWN, "{\"id\":42,\"cancel\":true,\"reason\":\"shutdown\"}\n" },
		{ PIPE_CANCEL_OPERATOR, "{\"id\":42,\"cancel\":true,\"reason\":\"cancelled\"}\n" },
	};
	char *got = line_at(&text, NOW);
	const char *want = "{\"id\":42,\"queue\":\"mail\",\"group\":\"cart-\\\"7\\\"\",\"attempt\":2,"
		"\"max_attempts\":5,\"seq\":3,\"enqueued_at\":\"2026-11-26T01:17:56.123Z\","
		"\"deadline_ms\":1000,\"deadline_at\":1795655878000,\"content_type\":\"text/plain\","
		"\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\","
		"\"payload\":\"h\xc3\xa9\\n\"}\n";

	CHECK(strcmp(got, want) == 0, "text job:\n got  %s want %s", got, want);
	check_one_object(got, "text job");
	free(got);
	got = line_at(&binary, NOW);
	want = "{\"id\":7,\"queue\":\"default\",\"group\":null,\"attempt\":1,\"max_attempts\":1,"
		"\"seq\":0,\"enqueued_at\":null,\"deadline_ms\":0,\"deadline_at\":1795655876995,"
		"\"content_type\":null,\"payload\":null,\"payload_b64\":\"AP8Q\"}\n";
	CHECK(strcmp(got, want) == 0, "binary job (past its deadline):\n got  %s want %s", got, want);
	check_one_object(got, "binary job");
	free(got);
	for (size_t i = 0; i < sizeof(cancels) / sizeof(cancels[0]); i++) {
		char buf[128] = { 0 };
		size_t n = pipe_request_cancel(42, cancels[i].why, NULL);

		CHECK(n == strlen(cancels[i].want), "cancel %s: measured %zu",
		      pipe_cancel_name(cancels[i].why), n);
		CHECK(pipe_request_cancel(42, cancels[i].why, buf) == n &&
		      strcmp(buf, cancels[i].want) == 0, "cancel %s: got %s",
		      pipe_cancel_name(cancels[i].why), buf);
		check_one_object(buf, pipe_cancel_name(cancels[i].why));
	}
	CHECK(strcmp(pipe_cancel_name(PIPE_CANCEL_NONE), "") == 0 &&
	      strcmp(pipe_cancel_name(PIPE_CANCEL_COUNT), "") == 0, "names out of range");
}

/* Every time left from 0 to 100,001 ms around each digit boundary: both passes agree. */
static void passes_agree(void)
{
	static const int64_t bounds[] = { 0, 10, 100, 1000, 10000, 100000 };
	struct handler_job job = {
		.id = 9, .queue = "default", .attempt = 1, .max_attempts = 3,
		.payload = (const unsigned char *)"x", .payload_len = 1, .timeout_ms = 100000,
		.deadline_ms = NOW,
	};

	for (size_t b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		for (int64_t d = -2; d <= 2; d++) {
			char *got = line_at(&job, NOW - bounds[b] + d);

			check_one_object(got, "a line near a digit boundary");
			free(got);
		}
	}
}

int main(void)
{
	golden();
	passes_agree();
	if (failures == 0)
		printf("ok - pipe_request\n");
	return failures ? 1 : 0;
}
