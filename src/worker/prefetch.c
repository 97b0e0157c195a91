#include "worker/prefetch.h"

unsigned prefetch_peek(const struct prefetch *p, unsigned fixed, unsigned conc)
{
	uint64_t n, cap, cycles;

	if (fixed)
		return fixed - 1;
	if (p->avg_ns == 0)
		return 0;
	n = ((uint64_t)conc * PREFETCH_BUDGET_NS + p->avg_ns / 2) / p->avg_ns;
	cycles = ((uint64_t)conc * PREFETCH_CYCLES * p->cycle_ns + p->avg_ns / 2) / p->avg_ns;
	if (cycles > n)
		n = cycles;
	cap = 2ull * p->last + 1;
	if (n > cap)
		n = cap;
	if (n > PREFETCH_MAX)
		n = PREFETCH_MAX;
	return (unsigned)n;
}

unsigned prefetch_extra(struct prefetch *p, unsigned fixed, unsigned conc)
{
	unsigned n = prefetch_peek(p, fixed, conc);

	if (!fixed)
		p->last = n;
	return n;
}

unsigned prefetch_low(const struct prefetch *p, unsigned fixed, unsigned conc, unsigned extra)
{
	unsigned low = fixed ? fixed : extra / 2;

	if (!fixed && p->avg_ns && p->cycle_ns &&
	    (uint64_t)conc * p->cycle_ns >= (uint64_t)extra * p->avg_ns)
		low = extra;
	return low < 1 ? 1 : low;
}

void prefetch_ran(struct prefetch *p, uint64_t ns)
{
	if (ns == 0)
		ns = 1;
	/* A weight of 1/4: a slow item shows at once (one of them alone pulls the average
	 * past the budget), a run of quick ones brings it down within a few dozen. */
	p->avg_ns = p->avg_ns ? (3 * p->avg_ns + ns) / 4 : ns;
}

void prefetch_overran(struct prefetch *p, uint64_t ns)
{
	if (ns > p->avg_ns)
		p->avg_ns = ns;
	p->last = 0;
}

void prefetch_claimed(struct prefetch *p, uint64_t ns)
{
	p->cycle_ns = p->cycle_ns ? (3 * p->cycle_ns + ns) / 4 : ns;
}

uint64_t prefetch_overrun_ns(const struct prefetch *p)
{
	uint64_t t = 4 * p->avg_ns;

	return t > 2ull * PREFETCH_BUDGET_NS ? t : 2ull * PREFETCH_BUDGET_NS;
}
