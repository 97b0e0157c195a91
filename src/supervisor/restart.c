#include "supervisor/restart.h"

#include <sys/wait.h>

#include "common/backoff.h"

const struct restart_rule restart_rules[END_MAX + 1] = {
	[END_CLEAN] = { "exited cleanly", false },
	[END_AT_WORK] = { "ended at work", false },
	[END_LATE] = { "crashed after its start-up", false },
	[END_QUICK] = { "crashed in its start-up", true },
};

enum restart_end restart_classify(int status, bool worked, uint64_t lived_ms)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return END_CLEAN;
	if (worked)
		return END_AT_WORK;
	return lived_ms < RESTART_QUICK_MS ? END_QUICK : END_LATE;
}

unsigned restart_next(enum restart_end end, unsigned *streak)
{
	*streak = restart_rules[end].counts ? *streak + 1 : 0;
	if (*streak <= RESTART_FREE_DEATHS)
		return 0;
	return backoff_nth(RESTART_MIN_MS, RESTART_MAX_MS, *streak - RESTART_FREE_DEATHS - 1);
}
