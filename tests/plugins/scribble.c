/* A test plugin (ABI 3, thread-safe) that stands for a handler corrupting its worker's memory:
 * payload "pgid:N" writes N as the process group of its own item into the scoreboard (the
 * memory the supervisor reads: common/scoreboard.h), then crashes (SIGSEGV), so that the
 * supervisor goes through what the dead worker left running. Other payloads complete. The
 * scoreboard is found as the worker mapped it (/proc/self/maps, "claimd-scoreboard"). */
#include "plugin_log.h"

#include "common/scoreboard.h"

static int *volatile nowhere;  /* NULL, but the compiler cannot know: a real SIGSEGV */

static struct sb_slot *scoreboard(void)
{
	char line[512];
	unsigned long start = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return NULL;
	while (!start && fgets(line, sizeof(line), f))
		if (strstr(line, "claimd-scoreboard"))
			start = strtoul(line, NULL, 16);
	fclose(f);
	return (struct sb_slot *)start;
}

static int scribble_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void scribble_handle(const struct claimd_job *job, struct claimd_result *res)
{
	struct sb_slot *all = scoreboard();
	char text[32] = "";
	int done = 0;

	(void)res;
	plugin_log_event(job, "start");
	if (job->payload_len < 5 || job->payload_len > 20 || memcmp(job->payload, "pgid:", 5))
		return;
	memcpy(text, job->payload + 5, job->payload_len - 5);
	for (unsigned s = 0; all && s < SCOREBOARD_SLOTS && !done; s++) {
		if (all[s].pid != (uint32_t)getpid())
			continue;
		for (unsigned i = 0; i < SCOREBOARD_ENTRIES; i++)
			if (all[s].entries[i].id == job->id) {
				all[s].entries[i].pgid = (int32_t)strtol(text, NULL, 10);
				done = 1;
			}
	}
	plugin_log_event(job, done ? "scribbled" : "not-found");
	*nowhere = 1;
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-scribble",
	.init = scribble_init,
	.handle = scribble_handle,
	.fini = plugin_log_close,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
