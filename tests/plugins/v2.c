/* A plugin built for ABI version 2 (claimd_plugin_v2, abi_version 2, no flags): it still
 * loads, and runs one item at a time whatever --concurrency says; it logs every item and
 * completes it, waiting N ms first for payload "sleep:N". */
#include "plugin_log.h"

const struct claimd_plugin *claimd_plugin_v2(void);

static int v2_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void v2_handle(const struct claimd_job *job, struct claimd_result *res)
{
	(void)res;
	plugin_log_event(job, "start");
	plugin_sleep_if_asked(job, "sleep");
	plugin_log_event(job, "end");
}

/* Version 2's struct: version 3's without its last field. */
static const struct {
	uint32_t abi_version;
	const char *name;
	int (*init)(struct claimd_plugin_ctx *ctx);
	void (*handle)(const struct claimd_job *job, struct claimd_result *res);
	void (*fini)(struct claimd_plugin_ctx *ctx);
} plugin = {
	.abi_version = 2,
	.name = "test-v2",
	.init = v2_init,
	.handle = v2_handle,
	.fini = plugin_log_close,
};

const struct claimd_plugin *claimd_plugin_v2(void)
{
	return (const struct claimd_plugin *)(const void *)&plugin;
}
