/* test_finetimer — common/finetimer on a real libuv loop: it never fires before its time; a
 * time already past fires at once; a restart replaces the earlier time (one call, at the later
 * one); a stopped timer does not fire; closing calls the close callback. Exits 1 on a failure. */
#include "common/finetimer.h"

#include <stdio.h>

#include "check.h"

struct seen {
	unsigned calls;
	uint64_t at_ns;       /* uv_hrtime() in the last call */
};

static void on_fire(struct finetimer *t)
{
	struct seen *s = t->data;

	s->calls++;
	s->at_ns = uv_hrtime();
}

static void on_guard(uv_timer_t *g)
{
	uv_stop(g->loop);
}

static int closed;

static void on_closed(uv_handle_t *h)
{
	(void)h;
	closed++;
}

/* Runs the loop until guard_ms pass (the timers under test do not end it). */
static void run_for(uv_loop_t *loop, uv_timer_t *guard, uint64_t guard_ms)
{
	uv_timer_start(guard, on_guard, guard_ms, 0);
	uv_run(loop, UV_RUN_DEFAULT);
}

int main(void)
{
	uv_loop_t loop;
	uv_timer_t guard;
	struct finetimer t;
	struct seen s = { 0 };
	uint64_t at;

	uv_loop_init(&loop);
	uv_timer_init(&loop, &guard);
	CHECK(finetimer_init(&loop, &t) == 0, "finetimer_init");
	t.data = &s;

	at = uv_hrtime() + 3500000;    /* 3.5 ms: not a whole number of milliseconds */
	CHECK(finetimer_start_at(&t, at, on_fire) == 0, "start");
	run_for(&loop, &guard, 200);
	CHECK(s.calls == 1, "fired once (%u)", s.calls);
	CHECK(s.at_ns >= at, "not before its time (%lld ns early)", (long long)(at - s.at_ns));

	s = (struct seen){ 0 };
	at = uv_hrtime() - 1000000;     /* a millisecond ago */
	CHECK(finetimer_start_at(&t, at, on_fire) == 0, "start in the past");
	run_for(&loop, &guard, 50);
	CHECK(s.calls == 1, "a time past fires (%u)", s.calls);

	s = (struct seen){ 0 };
	CHECK(finetimer_start_at(&t, uv_hrtime() + 2000000, on_fire) == 0, "start");
	at = uv_hrtime() + 20000000;
	CHECK(finetimer_start_at(&t, at, on_fire) == 0, "restart later");
	run_for(&loop, &guard, 200);
	CHECK(s.calls == 1, "a restart replaces the earlier time (%u calls)", s.calls);
	CHECK(s.at_ns >= at, "at the later time");

	s = (struct seen){ 0 };
	CHECK(finetimer_start_at(&t, uv_hrtime() + 2000000, on_fire) == 0, "start");
	finetimer_stop(&t);
	run_for(&loop, &guard, 50);
	CHECK(s.calls == 0, "a stopped timer does not fire (%u)", s.calls);

	finetimer_close(&t, on_closed);
	uv_close((uv_handle_t *)&guard, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(closed == 1, "the close callback ran");
	CHECK(uv_loop_close(&loop) == 0, "nothing left open on the loop");
	if (failures == 0)
		printf("ok - finetimer\n");
	return failures ? 1 : 0;
}
