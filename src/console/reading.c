#include "console/reading.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024   /* a jobs list's filters (cmd.c) */

struct waiter {
	reading_cb cb;
	void *data;
	_Alignas(max_align_t) unsigned char key[KEY_MAX];   /* read as the caller's struct */
};

struct reading {
	const struct reading_ops *ops;
	struct dbq *dbq;
	uv_loop_t *loop;
	/* the last value */
	void *value;
	size_t n;
	_Alignas(max_align_t) unsigned char key[KEY_MAX];
	uint64_t at, took;           /* when it was read (0: never or stale), and how long it took */
	uint64_t read_at;            /* when it was read, stale or not (0: never) */
	/* the reading under way */
	struct dbq_job job;
	bool running;
	_Alignas(max_align_t) unsigned char reading_key[KEY_MAX];
	uint64_t started;
	void *got;
	size_t ngot;
	struct waiter *waiting;
	size_t nwaiting, capwaiting;
};

static void start(struct reading *r, const unsigned char *key);

/* Whether the last value is of key and may be given (it was read and not made stale by a
 * change); *ret_fresh: whether it is young enough not to read again. */
static bool usable(const struct reading *r, const void *key, bool *ret_fresh)
{
	uint64_t life = r->took * READING_DUTY;

	if (life < READING_MIN_MS)
		life = READING_MIN_MS;
	*ret_fresh = uv_now(r->loop) - r->at < life;
	return r->at && memcmp(r->key, key, r->ops->key_size) == 0;
}

static int run(struct dbq_job *j, struct store *s, char *err, size_t errlen)
{
	struct reading *r = container_of(j, struct reading, job);

	return r->ops->read(s, r->ops->key_size ? r->reading_key : NULL, &r->got, &r->ngot, err,
			    errlen);
}

/* Answer the waiters whose key this value is (or all, on an error); the others ask again. */
static void done(struct dbq_job *j)
{
	struct reading *r = container_of(j, struct reading, job);
	size_t n = r->nwaiting, keep = 0;

	r->running = false;
	if (j->rc >= 0) {
		r->ops->free(r->value, r->n);
		r->value = r->got;
		r->n = r->ngot;
		memcpy(r->key, r->reading_key, r->ops->key_size);
		r->at = r->read_at = uv_now(r->loop);
		r->took = r->at - r->started;
	}
	r->got = NULL;
	r->ngot = 0;
	/* The waiters are answered from a copy of the list: a callback may ask again. */
	struct waiter *list = r->waiting;
	r->waiting = NULL;
	r->nwaiting = r->capwaiting = 0;
	for (size_t i = 0; i < n; i++) {
		struct waiter *w = &list[i];
		if (j->rc < 0)
			w->cb(w->data, j->rc, j->err, NULL, 0);
		else if (!memcmp(w->key, r->key, r->ops->key_size))
			w->cb(w->data, 0, "", r->value, r->n);
		else
			list[keep++] = *w;
	}
	for (size_t i = 0; i < keep; i++)
		reading_get(r, list[i].key, list[i].cb, list[i].data);
	free(list);
}

static void start(struct reading *r, const unsigned char *key)
{
	memcpy(r->reading_key, key, r->ops->key_size);
	r->running = true;
	r->started = uv_now(r->loop);
	r->job.run = run;
	r->job.done = done;
	dbq_push(r->dbq, &r->job);
}

void reading_get(struct reading *r, const void *key, reading_cb cb, void *data)
{
	static const _Alignas(max_align_t) unsigned char none[KEY_MAX];
	struct waiter *w;

	bool fresh;

	if (!key)
		key = none;
	/* An old value is given at once, and a new reading started for the next asker: nobody
	 * waits for a reading but the first, or after a change. */
	if (usable(r, key, &fresh)) {
		if (!fresh && !r->running)
			start(r, key);
		cb(data, 0, "", r->value, r->n);
		return;
	}
	if (r->nwaiting == r->capwaiting) {
		size_t cap = r->capwaiting ? 2 * r->capwaiting : 4;
		void *p = realloc(r->waiting, cap * sizeof(*r->waiting));
		if (!p) {
			cb(data, -ENOMEM, "out of memory", NULL, 0);
			return;
		}
		r->waiting = p;
		r->capwaiting = cap;
	}
	w = &r->waiting[r->nwaiting++];
	w->cb = cb;
	w->data = data;
	memcpy(w->key, key, r->ops->key_size);
	if (!r->running)
		start(r, key);
}

uint64_t reading_age_ms(const struct reading *r)
{
	return r->read_at ? uv_now(r->loop) - r->read_at : 0;
}

void reading_stale(struct reading *r)
{
	r->at = 0;
}

void reading_flush(struct reading *r)
{
	struct waiter *list;
	size_t n;

	if (!r)
		return;   /* cmds_new's failure path frees what it made so far */
	list = r->waiting;
	n = r->nwaiting;
	r->waiting = NULL;
	r->nwaiting = r->capwaiting = 0;
	for (size_t i = 0; i < n; i++)
		list[i].cb(list[i].data, -ECANCELED, "claimd is stopping", NULL, 0);
	free(list);
}

int reading_new(const struct reading_ops *ops, struct dbq *dbq, uv_loop_t *loop,
		struct reading **ret)
{
	struct reading *r;

	if (ops->key_size > KEY_MAX)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = ops;
	r->dbq = dbq;
	r->loop = loop;
	*ret = r;
	return 0;
}

void reading_free(struct reading *r)
{
	if (!r)
		return;
	reading_flush(r);
	r->ops->free(r->value, r->n);
	r->ops->free(r->got, r->ngot);
	free(r);
}
