/* pool_cancel — rows an operator cancelled (store_cancel) while a worker of this pool runs
 * them. While the workers hold rows, at most every POOL_CANCEL_CHECK_MS one statement (per
 * 1024 rows held) looks their cancel requests up (store_cancels_live: primary-key lookups)
 * on the supervisor's database queue, off the loop; each row found goes to the worker
 * holding it (PROTO_CANCEL), which stops its run. A supervisor whose workers hold nothing
 * sends no statement. A row still held at the next check is sent again (the worker ignores
 * a second cancel). */
#include "supervisor/pool_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

struct cancel_job {
	struct dbq_job j;
	struct pool *p;
	struct store_ref *refs;    /* every row held, when the job was made */
	struct store_ref *found;   /* those with a live cancel request (room for n) */
	size_t n, nfound;
};

#define CANCEL_CHUNK 1024u   /* rows looked up by one statement */

static int cancel_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct cancel_job *cj = container_of(j, struct cancel_job, j);
	size_t got;
	int r = 0;

	cj->nfound = 0;
	for (size_t at = 0; r >= 0 && at < cj->n; at += CANCEL_CHUNK) {
		size_t k = cj->n - at < CANCEL_CHUNK ? cj->n - at : CANCEL_CHUNK;
		r = store_cancels_live(st, cj->refs + at, k, cj->found + cj->nfound, &got, err,
				       errlen);
		if (r >= 0)
			cj->nfound += got;
	}
	return r;
}

/* Whether (id, token) is in refs[0..n). */
static bool has_ref(const struct store_ref *refs, size_t n, uint64_t id, uint64_t token)
{
	for (size_t i = 0; i < n; i++)
		if (refs[i].id == id && refs[i].token == token)
			return true;
	return false;
}

/* The rows of found[] that sl's worker holds, to it in one frame; logged the first time. */
static void tell_slot(struct pool *p, struct slot *sl, const struct store_ref *found, size_t n)
{
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_CANCEL;
	for (size_t i = 0; i < n && m.u.items.n < PROTO_MAX_ITEMS; i++) {
		if (!has_ref(sl->held.refs, sl->held.n, found[i].id, found[i].token))
			continue;
		m.u.items.items[m.u.items.n].id = found[i].id;
		m.u.items.items[m.u.items.n++].token = found[i].token;
		if (!has_ref(p->cancel_told, p->ncancel_told, found[i].id, found[i].token))
			log_info("item id=%llu cancelled by an operator: worker slot=%u pid=%d "
				 "stops it", (unsigned long long)found[i].id, sl->idx, (int)sl->pid);
	}
	if (m.u.items.n > 0)
		pool_send(sl, &m);
}

static void cancel_done(struct dbq_job *j)
{
	struct cancel_job *cj = container_of(j, struct cancel_job, j);
	struct pool *p = cj->p;

	p->cancel_busy = false;
	if (j->rc < 0)
		log_debug("looking for cancelled rows: %s", j->err);
	for (unsigned i = 0; j->rc >= 0 && !p->freeing && i < p->nslots; i++)
		if (p->slots[i]->chan && p->slots[i]->held.n > 0)
			tell_slot(p, p->slots[i], cj->found, cj->nfound);
	/* What was told stays known (not logged again) while it is still found. */
	if (j->rc >= 0) {
		size_t n = cj->nfound < POOL_CANCEL_TOLD ? cj->nfound : POOL_CANCEL_TOLD;
		memcpy(p->cancel_told, cj->found, n * sizeof(*cj->found));
		p->ncancel_told = n;
	}
	free(cj->refs);
	free(cj->found);
	free(cj);
	pool_unref(p);
}

/* Every row the workers hold, into a job; NULL when none (or no memory). */
static struct cancel_job *cancel_job_make(struct pool *p)
{
	struct cancel_job *cj;
	size_t n = 0, k = 0;

	for (unsigned i = 0; i < p->nslots; i++)
		if (p->slots[i]->chan)
			n += p->slots[i]->held.n;
	if (n == 0 || !(cj = calloc(1, sizeof(*cj))))
		return NULL;
	cj->refs = calloc(n, sizeof(*cj->refs));
	cj->found = calloc(n, sizeof(*cj->found));
	if (!cj->refs || !cj->found) {
		free(cj->refs);
		free(cj->found);
		free(cj);
		return NULL;
	}
	for (unsigned i = 0; i < p->nslots; i++) {
		const struct slot *sl = p->slots[i];
		for (size_t h = 0; sl->chan && h < sl->held.n; h++) {
			cj->refs[k].id = sl->held.refs[h].id;
			cj->refs[k++].token = sl->held.refs[h].token;
		}
	}
	cj->n = k;
	cj->p = p;
	cj->j.run = cancel_run;
	cj->j.done = cancel_done;
	return cj;
}

static void on_cancel_tick(uv_timer_t *t)
{
	struct pool *p = t->data;
	struct cancel_job *cj;

	if (p->cancel_busy || p->freeing || !(cj = cancel_job_make(p)))
		return;
	p->cancel_busy = true;
	p->open_handles++;   /* the pool stays until the job is over */
	dbq_push(p->o.dbq, &cj->j);
}

void pool_cancel_start(struct pool *p)
{
	int r = uv_timer_start(&p->cancel_timer, on_cancel_tick, POOL_CANCEL_CHECK_MS,
			       POOL_CANCEL_CHECK_MS);

	if (r < 0)
		log_error("cannot start the timer that looks for cancelled rows: %s; a cancelled "
			  "row runs on until it ends", uv_strerror(r));
}
