/* test_backoff — the waits of common/backoff: a failed item's retry delay from a queue's base,
 * maximum and jitter (its own or claimd's): doubling per attempt, capped by the maximum
 * before and after the jitter, the jitter's bounds, and exact waits without one; the doubling
 * wait of reconnects. Exits 1 on a failure. */
#include "common/backoff.h"

#include <stdio.h>

#include "check.h"

struct retry_case {
	unsigned base, max, jitter, attempt;
	double u;
	unsigned want;
	const char *what;
};

static const struct retry_case retry_cases[] = {
	{ 1000, 3600000, 0, 1, 0.9, 1000, "attempt 1: the base, exactly without jitter" },
	{ 1000, 3600000, 0, 0, 0.0, 1000, "attempt 0 counts as 1" },
	{ 1000, 3600000, 0, 2, 0.3, 2000, "attempt 2: twice the base" },
	{ 250, 3600000, 0, 5, 0.5, 4000, "attempt 5: 16 times the base" },
	{ 1000, 5000, 0, 4, 0.5, 5000, "8 s capped by a max of 5 s" },
	{ 1000, 5000, 0, 40, 0.5, 5000, "a large attempt stays at the max (no overflow)" },
	{ 4000000000u, 4294967295u, 0, 3, 0.5, 4294967295u, "near UINT_MAX: capped, no wrap" },
	{ 1000, 3600000, 25, 1, 0.0, 750, "25 %, the most below" },
	{ 1000, 3600000, 25, 1, 1.0, 1250, "25 %, the most above" },
	{ 1000, 3600000, 25, 1, 0.5, 1000, "25 %, the middle" },
	{ 1000, 3600000, 100, 1, 0.0, 0, "100 %, the most below: no wait" },
	{ 1000, 3600000, 100, 2, 1.0, 4000, "100 %, the most above: twice" },
	{ 1000, 3600000, 250, 2, 1.0, 4000, "over 100 % counts as 100" },
	{ 1000, 1100, 50, 1, 1.0, 1100, "the jitter never goes past the max" },
	{ 1000, 3600000, 10, 1, -3.0, 900, "u below 0 counts as 0" },
	{ 1000, 3600000, 10, 1, 7.0, 1100, "u above 1 counts as 1" },
	{ 5, 3600000, 0, 1, 0.5, 5, "a base of 5 ms" },
};

int main(void)
{
	struct backoff b = BACKOFF_INIT(100, 1000);

	for (size_t i = 0; i < sizeof(retry_cases) / sizeof(retry_cases[0]); i++) {
		const struct retry_case *c = &retry_cases[i];
		unsigned got = backoff_retry_ms(c->base, c->max, c->jitter, c->attempt, c->u);
		CHECK(got == c->want, "%s: got %u, want %u", c->what, got, c->want);
	}
	/* Any u: within the jitter's bounds and never past the max. */
	for (unsigned k = 0; k <= 100; k++) {
		unsigned got = backoff_retry_ms(2000, 10000, 20, 3, k / 100.0);
		CHECK(got >= 6400 && got <= 9600, "u %u/100: %u outside 8000 +-20 %%", k, got);
		got = backoff_retry_ms(2000, 7000, 20, 3, k / 100.0);
		CHECK(got >= 5600 && got <= 7000, "u %u/100: %u outside 7000 -20 %%..7000", k, got);
	}
	CHECK(backoff_next(&b) == 100 && backoff_next(&b) == 200 && backoff_next(&b) == 400,
	      "reconnects double from the minimum");
	CHECK(backoff_next(&b) == 800 && backoff_next(&b) == 1000 && backoff_next(&b) == 1000,
	      "up to the maximum");
	backoff_reset(&b);
	CHECK(backoff_peek(&b) == 100, "a success starts again from the minimum");
	if (failures == 0)
		printf("ok - backoff\n");
	return failures ? 1 : 0;
}
