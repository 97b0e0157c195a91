/* pool_base — what every part of the pool uses and that calls none of them back: a message
 * to a slot's worker, what that worker runs now (the scoreboard), the pool's last reference.
 * pool.c (a slot's life), pool_size.c and pool_cancel.c call it. */
#include "supervisor/pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/chan.h"
#include "common/log.h"
#include "common/proto.h"

void pool_send(struct slot *sl, struct proto_msg *m)
{
	int r;

	if (!sl->chan)
		return;
	r = chan_send(sl->chan, m);
	if (r == 0 && m->type != PROTO_PING)   /* a heartbeat is time's, not a job's */
		sl->pool->o.stats->msgs_to++;
	if (r < 0 && r != -ENOBUFS)
		log_warn("cannot send %s to worker slot=%u pid=%d: %s", proto_type_name(m->type),
			 sl->idx, (int)sl->pid, strerror(-r));
}

size_t pool_running(const struct slot *sl, struct sb_item *out, size_t max)
{
	struct sb_item tmp[SCOREBOARD_ENTRIES];

	if (!sl->board || sl->pid == 0)
		return 0;
	if (!out) {
		out = tmp;
		max = SCOREBOARD_ENTRIES;
	}
	return scoreboard_read(sl->board, out, max);
}

void pool_unref(struct pool *p)
{
	if (--p->open_handles > 0)
		return;
	for (unsigned i = 0; p->slots && i < p->nslots; i++)
		free(p->slots[i]);
	free(p->slots);
	free(p);
}
