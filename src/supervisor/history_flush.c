#include "supervisor/history_flush.h"

#include <errno.h>
#include <stdlib.h>

#include "common/log.h"

struct history_flush {
	struct history_flush_opts o;
	struct history history;
	uv_timer_t timer;
	struct dbq_job job;
	bool running, last_pushed, warned;
	/* the rows being written, kept until written (sent again as they are) */
	struct store_history_row *rows;
	size_t n;
	uint64_t seq;                 /* theirs */
};

static bool flush(struct history_flush *f);

static int flush_run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct history_flush *f = container_of(j, struct history_flush, job);

	return store_history_add(s, f->o.supervisor_id, f->seq, f->rows, f->n, err, errlen);
}

static void flush_done(struct dbq_job *j)
{
	struct history_flush *f = container_of(j, struct history_flush, job);

	/* Refused for what they hold (-EINVAL, -EDOM): sent again, they would be again. */
	bool refused = j->rc == -EINVAL || j->rc == -EDOM;

	f->running = false;
	if (refused) {
		log_warn("history: %zu minute%s of the queues' history refused by the database: %s; "
			 "dropped", f->n, f->n == 1 ? "" : "s", j->err);
	} else if (j->rc < 0) {
		if (!f->warned)
			log_warn("history: cannot write %zu minute%s of the queues' history: %s; "
				 "kept, and sent again every --history-flush", f->n,
				 f->n == 1 ? "" : "s", j->err);
		f->warned = true;
		return;
	} else if (f->warned) {
		log_info("history: written again");
		f->warned = false;
	}
	free(f->rows);
	f->rows = NULL;
	f->n = 0;
	if (f->last_pushed)
		flush(f);   /* stopping: what was counted while this ran, or past its rows */
}

/* The rows not yet written, else the oldest minutes counted: a job. */
static bool flush(struct history_flush *f)
{
	uint64_t dropped = history_dropped(&f->history);

	if (dropped)
		log_warn("history: %llu minute%s of the queues' history not written (the database "
			 "away) dropped, the oldest: more than %u kept", (unsigned long long)dropped,
			 dropped == 1 ? "" : "s", HISTORY_PENDING_MAX);
	if (f->running)
		return false;
	if (!f->rows) {
		f->n = history_take(&f->history, STORE_HISTORY_ROWS_MAX, &f->rows);
		if (!f->n)
			return false;
		f->seq++;
	}
	f->running = true;
	f->job.run = flush_run;
	f->job.done = flush_done;
	dbq_push(f->o.dbq, &f->job);
	return true;
}

static void on_timer(uv_timer_t *t)
{
	flush(t->data);
}

int history_flush_new(const struct history_flush_opts *o, struct history_flush **ret)
{
	struct history_flush *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->o = *o;
	history_init(&f->history, o->cfg, HISTORY_PENDING_MAX);
	uv_timer_init(o->loop, &f->timer);
	f->timer.data = f;
	*ret = f;
	return 0;
}

struct history *history_flush_history(struct history_flush *f)
{
	return &f->history;
}

void history_flush_start(struct history_flush *f)
{
	unsigned ms = f->o.cfg->history_flush_ms;

	if (!f->last_pushed)
		uv_timer_start(&f->timer, on_timer, ms, ms);
}

void history_flush_stop(struct history_flush *f)
{
	if (f)
		uv_timer_stop(&f->timer);
}

bool history_flush_last(struct history_flush *f)
{
	if (f->last_pushed)
		return false;
	uv_timer_stop(&f->timer);
	f->last_pushed = true;
	/* One running: its end starts the next (flush_done). */
	return f->running || flush(f);
}

static void on_closed(uv_handle_t *h)
{
	struct history_flush *f = h->data;

	history_free(&f->history);
	free(f->rows);
	free(f);
}

void history_flush_free(struct history_flush *f)
{
	if (f)
		uv_close((uv_handle_t *)&f->timer, on_closed);
}
