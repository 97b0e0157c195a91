/* backoff — waits that double after each failure up to a cap: reconnecting to the database,
 * restarting a co-process or a worker that keeps dying, retrying a failed item. Pure. */
#ifndef CLAIMD_BACKOFF_H
#define CLAIMD_BACKOFF_H

struct backoff {
	unsigned min_ms, max_ms;
	unsigned next_ms;   /* 0: no failure since the last reset */
};

#define BACKOFF_INIT(min_ms, max_ms) { (min_ms), (max_ms), 0 }

/* The wait after one more failure: min_ms the first time, then twice the previous one, never
 * more than max_ms. */
unsigned backoff_next(struct backoff *b);

/* The wait the next failure will get, without counting one (min_ms after a reset). */
unsigned backoff_peek(const struct backoff *b);

/* A success: the next failure waits min_ms again. */
void backoff_reset(struct backoff *b);

/* base_ms * 2^n, at most max_ms. */
unsigned backoff_nth(unsigned base_ms, unsigned max_ms, unsigned n);

/* A failed item's wait before its next attempt: base_ms * 2^(attempt - 1) (attempt 0 counts
 * as 1), moved by up to jitter_pct percent of it (0..100; more counts as 100) either way as u
 * says (0..1: 0 the most below, 0.5 none, 1 the most above), then at most max_ms. */
unsigned backoff_retry_ms(unsigned base_ms, unsigned max_ms, unsigned jitter_pct,
			  unsigned attempt, double u);

#endif
