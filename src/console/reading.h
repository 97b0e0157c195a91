/* reading — what the supervisor reads from the database for people to look at (the queues'
 * counts, lists of rows), kept and handed to everyone who asks while it is fresh, so that
 * many clients (a dashboard open in several browsers, scrapes, claimctl) cost one reading.
 * Some of these readings walk a large part of the table (counting rows per state has no
 * index to use: one would cost every completion), so a reading is fresh for READING_MIN_MS,
 * or READING_DUTY times as long as the last one took if that is longer: however large the
 * table, such readings take at most 1/READING_DUTY of the time of one database connection.
 * An older value is handed out meanwhile: only the first reading, and the first after a
 * change made through claimd (a retry, a pause: reading_stale), is waited for. Does not log. */
#ifndef CLAIMD_READING_H
#define CLAIMD_READING_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/store.h"
#include "supervisor/surface.h"

#define READING_MIN_MS 1000
#define READING_DUTY 50

struct reading_ops {
	/* On the database queue's thread: read what key asks for into *ret (n items, owned by
	 * the reading). Returns 0 or a store error with err filled. */
	int (*read)(struct store *s, const void *key, void **ret, size_t *ret_n, char *err,
		    size_t errlen);
	void (*free)(void *value, size_t n);
	size_t key_size;    /* bytes of a key (compared as bytes); 0: none */
};

/* The value as it is (valid during the call), or rc < 0 and err when it could not be read. */
typedef void (*reading_cb)(void *data, int rc, const char *err, const void *value, size_t n);

struct reading;

/* ops is not copied. Returns 0 or -ENOMEM. */
int reading_new(const struct reading_ops *ops, struct dbq *dbq, uv_loop_t *loop,
		struct reading **ret);
/* The readings still waiting are answered first (reading_flush). Accepts NULL. */
void reading_free(struct reading *r);

/* cb gets the value for key (ops->key_size bytes, copied): at once when the last reading
 * is of that key (and if it is no longer fresh, a new reading starts for the next asker),
 * else when the next reading is over (the first time, after reading_stale). */
void reading_get(struct reading *r, const void *key, reading_cb cb, void *data);

/* How long ago the value reading_get last handed out was read, in ms (0: none yet). */
uint64_t reading_age_ms(const struct reading *r);

/* The next reading_get reads again. */
void reading_stale(struct reading *r);

/* Answer everyone waiting with -ECANCELED. At stop. Accepts NULL. */
void reading_flush(struct reading *r);

#endif
