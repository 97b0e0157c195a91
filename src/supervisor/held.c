#include "supervisor/held.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/log.h"

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
	struct store_ref *refs;   /* the running row (if any) last */
	size_t n;
	bool running;             /* refs[n - 1] was running */
	void (*done)(void *data, int rc);
	void *data;
};

static int release_run(struct dbq_job *j, struct store *st, char *err, size_t errlen)
{
	struct release_job *rj = container_of(j, struct release_job, j);
	size_t others = rj->n - rj->running;
	int r = 0, k;

	if (others > 0)
		r = store_release(st, rj->refs, others, false, NULL, err, errlen);
	if (r < 0 || !rj->running)
		return r;
	k = store_release(st, rj->refs + others, 1, true, "its worker died while running it", err,
			  errlen);
	return k < 0 ? k : r + k;
}

static void on_released(struct dbq_job *j)
{
	struct release_job *rj = container_of(j, struct release_job, j);

	if (j->rc >= 0)
		log_info("released %d of %zu claims of a dead worker (the rest had finished)", j->rc,
			 rj->n);
	else
		log_warn("gave up releasing %zu claims of a dead worker: %s; they come back when "
			 "their lease expires", rj->n, j->err);
	rj->done(rj->data, j->rc);
	free(rj->refs);
	free(rj);
}

bool held_release(struct held *h, uint64_t running, struct dbq *dbq,
		  void (*done)(void *data, int rc), void *data)
{
	struct release_job *rj;

	if (h->n == 0)
		return false;
	rj = calloc(1, sizeof(*rj));
	if (!rj) {
		log_error("out of memory: %zu claims of a dead worker come back after their lease",
			  h->n);
		h->n = 0;
		return false;
	}
	rj->j.run = release_run;
	rj->j.done = on_released;
	rj->j.must_finish = true;
	rj->refs = h->refs;
	rj->n = h->n;
	for (size_t i = 0; running && i < rj->n; i++) {
		if (rj->refs[i].id != running)
			continue;
		struct store_ref t = rj->refs[i];
		rj->refs[i] = rj->refs[rj->n - 1];
		rj->refs[rj->n - 1] = t;
		rj->running = true;
		break;
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
