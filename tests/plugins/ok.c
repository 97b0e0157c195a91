/* A test plugin (ABI 3, thread-safe) that logs every item (see plugin_log.h) and completes
 * it; payload "sleep:N" waits N ms first (without CPU, as an item waiting on the network would),
 * "fail" fails with an error, "later" asks to be retried in 100 ms, "result" reports progress
 * {"step":1} then leaves the result {"id":ID,"type":"<content type>"}, "bigresult" tries a
 * result over the limit (and logs what set_result said), "trace" leaves the result
 * {"traceparent":"<job->traceparent>"} (null without one), "enqueue" adds two jobs to queue
 * fu ({"parent":ID,"n":1} and "2 of ID") and fails if enqueue does not refuse what is not a
 * JSON object. */
#include "plugin_log.h"

static int ok_init(struct claimd_plugin_ctx *ctx)
{
	return plugin_log_open(ctx);
}

static void ok_handle(const struct claimd_job *job, struct claimd_result *res)
{
	plugin_log_event(job, "start");
	if (plugin_sleep_if_asked(job, "sleep")) {
	} else if (payload_is(job, "fail")) {
		res->status = CLAIMD_FAIL;
		snprintf(res->error, sizeof(res->error), "ok plugin: failing item %llu as asked",
			 (unsigned long long)job->id);
	} else if (payload_is(job, "later")) {
		res->status = CLAIMD_RETRY_LATER;
		res->retry_in_ms = 100;
	} else if (payload_is(job, "result")) {
		char text[400];
		int n = snprintf(text, sizeof(text), "{\"id\":%llu,\"type\":\"%s\"}",
				 (unsigned long long)job->id,
				 job->content_type ? job->content_type : "none");
		if (job->progress(job, "{\"step\":1}") < 0 || job->progress(job, "not json") != -22 ||
		    job->set_result(job, text, (size_t)n, "application/json") < 0) {
			res->status = CLAIMD_FAIL;
			snprintf(res->error, sizeof(res->error), "ok plugin: progress or set_result "
				 "did not answer as documented");
		}
	} else if (payload_is(job, "trace")) {
		char text[120];
		int n = job->traceparent ?
			snprintf(text, sizeof(text), "{\"traceparent\":\"%s\"}", job->traceparent) :
			snprintf(text, sizeof(text), "{\"traceparent\":null}");
		job->set_result(job, text, (size_t)n, "application/json");
	} else if (payload_is(job, "enqueue")) {
		char one[200], two[200];
		snprintf(one, sizeof(one), "{\"queue\":\"fu\",\"payload\":{\"parent\":%llu,"
			 "\"n\":1}}", (unsigned long long)job->id);
		snprintf(two, sizeof(two), "{\"queue\":\"fu\",\"payload\":\"2 of %llu\"}",
			 (unsigned long long)job->id);
		if (job->enqueue(job, one) < 0 || job->enqueue(job, "[1]") != -22 ||
		    job->enqueue(job, "{\"a\":") != -22 || job->enqueue(job, two) < 0) {
			res->status = CLAIMD_FAIL;
			snprintf(res->error, sizeof(res->error), "ok plugin: enqueue did not answer as "
				 "documented");
		}
	} else if (payload_is(job, "bigresult")) {
		static char big[CLAIMD_RESULT_MAX + 1];
		char what[40];
		snprintf(what, sizeof(what), "set_result %d",
			 job->set_result(job, big, sizeof(big), NULL));
		plugin_log_event(job, what);
	}
	plugin_log_event(job, "end");
}

static const struct claimd_plugin plugin = {
	.abi_version = CLAIMD_PLUGIN_ABI_VERSION,
	.name = "test-ok",
	.init = ok_init,
	.handle = ok_handle,
	.fini = plugin_log_close,
	.flags = CLAIMD_PLUGIN_THREAD_SAFE,
};

const struct claimd_plugin *claimd_plugin_v3(void)
{
	return &plugin;
}
