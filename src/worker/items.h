/* items — the rows a worker holds: claimed, and their outcome not yet recorded. Each entry is
 * free or holds one row in one state, changed only by items_set:
 *
 *   ITEM_FREE    unused
 *   ITEM_GATED   claimed from a queue with a rate limit: waits in the gate (a FIFO) for its
 *                start slot before it goes to the handler
 *   ITEM_HANDED  with the handler: queued there, or running (the handler knows which)
 *
 * A row whose run ended leaves (items_put): its outcome is the outcomes module's from then on.
 * Pure bookkeeping: no I/O. */
#ifndef CLAIMD_ITEMS_H
#define CLAIMD_ITEMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"
#include "store/store.h"
#include "worker/handler_job.h"

/* The most rows a worker holds: as many as it runs at once and a claim's worth more. */
#define ITEMS_MAX (HANDLER_CONCURRENCY_MAX + PROTO_MAX_ITEMS)

enum item_state {
	ITEM_FREE,
	ITEM_GATED,
	ITEM_HANDED,
	ITEM_STATE_COUNT,
};

struct item {
	struct store_item row;
	struct handler_job job;     /* what the handler sees; its strings point into row */
	enum item_state state;
	uint8_t qi;                 /* the --queue it was claimed from (an index) */
	uint64_t claimed_ns;        /* when its claim ended (uv_hrtime) */
	/* its progress: the latest report, whether it is written, when one was (uv_now) */
	char *progress;
	bool progress_dirty;
	uint64_t progress_at;
	bool cancelled;             /* an operator cancelled it (PROTO_CANCEL): not run, or stopped */
	struct item *next;          /* the free list, or the gate */
	bool key_slot, queue_slot;  /* gated: the start of its key's, its queue's rate it took */
};

struct items {
	struct item *all;
	size_t cap;
	size_t count[ITEM_STATE_COUNT];
	struct item *free;
	struct item *gate_head, *gate_tail;
};

/* Room for cap rows. Returns 0 or -ENOMEM. */
int items_init(struct items *t, size_t cap);
/* Frees every row still held. */
void items_fini(struct items *t);

/* A free entry for a claimed row (copied in, its memory taken over), ITEM_HANDED or
 * ITEM_GATED (then at the gate's end) as gated says; NULL when every entry is used. */
struct item *items_add(struct items *t, const struct store_item *row, uint8_t qi,
		       uint64_t claimed_ns, bool gated);
/* The row held with that id and token, or NULL. */
struct item *items_find(struct items *t, uint64_t id, uint64_t token);
/* The gate's first row, or NULL. */
struct item *items_gate_first(const struct items *t);
/* The gate's first row goes to the handler: ITEM_HANDED. */
void items_gate_pass(struct items *t);
/* The row left (its run ended, or it was never run): its memory is freed, the entry free. */
void items_put(struct items *t, struct item *x);

/* Rows held: gated and handed. */
static inline size_t items_held(const struct items *t)
{
	return t->count[ITEM_GATED] + t->count[ITEM_HANDED];
}

/* The item a handler job is part of. */
static inline struct item *items_of_job(struct handler_job *job)
{
	return (struct item *)(void *)((char *)job - offsetof(struct item, job));
}

const char *items_state_name(enum item_state s);

#endif
