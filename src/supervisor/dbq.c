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
	if (j->rc >= 0)
		j->rc = j->run(j, s, j->err, sizeof(j->err));
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
	if (j->rc < 0 && j->must_finish && j->rc != -EINVAL) {
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
