/* finetimer — loop: a one-shot timer on a libuv loop to the microsecond (a Linux timerfd
 * watched by a uv_poll_t). libuv's timers count whole milliseconds of a clock read once per
 * loop turn, so one set for 3.2 ms fires 3-5 ms later; a row due at 10:00:00.500 should start
 * then, not 1-2 ms after. */
#ifndef CLAIMD_COMMON_FINETIMER_H
#define CLAIMD_COMMON_FINETIMER_H

#include <stdint.h>
#include <uv.h>

struct finetimer {
	uv_poll_t poll;
	int fd;
	void (*cb)(struct finetimer *t);
	void *data;
};

/* Returns 0 or a negative errno (no timerfd). */
int finetimer_init(uv_loop_t *loop, struct finetimer *t);

/* cb(t) once uv_hrtime() reaches at_ns (at once if it has); replaces any earlier start. */
int finetimer_start_at(struct finetimer *t, uint64_t at_ns, void (*cb)(struct finetimer *t));

void finetimer_stop(struct finetimer *t);

/* Closes the handle and the timerfd; close_cb(&t->poll) as for uv_close. */
void finetimer_close(struct finetimer *t, uv_close_cb close_cb);

#endif
