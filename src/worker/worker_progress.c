/* A running row's progress, as its handler reports it: written at most once every
 * PROGRESS_EVERY_MS (the latest then); what is left at the end goes with the outcome. */
#include "worker/worker_int.h"

#include <string.h>
#include <uv.h>

#include "common/log.h"

/* The running row's progress to the database now (fenced; a failure is logged, not acted
 * on: the next report or the outcome writes it). */
static void write_progress(struct worker *w)
{
	const struct store_item *it = &w->b.items[w->b.next - 1];
	struct store_ref ref = { .id = it->id, .token = it->token };
	char err[STORE_ERR_MAX] = "";
	int r;

	w->progress_at = uv_now(&w->loop);
	if (worker_db_waiting(w))
		return;
	r = store_progress(w->store, ref, w->progress, err, sizeof(err));
	if (r < 0)
		log_warn("item id=%llu: cannot write its progress: %s", (unsigned long long)it->id, err);
	else
		w->progress_dirty = false;
}

static void on_progress_timer(uv_timer_t *t)
{
	struct worker *w = t->data;

	if (w->state == WS_RUN && w->progress_dirty)
		write_progress(w);
}

/* The handler says how far it is: written at once, or PROGRESS_EVERY_MS after the last
 * write (the latest then); what is left at the end goes with the outcome. */
void worker_on_progress(void *data, const char *json, size_t len)
{
	struct worker *w = data;
	uint64_t now = uv_now(&w->loop);

	if (w->state != WS_RUN || len > HANDLER_PROGRESS_MAX)
		return;
	memcpy(w->progress, json, len);
	w->progress[len] = '\0';
	w->progress_dirty = true;
	if (!w->progress_at || now - w->progress_at >= PROGRESS_EVERY_MS)
		write_progress(w);
	else if (!uv_is_active((uv_handle_t *)&w->progress_timer))
		uv_timer_start(&w->progress_timer, on_progress_timer,
			       w->progress_at + PROGRESS_EVERY_MS - now, 0);
}
