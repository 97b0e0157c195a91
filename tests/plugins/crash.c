/* A test plugin (ABI 3, thread-safe) that logs every item and completes it, except payload
 * "crash" or "crash:N" (after N ms), on which it dereferences NULL (SIGSEGV, taking its
 * worker down); "sleep:N" waits N ms first. */
#include "plugin_log.h"

static int *volatile nowhere;  /* NULL, but the compiler cannot know: a real SIGSEGV */

static int crash_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void crash_handle(const struct claimd_job *job, struct claimd_result *res)
{
	plugin_log_event(job, "start");
	plugin_sleep_if_asked(job, "sleep");
	if (payload_is(job, "crash") || plugin_sleep_if_asked(job, "crash"))
		*nowhere = 1;
	plugin_log_event(job, "end");
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-crash",
	.init = crash_init,
	.handle = crash_handle,
	.fini = plugin_log_close,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
