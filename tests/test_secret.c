/* test_secret — which files secret_read and secret_check take a secret from: a regular file
 * of its owner's alone (0600, 0400; a symbolic link to one), and none other: a mode that gives
 * group or others anything, a directory, a FIFO (refused at once, not waited on). The error
 * names the file, its mode and the fix. */
#include "common/secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char dir[] = "/tmp/claimd-test-secret-XXXXXX";

static const char *at(const char *name)
{
	static char path[2][256];
	static int k;

	k ^= 1;
	snprintf(path[k], sizeof(path[k]), "%s/%s", dir, name);
	return path[k];
}

static void put(const char *name, unsigned mode)
{
	FILE *f = fopen(at(name), "w");

	if (f) {
		fputs("s3cret-line\nsecond\n", f);
		fclose(f);
	}
	CHECK(f && chmod(at(name), mode) == 0, "making %s", name);
}

struct file_case {
	const char *name;
	unsigned mode;     /* 0: made otherwise, before the table runs */
	int want;          /* what both functions return */
	const char *says;  /* in err when refused */
};

int main(void)
{
	static const struct file_case cases[] = {
		{ "owner-rw", 0600, 0, NULL },
		{ "owner-r", 0400, 0, NULL },
		{ "owner-rwx", 0700, 0, NULL },
		{ "group-r", 0640, -EPERM, "(mode 0640)" },
		{ "other-r", 0604, -EPERM, "(mode 0604)" },
		{ "group-w", 0620, -EPERM, "(mode 0620)" },
		{ "world", 0644, -EPERM, "chmod 600 " },
		{ "link-to-owner-rw", 0, 0, NULL },
		{ "link-to-world", 0, -EPERM, "(mode 0644)" },
		{ "a-dir", 0, -EPERM, "not a regular file" },
		{ "a-fifo", 0, -EPERM, "not a regular file" },
		{ "none", 0, -ENOENT, "none" },
	};
	char out[64], err[600];

	if (!mkdtemp(dir)) {
		printf("not ok - mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cases[i].mode)
			put(cases[i].name, cases[i].mode);
	CHECK(symlink(at("owner-rw"), at("link-to-owner-rw")) == 0, "symlink");
	CHECK(symlink(at("world"), at("link-to-world")) == 0, "symlink");
	CHECK(mkdir(at("a-dir"), 0700) == 0, "mkdir");
	CHECK(mkfifo(at("a-fifo"), 0600) == 0, "mkfifo");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct file_case *c = &cases[i];
		int r;

		err[0] = '\0';
		r = secret_read("token_file", at(c->name), out, sizeof(out), err, sizeof(err));
		CHECK(r == c->want, "secret_read %s: %d, want %d (%s)", c->name, r, c->want, err);
		if (c->want == 0)
			CHECK(!strcmp(out, "s3cret-line"), "secret_read %s: '%s'", c->name, out);
		else
			CHECK(!out[0] && strstr(err, "token_file") && strstr(err, at(c->name)) &&
			      strstr(err, c->says), "secret_read %s: err '%s' lacks '%s'", c->name,
			      err, c->says);
		err[0] = '\0';
		r = secret_check("token_file", at(c->name), err, sizeof(err));
		CHECK(r == c->want, "secret_check %s: %d, want %d (%s)", c->name, r, c->want, err);
		if (c->want < 0)
			CHECK(strstr(err, at(c->name)) && strstr(err, c->says),
			      "secret_check %s: err '%s' lacks '%s'", c->name, err, c->says);
	}
	/* The fix the error names is the whole of it. */
	err[0] = '\0';
	CHECK(secret_read("token_file", at("world"), out, sizeof(out), err, sizeof(err)) ==
	      -EPERM && strstr(err, "chmod 600 ") && !strcmp(strstr(err, "chmod 600 ") + 10,
							  at("world")),
	      "the fix: '%s'", err);
	CHECK(chmod(at("world"), 0600) == 0, "chmod");
	CHECK(secret_read("token_file", at("world"), out, sizeof(out), err, sizeof(err)) == 0,
	      "after chmod 600: %s", err);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(cases[i].name, "a-dir"))
			unlink(at(cases[i].name));
	rmdir(at("a-dir"));
	rmdir(dir);
	if (failures)
		return 1;
	printf("ok - secret\n");
	return 0;
}
