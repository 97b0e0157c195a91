#include "supervisor/metrics.h"

#include <string.h>

void metrics_count_http(struct metrics *m, const char *route, unsigned code)
{
	for (size_t i = 0; i < m->nhttp; i++)
		if (m->http[i].code == code && !strcmp(m->http[i].route, route)) {
			m->http[i].n++;
			return;
		}
	if (m->nhttp < METRICS_HTTP_MAX)
		m->http[m->nhttp++] = (typeof(m->http[0])){ route, code, 1 };
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: \, " and line feeds escaped. */
static void label(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			buf_puts(b, "\\n");
		else
			buf_append(b, s, 1);
	}
}

static const char *const worker_states[] = {
	"starting", "idle", "busy", "db-down", "stopping", "unresponsive", "exited", "down",
};

void metrics_render(const struct metrics *m, const struct status *st,
		    const struct store_queue *qs, size_t nq, double queues_age_s, struct buf *b)
{
	uint64_t done = 0, failed = 0, dead = 0, restarts = 0;

	head(b, "claimd_up", "gauge", "1 while the supervisor runs.");
	buf_puts(b, "claimd_up 1\n");
	head(b, "claimd_uptime_seconds", "gauge", "Seconds since the supervisor started.");
	buf_printf(b, "claimd_uptime_seconds %.3f\n", (double)st->uptime_ms / 1000.0);
	head(b, "claimd_database_up", "gauge",
	     "1 while the supervisor's own database connection answers.");
	buf_printf(b, "claimd_database_up %d\n", st->db_up ? 1 : 0);
	head(b, "claimd_workers", "gauge", "Worker processes by state.");
	for (size_t k = 0; k < sizeof(worker_states) / sizeof(worker_states[0]); k++) {
		unsigned n = 0;
		for (size_t i = 0; i < st->nworkers; i++)
			n += !strcmp(st->workers[i].state, worker_states[k]);
		buf_printf(b, "claimd_workers{state=\"%s\"} %u\n", worker_states[k], n);
	}
	for (size_t i = 0; i < st->nworkers; i++) {
		done += st->workers[i].done;
		failed += st->workers[i].failed;
		dead += st->workers[i].dead;
		restarts += st->workers[i].restarts;
	}
	head(b, "claimd_jobs_finished_total", "counter",
	     "Items this supervisor's workers finished, by outcome (failed = retried + dead).");
	buf_printf(b, "claimd_jobs_finished_total{outcome=\"done\"} %llu\n"
		   "claimd_jobs_finished_total{outcome=\"retried\"} %llu\n"
		   "claimd_jobs_finished_total{outcome=\"dead\"} %llu\n",
		   (unsigned long long)done, (unsigned long long)(failed - dead),
		   (unsigned long long)dead);
	head(b, "claimd_worker_restarts_total", "counter",
	     "Workers started again after one exited or was killed.");
	buf_printf(b, "claimd_worker_restarts_total %llu\n", (unsigned long long)restarts);
	head(b, "claimd_heartbeat_rtt_seconds", "gauge",
	     "The last heartbeat round trip of each worker slot.");
	for (size_t i = 0; i < st->nworkers; i++)
		if (st->workers[i].rtt_valid)
			buf_printf(b, "claimd_heartbeat_rtt_seconds{slot=\"%d\"} %.6f\n",
				   st->workers[i].slot, st->workers[i].rtt_ms / 1000.0);
	head(b, "claimd_http_requests_total", "counter", "HTTP requests answered, by route and code.");
	for (size_t i = 0; i < m->nhttp; i++)
		buf_printf(b, "claimd_http_requests_total{route=\"%s\",code=\"%u\"} %llu\n",
			   m->http[i].route, m->http[i].code, (unsigned long long)m->http[i].n);
	if (!qs)
		return;
	head(b, "claimd_queue_reading_age_seconds", "gauge",
	     "How old the reading of the queues below is.");
	buf_printf(b, "claimd_queue_reading_age_seconds %.3f\n", queues_age_s);
	head(b, "claimd_queue_jobs", "gauge", "Rows of each queue by state.");
	for (size_t i = 0; i < nq; i++) {
		static const char *const states[] = { "ready", "claimed", "done", "dead" };
		const uint64_t v[] = { qs[i].ready, qs[i].claimed, qs[i].done, qs[i].dead };
		for (size_t k = 0; k < 4; k++) {
			buf_puts(b, "claimd_queue_jobs{queue=\"");
			label(b, qs[i].name);
			buf_printf(b, "\",state=\"%s\"} %llu\n", states[k], (unsigned long long)v[k]);
		}
	}
	head(b, "claimd_queue_oldest_ready_seconds", "gauge",
	     "How long the oldest row that may run has waited (0: none).");
	for (size_t i = 0; i < nq; i++) {
		buf_puts(b, "claimd_queue_oldest_ready_seconds{queue=\"");
		label(b, qs[i].name);
		buf_printf(b, "\"} %.3f\n", qs[i].oldest_ready_s);
	}
	head(b, "claimd_queue_paused", "gauge", "1 when the queue is paused.");
	for (size_t i = 0; i < nq; i++) {
		buf_puts(b, "claimd_queue_paused{queue=\"");
		label(b, qs[i].name);
		buf_printf(b, "\"} %d\n", qs[i].paused ? 1 : 0);
	}
	head(b, "claimd_queue_min_interval_seconds", "gauge",
	     "The queue's shared rate limit: starts at least this far apart (0: none).");
	for (size_t i = 0; i < nq; i++) {
		buf_puts(b, "claimd_queue_min_interval_seconds{queue=\"");
		label(b, qs[i].name);
		buf_printf(b, "\"} %.3f\n", qs[i].min_interval_ms / 1000.0);
	}
}
