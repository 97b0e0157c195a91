/* Fuzz target for cron expressions (common/cron): an expression that parses must give, from
 * a few starting times, a next time that is later, on a minute, that matches in UTC, and
 * whose own next is later again. Anything else aborts.
 *
 *     tools/fuzz cron
 * Otherwise linked with fuzz_main.c to replay tests/corpus/cron. */
#include "common/cron.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static unsigned long parsed, fired;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t starts[] = { 0, 951782400, 1774738800, 2147483000 };
	struct tzfile *utc = NULL;
	char expr[CRON_TEXT_MAX + 2], err[256];
	struct cron c;

	if (size > CRON_TEXT_MAX + 1)
		return 0;
	memcpy(expr, data, size);
	expr[size] = '\0';
	if (cron_parse(expr, &c, err, sizeof(err)) < 0)
		return 0;
	parsed++;
	if (tzfile_load("UTC", &utc, err, sizeof(err)) < 0)
		abort();
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		int64_t t, u;
		if (cron_next(&c, utc, starts[i], &t) < 0)
			continue;
		fired++;
		if (t <= starts[i] || t % 60 != 0 || !cron_matches(&c, t) ||
		    (cron_next(&c, utc, t, &u) == 0 && u <= t)) {
			fprintf(stderr, "fuzz_cron: '%s' from %lld: %lld\n", expr, (long long)starts[i],
				(long long)t);
			abort();
		}
	}
	tzfile_free(utc);
	return 0;
}

void fuzz_report(const char *name)
{
	printf("%s: %lu expressions parsed, %lu fired\n", name, parsed, fired);
}

unsigned long fuzz_accepted(void)
{
	return parsed;
}
