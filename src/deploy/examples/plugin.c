/* A so: handler plugin for claimd: loaded into each worker, handle() called once per item on
 * the worker's threads, up to --concurrency at once (it says it is thread-safe: it keeps no
 * state but what init made, which it only reads). Build it against the installed header:
 *
 *     cc -shared -fPIC $(pkg-config --cflags claimd-handler) -o example.so plugin.c
 *     claimd --handler 'so:/path/to/example.so greeting=hello' ...
 *
 * The text after the library's path reaches init as ctx->args. This one counts the payload's
 * bytes and its lines and keeps {"greeting":...,"bytes":N,"lines":N} as the row's result; an
 * empty payload fails (retried with back-off, dead after max_attempts). CLAIMD_RETRY_LATER
 * with retry_in_ms would run it again later without counting an attempt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <claimd/handler.h>

struct example {
	char greeting[64];
};

static int example_init(struct claimd_plugin_ctx *ctx)
{
	struct example *ex = calloc(1, sizeof(*ex));
	const char *g = strstr(ctx->args, "greeting=");

	if (!ex) {
		snprintf(ctx->error, sizeof(ctx->error), "out of memory");
		return -1;
	}
	snprintf(ex->greeting, sizeof(ex->greeting), "%.*s", g ? (int)strcspn(g + 9, " ") : 2,
		 g ? g + 9 : "hi");
	ctx->user = ex;
	/* It goes into JSON as it is: letters, digits, '-' and '_' only. */
	if (strspn(ex->greeting, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
	    != strlen(ex->greeting)) {
		snprintf(ctx->error, sizeof(ctx->error), "greeting=%s: letters, digits, - and _ only",
			 ex->greeting);
		return -1;
	}
	return 0;
}

static void example_handle(const struct claimd_job *job, struct claimd_result *res)
{
	const struct example *ex = job->user;
	size_t lines = 0;
	char text[200];
	int n;

	if (job->payload_len == 0) {
		res->status = CLAIMD_FAIL;
		snprintf(res->error, sizeof(res->error), "item %llu: empty payload (attempt %u of %u)",
			 (unsigned long long)job->id, job->attempt, job->max_attempts);
		return;
	}
	for (size_t i = 0; i < job->payload_len; i++) {
		lines += job->payload[i] == '\n';
		if (i % 65536 == 0 && job->cancelled(job)) {
			/* Past its deadline (or claimd stops): give up now rather than at the end. */
			res->status = CLAIMD_FAIL;
			snprintf(res->error, sizeof(res->error), "stopped after %zu bytes", i);
			return;
		}
		if (i % 65536 == 0) {
			char p[32];
			snprintf(p, sizeof(p), "%.2f", (double)i / (double)job->payload_len);
			job->progress(job, p);
		}
	}
	n = snprintf(text, sizeof(text), "{\"greeting\":\"%s\",\"bytes\":%zu,\"lines\":%zu}",
		     ex->greeting, job->payload_len, lines);
	if (job->set_result(job, text, (size_t)n, "application/json") < 0) {
		res->status = CLAIMD_FAIL;
		snprintf(res->error, sizeof(res->error), "set_result refused the result");
	}
}

static void example_fini(struct claimd_plugin_ctx *ctx)
{
	free(ctx->user);
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "example",
	.init = example_init,
	.handle = example_handle,
	.fini = example_fini,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
