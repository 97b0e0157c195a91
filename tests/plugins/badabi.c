/* A test plugin built for another ABI version: claimd must refuse to start with it. */
#include <claimd/handler.h>

static void bad_handle(const struct claimd_job *job, struct claimd_result *res)
{
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION + 98,
	.name = "test-badabi",
	.handle = bad_handle,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
