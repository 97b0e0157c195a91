#include "common/scoreboard.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SIZE (sizeof(struct sb_slot) * SCOREBOARD_SLOTS)

int scoreboard_create(struct sb_slot **ret, int *ret_fd)
{
	void *p;
	int fd = memfd_create("claimd-scoreboard", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)SIZE) < 0)
		goto fail;
	p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	*ret = p;
	*ret_fd = fd;
	return 0;
fail:
	{
		int r = -errno;
		close(fd);
		return r;
	}
}

int scoreboard_attach(int fd, unsigned slot, uint32_t nentries, struct sb_slot **ret)
{
	struct sb_slot *all;

	if (slot >= SCOREBOARD_SLOTS || nentries == 0 || nentries > SCOREBOARD_ENTRIES)
		return -EINVAL;
	all = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (all == MAP_FAILED)
		return -errno;
	*ret = &all[slot];
	scoreboard_clear(*ret);
	__atomic_store_n(&(*ret)->nentries, nentries, __ATOMIC_RELAXED);
	__atomic_store_n(&(*ret)->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
	return 0;
}

void scoreboard_destroy(struct sb_slot *all, int fd)
{
	if (all)
		munmap(all, SIZE);
	if (fd >= 0)
		close(fd);
}

void sb_start(struct sb_entry *e, uint64_t id, uint64_t token, pid_t pgid, uint32_t flags)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	e->token = token;
	e->started_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	__atomic_store_n(&e->pgid, (int32_t)pgid, __ATOMIC_RELAXED);
	__atomic_store_n(&e->flags, flags, __ATOMIC_RELAXED);
	__atomic_store_n(&e->id, id, __ATOMIC_RELEASE);
}

void sb_set_pgid(struct sb_entry *e, pid_t pgid)
{
	__atomic_store_n(&e->pgid, (int32_t)pgid, __ATOMIC_RELEASE);
}

void sb_flag(struct sb_entry *e, uint32_t flags)
{
	__atomic_or_fetch(&e->flags, flags, __ATOMIC_RELEASE);
}

void sb_end(struct sb_entry *e)
{
	__atomic_store_n(&e->id, 0, __ATOMIC_RELEASE);
}

size_t scoreboard_read(const struct sb_slot *slot, struct sb_item *out, size_t max)
{
	uint32_t n = __atomic_load_n(&slot->nentries, __ATOMIC_RELAXED);
	size_t k = 0;

	if (n > SCOREBOARD_ENTRIES)
		n = SCOREBOARD_ENTRIES;
	for (uint32_t i = 0; i < n && k < max; i++) {
		const struct sb_entry *e = &slot->entries[i];
		uint64_t id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);
		if (id == 0)
			continue;
		out[k] = (struct sb_item){
			.id = id, .token = e->token, .started_ns = e->started_ns,
			.pgid = __atomic_load_n(&e->pgid, __ATOMIC_ACQUIRE),
			.flags = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE),
		};
		/* Ended, or ended and started again with another item, meanwhile: skip it. */
		if (__atomic_load_n(&e->id, __ATOMIC_ACQUIRE) != id)
			continue;
		k++;
	}
	/* Oldest first: a few entries, an insertion sort. */
	for (size_t i = 1; i < k; i++) {
		struct sb_item t = out[i];
		size_t j = i;
		while (j > 0 && out[j - 1].started_ns > t.started_ns) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = t;
	}
	return k;
}

void scoreboard_clear(struct sb_slot *slot)
{
	for (size_t i = 0; i < SCOREBOARD_ENTRIES; i++)
		__atomic_store_n(&slot->entries[i].id, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->nentries, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->pid, 0, __ATOMIC_RELEASE);
}
