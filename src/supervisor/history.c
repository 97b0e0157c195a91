#include "supervisor/history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/jobstats.h"

_Static_assert(STORE_HISTORY_BUCKETS == JOBSTATS_DURATION_BUCKETS + 1,
	       "jobstats' buckets and one over the last");

void history_init(struct history *h, const struct config *cfg, size_t max)
{
	memset(h, 0, sizeof(*h));
	h->cfg = cfg;
	h->max = max ? max : 1;
}

void history_free(struct history *h)
{
	free(h->row);
	h->row = NULL;
	h->n = h->cap = 0;
}

unsigned history_bucket(uint64_t us)
{
	double s = (double)us / 1e6;

	for (unsigned i = 0; i < JOBSTATS_DURATION_BUCKETS; i++)
		if (s <= jobstats_duration_le[i])
			return i;
	return JOBSTATS_DURATION_BUCKETS;
}

double history_bucket_le(unsigned b)
{
	return jobstats_duration_le[b < JOBSTATS_DURATION_BUCKETS ? b : JOBSTATS_DURATION_BUCKETS - 1];
}

/* The row of queue q's minute, made at the end when there is none (the newest minute is
 * last; a minute before the newest one kept is counted in that one). NULL: out of memory. */
static struct store_history_row *row_of(struct history *h, unsigned q, int64_t minute)
{
	struct store_history_row *r;

	if (h->n && minute < h->row[h->n - 1].minute)
		minute = h->row[h->n - 1].minute;
	for (size_t i = h->n; i-- > 0 && h->row[i].minute == minute;)
		if (!strcmp(h->row[i].queue, h->cfg->queues[q]))
			return &h->row[i];
	if (h->n == h->max) {
		/* The database has been away long: the oldest minute goes. */
		memmove(h->row, h->row + 1, (h->n - 1) * sizeof(*h->row));
		h->n--;
		h->dropped++;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 8;
		if (cap > h->max)
			cap = h->max;
		r = realloc(h->row, cap * sizeof(*r));
		if (!r)
			return NULL;
		h->row = r;
		h->cap = cap;
	}
	r = &h->row[h->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->queue, sizeof(r->queue), "%s", h->cfg->queues[q]);
	r->minute = minute;
	return r;
}

void history_add(struct history *h, const struct proto_msg *m, int64_t now_s)
{
	int64_t minute = now_s - ((now_s % 60) + 60) % 60;

	if (m->type != PROTO_FINISHED)
		return;
	for (size_t i = 0; i < m->u.items.n; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		struct store_history_row *r;
		if (it->queue >= h->cfg->nqueues || (it->outcome != PROTO_OUT_DONE &&
		    it->outcome != PROTO_OUT_RETRY && it->outcome != PROTO_OUT_DEAD))
			continue;
		r = row_of(h, it->queue, minute);
		if (!r) {
			h->lost++;
			continue;
		}
		r->done += it->outcome == PROTO_OUT_DONE;
		r->retried += it->outcome == PROTO_OUT_RETRY;
		r->dead += it->outcome == PROTO_OUT_DEAD;
		r->run[history_bucket(it->run_us)]++;
		r->wait[history_bucket(it->wait_us)]++;
		r->run_sum_us += it->run_us;
		r->wait_sum_us += it->wait_us;
	}
}

size_t history_take(struct history *h, size_t max, struct store_history_row **ret)
{
	size_t n = h->n < max ? h->n : max;
	struct store_history_row *out;

	if (n == 0 || !(out = malloc(n * sizeof(*out))))
		return 0;
	memcpy(out, h->row, n * sizeof(*out));
	memmove(h->row, h->row + n, (h->n - n) * sizeof(*h->row));
	h->n -= n;
	*ret = out;
	return n;
}

uint64_t history_dropped(struct history *h)
{
	uint64_t d = h->dropped;

	h->dropped = 0;
	return d;
}
