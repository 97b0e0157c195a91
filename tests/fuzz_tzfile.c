/* Fuzz target for TZif files (common/tzfile): a file that parses must give, for times across
 * the years, a span that holds the time and is not empty, and cron_next in it must move
 * forward. Anything else aborts.
 *
 *     tools/fuzz tzfile
 * Otherwise linked with fuzz_main.c to replay tests/corpus/tzfile. */
#include "common/tzfile.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/cron.h"
#include "fuzz.h"

static unsigned long parsed;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t times[] = { -2208988800LL, 0, 1774746000, 1792890000, 2147483647,
					 4102444800LL, 253402300799LL };
	struct tzfile *z = NULL;
	char err[256];
	struct cron c;

	if (tzfile_parse(data, size, &z, err, sizeof(err)) < 0)
		return 0;
	parsed++;
	if (cron_parse("30 2 * * *", &c, err, sizeof(err)) < 0)
		abort();
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		struct tzspan s;
		int64_t t;
		tzfile_span(z, times[i], &s);
		if (!(s.start <= times[i] && times[i] < s.end)) {
			fprintf(stderr, "fuzz_tzfile: span [%lld, %lld) misses %lld\n",
				(long long)s.start, (long long)s.end, (long long)times[i]);
			abort();
		}
		if (times[i] < 4102444800LL && cron_next(&c, z, times[i], &t) == 0 && t <= times[i]) {
			fprintf(stderr, "fuzz_tzfile: cron_next went back from %lld to %lld\n",
				(long long)times[i], (long long)t);
			abort();
		}
	}
	tzfile_free(z);
	return 0;
}

void fuzz_report(const char *name)
{
	printf("%s: %lu files parsed\n", name, parsed);
}

unsigned long fuzz_accepted(void)
{
	return parsed;
}
