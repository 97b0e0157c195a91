#include "supervisor/status.h"

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
	buf_printf(b, ",\"inflight\":%zu", w->inflight);
	buf_printf(b, ",\"claims\":%zu,\"done\":%llu,\"failed\":%llu,\"restarts\":%u,\"rtt_ms\":",
		   w->claims, (unsigned long long)w->done, (unsigned long long)w->failed,
		   w->restarts);
	if (w->rtt_valid)
		buf_printf(b, "%.3f,\"heartbeat_age_ms\":%llu}", w->rtt_ms,
			   (unsigned long long)w->heartbeat_age_ms);
	else
		buf_puts(b, "null,\"heartbeat_age_ms\":null}");
}

static const char *const row_states[] = { "ready", "claimed", "done", "dead" };

static uint64_t count_of(const struct status *st, const char *queue, const char *state)
{
	for (size_t i = 0; i < st->ncounts; i++)
		if (!strcmp(st->counts[i].queue, queue) && !strcmp(st->counts[i].state, state))
			return st->counts[i].count;
	return 0;
}

/* {"queue": {"ready": n, "claimed": n, "done": n, "dead": n}, ...}: every state, zeros too, for
 * every queue that has rows and for the queue served. */
static void json_counts(const struct status *st, struct buf *b)
{
	bool served_seen = false;

	buf_puts(b, "{");
	for (size_t i = 0; i <= st->ncounts; i++) {
		const char *q = i < st->ncounts ? st->counts[i].queue : st->queue;
		if (i < st->ncounts && i > 0 && !strcmp(q, st->counts[i - 1].queue))
			continue;
		if (i == st->ncounts && served_seen)
			break;
		served_seen |= !strcmp(q, st->queue);
		if (b->len && b->data[b->len - 1] != '{')
			buf_puts(b, ",");
		buf_json_str(b, q);
		buf_puts(b, ":{");
		for (size_t k = 0; k < sizeof(row_states) / sizeof(row_states[0]); k++) {
			buf_puts(b, k ? "," : "");
			buf_json_str(b, row_states[k]);
			buf_printf(b, ":%llu", (unsigned long long)count_of(st, q, row_states[k]));
		}
		buf_puts(b, "}");
	}
	buf_puts(b, "}");
}

void status_render_json(const struct status *st, struct buf *b)
{
	buf_printf(b, "{\"pid\":%d,\"fork_server_pid\":", st->pid);
	if (st->fork_server_pid > 0)
		buf_printf(b, "%d", st->fork_server_pid);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"host\":");
	buf_json_str(b, st->host);
	buf_puts(b, ",\"queue\":");
	buf_json_str(b, st->queue);
	buf_printf(b, ",\"uptime_ms\":%llu,\"stopping\":%s,\"db\":\"%s\",\"wake\":",
		   (unsigned long long)st->uptime_ms, st->stopping ? "true" : "false",
		   st->db_up ? "up" : "down");
	if (st->wake)
		buf_json_str(b, st->wake);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"workers\":[");
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
	char fsrv[32] = "none";

	if (st->fork_server_pid > 0)
		snprintf(fsrv, sizeof(fsrv), "%d", st->fork_server_pid);
	buf_printf(b, "claimd pid %d on %s, queue %s, up %llu s, database %s%s; fork server %s\n",
		   st->pid, st->host, st->queue, (unsigned long long)(st->uptime_ms / 1000),
		   st->db_up ? "up" : "DOWN", st->stopping ? ", STOPPING" : "", fsrv);
	buf_printf(b, "idle workers are woken by: %s\n\n", st->wake ? st->wake : "poll");
	buf_printf(b, "%-4s %-8s %-13s %7s %-12s %-9s %8s %7s %8s %9s\n", "SLOT", "PID",
		   "STATE", "RUNNING", "OLDEST", "FOR", "DONE", "FAILED", "RESTARTS", "RTT");
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
		buf_printf(b, "%-4d %-8s %-13s %7zu %-12s %-9s %8llu %7llu %8u %9s\n", w->slot, pid,
			   w->state, w->inflight, item, dur, (unsigned long long)w->done,
			   (unsigned long long)w->failed, w->restarts, rtt);
	}
	buf_puts(b, "\nQUEUE            STATE         COUNT\n");
	for (size_t i = 0; i < st->ncounts; i++)
		buf_printf(b, "%-16s %-8s %10llu\n", st->counts[i].queue, st->counts[i].state,
			   (unsigned long long)st->counts[i].count);
	if (st->ncounts == 0)
		buf_puts(b, "(no rows, or the database could not be read)\n");
}
