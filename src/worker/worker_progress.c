/* Running rows' progress, as their handlers report it: written together, in one statement,
 * by one timer, each row's at most once every PROGRESS_EVERY_MS (the latest then), the first
 * PROGRESS_EVERY_MS after it came; what is left when a row ends goes with its success's
 * outcome (worker_items.c). Items that end within a second of their first report, however
 * many there are, cost no statement of their own. */
#include "worker/worker_int.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"

static void on_progress_timer(uv_timer_t *t);

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
	if (next != UINT64_MAX)
		uv_timer_start(&w->progress_timer, on_progress_timer, next > now ? next - now : 0, 0);
}

/* Every progress due, in one statement (fenced; a failure is logged, not acted on: the
 * next write or the outcome takes the latest). */
static void on_progress_timer(uv_timer_t *t)
{
	worker_progress_write(t->data);
}

void worker_progress_write(struct worker *w)
{
	struct store_ref refs[ITEMS_MAX];
	struct item *due[ITEMS_MAX];
	char err[STORE_ERR_MAX] = "";
	uint64_t now = uv_now(&w->loop);
	size_t n = 0;
	int r;

	if (w->db_running) {
		w->progress_due = true;   /* written as soon as the statement ends */
		return;
	}
	if (worker_db_waiting(w)) {
		uv_timer_start(&w->progress_timer, on_progress_timer, PROGRESS_EVERY_MS, 0);
		return;
	}
	for (size_t i = 0; i < w->items.cap && n < ITEMS_MAX; i++) {
		struct item *x = &w->items.all[i];
		if (x->state != ITEM_HANDED || !x->progress_dirty ||
		    now - x->progress_at < PROGRESS_EVERY_MS)
			continue;
		refs[n] = (struct store_ref){ .id = x->row.id, .token = x->row.token,
					      .progress = x->progress };
		due[n++] = x;
	}
	r = store_progress(w->store, refs, n, err, sizeof(err));
	if (r < 0)
		log_warn("cannot write the progress of %zu items: %s", n, err);
	for (size_t i = 0; i < n; i++) {
		due[i]->progress_at = now;
		if (r >= 0)
			due[i]->progress_dirty = false;
	}
	arm(w);
}

void worker_on_progress(void *data, struct handler_job *job, const char *json, size_t len)
{
	struct worker *w = data;
	struct item *x = items_of_job(job);

	if (x->state != ITEM_HANDED || len > HANDLER_PROGRESS_MAX)
		return;
	if (!x->progress && !(x->progress = malloc(HANDLER_PROGRESS_MAX + 1)))
		return;
	memcpy(x->progress, json, len);
	x->progress[len] = '\0';
	if (!x->progress_dirty && !x->progress_at)
		x->progress_at = uv_now(&w->loop);   /* its first: written a second from now */
	x->progress_dirty = true;
	if (!uv_is_active((uv_handle_t *)&w->progress_timer))
		arm(w);
}
