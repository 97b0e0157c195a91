/* A test plugin that logs every item (see plugin_log.h) and completes it; payload "fail"
 * fails with an error, "later" asks to be retried in 100 ms. */
#include "plugin_log.h"

static int ok_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void ok_handle(const struct claimd_job *job, struct claimd_result *res)
{
	plugin_log_event(job, "start");
	if (payload_is(job, "fail")) {
		res->status = CLAIMD_FAIL;
		snprintf(res->error, sizeof(res->error), "ok plugin: failing item %llu as asked",
			 (unsigned long long)job->id);
	} else if (payload_is(job, "later")) {
		res->status = CLAIMD_RETRY_LATER;
		res->retry_in_ms = 100;
	}
	plugin_log_event(job, "end");
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-ok",
	.init = ok_init,
	.handle = ok_handle,
	.fini = plugin_log_close,
};

const struct claimd_plugin *claimd_plugin_v1(void)
{
	return &plugin;
}
