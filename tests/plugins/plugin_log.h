/* plugin_log — what the test plugins share: the log of the harness's handler events,
 * `<kind> <id> <attempt> <epoch time> <pid> [rest]`, one write() per line to a file opened
 * with O_APPEND (the path is the plugin's args), so lines from several workers do not mix. */
#ifndef CLAIMD_TEST_PLUGIN_LOG_H
#define CLAIMD_TEST_PLUGIN_LOG_H

#include <claimd/handler.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int plugin_log_open(struct claimd_plugin_ctx *ctx)
{
	int fd;

	if (!ctx->args || !*ctx->args) {
		snprintf(ctx->error, sizeof(ctx->error), "usage: so:/path/plugin.so LOGFILE");
		return -1;
	}
	fd = open(ctx->args, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(ctx->error, sizeof(ctx->error), "cannot open %s", ctx->args);
		return -1;
	}
	ctx->user = (void *)(intptr_t)(fd + 1);
	return 0;
}

static void plugin_log_close(struct claimd_plugin_ctx *ctx)
{
	if (ctx->user)
		close((int)(intptr_t)ctx->user - 1);
}

/* `kind id attempt time pid queue group seq max_attempts ms_to_deadline hex(payload)` */
static void plugin_log_event(const struct claimd_job *job, const char *kind)
{
	char line[8192], hex[2 * 1024 + 1] = "";
	struct timeval tv;
	int64_t now_ms;
	size_t n = job->payload_len > 1024 ? 1024 : job->payload_len;
	int len;

	gettimeofday(&tv, NULL);
	now_ms = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", job->payload[i]);
	len = snprintf(line, sizeof(line), "%s %llu %u %ld.%06ld %d %s %s %llu %u %lld %s\n", kind,
		       (unsigned long long)job->id, job->attempt, (long)tv.tv_sec, (long)tv.tv_usec,
		       (int)getpid(), job->queue, job->group ? job->group : "-",
		       (unsigned long long)job->seq, job->max_attempts,
		       (long long)(job->deadline_ms - now_ms), n ? hex : "-");
	if (job->user && len > 0)
		(void)!write((int)(intptr_t)job->user - 1, line, (size_t)len);
}

static inline int payload_is(const struct claimd_job *job, const char *s)
{
	return job->payload_len == strlen(s) && !memcmp(job->payload, s, job->payload_len);
}

/* Payload "sleep:N" or "<word>:N": wait N ms (without CPU, as an item waiting on the network
 * would). Returns whether the payload asked. */
static inline int plugin_sleep_if_asked(const struct claimd_job *job, const char *word)
{
	size_t w = strlen(word);
	char ms[16] = "";

	if (job->payload_len <= w + 1 || memcmp(job->payload, word, w) || job->payload[w] != ':')
		return 0;
	memcpy(ms, job->payload + w + 1, job->payload_len - w - 1 < 15 ? job->payload_len - w - 1 : 15);
	usleep((useconds_t)strtoul(ms, NULL, 10) * 1000u);
	return 1;
}

#endif
