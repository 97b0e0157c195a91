/* Fuzz target for proto_decode: consume frames from the input until "need more" or an error.
 * Every frame that decodes must re-encode to exactly the bytes it came from, and every strict
 * prefix of it must be "need more"; anything else aborts.
 *
 * Built with -DCLAIMD_LIBFUZZER it is a plain libFuzzer target:
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DCLAIMD_LIBFUZZER -Isrc \
 *         src/common/proto.c tests/fuzz_proto.c -o /tmp/fuzz_proto
 * Otherwise it is linked with tests/fuzz_main.c, which replays files and directories of inputs
 * (tests/corpus/proto): that is how the corpus runs as an ordinary test. */
#include "common/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static unsigned long frames_ok; /* frames that decoded and re-encoded, for the replay summary */

static void check_frame(const uint8_t *frame, size_t len, const struct proto_msg *m)
{
	static uint8_t out[PROTO_HEADER_SIZE + PROTO_MAX_BODY];
	static struct proto_msg scratch;
	int r = proto_encode(m, out, sizeof(out));

	if (r < 0 || (size_t)r != len || memcmp(out, frame, len) != 0) {
		fprintf(stderr, "fuzz_proto: %s frame of %zu bytes re-encodes as %d bytes/differently\n",
		        proto_type_name(m->type), len, r);
		abort();
	}
	if (proto_decode(frame, len - 1, &scratch) != 0) {
		fprintf(stderr, "fuzz_proto: strict prefix of a valid frame is not \"need more\"\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proto_msg m; /* ~6 KiB: keep it off the stack */
	size_t off = 0;
	int r;

	while ((r = proto_decode(data + off, size - off, &m)) > 0) {
		if ((size_t)r > size - off || (size_t)r < PROTO_HEADER_SIZE) {
			fprintf(stderr, "fuzz_proto: decode consumed %d of %zu bytes\n", r, size - off);
			abort();
		}
		check_frame(data + off, (size_t)r, &m);
		frames_ok++;
		off += (size_t)r;
	}
	return 0;
}

/* For the replay summary (tests/fuzz_main.c). */
void fuzz_report(const char *name)
{
	printf("%s: %lu frames decoded and re-encoded\n", name, frames_ok);
}

unsigned long fuzz_accepted(void)
{
	return frames_ok;
}
