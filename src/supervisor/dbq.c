#include "supervisor/dbq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct dbq {
	uv_loop_t *loop;
	struct store *store;
	struct dbq_job *head, *tail;
	bool running, db_up;
	uv_work_t work;
	uv_timer_t retry;
	void (*on_idle)(void *data);
	void *idle_data;
};

static void kick(struct dbq *q);

int dbq_new(uv_loop_t *loop, struct store *store, void (*on_idle)(void *data), void *data,
	    struct dbq **ret)
{
	struct dbq *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->loop = loop;
	q->store = store;
	q->db_up = true;
	q->on_idle = on_idle;
	q->idle_data = data;
	uv_timer_init(loop, &q->retry);
	q->retry.data = q;
	*ret = q;
	return 0;
}

static void on_retry_closed(uv_handle_t *h)
{
	free(h->data);
}

void dbq_free(struct dbq *q)
{
	if (q)
		uv_close((uv_handle_t *)&q->retry, on_retry_closed);
}

bool dbq_pending(const struct dbq *q)
{
	return q->running || q->head;
}

bool dbq_db_up(const struct dbq *q)
{
	return q->db_up;
}

void dbq_push(struct dbq *q, struct dbq_job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	kick(q);
}

/* On a thread-pool thread: only the store and the job are touched here. */
static void on_work(uv_work_t *req)
{
	struct dbq *q = req->data;
	struct dbq_job *j = q->head;
	struct store *s = q->store;

	j->rc = 0;
	if (!store_connected(s))
		j->rc = store_connect(s, j->err, sizeof(j->err));
	if (j->rc < 0)
		return;
	switch (j->kind) {
	case DBQ_RELEASE:
		j->rc = store_release(s, j->refs, j->n, true, j->reason, j->err, sizeof(j->err));
		break;
	case DBQ_COUNTS:
		j->rc = store_counts(s, &j->counts, &j->ncounts, j->err, sizeof(j->err));
		break;
	case DBQ_POLL:
		j->rc = store_poll_any(s, j->queues, j->n, j->err, sizeof(j->err));
		break;
	case DBQ_PRUNE:
		j->rc = store_prune(s, j->keep_s, j->from, DBQ_PRUNE_CHUNK, &j->from_next, j->err,
				    sizeof(j->err));
		j->more = j->rc >= 0 && j->from_next > 0;
		break;
	case DBQ_LIMIT:
		j->rc = store_set_interval(s, j->queue, j->interval_ms, j->err, sizeof(j->err));
		break;
	case DBQ_PAUSE:
		j->rc = store_set_paused(s, j->queue, j->pause, j->err, sizeof(j->err));
		break;
	case DBQ_DEDUPE:
		j->rc = store_dedupe_expire(s, DBQ_PRUNE_CHUNK, j->err, sizeof(j->err));
		j->more = j->rc == (int)DBQ_PRUNE_CHUNK;
		break;
	case DBQ_GROUPS:
		j->rc = store_group_heal(s, j->queues, j->n, j->err, sizeof(j->err));
		break;
	case DBQ_PRUNE_GROUPS:
		j->rc = store_prune_groups(s, j->keep_s, DBQ_PRUNE_CHUNK, j->err, sizeof(j->err));
		j->more = j->rc == (int)DBQ_PRUNE_CHUNK;
		break;
	case DBQ_RETRY:
		j->rc = store_retry_dead(s, j->id, j->all_dead ? j->queue : NULL, j->err,
					 sizeof(j->err));
		break;
	case DBQ_ADD:
		j->rc = store_add(s, j->queue, j->payload, j->payload_len, &j->add, &j->id, j->err,
				  sizeof(j->err));
		break;
	}
}

static void on_retry(uv_timer_t *t)
{
	kick(t->data);
}

static void on_done(uv_work_t *req, int status)
{
	struct dbq *q = req->data;
	struct dbq_job *j = q->head;

	q->running = false;
	if (status < 0 && j->rc >= 0)
		j->rc = status;
	q->db_up = j->rc >= 0 || (j->rc != -ENOTCONN && j->rc != -EIO);
	if (j->rc < 0 && j->kind == DBQ_RELEASE && j->rc != -EINVAL) {
		/* Stays at the head; the next try comes after a pause. */
		uv_timer_start(&q->retry, on_retry, DBQ_RETRY_MS, 0);
		return;
	}
	q->head = j->next;
	if (!q->head)
		q->tail = NULL;
	j->done(j);
	kick(q);
	if (!dbq_pending(q) && q->on_idle)
		q->on_idle(q->idle_data);
}

static void kick(struct dbq *q)
{
	if (q->running || !q->head || uv_is_active((uv_handle_t *)&q->retry))
		return;
	q->running = true;
	q->work.data = q;
	if (uv_queue_work(q->loop, &q->work, on_work, on_done) < 0)
		q->running = false;
}

void dbq_cancel_waiting(struct dbq *q)
{
	struct dbq_job *j;

	if (q->running)
		return;
	uv_timer_stop(&q->retry);
	while ((j = q->head)) {
		q->head = j->next;
		j->rc = -ECANCELED;
		snprintf(j->err, sizeof(j->err), "cancelled: the database did not answer");
		j->done(j);
	}
	q->tail = NULL;
}
