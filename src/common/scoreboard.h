/* scoreboard — what each worker is running, in memory the supervisor and its workers share:
 * a page per worker slot, written by that slot's worker (and its in-process handler threads)
 * with plain stores, read by the supervisor. It tells the supervisor, at no cost to the
 * worker, which items run where and since when (claimctl status, /metrics), which process
 * groups a dead worker's handlers leave behind, and which items a worker was running when it
 * died, so that those alone can be blamed for a crash. The same table tells the lease fence
 * (fence.h), from a signal handler, what to kill.
 *
 * The memory is one memfd made by the supervisor before it starts the fork server, which
 * inherits it on SCOREBOARD_FD; workers are forked from the fork server and map it there.
 * Entries are written only by their owner (one thread at a time per entry) and read with
 * acquire loads: a reader sees an entry whole or not at all. Does not log. */
#ifndef CLAIMD_SCOREBOARD_H
#define CLAIMD_SCOREBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SCOREBOARD_FD 4           /* where the fork server and its workers find it */
#define SCOREBOARD_ENTRIES 256    /* items one worker may run at once (--concurrency) */
#define SCOREBOARD_SLOTS 1024     /* worker slots (POOL_SLOTS_MAX) */

/* An entry's flags. */
enum {
	SB_INPROC = 1u << 0,   /* the item runs inside the worker (so:, noop): no process to kill */
	SB_OVERRAN = 1u << 1,  /* it ran past its deadline and could not be stopped: the worker
				* exits, and this item is to blame */
};

/* One running item. id 0: the entry is free. */
struct sb_entry {
	uint64_t id;           /* written last on start, first on end (atomically) */
	uint64_t token;        /* the claim's fencing token */
	uint64_t started_ns;   /* CLOCK_MONOTONIC (uv_hrtime), the same on both sides */
	int32_t pgid;          /* the handler's process group, 0 when none */
	uint32_t flags;        /* SB_* */
};

/* One worker slot's page(s). */
struct sb_slot {
	uint32_t pid;          /* the worker that owns it now, 0 none */
	uint32_t nentries;     /* its concurrency */
	struct sb_entry entries[SCOREBOARD_ENTRIES];
};

/* The supervisor: make the shared memory (not inherited by exec but through
 * scoreboard_pass). Returns 0 with *ret mapped, or -errno. */
int scoreboard_create(struct sb_slot **ret, int *ret_fd);
/* A worker: map slot's part of the memory on fd, and clear it (the slot is ours now). Returns
 * 0 with *ret, or -errno. */
int scoreboard_attach(int fd, unsigned slot, uint32_t nentries, struct sb_slot **ret);
/* Unmap what scoreboard_create made (the supervisor, at exit). */
void scoreboard_destroy(struct sb_slot *all, int fd);

/* In a worker (any thread that owns entry e): item id runs from now, in process group pgid
 * (0: in-process), with flags. */
void sb_start(struct sb_entry *e, uint64_t id, uint64_t token, pid_t pgid, uint32_t flags);
/* Its process group changed (a co-process started or was replaced). */
void sb_set_pgid(struct sb_entry *e, pid_t pgid);
/* Add flags (SB_OVERRAN) to a running entry. */
void sb_flag(struct sb_entry *e, uint32_t flags);
/* The entry's item ended. */
void sb_end(struct sb_entry *e);

/* A reader's copy of one running entry. */
struct sb_item {
	uint64_t id, token, started_ns;
	pid_t pgid;
	uint32_t flags;
};

/* The items slot's worker is running now, up to max into out (oldest first). Returns how
 * many. Safe while the worker writes: an entry changing meanwhile is seen before or after. */
size_t scoreboard_read(const struct sb_slot *slot, struct sb_item *out, size_t max);

/* The supervisor, once slot's worker is gone: forget what it left (the next one starts from
 * nothing). */
void scoreboard_clear(struct sb_slot *slot);

#endif
