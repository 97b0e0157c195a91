/* Fuzz target for the control protocol codec (common/ctl). The input is used three ways:
 *   - up to its first LF, as a request line for ctl_decode; a line that decodes must encode
 *     (ctl_encode) and that encoding must decode to the same request;
 *   - split on NUL bytes, as a command line for ctl_from_argv; one that parses must encode;
 *   - its first byte a verb and the rest split on NUL bytes as names and values (and a
 *     payload) for ctl_from_params, as the HTTP API calls it; one that parses must encode;
 *   - whole, as a reply for ctl_reply_parse, whose body must lie inside the input.
 * Anything else aborts.
 *
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DCLAIMD_LIBFUZZER -Isrc \
 *         src/common/ctl.c src/common/ctl_args.c src/common/buf.c src/common/config.c src/common/dsn.c src/common/json.c \
 *         src/common/utf8.c tests/fuzz_ctl.c -o /tmp/fuzz_ctl -lm
 * Otherwise linked with fuzz_main.c to replay tests/corpus/ctl. */
#include "common/ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static unsigned long decoded, parsed, from_params;

static bool same_text(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same(const struct ctl_request *a, const struct ctl_request *b)
{
	return a->verb == b->verb && a->have == b->have && same_text(a->queue, b->queue) &&
	       a->payload_len == b->payload_len &&
	       (!a->payload_len || !memcmp(a->payload, b->payload, a->payload_len)) &&
	       same_text(a->run_at, b->run_at) && a->delay_ms == b->delay_ms &&
	       a->period_ms == b->period_ms && a->timeout_ms == b->timeout_ms &&
	       a->interval_ms == b->interval_ms && a->max_attempts == b->max_attempts &&
	       same_text(a->dedupe, b->dedupe) && same_text(a->group, b->group) &&
	       a->priority == b->priority && a->id == b->id && a->dead == b->dead &&
	       a->json == b->json;
}

static void check_encodes(const struct ctl_request *r, const char *what)
{
	struct ctl_request back;
	struct buf b;
	char err[256];

	buf_init(&b);
	if (ctl_encode(r, &b, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_ctl: a %s request does not encode: %s\n", what, err);
		abort();
	}
	if (ctl_decode(b.data, b.len - 1, &back, err, sizeof(err)) < 0 || !same(r, &back)) {
		fprintf(stderr, "fuzz_ctl: a %s request encodes to '%s', which decodes otherwise\n",
			what, b.data);
		abort();
	}
	buf_free(&b);
}

static void try_line(const uint8_t *data, size_t size)
{
	const uint8_t *lf = memchr(data, '\n', size);
	size_t len = lf ? (size_t)(lf - data) : size;
	char *line = malloc(len + 1), err[256];
	struct ctl_request r;

	memcpy(line, data, len);
	line[len] = '\n';
	if (ctl_decode(line, len, &r, err, sizeof(err)) == 0) {
		decoded++;
		check_encodes(&r, "decoded");
	}
	free(line);
}

static void try_argv(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1), *argv[16], err[256];
	struct ctl_request r;
	int argc = 0;

	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i <= size && argc < 16; ) {
		argv[argc++] = copy + i;
		i += strlen(copy + i) + 1;
	}
	if (ctl_from_argv(argc, argv, &r, err, sizeof(err)) == 0) {
		parsed++;
		check_encodes(&r, "command-line");
	}
	free(copy);
}

/* The HTTP API's form: the first byte picks the verb, the rest split on NUL is name, value,
 * name, value...; a last odd string is the payload. */
static void try_params(const uint8_t *data, size_t size)
{
	const char *names[16], *values[16], *strs[33];
	char *copy, err[256];
	struct ctl_request r;
	size_t n = 0, k = 0;

	if (size < 1)
		return;
	copy = malloc(size);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	for (size_t i = 0; i < size && k < 33; ) {
		strs[k++] = copy + i;
		i += strlen(copy + i) + 1;
	}
	for (; 2 * n + 1 < k && n < 16; n++) {
		names[n] = strs[2 * n];
		values[n] = strs[2 * n + 1];
	}
	const char *payload = 2 * n < k ? strs[2 * n] : NULL;
	if (ctl_from_params((enum ctl_verb)(data[0] % CTL_VERB_COUNT), names, values, n,
			    (const unsigned char *)payload, payload ? strlen(payload) : 0, &r, err,
			    sizeof(err)) == 0) {
		from_params++;
		check_encodes(&r, "named-parameter");
	}
	free(copy);
}

static void try_reply(const uint8_t *data, size_t size)
{
	const char *body;
	size_t len;

	if (ctl_reply_parse((const char *)data, size, &body, &len) >= 0 &&
	    (body < (const char *)data || body + len > (const char *)data + size)) {
		fprintf(stderr, "fuzz_ctl: a reply's body lies outside it\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	try_line(data, size);
	try_argv(data, size);
	try_params(data, size);
	try_reply(data, size);
	return 0;
}

void fuzz_report(const char *name)
{
	printf("%s: %lu request lines decoded, %lu command lines and %lu named-parameter sets "
	       "parsed, all re-encoded\n", name, decoded, parsed, from_params);
}

unsigned long fuzz_accepted(void)
{
	return decoded + parsed + from_params;
}
