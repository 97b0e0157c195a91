/* test_history — the queues' history as a supervisor keeps it and as it is read back
 * (supervisor/history.h): items counted into their queue's minute (done, retried, dead, the
 * rest not), the buckets of run and wait times, minutes taken oldest first, the oldest
 * dropped past the cap, a clock set back; percentiles of merged histograms exact to a
 * bucket; the window a request asks for and its refusals; the JSON answer's steps and total.
 * Exits 1 on a failure. */
#include "console/history_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct config cfg;

/* A FINISHED message of n items (outcome, queue, run and wait in us). */
static struct proto_msg finished(const struct proto_item *items, size_t n)
{
	struct proto_msg m;

	memset(&m, 0, sizeof(m));
	m.type = PROTO_FINISHED;
	m.u.items.n = (uint16_t)n;
	memcpy(m.u.items.items, items, n * sizeof(*items));
	return m;
}

static void test_add_and_take(void)
{
	const struct proto_item items[] = {
		{ .id = 1, .outcome = PROTO_OUT_DONE, .queue = 0, .run_us = 300000, .wait_us = 10 },
		{ .id = 2, .outcome = PROTO_OUT_RETRY, .queue = 0, .run_us = 300000, .wait_us = 2000000 },
		{ .id = 3, .outcome = PROTO_OUT_DEAD, .queue = 1, .run_us = 400000000, .wait_us = 0 },
		{ .id = 4, .outcome = PROTO_OUT_RELEASED, .queue = 0, .run_us = 1 },
		{ .id = 5, .outcome = PROTO_OUT_DEFERRED, .queue = 0, .run_us = 1 },
		{ .id = 6, .outcome = PROTO_OUT_DONE, .queue = 7, .run_us = 1 },   /* no such queue */
	};
	struct proto_msg m = finished(items, 6), claimed = m;
	struct store_history_row *rows = NULL;
	struct history h;
	size_t n;

	history_init(&h, &cfg, 3);
	claimed.type = PROTO_CLAIMED;
	history_add(&h, &claimed, 120);
	CHECK(h.n == 0, "CLAIMED counts nothing: %zu minutes", h.n);
	history_add(&h, &m, 125);           /* minute 120 */
	history_add(&h, &m, 179);           /* the same minute */
	CHECK(h.n == 2, "one row per queue and minute: %zu", h.n);
	CHECK(!strcmp(h.row[0].queue, "a") && h.row[0].minute == 120, "row 0: %s %lld",
	      h.row[0].queue, (long long)h.row[0].minute);
	CHECK(h.row[0].done == 2 && h.row[0].retried == 2 && h.row[0].dead == 0,
	      "queue a: done 2 retried 2: %llu %llu %llu", (unsigned long long)h.row[0].done,
	      (unsigned long long)h.row[0].retried, (unsigned long long)h.row[0].dead);
	CHECK(h.row[1].dead == 2 && h.row[1].done == 0, "queue b: dead 2");
	CHECK(h.row[0].run[history_bucket(300000)] == 4, "0.3 s runs in the bucket up to 0.5 s");
	CHECK(history_bucket(300000) == 9 && history_bucket_le(9) == 0.5, "0.3 s: bucket 9 (le 0.5)");
	CHECK(h.row[0].wait[history_bucket(10)] == 2 && history_bucket(10) == 0, "10 us: bucket 0");
	CHECK(h.row[0].wait[history_bucket(2000000)] == 2 && history_bucket(2000000) == 11,
	      "2 s: bucket 11 (le 2.5)");
	CHECK(history_bucket(400000000) == STORE_HISTORY_BUCKETS - 1 &&
	      h.row[1].run[STORE_HISTORY_BUCKETS - 1] == 2, "400 s: the last bucket");
	CHECK(history_bucket(300000000) == 16, "300 s exactly: the last bound's bucket");
	CHECK(h.row[0].run_sum_us == 1200000 && h.row[0].wait_sum_us == 4000020,
	      "sums: %llu %llu", (unsigned long long)h.row[0].run_sum_us,
	      (unsigned long long)h.row[0].wait_sum_us);

	history_add(&h, &m, 59);            /* the clock set back: counted in minute 120 */
	CHECK(h.n == 2 && h.row[0].done == 3, "a clock set back counts in the newest minute");
	history_add(&h, &m, 180);           /* minute 180: 4 rows past the cap of 3 */
	CHECK(h.n == 3 && history_dropped(&h) == 1, "the oldest dropped past the cap: %zu", h.n);
	CHECK(history_dropped(&h) == 0, "dropped counts from the last call");
	CHECK(!strcmp(h.row[0].queue, "b") && h.row[0].minute == 120, "queue a's minute 120 went");

	n = history_take(&h, 2, &rows);
	CHECK(n == 2 && rows && rows[0].minute == 120 && rows[1].minute == 180 &&
	      !strcmp(rows[1].queue, "a"), "the two oldest taken");
	CHECK(h.n == 1 && h.row[0].minute == 180 && !strcmp(h.row[0].queue, "b"), "one left");
	free(rows);
	history_add(&h, &m, 190);
	CHECK(h.n == 2 && h.row[1].done == 1 && !strcmp(h.row[1].queue, "a"),
	      "a minute taken is begun again: %zu", h.n);
	n = history_take(&h, 10, &rows);
	CHECK(n == 2 && h.n == 0, "the rest taken");
	free(rows);
	CHECK(history_take(&h, 10, &rows) == 0, "nothing left");
	history_free(&h);
}

static void test_quantiles(void)
{
	uint64_t b[STORE_HISTORY_BUCKETS] = { 0 }, c[STORE_HISTORY_BUCKETS] = { 0 };
	struct store_history_row x, y;

	CHECK(history_quantile(b, 0.5) == -1, "empty: -1");
	b[9] = 10;                                  /* 10 in (0.25, 0.5] */
	CHECK(history_quantile(b, 0.5) == 0.5 && history_quantile(b, 0.99) == 0.5, "one bucket");
	b[2] = 10;                                  /* 10 in (0.001, 0.0025] */
	CHECK(history_quantile(b, 0.5) == 0.0025, "p50 of 20: the 10th, bucket 2");
	CHECK(history_quantile(b, 0.51) == 0.5, "past half: bucket 9");
	c[STORE_HISTORY_BUCKETS - 1] = 1;
	CHECK(history_quantile(c, 0.5) == 300, "over the last bound: 300 (at least)");

	/* Two supervisors' histograms add up; the percentile of the sum is not that of either. */
	memset(&x, 0, sizeof(x));
	memset(&y, 0, sizeof(y));
	x.run[3] = 90;                              /* 90 runs up to 5 ms */
	y.run[12] = 10;                             /* 10 up to 5 s */
	x.done = 90, y.done = 5, y.dead = 5, x.run_sum_us = 90, y.run_sum_us = 30000000;
	history_merge(&x, &y);
	CHECK(x.done == 95 && x.dead == 5 && x.run_sum_us == 30000090, "merged counts");
	CHECK(history_quantile(x.run, 0.5) == 0.005 && history_quantile(x.run, 0.9) == 0.005 &&
	      history_quantile(x.run, 0.95) == 5 && history_quantile(x.run, 0.99) == 5,
	      "merged: p50 p90 in 5 ms, p95 p99 in 5 s");
}

/* A stats request from a line of the control protocol. */
static struct ctl_request request(const char *text)
{
	static char line[512];
	struct ctl_request r;
	char err[256];

	snprintf(line, sizeof(line), "%s", text);
	memset(&r, 0, sizeof(r));
	if (ctl_decode(line, strlen(line), &r, err, sizeof(err)) < 0)
		CHECK(0, "'%s' does not decode: %s", text, err);
	return r;
}

struct window_case {
	const char *req;
	int64_t now;
	int rc;
	int64_t from, to;
	unsigned step;
	const char *err;
};

#define T0 1790000000LL    /* 2026-09-21T14:13:20Z */
#define DAY 1789948800LL   /* 2026-09-21T00:00:00Z */

static const struct window_case windows[] = {
	{ "stats", T0, 0, T0 + 40 - 3600, T0 + 40, 60, NULL },   /* to: the next whole minute */
	{ "stats since_ms=21600000", T0, 0, (T0 + 40 - 21600) / 300 * 300, T0 + 40, 300, NULL },
	{ "stats since_ms=86400000", T0, 0, (T0 + 40 - 86400) / 900 * 900, T0 + 40, 900, NULL },
	{ "stats since_ms=1209600000", T0, 0, (T0 + 40 - 1209600) / 21600 * 21600, T0 + 40, 21600,
	  NULL },
	{ "stats from=2026-09-21T00%3A00%3A00Z to=2026-09-21T01%3A00%3A00Z step_ms=300000", T0, 0,
	  DAY, DAY + 3600, 300, NULL },
	{ "stats from=2026-09-21T00%3A07%3A30Z to=2026-09-21T00%3A20%3A00Z step_ms=300000", T0, 0,
	  DAY + 300, DAY + 1200, 300, NULL },   /* from down to a step */
	{ "stats since_ms=2592000000 step_ms=60000", T0, -22, 0, 0, 0, "at most 1440" },
	{ "stats from=2026-09-21T01%3A00%3A00Z to=2026-09-21T01%3A00%3A00Z", T0, -22, 0, 0, 0,
	  "must be before to" },
	{ "stats from=1969-12-31T23%3A00%3A00Z to=1970-01-01T01%3A00%3A00Z", T0, -22, 0, 0, 0,
	  "before 1970" },
};

static void test_windows(void)
{
	for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
		const struct window_case *c = &windows[i];
		struct ctl_request r = request(c->req);
		struct history_window w;
		char err[256] = "";
		int rc = history_window(&r, c->now, &w, err, sizeof(err));

		CHECK(rc == c->rc, "%s: rc %d, want %d (%s)", c->req, rc, c->rc, err);
		if (rc == 0 && c->rc == 0)
			CHECK(w.from == c->from && w.to == c->to && w.step == c->step && w.any_queue,
			      "%s: %lld..%lld step %u, want %lld..%lld step %u", c->req,
			      (long long)w.from, (long long)w.to, w.step, (long long)c->from,
			      (long long)c->to, c->step);
		if (c->err)
			CHECK(strstr(err, c->err) != NULL, "%s: '%s' lacks '%s'", c->req, err, c->err);
	}
}

static void test_grammar(void)
{
	static const struct { const char *line, *err; } bad[] = {
		{ "stats step_ms=90000", "not whole minutes" },
		{ "stats step_ms=30000", "step_ms must be a whole number from 60000" },
		{ "stats from=yesterday", "stats: from" },
		{ "stats to=2026-13-01T00%3A00%3A00Z", "stats: to" },
		{ "stats from=2026-01-01T00%3A00%3A00Z since_ms=60000", "from or since, not both" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[256], err[256] = "";
		struct ctl_request r;
		snprintf(line, sizeof(line), "%s", bad[i].line);
		CHECK(ctl_decode(line, strlen(line), &r, err, sizeof(err)) == -22 &&
		      strstr(err, bad[i].err), "%s: '%s' lacks '%s'", bad[i].line, err, bad[i].err);
	}
}

static void test_render(void)
{
	struct ctl_request r = request("stats queue=a from=2026-09-21T00%3A00%3A00Z "
				       "to=2026-09-21T00%3A03%3A00Z step_ms=60000");
	struct store_history_row steps[2];
	struct history_window w;
	char err[256];
	struct buf b;

	CHECK(history_window(&r, T0, &w, err, sizeof(err)) == 0, "window: %s", err);
	memset(steps, 0, sizeof(steps));
	steps[0].minute = w.from;
	steps[0].done = 3;
	steps[0].run[9] = 3;
	steps[0].run_sum_us = 900000;
	steps[1].minute = w.from + 120;
	steps[1].dead = 1;
	steps[1].retried = 2;
	steps[1].run[12] = 3;
	steps[1].wait[0] = 3;
	buf_init(&b);
	history_render_json(&w, steps, 2, &b);
	CHECK(!buf_failed(&b) && strstr(b.data, "{\"queue\":\"a\",\"from\":\"2026-09-21T00:00:00Z\","
					"\"to\":\"2026-09-21T00:03:00Z\",\"step\":60,\"points\":[") == b.data,
	      "the head: %s", b.data);
	CHECK(strstr(b.data, "{\"at\":\"2026-09-21T00:00:00Z\",\"done\":3,\"failed\":0,\"retried\":0,"
		     "\"dead\":0,\"run\":{\"count\":3,\"mean\":0.3,\"p50\":0.5,\"p95\":0.5,"
		     "\"p99\":0.5},\"wait\":{\"count\":0,\"mean\":null,\"p50\":null,\"p95\":null,"
		     "\"p99\":null}}") != NULL, "the first step: %s", b.data);
	CHECK(strstr(b.data, "{\"at\":\"2026-09-21T00:01:00Z\",\"done\":0,\"failed\":0,") != NULL,
	      "a step without rows is there, zero: %s", b.data);
	CHECK(strstr(b.data, "\"total\":{\"done\":3,\"failed\":3,\"retried\":2,\"dead\":1,"
		     "\"run\":{\"count\":6,\"mean\":0.15,\"p50\":0.5,\"p95\":5.0,\"p99\":5.0}") != NULL,
	      "the total: %s", b.data);
	buf_reset(&b);
	history_render_text(&w, steps, 2, &b);
	CHECK(!buf_failed(&b) && strstr(b.data, "2026-09-21 00:00         3       0      0    500ms")
	      && strstr(b.data, "total                    3       3      1    500ms      5s      5s"),
	      "the table: %s", b.data);
	buf_free(&b);
}

int main(void)
{
	cfg.nqueues = 2;
	strcpy(cfg.queues[0], "a");
	strcpy(cfg.queues[1], "b");
	test_add_and_take();
	test_quantiles();
	test_windows();
	test_grammar();
	test_render();
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}
