#include "common/finetimer.h"

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

static void on_readable(uv_poll_t *p, int status, int events)
{
	struct finetimer *t = p->data;
	uint64_t expirations;

	(void)status;
	(void)events;
	/* EAGAIN: restarted or stopped since it became readable */
	if (read(t->fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
		return;
	uv_poll_stop(&t->poll);
	t->cb(t);
}

int finetimer_init(uv_loop_t *loop, struct finetimer *t)
{
	int r;

	memset(t, 0, sizeof(*t));
	/* uv_hrtime() reads CLOCK_MONOTONIC */
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0)
		return -errno;
	r = uv_poll_init(loop, &t->poll, t->fd);
	t->poll.data = t;
	if (r < 0) {
		close(t->fd);
		t->fd = -1;
	}
	return r;
}

int finetimer_start_at(struct finetimer *t, uint64_t at_ns, void (*cb)(struct finetimer *t))
{
	/* it_value 0 would disarm it: a time already past is 1 ns */
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(at_ns / 1000000000u),
						 .tv_nsec = (long)(at_ns % 1000000000u) } };

	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	t->cb = cb;
	if (timerfd_settime(t->fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		return -errno;
	return uv_poll_start(&t->poll, UV_READABLE, on_readable);
}

void finetimer_stop(struct finetimer *t)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };

	timerfd_settime(t->fd, 0, &off, NULL);
	uv_poll_stop(&t->poll);
}

void finetimer_close(struct finetimer *t, uv_close_cb close_cb)
{
	uv_close((uv_handle_t *)&t->poll, close_cb);   /* stops watching the fd at once */
	close(t->fd);
	t->fd = -1;
}
