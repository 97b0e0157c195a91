#include "supervisor/jobstats.h"

#include <string.h>

const double jobstats_duration_le[JOBSTATS_DURATION_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};
const double jobstats_claim_le[JOBSTATS_CLAIM_BUCKETS] = {
	0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
};

void jobstats_init(struct jobstats *js, const struct config *cfg)
{
	memset(js, 0, sizeof(*js));
	js->cfg = cfg;
}

static void observe(struct jobstats_hist *h, const double *le, size_t nle, uint32_t us)
{
	double s = us / 1e6;

	for (size_t i = 0; i < nle; i++)
		if (s <= le[i]) {
			h->bucket[i]++;
			break;
		}
	h->count++;
	h->sum += s;
}

/* Move the ring on to now_s, zeroing the seconds passed. */
static void advance(struct jobstats *js, uint64_t now_s)
{
	if (now_s <= js->second)
		return;
	if (now_s - js->second >= JOBSTATS_SECONDS) {
		memset(js->done, 0, sizeof(js->done));
		memset(js->failed, 0, sizeof(js->failed));
	} else {
		for (uint64_t s = js->second + 1; s <= now_s; s++) {
			js->done[s % JOBSTATS_SECONDS] = 0;
			js->failed[s % JOBSTATS_SECONDS] = 0;
		}
	}
	js->second = now_s;
}

void jobstats_add(struct jobstats *js, const struct proto_msg *m, uint64_t now_s)
{
	advance(js, now_s);
	if (m->type == PROTO_CLAIMED) {
		js->claims++;
		js->claims_empty += m->u.items.n == 0;
		observe(&js->claim, jobstats_claim_le, JOBSTATS_CLAIM_BUCKETS, m->u.items.claim_us);
		return;
	}
	if (m->type != PROTO_FINISHED)
		return;
	for (size_t i = 0; i < m->u.items.n; i++) {
		const struct proto_item *it = &m->u.items.items[i];
		struct jobstats_queue *q;
		if (it->queue >= js->cfg->nqueues || it->outcome > PROTO_OUT_MAX)
			continue;
		q = &js->queue[it->queue];
		q->outcome[it->outcome]++;
		if (it->outcome == PROTO_OUT_DONE)
			js->done[now_s % JOBSTATS_SECONDS]++;
		else if (it->outcome == PROTO_OUT_RETRY || it->outcome == PROTO_OUT_DEAD)
			js->failed[now_s % JOBSTATS_SECONDS]++;
		/* Rows that ran: not those released unstarted or lost before they started. */
		if (it->outcome == PROTO_OUT_RELEASED && it->run_us == 0)
			continue;
		observe(&q->run, jobstats_duration_le, JOBSTATS_DURATION_BUCKETS, it->run_us);
		observe(&q->wait, jobstats_duration_le, JOBSTATS_DURATION_BUCKETS, it->wait_us);
	}
}

unsigned jobstats_series(struct jobstats *js, uint64_t now_s, unsigned n, uint32_t *done,
			 uint32_t *failed)
{
	advance(js, now_s);
	if (n > JOBSTATS_SECONDS)
		n = JOBSTATS_SECONDS;
	if (n > now_s + 1)
		n = (unsigned)now_s + 1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = now_s - (n - 1 - i);
		done[i] = js->done[s % JOBSTATS_SECONDS];
		failed[i] = js->failed[s % JOBSTATS_SECONDS];
	}
	return n;
}
