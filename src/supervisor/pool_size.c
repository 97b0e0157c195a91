/* How many workers, and which: growing the pool (a slot made, or a retired one used again),
 * shrinking it (the idlest workers retire after their item: told to stop, their rows not
 * started go back, and their slot is put away once they are gone), and replacing every
 * worker after a reload (a new fork server, which reads the settings again; then one worker
 * at a time stops after its item and a new one takes its slot, so the pool stays nearly at
 * strength). */
#include "supervisor/pool_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static const char *const role_names[] = {
	[ROLE_SPARE] = "spare", [ROLE_ACTIVE] = "active", [ROLE_REPLACE] = "to replace",
	[ROLE_RETIRING] = "retiring",
};
#define B(r) (1u << (r))
/* What may follow what: a spare is taken into the pool; one of the pool's is marked to be
 * replaced (a reload) or retires (the pool shrinks); one marked is replaced (or its next
 * start is from the new fork server anyway: active again) or retires; a retiring one is put
 * away once its worker is gone. */
static const unsigned may_follow[] = {
	[ROLE_SPARE] = B(ROLE_ACTIVE),
	[ROLE_ACTIVE] = B(ROLE_REPLACE) | B(ROLE_RETIRING),
	[ROLE_REPLACE] = B(ROLE_ACTIVE) | B(ROLE_RETIRING),
	[ROLE_RETIRING] = B(ROLE_SPARE),
};

/* The one place a slot's role changes. */
static void role_set(struct slot *sl, enum slot_role to)
{
	assert(may_follow[sl->role] & B(to));
	log_debug("worker slot=%u: %s -> %s", sl->idx, role_names[sl->role], role_names[to]);
	sl->role = to;
}

/* Stop sl's worker after its item: it drains (rows not started go back) and exits. */
static void stop_after_item(struct slot *sl)
{
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_STOP;
	m.u.stop.grace_ms = sl->pool->cfg->timeout_ms;   /* the item's own limit */
	pool_send(sl, &m);
}

static struct slot *new_slot(struct pool *p)
{
	struct slot *sl;

	if (p->nslots == POOL_SLOTS_MAX)
		return NULL;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return NULL;
	sl->pool = p;
	sl->idx = p->nslots;
	sl->health = SLOT_DOWN;
	sl->fork_fd = -1;
	uv_timer_init(p->o.loop, &sl->respawn_timer);
	sl->respawn_timer.data = sl;
	p->open_handles++;
	p->slots[p->nslots++] = sl;
	permits_set_slots(&p->permits, p->nslots);
	return sl;
}

unsigned pool_size(const struct pool *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->nslots; i++)
		n += slot_role_counts(p->slots[i]->role);
	return n;
}

/* How much a worker is in the middle of something: retire the lowest first. */
static int busyness(const struct slot *sl)
{
	int running;

	if (sl->health != SLOT_UP)
		return 0;                      /* down, or being replaced anyway */
	running = (int)pool_running(sl, NULL, 0);
	switch (sl->wstate) {
	case PROTO_W_IDLE:   /* asleep, perhaps with rows running */
		return running ? 4 + running : 1;
	case PROTO_W_STARTING: return 2;
	case PROTO_W_DB_DOWN: return 3;
	default: return 4 + running;
	}
}

static void retire_one(struct pool *p)
{
	struct slot *best = NULL;

	for (unsigned i = 0; i < p->nslots; i++) {
		struct slot *sl = p->slots[i];
		if (slot_role_counts(sl->role) && (!best || busyness(sl) < busyness(best)))
			best = sl;
	}
	if (!best)
		return;
	role_set(best, ROLE_RETIRING);
	if (best->health == SLOT_DOWN) {
		/* Waiting to be started again: put away now. */
		uv_timer_stop(&best->respawn_timer);
		role_set(best, ROLE_SPARE);
		log_info("worker slot=%u retired (it was down)", best->idx);
		return;
	}
	log_info("worker slot=%u pid=%d retires after its item", best->idx, (int)best->pid);
	stop_after_item(best);
}

static void add_one(struct pool *p)
{
	struct slot *sl = NULL;

	/* A slot put away before, else a new one. */
	for (unsigned i = 0; i < p->nslots && !sl; i++)
		if (p->slots[i]->role == ROLE_SPARE && p->slots[i]->health == SLOT_DOWN)
			sl = p->slots[i];
	if (!sl && !(sl = new_slot(p))) {
		log_error("cannot add a worker: at most %d slots", POOL_SLOTS_MAX);
		return;
	}
	role_set(sl, ROLE_ACTIVE);
	sl->quick_deaths = 0;
	sl->pool->spawn(sl);
}

void pool_resize(struct pool *p, unsigned n)
{
	unsigned have = pool_size(p);

	if (p->stopping || n == have)
		return;
	if (n > have)
		log_info("workers: %u -> %u", have, n);
	else
		log_info("workers: %u -> %u (the idlest retire after their item)", have, n);
	for (; have < n; have++)
		add_one(p);
	for (; have > n; have--)
		retire_one(p);
}

/* The next worker to replace, if none is being replaced: told to stop after its item. */
static void replace_next(struct pool *p)
{
	if (p->replacing || p->stopping)
		return;
	for (unsigned i = 0; i < p->nslots; i++) {
		struct slot *sl = p->slots[i];
		if (sl->role != ROLE_REPLACE)
			continue;
		if (sl->health == SLOT_DOWN || sl->health == SLOT_FORKING) {
			/* its next start (or this one: the old fork server's questions were
			 * answered -ECANCELED) is from the new fork server anyway */
			role_set(sl, ROLE_ACTIVE);
			continue;
		}
		p->replacing = sl;
		log_info("worker slot=%u pid=%d is replaced after its item", sl->idx, (int)sl->pid);
		stop_after_item(sl);
		return;
	}
	log_info("every worker now runs the new settings");
}

void pool_replace_all(struct pool *p)
{
	if (p->stopping)
		return;
	/* The next worker comes from a new fork server, which reads the settings again. */
	forker_stop(&p->forker);
	for (unsigned i = 0; i < p->nslots; i++)
		if (p->slots[i]->role == ROLE_ACTIVE)
			role_set(p->slots[i], ROLE_REPLACE);
	if (p->replacing) {
		/* One is on its way out already: it will be started from the new fork server. */
		return;
	}
	replace_next(p);
}

bool pool_size_gone(struct slot *sl)
{
	struct pool *p = sl->pool;

	if (sl->role == ROLE_RETIRING) {
		role_set(sl, ROLE_SPARE);
		log_info("worker slot=%u retired", sl->idx);
		return true;
	}
	if (p->replacing == sl || sl->role == ROLE_REPLACE) {
		if (sl->role == ROLE_REPLACE)
			role_set(sl, ROLE_ACTIVE);
		sl->pool->spawn(sl);   /* at once: a clean stop, not a crash */
		return true;
	}
	return false;
}

void pool_size_started(struct slot *sl)
{
	struct pool *p = sl->pool;

	if (p->replacing != sl)
		return;
	p->replacing = NULL;
	replace_next(p);
}
