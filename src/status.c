#include "status.h"

#include <stdio.h>
#include <string.h>

static void json_worker(const struct status_worker *w, struct buf *b)
{
	buf_printf(b, "{\"slot\":%d,\"pid\":", w->slot);
	if (w->pid)
		buf_printf(b, "%d", w->pid);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"state\":");
	buf_json_str(b, w->state);
	if (w->item)
		buf_printf(b, ",\"item\":%llu,\"item_ms\":%llu", (unsigned long long)w->item,
			   (unsigned long long)w->item_ms);
	else
		buf_puts(b, ",\"item\":null,\"item_ms\":null");
	buf_printf(b, ",\"claims\":%zu,\"done\":%llu,\"failed\":%llu,\"restarts\":%u,\"rtt_ms\":",
		   w->claims, (unsigned long long)w->done, (unsigned long long)w->failed,
		   w->restarts);
	if (w->rtt_valid)
		buf_printf(b, "%.3f,\"heartbeat_age_ms\":%llu}", w->rtt_ms,
			   (unsigned long long)w->heartbeat_age_ms);
	else
		buf_puts(b, "null,\"heartbeat_age_ms\":null}");
}

static void json_counts(const struct status *st, struct buf *b)
{
	buf_puts(b, "{");
	for (size_t i = 0; i < st->ncounts; i++) {
		const struct store_count *c = &st->counts[i];
		bool first_of_queue = i == 0 || strcmp(c->queue, st->counts[i - 1].queue) != 0;
		if (first_of_queue) {
			buf_puts(b, i ? "}," : "");
			buf_json_str(b, c->queue);
			buf_puts(b, ":{");
		} else {
			buf_puts(b, ",");
		}
		buf_json_str(b, c->state);
		buf_printf(b, ":%llu", (unsigned long long)c->count);
	}
	buf_puts(b, st->ncounts ? "}}" : "}");
}

void status_render_json(const struct status *st, struct buf *b)
{
	buf_printf(b, "{\"pid\":%d,\"host\":", st->pid);
	buf_json_str(b, st->host);
	buf_puts(b, ",\"queue\":");
	buf_json_str(b, st->queue);
	buf_printf(b, ",\"uptime_ms\":%llu,\"stopping\":%s,\"db\":\"%s\",\"workers\":[",
		   (unsigned long long)st->uptime_ms, st->stopping ? "true" : "false",
		   st->db_up ? "up" : "down");
	for (size_t i = 0; i < st->nworkers; i++) {
		if (i)
			buf_puts(b, ",");
		json_worker(&st->workers[i], b);
	}
	buf_puts(b, "],\"counts\":");
	json_counts(st, b);
	buf_puts(b, "}\n");
}

void status_render_table(const struct status *st, struct buf *b)
{
	buf_printf(b, "claimd pid %d on %s, queue %s, up %llu s, database %s%s\n\n", st->pid,
		   st->host, st->queue, (unsigned long long)(st->uptime_ms / 1000),
		   st->db_up ? "up" : "DOWN", st->stopping ? ", STOPPING" : "");
	buf_printf(b, "%-4s %-8s %-13s %-12s %-9s %8s %7s %8s %9s\n", "SLOT", "PID", "STATE",
		   "ITEM", "FOR", "DONE", "FAILED", "RESTARTS", "RTT");
	for (size_t i = 0; i < st->nworkers; i++) {
		const struct status_worker *w = &st->workers[i];
		char item[24] = "-", dur[24] = "-", rtt[24] = "-", pid[16] = "-";
		if (w->pid)
			snprintf(pid, sizeof(pid), "%d", w->pid);
		if (w->item) {
			snprintf(item, sizeof(item), "%llu", (unsigned long long)w->item);
			snprintf(dur, sizeof(dur), "%.1fs", (double)w->item_ms / 1000.0);
		}
		if (w->rtt_valid)
			snprintf(rtt, sizeof(rtt), "%.2fms", w->rtt_ms);
		buf_printf(b, "%-4d %-8s %-13s %-12s %-9s %8llu %7llu %8u %9s\n", w->slot, pid,
			   w->state, item, dur, (unsigned long long)w->done,
			   (unsigned long long)w->failed, w->restarts, rtt);
	}
	buf_puts(b, "\nQUEUE            STATE         COUNT\n");
	for (size_t i = 0; i < st->ncounts; i++)
		buf_printf(b, "%-16s %-8s %10llu\n", st->counts[i].queue, st->counts[i].state,
			   (unsigned long long)st->counts[i].count);
	if (st->ncounts == 0)
		buf_puts(b, "(no rows, or the database could not be read)\n");
}
