/* Fuzz target for proto_decode: consume frames from the input until "need more" or an error.
 * Every frame that decodes must re-encode to exactly the bytes it came from, and every strict
 * prefix of it must be "need more"; anything else aborts.
 *
 * Built with -DCLAIMD_LIBFUZZER it is a plain libFuzzer target:
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DCLAIMD_LIBFUZZER -Isrc \
 *         src/proto.c tests/fuzz_proto.c -o /tmp/fuzz_proto
 * Otherwise it has a main() that replays files and directories of inputs (tests/corpus/proto),
 * which is how the corpus runs as an ordinary test. */
#include "common/proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

#ifndef CLAIMD_LIBFUZZER
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

/* Runs one file through the target from a buffer of exactly its size. Returns 1 if it ran,
 * -errno if it could not be read. */
static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	struct stat st;
	int r = -EIO;

	if (!f)
		return -errno;
	if (fstat(fileno(f), &st) < 0 || st.st_size < 0)
		goto fail;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		goto fail;
	LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
	r = 1;
fail:
	free(buf);
	fclose(f);
	return r;
}

/* Runs every regular file in dir (not recursive, dot files skipped). Returns how many ran,
 * or -errno for the first file that could not be read. */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	struct stat st;
	int n = 0, r = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = run_file(path);
		if (r < 0) {
			fprintf(stderr, "fuzz_proto: %s: %s\n", path, strerror(-r));
			break;
		}
		n += r;
	}
	closedir(d);
	return r < 0 ? r : n;
}

static int run_arg(const char *arg)
{
	struct stat st;

	if (stat(arg, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? run_dir(arg) : run_file(arg);
}

int main(int argc, char **argv)
{
	int total = 0, r;

	for (int i = 1; i < argc; i++) {
		r = run_arg(argv[i]);
		if (r < 0) {
			fprintf(stderr, "fuzz_proto: %s: %s\n", argv[i], strerror(-r));
			return 1;
		}
		total += r;
	}
	printf("fuzz_proto: ran %d files, %lu frames decoded and re-encoded\n", total, frames_ok);
	if (total == 0) {
		fprintf(stderr, "fuzz_proto: no input files (usage: fuzz_proto FILE|DIR...)\n");
		return 1;
	}
	return 0;
}
#endif
