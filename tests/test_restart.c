/* test_restart — the pool's restart policy (supervisor/restart.h): how a worker's end is
 * classed from its wait status, its work and its life; that only a quick death without work
 * grows the streak and every other end starts it again; the delays of a crash loop (at once
 * for the first, then 250 ms doubling to 30 s) and that a worker that lived resets them. */
#include "supervisor/restart.h"

#include <signal.h>
#include <string.h>

#include "check.h"

/* Wait statuses as waitpid gives them (Linux's encoding). */
#define EXITED(code) ((code) << 8)
#define SIGNALED(sig) (sig)

static void test_classify(void)
{
	CHECK(restart_classify(EXITED(0), false, 5) == END_CLEAN, "exit 0 at once: clean");
	CHECK(restart_classify(EXITED(0), true, 50000) == END_CLEAN, "exit 0 after work: clean");
	CHECK(restart_classify(SIGNALED(SIGKILL), true, 5) == END_AT_WORK,
	      "killed after an item, however soon: at work");
	CHECK(restart_classify(EXITED(1), true, 5) == END_AT_WORK, "exit 1 after an item: at work");
	CHECK(restart_classify(EXITED(1), false, RESTART_QUICK_MS - 1) == END_QUICK,
	      "exit 1 without an item, within the quick time: quick");
	CHECK(restart_classify(SIGNALED(SIGSEGV), false, 0) == END_QUICK, "a crash at start: quick");
	CHECK(restart_classify(EXITED(1), false, RESTART_QUICK_MS) == END_LATE,
	      "exit 1 without an item, after the quick time: late");
}

static void test_rules(void)
{
	for (int e = 0; e <= END_MAX; e++) {
		CHECK(restart_rules[e].name && *restart_rules[e].name, "end %d has a name", e);
		for (int f = 0; f < e; f++)
			CHECK(strcmp(restart_rules[e].name, restart_rules[f].name) != 0,
			      "ends %d and %d have one name", e, f);
		CHECK(restart_rules[e].counts == (e == END_QUICK),
		      "only a quick death counts towards back-off (end %d)", e);
	}
}

static void test_crash_loop(void)
{
	static const unsigned want[] = { 0, 250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000 };
	unsigned streak = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		unsigned d = restart_next(END_QUICK, &streak);
		CHECK(d == want[i], "quick death %zu: %u ms, want %u", i + 1, d, want[i]);
		CHECK(streak == i + 1, "streak %u after %zu quick deaths", streak, i + 1);
	}
	for (int e = 0; e <= END_MAX; e++) {
		if (e == END_QUICK)
			continue;
		streak = 7;
		CHECK(restart_next(e, &streak) == 0 && streak == 0,
		      "end %d restarts at once and starts the streak again", e);
	}
	/* After a worker that lived, one quick death is free again. */
	streak = 0;
	restart_next(END_QUICK, &streak);
	restart_next(END_QUICK, &streak);
	restart_next(END_LATE, &streak);
	CHECK(restart_next(END_QUICK, &streak) == 0, "a quick death after a late one: at once");
}

int main(void)
{
	test_classify();
	test_rules();
	test_crash_loop();
	if (failures)
		return 1;
	printf("ok - test_restart\n");
	return 0;
}
