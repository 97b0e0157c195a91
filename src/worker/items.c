#include "worker/items.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const state_names[ITEM_STATE_COUNT] = { "free", "gated", "handed" };

#define B(s) (1u << (s))

/* What may follow what. */
static const unsigned may_follow[ITEM_STATE_COUNT] = {
	[ITEM_FREE] = B(ITEM_GATED) | B(ITEM_HANDED),
	[ITEM_GATED] = B(ITEM_HANDED) | B(ITEM_FREE),
	[ITEM_HANDED] = B(ITEM_FREE),
};

const char *items_state_name(enum item_state s)
{
	return s < ITEM_STATE_COUNT ? state_names[s] : "?";
}

/* The one place an item's state changes. */
static void items_set(struct items *t, struct item *x, enum item_state to)
{
	assert(may_follow[x->state] & B(to));
	t->count[x->state]--;
	t->count[to]++;
	x->state = to;
}

int items_init(struct items *t, size_t cap)
{
	memset(t, 0, sizeof(*t));
	t->all = calloc(cap, sizeof(*t->all));
	if (!t->all)
		return -ENOMEM;
	t->cap = cap;
	t->count[ITEM_FREE] = cap;
	for (size_t i = cap; i-- > 0;) {
		t->all[i].next = t->free;
		t->free = &t->all[i];
	}
	return 0;
}

void items_fini(struct items *t)
{
	for (size_t i = 0; t->all && i < t->cap; i++)
		if (t->all[i].state != ITEM_FREE)
			items_put(t, &t->all[i]);
	free(t->all);
	memset(t, 0, sizeof(*t));
}

struct item *items_add(struct items *t, const struct store_item *row, uint8_t qi,
		       uint64_t claimed_ns, bool gated)
{
	struct item *x = t->free;

	if (!x)
		return NULL;
	t->free = x->next;
	x->next = NULL;
	x->row = *row;
	x->qi = qi;
	x->claimed_ns = claimed_ns;
	x->progress = NULL;
	x->progress_dirty = false;
	x->progress_at = 0;
	x->key_slot = x->queue_slot = false;
	x->cancelled = false;
	memset(&x->job, 0, sizeof(x->job));
	items_set(t, x, gated ? ITEM_GATED : ITEM_HANDED);
	if (gated) {
		if (t->gate_tail)
			t->gate_tail->next = x;
		else
			t->gate_head = x;
		t->gate_tail = x;
	}
	return x;
}

struct item *items_find(struct items *t, uint64_t id, uint64_t token)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->all[i].state != ITEM_FREE && t->all[i].row.id == id &&
		    t->all[i].row.token == token)
			return &t->all[i];
	return NULL;
}

struct item *items_gate_first(const struct items *t)
{
	return t->gate_head;
}

void items_gate_pass(struct items *t)
{
	struct item *x = t->gate_head;

	t->gate_head = x->next;
	if (!t->gate_head)
		t->gate_tail = NULL;
	x->next = NULL;
	items_set(t, x, ITEM_HANDED);
}

void items_put(struct items *t, struct item *x)
{
	if (x->state == ITEM_GATED) {
		/* out of the gate, wherever it is */
		struct item **pp = &t->gate_head, *prev = NULL;
		while (*pp && *pp != x) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		if (*pp) {
			*pp = x->next;
			if (t->gate_tail == x)
				t->gate_tail = prev;
		}
	}
	store_items_clear(&x->row, 1);
	free(x->progress);
	x->progress = NULL;
	items_set(t, x, ITEM_FREE);
	x->next = t->free;
	t->free = x;
}
