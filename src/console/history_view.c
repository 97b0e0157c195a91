#include "console/history_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errmsg.h"
#include "common/utctime.h"
#include "console/entity.h"

/* The bucket that holds the q-quantile, or -1 when the histogram is empty. */
static int quantile_bucket(const uint64_t bucket[STORE_HISTORY_BUCKETS], double q)
{
	uint64_t count = 0, cum = 0;

	for (unsigned i = 0; i < STORE_HISTORY_BUCKETS; i++)
		count += bucket[i];
	if (count == 0)
		return -1;
	for (unsigned i = 0; i < STORE_HISTORY_BUCKETS; i++) {
		cum += bucket[i];
		if (bucket[i] && (double)cum >= q * (double)count)
			return (int)i;
	}
	return STORE_HISTORY_BUCKETS - 1;
}

double history_quantile(const uint64_t bucket[STORE_HISTORY_BUCKETS], double q)
{
	int b = quantile_bucket(bucket, q);

	return b < 0 ? -1 : history_bucket_le((unsigned)b);
}

void history_merge(struct store_history_row *a, const struct store_history_row *b)
{
	a->done += b->done;
	a->retried += b->retried;
	a->dead += b->dead;
	a->run_sum_us += b->run_sum_us;
	a->wait_sum_us += b->wait_sum_us;
	for (unsigned i = 0; i < STORE_HISTORY_BUCKETS; i++) {
		a->run[i] += b->run[i];
		a->wait[i] += b->wait[i];
	}
}

/* ---- the window ---- */

/* A time the grammar checked (common/ctl.c) in whole seconds, down. */
static int64_t seconds_of(const char *text)
{
	char why[160];
	int64_t us = 0;

	utctime_parse(text, &us, why, sizeof(why));
	return us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
}

int history_window(const struct ctl_request *req, int64_t now_s, struct history_window *ret,
		   char *err, size_t errlen)
{
	static const unsigned steps[] = { 60, 300, 900, 3600, 21600, 86400 };
	struct history_window w;
	int64_t span;

	memset(&w, 0, sizeof(w));
	w.any_queue = !ctl_has(req, CTL_F_QUEUE);
	if (!w.any_queue)
		snprintf(w.queue, sizeof(w.queue), "%s", req->queue);
	w.to = ctl_has(req, CTL_F_TO) ? seconds_of(req->to) : (now_s + 59) / 60 * 60;
	if (ctl_has(req, CTL_F_FROM))
		w.from = seconds_of(req->from);
	else
		w.from = w.to - (ctl_has(req, CTL_F_SINCE) ? (req->since_ms + 999) / 1000 :
				 HISTORY_SINCE_S);
	if (w.from >= w.to)
		return errmsg_invalid(err, errlen, "stats: from (%lld) must be before to (%lld)",
				      (long long)w.from, (long long)w.to);
	if (w.from < 0)
		return errmsg_invalid(err, errlen, "stats: from is before 1970");
	span = w.to - w.from;
	if (ctl_has(req, CTL_F_STEP)) {
		w.step = req->step_ms / 1000;
	} else {
		w.step = steps[sizeof(steps) / sizeof(steps[0]) - 1];
		for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
			if ((span + steps[i] - 1) / steps[i] <= HISTORY_AUTO_POINTS) {
				w.step = steps[i];
				break;
			}
	}
	w.from -= w.from % w.step;
	span = w.to - w.from;
	if ((span + w.step - 1) / w.step > HISTORY_POINTS_MAX)
		return errmsg_invalid(err, errlen, "stats: %lld steps of %u s from from to to: at "
				      "most %u (a larger step, or a shorter time)",
				      (long long)((span + w.step - 1) / w.step), w.step,
				      HISTORY_POINTS_MAX);
	*ret = w;
	return 0;
}

/* ---- the answer ---- */

/* "2026-11-26T01:00:00Z" */
static void rfc3339(int64_t s, char out[UTCTIME_TEXT_MAX])
{
	utctime_format(s * 1000000, out);
	out[10] = 'T';
	out[19] = 'Z';
	out[20] = '\0';
}

/* v rounded to 6 significant digits (what a mean or a bucket bound means to a reader). */
static json_t *real6(double v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%.6g", v);
	return json_real(strtod(tmp, NULL));
}

static json_t *quantiles_json(const uint64_t *bucket, uint64_t sum_us)
{
	static const double qs[3] = { 0.5, 0.95, 0.99 };
	static const char *const qn[3] = { "p50", "p95", "p99" };
	uint64_t count = 0;
	json_t *o;

	for (unsigned i = 0; i < STORE_HISTORY_BUCKETS; i++)
		count += bucket[i];
	o = json_pack("{s:I, s:o}", "count", (json_int_t)count, "mean",
		      count ? real6((double)sum_us / 1e6 / (double)count) : json_null());
	for (int k = 0; o && k < 3; k++) {
		double v = history_quantile(bucket, qs[k]);
		json_object_set_new(o, qn[k], v < 0 ? json_null() : real6(v));
	}
	return o;
}

static json_t *counts_json(const struct store_history_row *r, json_t *o)
{
	if (!o)
		return NULL;
	json_object_set_new(o, "done", json_integer((json_int_t)r->done));
	json_object_set_new(o, "failed", json_integer((json_int_t)(r->retried + r->dead)));
	json_object_set_new(o, "retried", json_integer((json_int_t)r->retried));
	json_object_set_new(o, "dead", json_integer((json_int_t)r->dead));
	json_object_set_new(o, "run", quantiles_json(r->run, r->run_sum_us));
	json_object_set_new(o, "wait", quantiles_json(r->wait, r->wait_sum_us));
	return o;
}

/* Each step of w in order, with its row (or an empty one); the total. */
static void each_step(const struct history_window *w, const struct store_history_row *steps,
		      size_t n, void (*fn)(int64_t at, const struct store_history_row *r, void *arg),
		      void *arg, struct store_history_row *total)
{
	static const struct store_history_row none;
	size_t k = 0;

	memset(total, 0, sizeof(*total));
	for (int64_t at = w->from; at < w->to; at += w->step) {
		while (k < n && steps[k].minute < at)
			k++;
		const struct store_history_row *r = k < n && steps[k].minute == at ? &steps[k] : &none;
		history_merge(total, r);
		fn(at, r, arg);
	}
}

static void point_json(int64_t at, const struct store_history_row *r, void *arg)
{
	json_t *points = arg;
	char when[UTCTIME_TEXT_MAX];

	rfc3339(at, when);
	json_array_append_new(points, counts_json(r, json_pack("{s:s}", "at", when)));
}

void history_render_json(const struct history_window *w, const struct store_history_row *steps,
			 size_t n, struct buf *out)
{
	struct store_history_row total;
	char from[UTCTIME_TEXT_MAX], to[UTCTIME_TEXT_MAX];
	json_t *points = json_array();

	rfc3339(w->from, from);
	rfc3339(w->to, to);
	if (points)
		each_step(w, steps, n, point_json, points, &total);
	entity_dump(points ? json_pack("{s:o, s:s, s:s, s:I, s:o, s:o}", "queue",
				       w->any_queue ? json_null() : json_string(w->queue), "from",
				       from, "to", to, "step", (json_int_t)w->step, "points", points,
				       "total", counts_json(&total, json_object())) : NULL, out);
}

/* A duration for people: "-" for none, "250ms", "2.5s", ">300s". */
static void duration_text(const uint64_t *bucket, double q, char out[16])
{
	int b = quantile_bucket(bucket, q);
	double v = b < 0 ? 0 : history_bucket_le((unsigned)b);

	if (b < 0)
		snprintf(out, 16, "-");
	else if (b == STORE_HISTORY_BUCKETS - 1)
		snprintf(out, 16, ">%gs", v);
	else if (v < 1)
		snprintf(out, 16, "%gms", v * 1000);
	else
		snprintf(out, 16, "%gs", v);
}

static void line_text(const char *label, const struct store_history_row *r, struct buf *out)
{
	static const double qs[3] = { 0.5, 0.95, 0.99 };
	char d[6][16];

	for (int k = 0; k < 3; k++) {
		duration_text(r->run, qs[k], d[k]);
		duration_text(r->wait, qs[k], d[3 + k]);
	}
	buf_printf(out, "%-17s %8llu %7llu %6llu %8s %7s %7s %8s %7s %7s\n", label,
		   (unsigned long long)r->done, (unsigned long long)(r->retried + r->dead),
		   (unsigned long long)r->dead, d[0], d[1], d[2], d[3], d[4], d[5]);
}

static void point_text(int64_t at, const struct store_history_row *r, void *arg)
{
	char t[UTCTIME_TEXT_MAX];

	utctime_format(at * 1000000, t);
	t[16] = '\0';   /* to the minute */
	line_text(t, r, arg);
}

void history_render_text(const struct history_window *w, const struct store_history_row *steps,
			 size_t n, struct buf *out)
{
	struct store_history_row total;

	buf_printf(out, "%s%s, every claimd; steps of %u s (UTC)\n", w->any_queue ? "all queues" :
		   "queue ", w->any_queue ? "" : w->queue, w->step);
	buf_printf(out, "%-17s %8s %7s %6s %8s %7s %7s %8s %7s %7s\n", "TIME", "DONE", "FAILED",
		   "DEAD", "RUN p50", "p95", "p99", "WAIT p50", "p95", "p99");
	each_step(w, steps, n, point_text, out, &total);
	line_text("total", &total, out);
}
