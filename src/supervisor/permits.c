#include "supervisor/permits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

int permits_init(struct permits *p, unsigned cap, unsigned max,
		 const struct permits_ops *ops, void *data)
{
	memset(p, 0, sizeof(*p));
	p->ops = ops;
	p->data = data;
	p->cap = cap;
	p->max = max;
	p->held = calloc(cap, sizeof(*p->held));
	p->want = calloc(cap, sizeof(*p->want));
	return p->held && p->want ? 0 : -ENOMEM;
}

void permits_set_slots(struct permits *p, unsigned nslots)
{
	p->nslots = nslots <= p->cap ? nslots : p->cap;
}

void permits_fini(struct permits *p)
{
	free(p->held);
	free(p->want);
	p->held = NULL;
	p->want = NULL;
}

static void grant(struct permits *p, unsigned slot)
{
	struct place head, now_at = p->cursor;
	uint64_t now = p->ops->now_ms(p->data);

	/* Once a second one claimer scans from the head, for rows behind the cursor. */
	if (now - p->head_scan_at >= PERMITS_HEAD_SCAN_MS) {
		p->head_scan_at = now;
		memset(&head, 0, sizeof(head));
		now_at = head;
	}
	p->held[slot] = true;
	p->out++;
	p->granted++;
	p->ops->grant(p->data, slot, &now_at);
}

void permits_rewind(struct permits *p)
{
	p->head_scan_at = 0;
}

static void want_remove(struct permits *p, unsigned slot)
{
	size_t k = 0;

	for (size_t i = 0; i < p->nwant; i++)
		if (p->want[i] != slot)
			p->want[k++] = p->want[i];
	p->nwant = k;
}

/* Permits to the waiting workers while some are free. */
static void grant_waiting(struct permits *p)
{
	while (!p->stopped && p->out < p->max && p->nwant > 0) {
		unsigned slot = p->want[0];
		memmove(p->want, p->want + 1, --p->nwant * sizeof(*p->want));
		if (!p->held[slot] && p->ops->can_take(p->data, slot))
			grant(p, slot);
	}
}

void permits_want(struct permits *p, unsigned slot)
{
	bool queued = false;

	for (size_t i = 0; i < p->nwant; i++)
		queued |= p->want[i] == slot;
	if (!queued && !p->held[slot])
		p->want[p->nwant++] = slot;
	grant_waiting(p);
}

static void give_back(struct permits *p, unsigned slot)
{
	if (p->held[slot]) {
		p->held[slot] = false;
		p->out--;
	}
}

void permits_claimed(struct permits *p, unsigned slot, const struct place *reached, bool more)
{
	/* The furthest place any worker claimed is where the next claimer starts. */
	if (store_place_after(reached, &p->cursor))
		p->cursor = *reached;
	give_back(p, slot);
	if (more)
		permits_wake_one(p, (int)slot);
	else
		grant_waiting(p);
}

void permits_drop(struct permits *p, unsigned slot)
{
	give_back(p, slot);
	want_remove(p, slot);
}

void permits_wake_one(struct permits *p, int except)
{
	grant_waiting(p);
	if (p->stopped || p->out >= p->max)
		return;
	for (unsigned k = 0; k < p->nslots; k++) {
		unsigned slot = (p->rr + k) % p->nslots;
		if ((int)slot == except || p->held[slot] || !p->ops->idle(p->data, slot))
			continue;
		p->rr = slot + 1;
		grant(p, slot);
		return;
	}
}

void permits_set_max(struct permits *p, unsigned max)
{
	p->max = max;
	grant_waiting(p);
}

bool permits_all_out(const struct permits *p)
{
	return p->out >= p->max;
}

void permits_stop(struct permits *p)
{
	p->stopped = true;
}

uint64_t permits_claims(const struct permits *p)
{
	return p->out > 0 ? PERMITS_CLAIMING : p->granted;
}
