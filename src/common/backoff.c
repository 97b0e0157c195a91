#include "common/backoff.h"

unsigned backoff_nth(unsigned base_ms, unsigned max_ms, unsigned n)
{
	unsigned long long d = base_ms;

	while (n-- > 0 && d < max_ms)
		d *= 2;
	return d > max_ms ? max_ms : (unsigned)d;
}

unsigned backoff_peek(const struct backoff *b)
{
	unsigned long long d = b->next_ms ? b->next_ms : b->min_ms;

	return d > b->max_ms ? b->max_ms : (unsigned)d;
}

unsigned backoff_next(struct backoff *b)
{
	unsigned d = backoff_peek(b);

	b->next_ms = backoff_nth(d, b->max_ms, 1);
	return d;
}

void backoff_reset(struct backoff *b)
{
	b->next_ms = 0;
}

unsigned backoff_retry_ms(unsigned base_ms, unsigned max_ms, unsigned jitter_pct,
			  unsigned attempt, double u)
{
	double d = backoff_nth(base_ms, max_ms, attempt ? attempt - 1 : 0);
	double j = (jitter_pct > 100 ? 100 : jitter_pct) / 100.0;

	if (!(u >= 0.0))   /* NaN too */
		u = 0.0;
	if (u > 1.0)
		u = 1.0;
	d *= 1.0 + j * (2.0 * u - 1.0);
	return d >= max_ms ? max_ms : (unsigned)(d + 0.5);
}
