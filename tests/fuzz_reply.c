/* Fuzz target for a pipe: co-process's reply line (worker/pipe_reply, on jansson): the input,
 * up to its first newline, is a line from the co-process. Whatever it is, the parser returns
 * 0 with a result status of its set (or a progress report, or the ready line: no id, no
 * text) or -EPROTO with a bad-reply error,
 * the error is a terminated string within its buffer, and a result or progress text is within
 * its limit; anything else aborts.
 *
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DCLAIMD_LIBFUZZER -Isrc \
 *         src/worker/pipe_reply.c src/common/json.c src/common/utf8.c tests/fuzz_reply.c \
 *         -ljansson -o /tmp/fuzz_reply
 * Otherwise linked with fuzz_main.c to replay tests/corpus/reply. */
#include "worker/pipe_reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static unsigned long accepted, refused;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - data) : size;
	struct pipe_reply reply;
	const struct handler_result *res = &reply.res;
	int r;

	memset(&reply, 0x55, sizeof(reply));
	r = pipe_reply_parse((const char *)data, len, &reply);
	if (!memchr(res->error, '\0', sizeof(res->error))) {
		fprintf(stderr, "fuzz_reply: the error text is not terminated\n");
		abort();
	}
	/* A text is compact JSON of its limit at most, NUL-terminated; a result is the text. */
	if (reply.text && (strlen(reply.text) != reply.text_len ||
			   reply.text_len > (reply.progress ? PIPE_PROGRESS_MAX : PIPE_RESULT_MAX) ||
			   (res->result && (res->result != (const unsigned char *)reply.text ||
					    res->status != HANDLER_OK)))) {
		fprintf(stderr, "fuzz_reply: a bad result or progress text\n");
		abort();
	}
	if (r == 0 && reply.ready && (reply.id != 0 || reply.text || reply.progress)) {
		fprintf(stderr, "fuzz_reply: a ready line with an id or a text\n");
		abort();
	}
	if (r == 0 && (reply.ready || reply.progress || res->status == HANDLER_OK ||
		       res->status == HANDLER_FAILED || res->status == HANDLER_RETRY_LATER)) {
		accepted++;
		pipe_reply_clear(&reply);
		return 0;
	}
	if (r == -EPROTO && res->status == HANDLER_FAILED && !reply.text &&
	    !strncmp(res->error, "bad reply from the co-process: ", 31)) {
		refused++;
		pipe_reply_clear(&reply);
		return 0;
	}
	fprintf(stderr, "fuzz_reply: returned %d with status %d\n", r, res->status);
	abort();
}

void fuzz_report(const char *name)
{
	printf("%s: %lu replies accepted, %lu refused\n", name, accepted, refused);
}

unsigned long fuzz_accepted(void)
{
	return accepted;
}
