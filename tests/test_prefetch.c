/* test_prefetch — how many rows a worker holds beyond those it runs under --batch auto
 * (worker/prefetch): fixed sizes stay fixed; none before anything ran; quick items grow it
 * about twofold a claim up to the cap; a slow item brings it to none at once; many items at
 * once hold a budget's worth each, or three claims' worth when claims take longer; the time
 * after which waiting rows go back. Exits 1 on a
 * failure. */
#include "worker/prefetch.h"

#include <stdio.h>

#include "check.h"

int main(void)
{
	struct prefetch p = { 0 };
	unsigned n, sizes[12];

	CHECK(prefetch_extra(&p, 64, 1) == 63, "--batch 64: claims of 64, 63 beyond the one running");
	CHECK(prefetch_extra(&p, 64, 50) == 63, "--batch 64 whatever the concurrency");
	p = (struct prefetch){ 0 };
	CHECK(prefetch_extra(&p, 0, 1) == 0, "nothing ran yet: nothing beyond what runs");
	/* Items of 2 us: 1, 3, 7, ... up to 256, about twofold a claim. */
	for (int i = 0; i < 12; i++) {
		prefetch_ran(&p, 2000);
		sizes[i] = prefetch_extra(&p, 0, 1);
	}
	CHECK(sizes[0] == 1 && sizes[1] == 3 && sizes[2] == 7, "grows twofold: %u %u %u",
	      sizes[0], sizes[1], sizes[2]);
	CHECK(sizes[8] == 256 && sizes[11] == 256, "up to the cap: %u %u", sizes[8], sizes[11]);
	CHECK(prefetch_peek(&p, 0, 1) == 256 && p.last == 256, "peek does not change it");
	/* One item of 1 s among them: nothing beyond the running one. */
	prefetch_ran(&p, 1000000000ull);
	CHECK(prefetch_extra(&p, 0, 1) == 0, "after a slow item: none waits");
	CHECK(prefetch_overrun_ns(&p) >= 4ull * 250000000ull, "overrun scales with the average");
	/* Items of 1 ms: 10 of them per 10 ms budget, once the average has come down. */
	for (int i = 0; i < 60; i++) {
		prefetch_ran(&p, 1000000);
		n = prefetch_extra(&p, 0, 1);
	}
	CHECK(n == 10, "items of 1 ms: %u wait", n);
	/* Items of 50 ms: none waits with one at a time; 50 at once hold 10 more. */
	for (int i = 0; i < 40; i++)
		prefetch_ran(&p, 50000000);
	CHECK(prefetch_extra(&p, 0, 1) == 0, "items of 50 ms, one at a time: none waits");
	CHECK(prefetch_peek(&p, 0, 50) == 1, "growth limit holds with many at once");
	for (int i = 0; i < 5; i++)
		n = prefetch_extra(&p, 0, 50);
	CHECK(n == 10, "items of 50 ms, 50 at once: %u wait", n);
	/* Claims that take 5 ms: 50 at once hold three claims' worth, 15, not the budget's 10. */
	prefetch_claimed(&p, 5000000);
	CHECK(prefetch_extra(&p, 0, 50) == 15, "three claim cycles' worth: %u", p.last);
	/* Quick items, then ones that outlast the estimate: nothing is held beyond them. */
	p = (struct prefetch){ .avg_ns = 2000, .last = 256 };
	prefetch_overran(&p, 25000000);
	CHECK(prefetch_peek(&p, 0, 1) == 0, "after an overrun of 25 ms: none waits");
	p = (struct prefetch){ .avg_ns = 1000 };
	CHECK(prefetch_overrun_ns(&p) == 2ull * PREFETCH_BUDGET_NS,
	      "quick items: waiting rows go back after twice the budget");
	/* When to claim: a whole --batch; half the rows held beyond those running; or, when
	 * the rows held would all run within one claim anyway, room for them all. */
	p = (struct prefetch){ .avg_ns = 2000, .cycle_ns = 3000000 };
	CHECK(prefetch_low(&p, 64, 1, 63) == 64, "--batch 64: room for 64");
	CHECK(prefetch_low(&p, 0, 1, 256) == 256, "items of 2 us, claims of 3 ms: %u",
	      prefetch_low(&p, 0, 1, 256));
	p = (struct prefetch){ .avg_ns = 50000000, .cycle_ns = 3000000 };
	CHECK(prefetch_low(&p, 0, 50, 10) == 5, "items of 50 ms, 50 at once: half of 10, %u",
	      prefetch_low(&p, 0, 50, 10));
	p = (struct prefetch){ .avg_ns = 2000 };
	CHECK(prefetch_low(&p, 0, 1, 256) == 128, "no claim timed yet: half");
	CHECK(prefetch_low(&p, 0, 1, 0) == 1, "at least one");
	printf("%s - prefetch\n", failures ? "not ok" : "ok");
	return failures ? 1 : 0;
}
