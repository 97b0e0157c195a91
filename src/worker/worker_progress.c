/* A running row's progress, as its handler reports it: written at most once every
 * PROGRESS_EVERY_MS per row (the latest then); what is left at the end goes with a success's
 * outcome (worker_items.c). One timer serves every row, set for the next write due. */
#include "worker/worker_int.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"

static void on_progress_timer(uv_timer_t *t);

/* x's progress to the database now (fenced; a failure is logged, not acted on: the next
 * report or the outcome writes it). */
static void write_progress(struct worker *w, struct item *x)
{
	struct store_ref ref = { .id = x->row.id, .token = x->row.token };
	char err[STORE_ERR_MAX] = "";
	int r;

	x->progress_at = uv_now(&w->loop);
	if (worker_db_waiting(w))
		return;
	r = store_progress(w->store, ref, x->progress, err, sizeof(err));
	if (r < 0)
		log_warn("item id=%llu: cannot write its progress: %s", (unsigned long long)x->row.id,
			 err);
	else
		x->progress_dirty = false;
}

/* Set the timer for the earliest write due, if any. */
static void arm(struct worker *w)
{
	uint64_t next = UINT64_MAX, now = uv_now(&w->loop);

	for (size_t i = 0; i < w->items.cap; i++) {
		const struct item *x = &w->items.all[i];
		if (x->state == ITEM_HANDED && x->progress_dirty &&
		    x->progress_at + PROGRESS_EVERY_MS < next)
			next = x->progress_at + PROGRESS_EVERY_MS;
	}
	if (next == UINT64_MAX)
		return;
	uv_timer_start(&w->progress_timer, on_progress_timer, next > now ? next - now : 0, 0);
}

static void on_progress_timer(uv_timer_t *t)
{
	struct worker *w = t->data;
	uint64_t now = uv_now(&w->loop);

	for (size_t i = 0; i < w->items.cap; i++) {
		struct item *x = &w->items.all[i];
		if (x->state == ITEM_HANDED && x->progress_dirty &&
		    now - x->progress_at >= PROGRESS_EVERY_MS)
			write_progress(w, x);
	}
	arm(w);
}

void worker_on_progress(void *data, struct handler_job *job, const char *json, size_t len)
{
	struct worker *w = data;
	struct item *x = items_of_job(job);
	uint64_t now = uv_now(&w->loop);

	if (x->state != ITEM_HANDED || len > HANDLER_PROGRESS_MAX)
		return;
	if (!x->progress && !(x->progress = malloc(HANDLER_PROGRESS_MAX + 1)))
		return;
	memcpy(x->progress, json, len);
	x->progress[len] = '\0';
	x->progress_dirty = true;
	if (!x->progress_at || now - x->progress_at >= PROGRESS_EVERY_MS)
		write_progress(w, x);
	else if (!uv_is_active((uv_handle_t *)&w->progress_timer) ||
		 uv_timer_get_due_in(&w->progress_timer) > x->progress_at + PROGRESS_EVERY_MS - now)
		uv_timer_start(&w->progress_timer, on_progress_timer,
			       x->progress_at + PROGRESS_EVERY_MS - now, 0);
}
