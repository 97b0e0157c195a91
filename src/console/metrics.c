#include "console/metrics.h"

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
	"starting", "idle", "busy", "db-down", "stopping", "forking", "unresponsive", "exited", "down",
};

/* One histogram's series: cumulative buckets, +Inf, sum, count. lbl: its labels ("" or
 * "queue=\"q\","), written before le. */
static void histogram(struct buf *b, const char *name, const char *lbl,
		      const struct jobstats_hist *h, const double *le, size_t nle)
{
	uint64_t cum = 0;

	for (size_t i = 0; i < nle; i++) {
		cum += h->bucket[i];
		buf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, lbl, le[i],
			   (unsigned long long)cum);
	}
	buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, lbl, (unsigned long long)h->count);
	if (*lbl) {
		size_t n = strlen(lbl);  /* without the trailing comma */
		buf_printf(b, "%s_sum{%.*s} %.6f\n%s_count{%.*s} %llu\n", name, (int)(n - 1), lbl,
			   h->sum, name, (int)(n - 1), lbl, (unsigned long long)h->count);
	} else {
		buf_printf(b, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name,
			   (unsigned long long)h->count);
	}
}

/* What the workers did, per queue of this supervisor. */
static void render_jobs(const struct jobstats *js, struct buf *b)
{
	const struct config *cfg = js->cfg;
	struct buf lbl;

	head(b, "claimd_jobs_finished_total", "counter",
	     "Items this supervisor's workers finished, by queue and outcome.");
	for (unsigned q = 0; q < cfg->nqueues; q++)
		for (int o = 0; o <= PROTO_OUT_MAX; o++) {
			buf_puts(b, "claimd_jobs_finished_total{queue=\"");
			label(b, cfg->queues[q]);
			buf_printf(b, "\",outcome=\"%s\"} %llu\n", proto_outcome_name((unsigned)o),
				   (unsigned long long)js->queue[q].outcome[o]);
		}
	static const char *const names[2] = { "claimd_job_duration_seconds",
					       "claimd_job_wait_seconds" };
	static const char *const helps[2] = {
		"How long handlers ran, by queue.",
		"From when a row could run (its insert, its run_at, a retry's back-off end) to "
		"its start, by queue.",
	};
	for (int k = 0; k < 2; k++) {
		head(b, names[k], "histogram", helps[k]);
		for (unsigned q = 0; q < cfg->nqueues; q++) {
			buf_init(&lbl);
			buf_puts(&lbl, "queue=\"");
			label(&lbl, cfg->queues[q]);
			buf_puts(&lbl, "\",");
			if (!buf_failed(&lbl))
				histogram(b, names[k], lbl.data,
					  k ? &js->queue[q].wait : &js->queue[q].run,
					  jobstats_duration_le, JOBSTATS_DURATION_BUCKETS);
			buf_free(&lbl);
		}
	}
	head(b, "claimd_claims_total", "counter", "Claims this supervisor's workers made.");
	buf_printf(b, "claimd_claims_total %llu\n", (unsigned long long)js->claims);
	head(b, "claimd_claims_empty_total", "counter", "Claims that found no row.");
	buf_printf(b, "claimd_claims_empty_total %llu\n", (unsigned long long)js->claims_empty);
	head(b, "claimd_idle_statements_total", "counter",
	     "Statements asked because workers were idle: polls, when the next row is due.");
	buf_printf(b, "claimd_idle_statements_total %llu\n", (unsigned long long)js->idle_asked);
	head(b, "claimd_worker_messages_total", "counter",
	     "Messages between the supervisor and its workers (acknowledgements aside).");
	buf_printf(b, "claimd_worker_messages_total{direction=\"to_worker\"} %llu\n"
		   "claimd_worker_messages_total{direction=\"from_worker\"} %llu\n",
		   (unsigned long long)js->msgs_to, (unsigned long long)js->msgs_from);
	head(b, "claimd_claim_duration_seconds", "histogram",
	     "How long claims took (their round trips to the database).");
	histogram(b, "claimd_claim_duration_seconds", "", &js->claim, jobstats_claim_le,
		  JOBSTATS_CLAIM_BUCKETS);
}

/* The HTTP server's connections and long-lived requests, and what its limits refused. */
static void render_http_server(const struct metrics *m, struct buf *b)
{
	const struct http_stats *s = &m->server;

	head(b, "claimd_http_connections", "gauge", "HTTP connections open.");
	buf_printf(b, "claimd_http_connections %u\n", s->connections);
	head(b, "claimd_http_connections_max", "gauge",
	     "The limit on HTTP connections (--http-max-connections).");
	buf_printf(b, "claimd_http_connections_max %u\n", m->max_conns);
	head(b, "claimd_http_connections_refused_total", "counter",
	     "Connections closed at accept: their client (an IPv4 address, an IPv6 /64) "
	     "held --http-max-connections-per-ip.");
	buf_printf(b, "claimd_http_connections_refused_total %llu\n",
		   (unsigned long long)s->peers_refused);
	head(b, "claimd_http_connections_shed_total", "counter",
	     "Idle connections closed to take new ones in (fewer than an eighth of "
	     "--http-max-connections were left).");
	buf_printf(b, "claimd_http_connections_shed_total %llu\n", (unsigned long long)s->shed);
	head(b, "claimd_http_streams", "gauge", "Event streams and ?wait requests open.");
	buf_printf(b, "claimd_http_streams %u\n", s->streams);
	head(b, "claimd_http_streams_max", "gauge",
	     "The limit on event streams and ?wait requests (--http-max-streams).");
	buf_printf(b, "claimd_http_streams_max %u\n", s->max_streams);
	head(b, "claimd_http_streams_refused_total", "counter",
	     "Event streams and ?wait requests answered 503 with Retry-After: "
	     "--http-max-streams were open.");
	buf_printf(b, "claimd_http_streams_refused_total %llu\n",
		   (unsigned long long)s->streams_refused);
}

void metrics_render(const struct metrics *m, const struct status *st,
		    const struct jobstats *js, const struct store_queue *qs, size_t nq,
		    double queues_age_s, struct buf *b)
{
	uint64_t restarts = 0;

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
	for (size_t i = 0; i < st->nworkers; i++)
		restarts += st->workers[i].restarts;
	render_jobs(js, b);
	head(b, "claimd_worker_restarts_total", "counter",
	     "Workers started again after one exited or was killed.");
	buf_printf(b, "claimd_worker_restarts_total %llu\n", (unsigned long long)restarts);
	head(b, "claimd_heartbeat_rtt_seconds", "gauge",
	     "The last heartbeat round trip of each worker slot.");
	for (size_t i = 0; i < st->nworkers; i++)
		if (st->workers[i].rtt_ms >= 0)
			buf_printf(b, "claimd_heartbeat_rtt_seconds{slot=\"%d\"} %.6f\n",
				   st->workers[i].slot, st->workers[i].rtt_ms / 1000.0);
	head(b, "claimd_worker_items_running", "gauge",
	     "Items each worker slot runs now (at most --concurrency).");
	for (size_t i = 0; i < st->nworkers; i++)
		if (st->workers[i].pid)
			buf_printf(b, "claimd_worker_items_running{slot=\"%d\"} %zu\n",
				   st->workers[i].slot, st->workers[i].inflight);
	head(b, "claimd_http_requests_total", "counter",
	     "HTTP requests answered, by route and code (499: a ?wait whose client went away).");
	for (size_t i = 0; i < m->nhttp; i++)
		buf_printf(b, "claimd_http_requests_total{route=\"%s\",code=\"%u\"} %llu\n",
			   m->http[i].route, m->http[i].code, (unsigned long long)m->http[i].n);
	render_http_server(m, b);
	if (!qs)
		return;
	head(b, "claimd_queue_reading_age_seconds", "gauge",
	     "How old the reading of the queues below is.");
	buf_printf(b, "claimd_queue_reading_age_seconds %.3f\n", queues_age_s);
	head(b, "claimd_queue_jobs", "gauge", "Rows of each queue by state.");
	for (size_t i = 0; i < nq; i++) {
		for (unsigned k = 0; k < ROW_STATE_COUNT; k++) {
			buf_puts(b, "claimd_queue_jobs{queue=\"");
			label(b, qs[i].name);
			buf_printf(b, "\",state=\"%s\"} %llu\n", row_state_name(k),
				   (unsigned long long)qs[i].rows[k]);
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
