/* cron_next — the times a cron expression fires, for the oracle test (test_cron_oracle.py).
 * Reads lines "ZONE<TAB>AFTER<TAB>COUNT<TAB>EXPRESSION" (AFTER in UTC seconds) and answers
 * each with a line: COUNT times (UTC seconds, space-separated, fewer where it stops firing),
 * or "error: ..." where the expression or the zone is refused. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cron.h"
#include "common/tzfile.h"

static void answer(char *line)
{
	char *zone = strtok(line, "\t"), *after = strtok(NULL, "\t"), *count = strtok(NULL, "\t");
	char *expr = strtok(NULL, "\n"), err[256];
	struct tzfile *z = NULL;
	struct cron c;
	int64_t t;
	long n;

	if (!zone || !after || !count || !expr) {
		printf("error: not ZONE<TAB>AFTER<TAB>COUNT<TAB>EXPRESSION\n");
		return;
	}
	if (cron_parse(expr, &c, err, sizeof(err)) < 0 || tzfile_load(zone, &z, err, sizeof(err)) < 0) {
		printf("error: %s\n", err);
		return;
	}
	t = strtoll(after, NULL, 10);
	n = strtol(count, NULL, 10);
	for (long i = 0; i < n; i++) {
		if (cron_next(&c, z, t, &t) < 0)
			break;
		printf("%s%" PRId64, i ? " " : "", t);
	}
	printf("\n");
	tzfile_free(z);
}

int main(void)
{
	char line[1024];

	while (fgets(line, sizeof(line), stdin)) {
		answer(line);
		fflush(stdout);
	}
	return 0;
}
