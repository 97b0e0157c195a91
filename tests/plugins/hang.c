/* A test plugin that logs every item and completes it, except payload "hang", on which it
 * sleeps for 10 minutes (past any test's --timeout). */
#include "plugin_log.h"

static int hang_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void hang_handle(const struct claimd_job *job, struct claimd_result *res)
{
	plugin_log_event(job, "start");
	if (payload_is(job, "hang"))
		sleep(600);
	plugin_log_event(job, "end");
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-hang",
	.init = hang_init,
	.handle = hang_handle,
	.fini = plugin_log_close,
};

const struct claimd_plugin *claimd_plugin_v2(void)
{
	return &plugin;
}
