#include "supervisor/held.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/proc.h"

void held_add(struct held *h, uint64_t id, uint64_t token)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		struct store_ref *q = realloc(h->refs, cap * sizeof(*q));
		if (!q) {
			log_error("out of memory tracking a worker's claims; item id=%llu will come "
				  "back after its lease", (unsigned long long)id);
			return;
		}
		h->refs = q;
		h->cap = cap;
	}
	h->refs[h->n++] = (struct store_ref){ .id = id, .token = token };
}

void held_remove(struct held *h, uint64_t id, uint64_t token)
{
	for (size_t i = 0; i < h->n; i++) {
		if (h->refs[i].id == id && h->refs[i].token == token) {
			h->refs[i] = h->refs[--h->n];
			return;
		}
	}
}

struct release_job {
	struct dbq_job j;
	struct store_ref *refs;   /* the blamed rows last */
	size_t n;
	struct held_blame *blamed; /* refs[n - nblamed + i] is blamed[i]'s row */
	char claimer[PROC_WORKER_NAME_MAX];   /* the gone worker's name: its rows alone are released */
	size_t nblamed;
	void (*done)(void *data, int rc);
	void *data;
};

static int release_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct release_job *rj = container_of(j, struct release_job, j);
	size_t others = rj->n - rj->nblamed;
	int r = 0, k;

	if (others > 0)
		r = store_release(st, rj->refs, others, false, NULL, rj->claimer, err,
				     errlen);
	for (size_t i = 0; r >= 0 && i < rj->nblamed; i++) {
		k = store_release(st, rj->refs + others + i, 1, true, rj->blamed[i].reason,
				     rj->claimer, err, errlen);
		r = k < 0 ? k : r + k;
	}
	return r;
}

static void on_released(struct dbq_job *j)
{
	struct release_job *rj = container_of(j, struct release_job, j);

	if (j->rc >= 0)
		log_info("released %d of %zu claims of a dead worker (the rest had finished)%s",
			 j->rc, rj->n, rj->nblamed ? "; the items it was running when it crashed "
			 "count the attempt" : "");
	else
		log_warn("gave up releasing %zu claims of a dead worker: %s; they come back when "
			 "their lease expires", rj->n, j->err);
	rj->done(rj->data, j->rc);
	free(rj->refs);
	free(rj->blamed);
	free(rj);
}

bool held_release(struct held *h, const char *claimer, const struct held_blame *blame,
		  size_t nblame, struct dbq *dbq, void (*done)(void *data, int rc), void *data)
{
	struct release_job *rj;
	size_t end;

	if (h->n == 0)
		return false;
	rj = calloc(1, sizeof(*rj));
	if (rj && nblame > 0)
		rj->blamed = calloc(nblame, sizeof(*rj->blamed));
	if (!rj || (nblame > 0 && !rj->blamed)) {
		log_error("out of memory: %zu claims of a dead worker come back after their lease",
			  h->n);
		free(rj);
		h->n = 0;
		return false;
	}
	snprintf(rj->claimer, sizeof(rj->claimer), "%s", claimer);
	rj->j.run = release_run;
	rj->j.done = on_released;
	rj->j.must_finish = true;
	rj->refs = h->refs;
	rj->n = h->n;
	/* The blamed rows (those still held) to the end, in blame's order. */
	end = rj->n;
	for (size_t b = nblame; b-- > 0;) {
		for (size_t i = 0; i < end; i++) {
			if (rj->refs[i].id != blame[b].id)
				continue;
			struct store_ref t = rj->refs[i];
			rj->refs[i] = rj->refs[end - 1];
			rj->refs[--end] = t;
			rj->blamed[rj->n - end - 1] = blame[b];
			break;
		}
	}
	rj->nblamed = rj->n - end;
	/* blamed[] was filled from the end backwards: refs[end + i] is blamed[nblamed-1-i]. */
	for (size_t i = 0; i < rj->nblamed / 2; i++) {
		struct held_blame t = rj->blamed[i];
		rj->blamed[i] = rj->blamed[rj->nblamed - 1 - i];
		rj->blamed[rj->nblamed - 1 - i] = t;
	}
	rj->done = done;
	rj->data = data;
	*h = (struct held){ NULL, 0, 0 };
	dbq_push(dbq, &rj->j);
	return true;
}

void held_free(struct held *h)
{
	free(h->refs);
	*h = (struct held){ NULL, 0, 0 };
}
