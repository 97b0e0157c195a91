#include "worker/batch.h"

#include <limits.h>
#include <uv.h>

#include "common/log.h"

#define PAUSE_CHECK_NS 50000000u /* is a queued row's queue paused: asked at most this often */

static uint64_t lease_ok(uint64_t sent_ns, unsigned lease_ms)
{
	return sent_ns + (lease_ms - BATCH_LEASE_MARGIN(lease_ms)) * 1000000u;
}

int batch_claim_begin(struct batch *b, struct store *s, struct outcomes *o, unsigned max,
		      bool holding, struct batch_job *j, char *err, size_t errlen)
{
	int r;

	b->n = 0;
	r = outcomes_write_slow(o, s, err, errlen);
	if (o->lost) {
		log_warn("%zu items had lost their claim (lease expired: another worker may hold "
			 "them now); their outcomes were not written (nor the jobs they add)", o->lost);
		o->lost = 0;
	}
	if (r < 0)
		return r;
	j->ndone = outcomes_done_refs(o, j->done);
	if (j->ndone == 0 && max == 0)
		return 0;
	j->grouped = store_refs_grouped(j->done, j->ndone);
	j->left_next = false;
	j->max = max;
	j->holding = holding;
	j->qi = b->qi;
	j->n = j->completed = 0;
	j->r = 0;
	j->err[0] = '\0';
	return 1;
}

void batch_claim_run(struct batch *b, struct store *s, const struct config *cfg,
		     struct batch_job *j)
{
	unsigned nq = j->max > 0 ? cfg->nqueues : 1, qi = j->qi;
	size_t n = 0;
	int r = 0;

	j->t0 = uv_hrtime();
	/* The outcomes ride on the first claim; the next queue is asked only if it found none. */
	for (unsigned k = 0; k < nq && n == 0; k++) {
		size_t applied = 0;
		qi = (j->qi + k) % cfg->nqueues;
		r = store_claim(s, cfg->queues[qi], j->max, cfg->lease_ms, k ? NULL : j->done,
				k ? 0 : j->ndone, b->rows, &n, &applied, j->err, sizeof(j->err));
		if (k == 0) {
			j->completed = applied;
			j->left_next = r == 0 && store_claim_left_next(s);
		}
		if (r < 0)
			break;
	}
	if (r == 0 && n > 0) {
		j->qi = qi;
		if (!j->holding)
			__atomic_store_n(&b->lease_ok_ns, lease_ok(j->t0, cfg->lease_ms),
					 __ATOMIC_RELEASE);
	}
	j->n = r == 0 ? n : 0;
	j->r = r;
}

int batch_claim_end(struct batch *b, struct outcomes *o, struct batch_job *j)
{
	uint64_t took;

	if (j->r < 0)
		return j->r;
	if (j->completed < j->ndone)
		log_warn("%zu of %zu finished items had lost their claim (lease expired or "
			 "released); their results were not written", j->ndone - j->completed,
			 j->ndone);
	outcomes_done_written(o, j->ndone);
	if (j->max > 0) {
		b->n = j->n;
		b->qi = j->qi;
		b->claimed_ns = b->pause_seen_ns = uv_hrtime();  /* the claim skips paused queues */
		took = (b->claimed_ns - j->t0) / 1000u;
		b->claim_us = took > UINT32_MAX ? UINT32_MAX : (uint32_t)took;
	}
	return 0;
}

int batch_take_slot(struct store *s, const struct item *x, bool key_slot, unsigned *ret_wait_ms,
		    char *err, size_t errlen)
{
	*ret_wait_ms = 0;
	if (key_slot)
		return x->row.key_interval_ms && x->row.group ?
		       store_take_slot(s, x->row.queue, x->row.group, BATCH_KEY_HOLD_MS,
				       ret_wait_ms, err, errlen) : 1;
	return x->row.min_interval_ms ? store_take_slot(s, x->row.queue, NULL, UINT_MAX,
							ret_wait_ms, err, errlen) : 1;
}

int batch_paused(struct batch *b, struct store *s, const char *queue, char *err,
		 size_t errlen)
{
	int r;

	/* Quick rows do not pay a round trip each: a pause shows within PAUSE_CHECK_NS. */
	if (uv_hrtime() - b->pause_seen_ns < PAUSE_CHECK_NS)
		return 0;
	r = store_paused(s, queue, err, errlen);
	if (r == 0)
		b->pause_seen_ns = uv_hrtime();
	return r;
}

int batch_extend(struct batch *b, const struct items *t, const struct outcomes *o,
		 struct store *s, unsigned lease_ms, char *err, size_t errlen)
{
	struct store_ref refs[ITEMS_MAX + OUTCOMES_MAX];
	uint64_t t0 = uv_hrtime();
	size_t n = 0;
	int r;

	for (size_t i = 0; i < t->cap; i++)
		if (t->all[i].state != ITEM_FREE)
			refs[n++] = (struct store_ref){ .id = t->all[i].row.id,
							.token = t->all[i].row.token };
	n = outcomes_refs(o, refs, n);
	if (n == 0)
		return 0;
	r = store_extend(s, refs, n, lease_ms, err, errlen);
	/* Some no longer ours (which, the statement does not say): none is used any more. */
	if (r >= 0)
		__atomic_store_n(&b->lease_ok_ns, (size_t)r < n ? 0 : lease_ok(t0, lease_ms),
				 __ATOMIC_RELEASE);
	if (r >= 0 && (size_t)r < n)
		log_warn("lease extension: %zu of %zu held items are no longer ours: none of them "
			 "is used any more", n - (size_t)r, n);
	return r < 0 ? r : 0;
}
