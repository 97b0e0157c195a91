/* The usage text and the example config file, from the option table. */
#include "common/config_int.h"

#include <stdio.h>
#include <string.h>

/* One option's help lines, indented under the flag (or key). */
static size_t put_help(char *out, size_t k, size_t cap, const char *head, const char *help,
		       const char *indent)
{
	const char *s = help;

	k += (size_t)snprintf(out + k, cap - k, "%s", head);
	for (bool first = true; *s; first = false) {
		size_t n = strcspn(s, "\n");
		k += (size_t)snprintf(out + k, cap - k, "%s%.*s\n", first ? "" : indent, (int)n, s);
		s += n + (s[n] == '\n');
	}
	return k < cap ? k : cap - 1;
}

const char *config_usage(void)
{
	static char text[8192];
	size_t k = 0;

	if (text[0])
		return text;
	k += (size_t)snprintf(text, sizeof(text),
		"usage: claimd --dsn DSN --handler SPEC [options]\n\n"
		"Runs a supervised pool of workers that claim rows of work_items and run a handler "
		"on each.\nEvery option is also CLAIMD_<NAME> in the environment and a key of the "
		"--config file;\na flag overrides the environment, which overrides the file.\n\n");
	for (size_t i = 0; i < config_ndefs; i++) {
		const struct option_def *d = &config_defs[i];
		char head[64];
		if (d->kind == K_HIDDEN)
			continue;
		snprintf(head, sizeof(head), "  --%s%s%s", d->name, d->meta ? " " : "",
			 d->meta ? d->meta : "");
		if (strlen(head) > 23)   /* two spaces at least before the help */
			k += (size_t)snprintf(text + k, sizeof(text) - k, "%s\n", head), head[0] = '\0';
		char pad[64];
		snprintf(pad, sizeof(pad), "%-25s", head);
		k = put_help(text, k, sizeof(text), pad, d->help, "                         ");
	}
	snprintf(text + k, sizeof(text) - k, "\nDUR is a number with a unit ms, s, m or h; a "
		 "bare number is seconds.\n");
	return text;
}

const char *config_example(void)
{
	static char text[12288];
	size_t k = 0;

	if (text[0])
		return text;
	k += (size_t)snprintf(text, sizeof(text),
		"# claimd's config file (claimd --config PATH, or CLAIMD_CONFIG=PATH): a key per\n"
		"# option of claimd --help, as key = value. Flags and CLAIMD_* environment variables\n"
		"# override what is here. A line starting with # or ; is a comment.\n\n[claimd]\n");
	for (size_t i = 0; i < config_ndefs; i++) {
		const struct option_def *d = &config_defs[i];
		if (config_flag_only(d))
			continue;
		k += (size_t)snprintf(text + k, sizeof(text) - k, "\n");
		k = put_help(text, k, sizeof(text), "# ", d->help, "# ");
		k += (size_t)snprintf(text + k, sizeof(text) - k, "#%s = %s\n", d->name,
				      d->meta ? d->meta : "false");
	}
	return text;
}
