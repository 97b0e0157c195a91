/* The replay driver of every fuzz target (see fuzz.h): runs each file named, and each regular
 * file of each directory named, through LLVMFuzzerTestOneInput from a buffer of exactly the
 * file's size (so the sanitizers see any read past its end), and counts the inputs the target
 * accepted (fuzz_accepted grew while it ran).
 *
 *     fuzz_NAME [--min-accepted N] FILE|DIR...   fails unless at least N inputs were accepted */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *name = "fuzz";
static int accepted;   /* inputs during which fuzz_accepted() grew */

/* Returns 1 if it ran, -errno if the file could not be read. */
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
	{
		unsigned long before = fuzz_accepted();
		LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
		accepted += fuzz_accepted() > before;
	}
	r = 1;
fail:
	free(buf);
	fclose(f);
	return r;
}

/* Every regular file in dir (not recursive, dot files skipped). Returns how many ran, or
 * -errno for the first that could not be read. */
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
			fprintf(stderr, "%s: %s: %s\n", name, path, strerror(-r));
			break;
		}
		n += r;
	}
	closedir(d);
	return r < 0 ? r : n;
}

int main(int argc, char **argv)
{
	struct stat st;
	int total = 0, min = 0, first = 1, r;
	char *end;

	name = basename(argv[0]);
	if (argc > 2 && !strcmp(argv[1], "--min-accepted")) {
		long v = strtol(argv[2], &end, 10);
		if (*argv[2] == '\0' || *end || v < 0 || v > 1000000) {
			fprintf(stderr, "%s: --min-accepted '%s' is not a count\n", name, argv[2]);
			return 1;
		}
		min = (int)v;
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		r = stat(argv[i], &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? run_dir(argv[i])
									 : run_file(argv[i]);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", name, argv[i], strerror(-r));
			return 1;
		}
		total += r;
	}
	printf("%s: ran %d files, %d accepted\n", name, total, accepted);
	fuzz_report(name);
	if (total == 0) {
		fprintf(stderr, "%s: no input files (usage: %s [--min-accepted N] FILE|DIR...)\n",
			name, name);
		return 1;
	}
	if (accepted < min) {
		fprintf(stderr, "%s: %d of %d inputs accepted, fewer than the %d the corpus holds "
			"valid: the target refuses what it should take\n", name, accepted, total, min);
		return 1;
	}
	return 0;
}
