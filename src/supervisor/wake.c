#include "supervisor/wake.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/backoff.h"
#include "store/store.h"

#define RETRY_MIN_MS 250
#define RETRY_MAX_MS 10000

struct wake {
	struct wake_opts o;
	uv_thread_t thread;
	uv_async_t async;
	uv_mutex_t mu;
	uv_cond_t cond;
	/* under mu */
	bool stop;
	bool paused;               /* wake_pause */
	unsigned pauses;           /* wake_pause(true) calls: a read cut short by one is no loss */
	struct store_binlog *b;    /* the open stream, for wake_stop to cut short */
	bool changed;              /* rows changed since the loop last looked */
	bool rows;                 /* rows of work_items changed, by any statement */
	bool state_new, up, final; /* a state to tell the loop */
	char why[400];
	/* the thread's own */
	char position[800];
};

static void post_state(struct wake *w, bool up, bool final, const char *why)
{
	uv_mutex_lock(&w->mu);
	w->state_new = true;
	w->up = up;
	w->final = final;
	snprintf(w->why, sizeof(w->why), "%s", why ? why : "");
	uv_mutex_unlock(&w->mu);
	uv_async_send(&w->async);
}

/* Sleep ms unless stopped meanwhile. Returns whether to go on. */
static bool pause_ms(struct wake *w, unsigned ms)
{
	uint64_t until = uv_hrtime() + (uint64_t)ms * 1000000u;
	bool go;

	uv_mutex_lock(&w->mu);
	while (!w->stop) {
		uint64_t now = uv_hrtime();
		if (now >= until || uv_cond_timedwait(&w->cond, &w->mu, until - now) != 0)
			break;
	}
	go = !w->stop;
	uv_mutex_unlock(&w->mu);
	return go;
}

/* Read events until the stream breaks (err says why). */
static void follow(struct wake *w, struct store_binlog *b, char *err, size_t errlen)
{
	unsigned changes;

	while (store_binlog_read(b, &changes, err, errlen) == 0) {
		if (!(changes & STORE_BINLOG_CLAIMABLE) &&
		    (!w->o.rows || !(changes & STORE_BINLOG_ROWS)))
			continue;
		uv_mutex_lock(&w->mu);
		bool first = !w->changed && !w->rows;
		w->changed |= (changes & STORE_BINLOG_CLAIMABLE) != 0;
		w->rows |= (changes & STORE_BINLOG_ROWS) != 0;
		uv_mutex_unlock(&w->mu);
		if (first)
			uv_async_send(&w->async);
	}
}

static unsigned random_server_id(void);

/* Wait while paused. Returns whether to go on (not stopped). */
static bool wait_unpaused(struct wake *w)
{
	bool go;

	uv_mutex_lock(&w->mu);
	while (w->paused && !w->stop)
		uv_cond_wait(&w->cond, &w->mu);
	go = !w->stop;
	uv_mutex_unlock(&w->mu);
	return go;
}

static void run(void *arg)
{
	struct wake *w = arg;
	struct backoff retry = BACKOFF_INIT(RETRY_MIN_MS, RETRY_MAX_MS);
	char err[600];
	bool told_down = false;
	int r;

	store_thread_init();
	for (;;) {
		struct store_binlog *b = NULL;
		unsigned pauses;

		if (!wait_unpaused(w))
			break;
		uv_mutex_lock(&w->mu);
		pauses = w->pauses;
		uv_mutex_unlock(&w->mu);
		err[0] = '\0';
		/* A new id each time: the server makes a dump of an id it already serves wait for
		 * the old one to end, and one cut off by the network ends only when TCP gives up. */
		r = store_binlog_open(&w->o.cfg->dsn, w->position, random_server_id(),
				      WAKE_HEARTBEAT_S, &b, err, sizeof(err));
		if (r == -ENOTSUP || r == -EACCES) {
			post_state(w, false, true, err);
			break;
		}
		if (r == -ESPIPE && w->position[0]) {
			/* Purged meanwhile: from now, and the loop polls once for what was missed. */
			w->position[0] = '\0';
			continue;
		}
		if (r == 0) {
			uv_mutex_lock(&w->mu);
			bool stop = w->stop, cut = w->pauses != pauses;
			w->b = stop || cut ? NULL : b;
			uv_mutex_unlock(&w->mu);
			if (stop || cut) {
				store_binlog_close(b);
				if (stop)
					break;
				w->position[0] = '\0';
				continue;
			}
			backoff_reset(&retry);
			told_down = false;
			post_state(w, true, false, NULL);
			follow(w, b, err, sizeof(err));
			uv_mutex_lock(&w->mu);
			w->b = NULL;
			stop = w->stop;
			cut = w->pauses != pauses;
			uv_mutex_unlock(&w->mu);
			snprintf(w->position, sizeof(w->position), "%s", store_binlog_position(b));
			store_binlog_close(b);
			if (stop)
				break;
			if (cut) {
				/* Paused: what happens meanwhile is asked for once when it is opened
				 * again, from the server's position then. */
				w->position[0] = '\0';
				continue;
			}
		}
		if (!told_down) {
			post_state(w, false, false, err);
			told_down = true;
		}
		if (!pause_ms(w, backoff_next(&retry)))
			break;
	}
	store_thread_end();
}

static void on_async(uv_async_t *a)
{
	struct wake *w = a->data;
	bool changed, rows, state_new, up, final;
	char why[sizeof(w->why)];

	uv_mutex_lock(&w->mu);
	changed = w->changed;
	w->changed = false;
	rows = w->rows;
	w->rows = false;
	state_new = w->state_new;
	w->state_new = false;
	up = w->up;
	final = w->final;
	snprintf(why, sizeof(why), "%s", w->why);
	uv_mutex_unlock(&w->mu);
	if (state_new)
		w->o.state(w->o.data, up, final, why);
	if (changed)
		w->o.changed(w->o.data);
	if (rows && w->o.rows)
		w->o.rows(w->o.data);
}

/* An id among replicas that nothing else is likely to use: the server drops an older
 * connection of the same id. */
static unsigned random_server_id(void)
{
	unsigned v = 0;
	FILE *f = fopen("/dev/urandom", "rb");

	if (!f || fread(&v, sizeof(v), 1, f) != 1)
		v = (unsigned)getpid() * 2654435761u ^ (unsigned)uv_hrtime();
	if (f)
		fclose(f);
	return 0x40000000u | (v & 0x3fffffffu);
}

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

int wake_start(const struct wake_opts *o, struct wake **ret)
{
	struct wake *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->o = *o;
	if (uv_mutex_init(&w->mu) != 0) {
		free(w);
		return -ENOMEM;
	}
	if (uv_cond_init(&w->cond) != 0) {
		uv_mutex_destroy(&w->mu);
		free(w);
		return -ENOMEM;
	}
	uv_async_init(o->loop, &w->async, on_async);
	w->async.data = w;
	if (uv_thread_create(&w->thread, run, w) != 0) {
		uv_cond_destroy(&w->cond);
		uv_mutex_destroy(&w->mu);
		uv_close((uv_handle_t *)&w->async, on_closed);
		return -ENOMEM;
	}
	*ret = w;
	return 0;
}

void wake_pause(struct wake *w, bool pause)
{
	if (!w)
		return;
	uv_mutex_lock(&w->mu);
	if (pause && !w->paused) {
		w->pauses++;
		store_binlog_interrupt(w->b);
	}
	w->paused = pause;
	uv_cond_signal(&w->cond);
	uv_mutex_unlock(&w->mu);
}

void wake_stop(struct wake *w)
{
	if (!w)
		return;
	uv_mutex_lock(&w->mu);
	w->stop = true;
	store_binlog_interrupt(w->b);
	uv_cond_signal(&w->cond);
	uv_mutex_unlock(&w->mu);
	uv_thread_join(&w->thread);
	uv_cond_destroy(&w->cond);
	uv_mutex_destroy(&w->mu);
	uv_close((uv_handle_t *)&w->async, on_closed);
}
