/* supctl — the supervisor's answers on the control socket: status (with queue counts read
 * through the database queue, at most once a second) and add (insert, then wake a worker). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/log.h"
#include "supervisor/status.h"
#include "supervisor/sup.h"

#define COUNTS_FRESH_MS 1000

static void answer_status(struct sup *s, struct control_conn *conn, bool json)
{
	struct buf b;

	struct status_worker *ws = calloc(s->cfg->workers, sizeof(*ws));
	struct status st = {
		.pid = (int)getpid(), .fork_server_pid = (int)s->forker.pid, .host = s->host,
		.queue = s->cfg->queue_list,
		.uptime_ms = sup_now(s) - s->started, .stopping = s->stopping, .db_up = dbq_db_up(s->dbq),
		.workers = ws, .nworkers = ws ? s->cfg->workers : 0,
		.counts = s->counts, .ncounts = s->ncounts,
	};
	uint64_t now = sup_now(s);

	for (unsigned i = 0; ws && i < s->cfg->workers; i++) {
		const struct slot *sl = &s->slots[i];
		ws[i] = (struct status_worker){
			.slot = sl->idx, .pid = (int)sl->pid, .state = sup_slot_state_name(sl->state),
			.item = sl->item, .item_ms = now - sl->item_since, .claims = sl->nclaims,
			.done = sl->done, .failed = sl->failed, .restarts = sl->restarts,
			.rtt_valid = sl->rtt_valid, .rtt_ms = sl->rtt_ms,
			.heartbeat_age_ms = now - sl->last_ack,
		};
	}
	buf_init(&b);
	if (json)
		status_render_json(&st, &b);
	else
		status_render_table(&st, &b);
	free(ws);
	if (buf_failed(&b))
		control_reply(conn, "error: out of memory\n", 21);
	else
		control_reply(conn, b.data, b.len);
	buf_free(&b);
}

void supctl_reply_waiting(struct sup *s)
{
	for (size_t i = 0; i < s->nwaiting; i++)
		answer_status(s, s->waiting[i].conn, s->waiting[i].json);
	s->nwaiting = 0;
}

static void on_counted(struct dbq_job *j)
{
	struct sup *s = j->data;

	free(s->counts);
	s->counts = j->rc >= 0 ? j->counts : NULL;
	s->ncounts = j->rc >= 0 ? j->ncounts : 0;
	s->counts_at = sup_now(s);
	if (j->rc < 0)
		log_warn("cannot read queue counts: %s", j->err);
	free(j);
	supctl_reply_waiting(s);
}

/* Queue a status request until fresh counts come back. Returns false if it cannot wait. */
static bool wait_for_counts(struct sup *s, struct control_conn *conn, bool json)
{
	struct dbq_job *j;

	if (s->nwaiting == s->capwaiting) {
		size_t cap = s->capwaiting ? s->capwaiting * 2 : 8;
		void *a = realloc(s->waiting, cap * sizeof(*s->waiting));
		if (!a)
			return false;
		s->waiting = a;
		s->capwaiting = cap;
	}
	if (s->nwaiting == 0) {
		if (!(j = sup_new_job(s, DBQ_COUNTS, on_counted)))
			return false;
		dbq_push(s->dbq, j);
	}
	s->waiting[s->nwaiting].conn = conn;
	s->waiting[s->nwaiting].json = json;
	s->nwaiting++;
	return true;
}

/* Answers the control request behind job j: "error: ..." if it failed, else the text (a
 * printf format); then frees the job. */
static void reply_job(struct dbq_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void reply_job(struct dbq_job *j, const char *fmt, ...)
{
	char reply[STORE_ERR_MAX + 128];
	va_list ap;
	int n;

	if (j->rc < 0) {
		n = snprintf(reply, sizeof(reply), "error: %s\n", j->err);
	} else {
		va_start(ap, fmt);
		n = vsnprintf(reply, sizeof(reply), fmt, ap);
		va_end(ap);
	}
	control_reply(j->data2, reply, n > 0 && (size_t)n < sizeof(reply) ? (size_t)n
									: strlen(reply));
	free(j->payload);
	free(j);
}

static void on_added(struct dbq_job *j)
{
	if (j->rc == 0)
		sup_wake_one(j->data, NULL);
	reply_job(j, "%llu\n", (unsigned long long)j->id);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* "add QUEUE HEXPAYLOAD": insert a row, answer its id, wake a worker for it. */
/* Decodes hex (hlen chars) into out (hlen / 2 bytes). Returns false on a bad digit. */
static bool unhex(const char *hex, size_t hlen, unsigned char *out)
{
	for (size_t i = 0; i < hlen / 2; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return hlen % 2 == 0;
}

static bool parse_num(const char *v, unsigned long max, unsigned long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoul(v, &end, 10);
	return *v >= '0' && *v <= '9' && !errno && !*end && *ret <= max;
}

/* One "name=value" option of an add into j->add. */
static bool add_option(struct dbq_job *j, char *opt)
{
	char *v = strchr(opt, '=');
	unsigned long n = 0;
	size_t len;

	if (!v)
		return false;
	*v++ = '\0';
	len = strlen(v);
	if (!strcmp(opt, "run_at") || !strcmp(opt, "dedupe") || !strcmp(opt, "group")) {
		bool run_at = opt[0] == 'r', group = opt[0] == 'g';
		char *dst = run_at ? j->run_at : group ? j->group_key : j->dedupe_key;
		size_t cap = run_at ? sizeof(j->run_at) : group ? sizeof(j->group_key) :
				 sizeof(j->dedupe_key);
		if (len == 0 || len / 2 >= cap || !unhex(v, len, (unsigned char *)dst))
			return false;
		dst[len / 2] = '\0';
		if (strlen(dst) != len / 2)
			return false;
		if (run_at)
			j->add.run_at = dst;
		else if (group)
			j->add.group_key = dst;
		else
			j->add.dedupe_key = dst;
		return true;
	}
	if (!strcmp(opt, "priority")) {
		char *end;
		long p;

		errno = 0;
		p = strtol(v, &end, 10);
		if (!*v || *end || errno || p < STORE_PRIORITY_MIN || p > STORE_PRIORITY_MAX)
			return false;
		j->add.priority = (int)p;
		return true;
	}
	if (!parse_num(v, UINT32_MAX, &n))
		return false;
	if (!strcmp(opt, "delay_ms"))
		j->add.delay_ms = (unsigned)n;
	else if (!strcmp(opt, "period_s"))
		j->add.period_s = (long)n;
	else if (!strcmp(opt, "max_attempts"))
		j->add.max_attempts = (unsigned)n;
	else if (!strcmp(opt, "timeout_s"))
		j->add.timeout_s = (unsigned)n;
	else
		return false;
	return true;
}

/* "add QUEUE HEX-PAYLOAD [name=value ...]": insert a row, answer its id (that of the row
 * holding the dedupe key, for a duplicate), wake a worker for it. Values of run_at, dedupe
 * and group are hex too. */
static void request_add(struct sup *s, struct control_conn *conn, const char *args)
{
	static const char bad[] = "error: usage: add QUEUE HEX-PAYLOAD [run_at=HEX] "
				  "[delay_ms=N] [period_s=N] [max_attempts=N] [timeout_s=N] "
				  "[dedupe=HEX] [priority=N] [group=HEX]\n";
	char *line = strdup(args), *save = NULL, *queue, *hex, *opt;
	struct dbq_job *j = sup_new_job(s, DBQ_ADD, on_added);

	if (!line || !j)
		goto bad;
	j->add.period_s = -1;
	queue = strtok_r(line, " ", &save);
	hex = strtok_r(NULL, " ", &save);
	if (!queue || strlen(queue) > STORE_QUEUE_MAX || !hex)
		goto bad;
	snprintf(j->queue, sizeof(j->queue), "%s", queue);
	j->payload_len = strlen(hex) / 2;
	j->payload = malloc(j->payload_len + 1);
	if (!j->payload || !unhex(hex, strlen(hex), j->payload))
		goto bad;
	while ((opt = strtok_r(NULL, " ", &save)))
		if (!add_option(j, opt))
			goto bad;
	free(line);
	j->data2 = conn;
	dbq_push(s->dbq, j);
	return;
bad:
	free(line);
	if (j)
		free(j->payload);
	free(j);
	control_reply(conn, bad, sizeof(bad) - 1);
}

static void on_retried(struct dbq_job *j)
{
	if (j->rc > 0)
		sup_wake_one(j->data, NULL);
	reply_job(j, "%d\n", j->rc);
}

/* "retry ID" or "retry-dead QUEUE": dead rows back to ready; answers how many. */
static void request_retry(struct sup *s, struct control_conn *conn, const char *arg, bool all)
{
	static const char bad[] = "error: usage: retry ID | retry-dead QUEUE\n";
	struct dbq_job *j;
	char *end;
	unsigned long long id = 0;

	if (!all) {
		errno = 0;
		id = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || *arg < '0' || *arg > '9' || id == 0)
			goto bad;
	} else if (!*arg || strlen(arg) > STORE_QUEUE_MAX) {
		goto bad;
	}
	if (!(j = sup_new_job(s, DBQ_RETRY, on_retried)))
		goto bad;
	j->id = id;
	j->all_dead = all;
	if (all)
		snprintf(j->queue, sizeof(j->queue), "%s", arg);
	j->data2 = conn;
	dbq_push(s->dbq, j);
	return;
bad:
	control_reply(conn, bad, sizeof(bad) - 1);
}

static void on_paused(struct dbq_job *j)
{
	if (j->rc >= 0) {
		log_info("queue '%s': %s", j->queue, j->kind == DBQ_LIMIT ? "rate limit set" :
			 j->pause ? "paused" : "resumed");
		if (j->kind == DBQ_PAUSE && !j->pause)
			sup_wake_one(j->data, NULL);
	}
	if (j->kind == DBQ_LIMIT)
		reply_job(j, "queue %s min_interval_ms %u\n", j->queue, j->interval_ms);
	else
		reply_job(j, "queue %s %s\n", j->queue, j->pause ? "paused" : "resumed");
}

/* "pause QUEUE" / "resume QUEUE": for every supervisor sharing the database. */
static void request_pause(struct sup *s, struct control_conn *conn, const char *queue, bool pause)
{
	static const char bad[] = "error: usage: pause QUEUE | resume QUEUE\n";
	struct dbq_job *j;

	if (!*queue || strlen(queue) > STORE_QUEUE_MAX || strchr(queue, ' ') ||
	    !(j = sup_new_job(s, DBQ_PAUSE, on_paused))) {
		control_reply(conn, bad, sizeof(bad) - 1);
		return;
	}
	snprintf(j->queue, sizeof(j->queue), "%s", queue);
	j->pause = pause;
	j->data2 = conn;
	dbq_push(s->dbq, j);
}

/* "limit QUEUE INTERVAL_MS": the queue's shared rate limit (0 = none). */
static void request_limit(struct sup *s, struct control_conn *conn, const char *args)
{
	static const char bad[] = "error: usage: limit QUEUE INTERVAL_MS\n";
	const char *sp = strchr(args, ' ');
	unsigned long ms;
	struct dbq_job *j;
	size_t qlen;

	if (!sp || sp == args || (qlen = (size_t)(sp - args)) > STORE_QUEUE_MAX ||
	    !parse_num(sp + 1, 24u * 3600u * 1000u, &ms) || !(j = sup_new_job(s, DBQ_LIMIT, on_paused))) {
		control_reply(conn, bad, sizeof(bad) - 1);
		return;
	}
	memcpy(j->queue, args, qlen);
	j->queue[qlen] = '\0';
	j->interval_ms = (unsigned)ms;
	j->data2 = conn;
	dbq_push(s->dbq, j);
}

void supctl_on_request(void *data, struct control_conn *conn, const char *line)
{
	struct sup *s = data;
	static const char usage[] = "error: unknown request; try 'status', 'status --json', "
				    "'add QUEUE HEX-PAYLOAD', 'retry ID', 'retry-dead QUEUE', "
				    "'pause QUEUE', 'resume QUEUE' or 'limit QUEUE MS'\n";
	bool json;

	if (!strcmp(line, "status") || !strcmp(line, "status --json")) {
		json = strcmp(line, "status") != 0;
		if (sup_now(s) - s->counts_at < COUNTS_FRESH_MS && s->counts_at)
			answer_status(s, conn, json);
		else if (!wait_for_counts(s, conn, json))
			answer_status(s, conn, json);
		return;
	}
	if (!strncmp(line, "add ", 4)) {
		request_add(s, conn, line + 4);
		return;
	}
	if (!strncmp(line, "pause ", 6) || !strncmp(line, "resume ", 7)) {
		request_pause(s, conn, strchr(line, ' ') + 1, line[0] == 'p');
		return;
	}
	if (!strncmp(line, "limit ", 6)) {
		request_limit(s, conn, line + 6);
		return;
	}
	if (!strncmp(line, "retry ", 6)) {
		request_retry(s, conn, line + 6, false);
		return;
	}
	if (!strncmp(line, "retry-dead ", 11)) {
		request_retry(s, conn, line + 11, true);
		return;
	}
	control_reply(conn, usage, sizeof(usage) - 1);
}

