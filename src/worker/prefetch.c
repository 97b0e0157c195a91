#include "worker/prefetch.h"

unsigned prefetch_size(struct prefetch *p, unsigned fixed)
{
	uint64_t n;

	if (fixed)
		return fixed;
	if (p->avg_ns == 0)
		n = 1;
	else
		n = (PREFETCH_BUDGET_NS + p->avg_ns / 2) / p->avg_ns;
	if (n > 2ull * p->last)
		n = 2ull * p->last;
	if (n < 1)
		n = 1;
	if (n > PREFETCH_MAX)
		n = PREFETCH_MAX;
	p->last = (unsigned)n;
	return p->last;
}

void prefetch_ran(struct prefetch *p, uint64_t ns)
{
	if (ns == 0)
		ns = 1;
	/* A weight of 1/4: a slow item shows at once (one of them alone pulls the average
	 * past the budget), a run of quick ones brings it down within a few dozen. */
	p->avg_ns = p->avg_ns ? (3 * p->avg_ns + ns) / 4 : ns;
}

uint64_t prefetch_overrun_ns(const struct prefetch *p)
{
	uint64_t t = 4 * p->avg_ns;

	return t > 2ull * PREFETCH_BUDGET_NS ? t : 2ull * PREFETCH_BUDGET_NS;
}
