/* test_prefetch — the size of a claim under --batch auto (worker/prefetch): fixed sizes stay
 * fixed; one row before anything ran; quick items grow it twofold a claim up to the cap; a
 * slow item brings it to one at once; the time after which a batch's rest goes back. Exits 1
 * on a failure. */
#include "worker/prefetch.h"

#include <stdio.h>

#include "check.h"

int main(void)
{
	struct prefetch p = { 0 };
	unsigned n, sizes[12];

	CHECK(prefetch_size(&p, 64) == 64, "--batch 64 stays 64");
	p = (struct prefetch){ 0 };
	CHECK(prefetch_size(&p, 0) == 1, "nothing ran yet: one row");
	/* Items of 2 us: 1, 2, 4, ... up to 256, twofold a claim. */
	for (int i = 0; i < 12; i++) {
		prefetch_ran(&p, 2000);
		sizes[i] = prefetch_size(&p, 0);
	}
	CHECK(sizes[0] == 2 && sizes[1] == 4 && sizes[2] == 8, "grows twofold: %u %u %u",
	      sizes[0], sizes[1], sizes[2]);
	CHECK(sizes[7] == 256 && sizes[11] == 256, "up to the cap: %u %u", sizes[7], sizes[11]);
	/* One item of 1 s among them: the next claim is one row. */
	prefetch_ran(&p, 1000000000ull);
	CHECK(prefetch_size(&p, 0) == 1, "after a slow item: one row");
	CHECK(prefetch_overrun_ns(&p) >= 4ull * 250000000ull, "overrun scales with the average");
	/* Items of 1 ms: 10 of them per 10 ms budget, once the average has come down. */
	for (int i = 0; i < 60; i++) {
		prefetch_ran(&p, 1000000);
		n = prefetch_size(&p, 0);
	}
	CHECK(n == 10, "items of 1 ms: %u rows a claim", n);
	/* Items of 50 ms: one at a time. */
	for (int i = 0; i < 10; i++)
		prefetch_ran(&p, 50000000);
	CHECK(prefetch_size(&p, 0) == 1, "items of 50 ms: one row");
	p = (struct prefetch){ .avg_ns = 1000 };
	CHECK(prefetch_overrun_ns(&p) == 2ull * PREFETCH_BUDGET_NS,
	      "quick items: the rest goes back after twice the budget");
	printf("%s - prefetch\n", failures ? "not ok" : "ok");
	return failures ? 1 : 0;
}
