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
