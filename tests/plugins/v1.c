/* A plugin built for ABI version 1 (claimd_plugin_v1, abi_version 1): it still loads, and
 * logs and completes every item (see plugin_log.h). */
#include "plugin_log.h"

static int v1_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void v1_handle(const struct claimd_job *job, struct claimd_result *res)
{
	(void)res;
	plugin_log_event(job, "v1");
}

static const struct claimd_plugin plugin = {
	.abi_version = 1,
	.name = "test-v1",
	.init = v1_init,
	.handle = v1_handle,
	.fini = plugin_log_close,
};

const struct claimd_plugin *claimd_plugin_v1(void);

const struct claimd_plugin *claimd_plugin_v1(void)
{
	return &plugin;
}
