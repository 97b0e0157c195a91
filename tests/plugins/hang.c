/* A test plugin (ABI 3, thread-safe) that logs every item and completes it, except payload
 * "hang", on which it sleeps for 10 minutes (past any test's --timeout and kill grace,
 * ignoring job->cancelled()), and "polite", on which it waits until job->cancelled() says
 * to stop (logging "cancelled" then); "sleep:N" waits N ms first. */
#include "plugin_log.h"

static int hang_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void hang_handle(const struct claimd_job *job, struct claimd_result *res)
{
	plugin_log_event(job, "start");
	plugin_sleep_if_asked(job, "sleep");
	if (payload_is(job, "hang"))
		sleep(600);
	if (payload_is(job, "polite")) {
		while (!job->cancelled(job))
			usleep(10000);
		plugin_log_event(job, "cancelled");
	}
	plugin_log_event(job, "end");
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-hang",
	.init = hang_init,
	.handle = hang_handle,
	.fini = plugin_log_close,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
