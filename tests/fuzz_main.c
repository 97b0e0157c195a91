/* The replay driver of every fuzz target (see fuzz.h): runs each file named, and each regular
 * file of each directory named, through LLVMFuzzerTestOneInput from a buffer of exactly the
 * file's size (so the sanitizers see any read past its end). */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *name = "fuzz";

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
	LLVMFuzzerTestOneInput(buf, (size_t)st.st_size);
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
	int total = 0, r;

	name = basename(argv[0]);
	for (int i = 1; i < argc; i++) {
		r = stat(argv[i], &st) < 0 ? -errno : S_ISDIR(st.st_mode) ? run_dir(argv[i])
									 : run_file(argv[i]);
		if (r < 0) {
			fprintf(stderr, "%s: %s: %s\n", name, argv[i], strerror(-r));
			return 1;
		}
		total += r;
	}
	printf("%s: ran %d files\n", name, total);
	fuzz_report(name);
	if (total == 0) {
		fprintf(stderr, "%s: no input files (usage: %s FILE|DIR...)\n", name, name);
		return 1;
	}
	return 0;
}
