/* bench_plugin — the so: handler tools/bench runs (built by meson as a shared module, not
 * installed): handle() waits sleep_ms milliseconds without using the CPU, then returns done.
 *
 *     claimd --handler 'so:build/tools/bench_plugin.so'              returns at once
 *     claimd --handler 'so:build/tools/bench_plugin.so sleep_ms=50'  waits 50 ms per item
 *
 * A payload with "sleep_ms":N in it waits N ms instead (the bench's I/O-bound rows carry
 * {"sleep_ms":50}, as they do for the pipe: co-processes). Nothing is kept between calls
 * but the parsed arguments, which handle only reads: safe however many items a worker runs
 * at once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <claimd/handler.h>

#define BENCH_MAX_SLEEP_MS 600000L

struct bench {
	long sleep_ms;
};

/* The number after key= in text (up to len bytes), or -1 when absent or not a number in
 * 0..BENCH_MAX_SLEEP_MS. */
static long bench_number_after(const char *text, size_t len, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i + klen < len; i++) {
		long v = 0;
		size_t j = i + klen;

		if (memcmp(text + i, key, klen) != 0)
			continue;
		while (j < len && text[j] == ' ')
			j++;
		if (j >= len || text[j] < '0' || text[j] > '9')
			return -1;
		while (j < len && text[j] >= '0' && text[j] <= '9' && v <= BENCH_MAX_SLEEP_MS)
			v = v * 10 + (text[j++] - '0');
		return v <= BENCH_MAX_SLEEP_MS ? v : -1;
	}
	return -1;
}

static int bench_init(struct claimd_plugin_ctx *ctx)
{
	struct bench *b = calloc(1, sizeof(*b));

	if (!b) {
		snprintf(ctx->error, sizeof(ctx->error), "out of memory");
		return -1;
	}
	if (strstr(ctx->args, "sleep_ms=")) {
		b->sleep_ms = bench_number_after(ctx->args, strlen(ctx->args), "sleep_ms=");
		if (b->sleep_ms < 0) {
			snprintf(ctx->error, sizeof(ctx->error),
				 "sleep_ms= takes milliseconds, 0..%ld: '%s'", BENCH_MAX_SLEEP_MS,
				 ctx->args);
			free(b);
			return -1;
		}
	}
	ctx->user = b;
	return 0;
}

static void bench_handle(const struct claimd_job *job, struct claimd_result *res)
{
	const struct bench *b = job->user;
	long ms = b->sleep_ms;
	struct timespec ts;

	if (job->payload_len > 0) {
		long p = bench_number_after((const char *)job->payload, job->payload_len,
					    "\"sleep_ms\":");
		if (p >= 0)
			ms = p;
	}
	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	(void)res;
}

static void bench_fini(struct claimd_plugin_ctx *ctx)
{
	free(ctx->user);
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "bench",
	.init = bench_init,
	.handle = bench_handle,
	.fini = bench_fini,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
