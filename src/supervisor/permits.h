/* permits — claim permits: at most `max` claim transactions at once per supervisor (beyond
 * the number of cores, more concurrent locking scans of the same index range only slow each
 * other down). A worker ready for more asks (WANT); a permit is a WAKE that carries the place
 * in claim order to start after; the worker's CLAIMED, with its rows or none, gives it back.
 * Keeps the furthest place any worker reached, and once a second has one claimer scan from
 * the head instead. Pure bookkeeping: sends nothing itself, grants through ops. */
#ifndef CLAIMD_PERMITS_H
#define CLAIMD_PERMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/place.h"

#define PERMITS_HEAD_SCAN_MS 1000  /* see store_cursor_hint() */

struct permits_ops {
	/* Whether slot can take a permit now (its worker runs and its channel is open). */
	bool (*can_take)(void *data, unsigned slot);
	/* Whether slot is idle: asleep until woken. */
	bool (*idle)(void *data, unsigned slot);
	/* Send slot a permit: claim, after cursor (none: from the head). */
	void (*grant)(void *data, unsigned slot, const struct place *cursor);
	uint64_t (*now_ms)(void *data);
};

struct permits {
	const struct permits_ops *ops;
	void *data;
	unsigned cap, nslots, max;  /* room for cap slots; slots [0, nslots) are asked about */
	unsigned out;              /* permits held by workers */
	uint64_t granted;          /* permits granted since the start */
	bool *held;                /* per slot */
	unsigned *want;            /* slots waiting for one, oldest first */
	size_t nwant;
	unsigned rr;               /* the next idle slot to wake, round robin */
	struct place cursor;       /* the furthest place any worker's claim reached */
	uint64_t head_scan_at;     /* when a claimer was last told to scan from the head */
	bool stopped;
};

/* Room for cap slots, none in use yet. Returns 0 or -ENOMEM. */
int permits_init(struct permits *p, unsigned cap, unsigned max,
		 const struct permits_ops *ops, void *data);
/* Slots [0, nslots) exist now (nslots <= cap). */
void permits_set_slots(struct permits *p, unsigned nslots);
/* At most max claims at once from now on. */
void permits_set_max(struct permits *p, unsigned max);
void permits_fini(struct permits *p);

/* slot asked for a permit (WANT): it gets one when one is free. */
void permits_want(struct permits *p, unsigned slot);

/* slot's CLAIMED, reaching place reached: its permit comes back (a worker with room for more
 * asks again with its next WANT). With more (a full claim, say) other rows may be due:
 * another worker is woken. */
void permits_claimed(struct permits *p, unsigned slot, const struct place *reached, bool more);

/* slot's worker is gone: its permit comes back, it waits for none. */
void permits_drop(struct permits *p, unsigned slot);

/* Rows behind the cursor became claimable (a dead worker's, released): the next permit
 * scans from the head. */
void permits_rewind(struct permits *p);

/* There is work: a waiting worker gets a permit, else an idle one (but except, -1 for none). */
void permits_wake_one(struct permits *p, int except);

/* PERMITS_CLAIMING while a claim runs, else how many began: the same before and after a
 * statement, and not PERMITS_CLAIMING, no claim (whose CLAIMED says what it found) ran
 * meanwhile to see the rows that statement saw. */
#define PERMITS_CLAIMING UINT64_MAX
uint64_t permits_claims(const struct permits *p);

/* Whether every permit is out. */
bool permits_all_out(const struct permits *p);

/* No more permits from now on (stopping). */
void permits_stop(struct permits *p);

#endif
