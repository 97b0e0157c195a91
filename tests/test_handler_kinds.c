/* test_handler_kinds — the exec: and pipe: kinds (worker/handler_exec.c, handler_pipe.c)
 * through handler.h, on a real libuv loop with real processes, each case on a handler of its
 * own:
 *   exec: (concurrency 4, tests/exec_item.sh) four items run at once and a fifth waits for a
 *   free slot; a timeout stops its item alone (SIGKILL after the grace to one that ignores
 *   SIGTERM); stop_all releases what runs and withdraw hands back what waits, newest first; an
 *   item is not started once the lease has lapsed; a process that cannot be started fails its
 *   item alone; the result on stdout and the stderr tail in the error; the jobs a run adds on
 *   its descriptor 3 (CLAIMD_ENQUEUE_FD), passed on only when it exits 0, at most 1 MiB, and
 *   not waited for past the settle time when a process it started holds the descriptor.
 *   pipe: (concurrency 8, tests/pipe_concurrent.py) eight requests outstanding at once on one
 *   co-process, answered out of order and matched by id, progress by id; a timed-out item's
 *   cancel answered in the grace (the co-process lives on) or not (it is stopped, the others
 *   released); garbage, a wrong id, a line too long or a death fail every item outstanding and
 *   the next item gets a new co-process; output with nothing outstanding stops it; stop_all
 *   cancels with "shutdown"; a lapsed lease starts nothing.
 * Always: done is never called inside submit, the scoreboard holds each item while it runs
 * (with its process group) and nothing after. Usage: test_handler_kinds TESTS_DIR PYTHON3.
 * Exits 1 on a failure. */
#include "worker/handler.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "common/scoreboard.h"
#include "worker/handler_kind.h"

#define MAX_JOBS 16
#define GRACE_MS 1000  /* roomy: a loaded machine may be slow to answer a cancel */
#define SLACK_MS 3     /* a libuv timer may fire a little before uv_hrtime() says it is due */

struct done_rec {
	uint64_t id;
	int status;
	char error[HANDLER_ERR_MAX + 1];
	char result[128];
	bool has_enqueue;           /* res->enqueue was not NULL */
	char enqueue[128];
	uint64_t at_ns;
};

/* One case: a handler and what it reported. */
struct t {
	uv_loop_t *loop;
	struct handler *h;
	struct sb_slot sb;
	uint64_t lease_ok_ns;
	struct handler_job jobs[MAX_JOBS];
	char payloads[MAX_JOBS][160];
	uint64_t submitted_ns[MAX_JOBS];
	unsigned njobs;
	struct done_rec dones[MAX_JOBS];
	unsigned ndone;
	bool in_submit;
	unsigned done_in_submit;
	unsigned progress_calls, progress_wrong;
	/* what ran when the first progress came (pipe) or all were seen started (exec) */
	bool snapped;
	unsigned snap_running;
	size_t snap_queued, snap_n;
	struct sb_item snap[MAX_JOBS];
	char log[300];
};

static const char *tests_dir, *python;
static char tmp[] = "/tmp/test_handler_kinds.XXXXXX";
static unsigned cases;

/* ---- the hooks ---- */

static void snapshot(struct t *t)
{
	t->snapped = true;
	t->snap_running = handler_running(t->h);
	t->snap_queued = handler_queued(t->h);
	t->snap_n = scoreboard_read(&t->sb, t->snap, MAX_JOBS);
}

static void on_done(void *data, struct handler_job *job, const struct handler_result *res)
{
	struct t *t = data;
	struct done_rec *d = &t->dones[t->ndone++];

	if (t->in_submit)
		t->done_in_submit++;
	d->id = job->id;
	d->status = res->status;
	d->at_ns = uv_hrtime();
	snprintf(d->error, sizeof(d->error), "%s", res->error);
	snprintf(d->result, sizeof(d->result), "%.*s", (int)(res->result_len < 127 ?
		 res->result_len : 127), res->result ? (const char *)res->result : "");
	d->has_enqueue = res->enqueue != NULL;
	snprintf(d->enqueue, sizeof(d->enqueue), "%.*s", (int)(res->enqueue_len < 127 ?
		 res->enqueue_len : 127), res->enqueue ? res->enqueue : "");
}

static void on_progress(void *data, struct handler_job *job, const char *json, size_t len)
{
	struct t *t = data;
	char want[64];

	if (t->progress_calls++ == 0)
		snapshot(t);
	snprintf(want, sizeof(want), "{\"id\":%llu}", (unsigned long long)job->id);
	if (len != strlen(want) || memcmp(json, want, len) != 0)
		t->progress_wrong++;
}

/* ---- a case ---- */

static void t_open(struct t *t, uv_loop_t *loop, const char *kind, unsigned concurrency,
		   bool exec_result)
{
	char spec[600], err[300];
	struct handler_opts o = {
		.concurrency = concurrency, .kill_grace_ms = GRACE_MS, .exec_result = exec_result,
		.lease_ok_ns = &t->lease_ok_ns,
		.hooks = { .done = on_done, .progress = on_progress, .data = t },
	};
	int r;

	memset(t, 0, sizeof(*t));
	t->loop = loop;
	t->lease_ok_ns = UINT64_MAX;
	t->sb.nentries = concurrency;
	o.scoreboard = &t->sb;
	snprintf(t->log, sizeof(t->log), "%s/case%u.log", tmp, ++cases);
	if (!strcmp(kind, "exec"))
		snprintf(spec, sizeof(spec), "exec:/bin/sh %s/exec_item.sh %s", tests_dir, t->log);
	else if (!strcmp(kind, "exec_enqueue"))
		snprintf(spec, sizeof(spec), "exec:/bin/sh %s/exec_enqueue.sh", tmp);
	else
		snprintf(spec, sizeof(spec), "pipe:%s %s/pipe_concurrent.py %s", python, tests_dir,
			 t->log);
	r = handler_new(loop, spec, &o, &t->h, err, sizeof(err));
	if (r < 0) {
		printf("not ok - handler_new '%s': %s\n", spec, err);
		exit(1);
	}
}

/* Submit a job with this payload and timeout; its id is its number from 1. */
static unsigned t_submit(struct t *t, const char *payload, unsigned timeout_ms)
{
	unsigned i = t->njobs++;
	struct handler_job *job = &t->jobs[i];

	snprintf(t->payloads[i], sizeof(t->payloads[i]), "%s", payload);
	memset(job, 0, sizeof(*job));
	job->id = i + 1;
	job->token = 1000 + i;
	job->queue = "default";
	job->attempt = 1;
	job->max_attempts = 5;
	job->payload = (const unsigned char *)t->payloads[i];
	job->payload_len = strlen(t->payloads[i]);
	job->timeout_ms = timeout_ms;
	t->submitted_ns[i] = uv_hrtime();
	t->in_submit = true;
	CHECK(handler_submit(t->h, job) == 0, "submit %u", i + 1);
	t->in_submit = false;
	return i + 1;
}

static const struct done_rec *done_of(const struct t *t, uint64_t id)
{
	for (unsigned i = 0; i < t->ndone; i++)
		if (t->dones[i].id == id)
			return &t->dones[i];
	return NULL;
}

/* ms from id's submit to its done. */
static double took_ms(const struct t *t, uint64_t id)
{
	const struct done_rec *d = done_of(t, id);

	return d ? (double)(d->at_ns - t->submitted_ns[id - 1]) / 1e6 : -1;
}

static void on_poll(uv_timer_t *tm)
{
	uv_stop(tm->loop);
}

/* Run the loop until pred(t, arg) holds or ms pass. Returns whether it holds. */
static bool run_until(struct t *t, bool (*pred)(struct t *, long), long arg, unsigned ms)
{
	uv_timer_t poll;
	uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000;
	bool ok;

	uv_timer_init(t->loop, &poll);
	while (!(ok = pred(t, arg)) && uv_hrtime() < end) {
		uv_timer_start(&poll, on_poll, 5, 0);
		uv_run(t->loop, UV_RUN_DEFAULT);
	}
	uv_close((uv_handle_t *)&poll, NULL);
	uv_run(t->loop, UV_RUN_NOWAIT);
	return ok;
}

static bool dones_at_least(struct t *t, long n)
{
	return t->ndone >= (unsigned)n;
}

static bool never(struct t *t, long n)
{
	return false;
}

static void run_for(struct t *t, unsigned ms)
{
	run_until(t, never, 0, ms);
}

/* Lines of the case's log starting with word (and " "), their second words into ids (in
 * order; up to max). Returns how many. */
static unsigned log_lines(const struct t *t, const char *word, uint64_t *ids, unsigned max)
{
	FILE *f = fopen(t->log, "r");
	char line[512];
	unsigned n = 0;
	size_t wl = strlen(word);

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, word, wl) || line[wl] != ' ')
			continue;
		if (ids && n < max)
			ids[n] = strtoull(line + wl + 1, NULL, 10);
		n++;
	}
	fclose(f);
	return n;
}

static bool reqs_at_least(struct t *t, long n)
{
	return log_lines(t, "req", NULL, 0) >= (unsigned)n;
}

/* Item 1, done at once, and waited for: the co-process is up, so what a case times from here
 * does not count an interpreter's start on a loaded machine (seconds, seen in CI). */
static void t_up(struct t *t, const char *name)
{
	t_submit(t, "delay 0", 20000);
	CHECK(run_until(t, dones_at_least, 1, 20000) && t->dones[0].status == HANDLER_OK,
	      "%s: the co-process is up", name);
}

static bool started_at_least(struct t *t, long n)
{
	return log_lines(t, "start", NULL, 0) >= (unsigned)n;
}

/* Whether a process of group pgid runs (a zombie waiting for whoever reaps orphans here does
 * not count). */
static bool group_alive(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool alive = false;

	while (pgid > 0 && d && !alive && (e = readdir(d))) {
		char path[300], buf[512], *p, state;
		long grp;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || !(f = fopen(path, "r")))
			continue;
		/* pid (comm) state ppid pgrp ...: comm may hold spaces, so from its last ')'. */
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 1, " %c %*d %ld", &state, &grp) == 2)
			alive = grp == pgid && state != 'Z' && state != 'X';
		fclose(f);
	}
	if (d)
		closedir(d);
	return alive;
}

/* Whether group pgid is gone within ms: a process killed a moment ago may still be on its way
 * out on a loaded machine (the run loop is not turned meanwhile). */
static bool group_gone_within(pid_t pgid, unsigned ms)
{
	uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000;
	struct timespec ts = { 0, 10 * 1000000L };

	while (group_alive(pgid)) {
		if (uv_hrtime() >= end)
			return false;
		nanosleep(&ts, NULL);
	}
	return true;
}

/* The co-process's process group (pipe_concurrent.py's boot line), nth boot from 0. */
static pid_t boot_pgid(const struct t *t, unsigned nth)
{
	FILE *f = fopen(t->log, "r");
	char line[512];
	long pid, pgid = 0;
	unsigned n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "boot %ld %ld", &pid, &pgid) == 2 && n++ == nth)
			break;
	fclose(f);
	return n > nth ? (pid_t)pgid : 0;
}

/* The case is over: nothing runs, nothing is queued, the scoreboard is empty, no done came
 * inside submit; the handler is freed. */
static void t_close(struct t *t, const char *name)
{
	struct sb_item items[MAX_JOBS];

	CHECK(handler_running(t->h) == 0, "%s: %u still running", name, handler_running(t->h));
	CHECK(handler_queued(t->h) == 0, "%s: %zu still queued", name, handler_queued(t->h));
	CHECK(scoreboard_read(&t->sb, items, MAX_JOBS) == 0, "%s: scoreboard entries left", name);
	CHECK(t->done_in_submit == 0, "%s: done called inside submit", name);
	handler_free(t->h);
	uv_run(t->loop, UV_RUN_NOWAIT);
	printf("# %s\n", name);
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f)
		fclose(f);
}

/* ---- exec: ---- */

/* Four run at once, the fifth waits for a free slot: each holds its scoreboard entry, in a
 * process group of its own, while it runs. */
static void exec_runs_four_at_once_and_queues_the_fifth(uv_loop_t *loop)
{
	const char *name = "exec_runs_four_at_once_and_queues_the_fifth";
	struct t t;
	char go[400], payload[420];
	uint64_t ids[16];
	unsigned n;

	t_open(&t, loop, "exec", 4, false);
	snprintf(go, sizeof(go), "%s/go%u", tmp, cases);
	snprintf(payload, sizeof(payload), "wait %s", go);
	for (int i = 0; i < 5; i++)
		t_submit(&t, payload, 20000);
	CHECK(t.ndone == 0 && handler_queued(t.h) == 5, "%s: before the loop runs: %u done, %zu "
	      "queued", name, t.ndone, handler_queued(t.h));
	CHECK(run_until(&t, started_at_least, 4, 10000), "%s: 4 started", name);
	run_for(&t, 300);    /* time for a fifth to start, were it wrongly allowed to */
	snapshot(&t);
	CHECK(log_lines(&t, "start", NULL, 0) == 4, "%s: %u started at once, want 4", name,
	      log_lines(&t, "start", NULL, 0));
	CHECK(t.snap_running == 4 && t.snap_queued == 1, "%s: running %u, queued %zu", name,
	      t.snap_running, t.snap_queued);
	CHECK(t.snap_n == 4, "%s: %zu scoreboard entries, want 4", name, t.snap_n);
	for (size_t i = 0; i < t.snap_n; i++) {
		const struct sb_item *e = &t.snap[i];
		CHECK(e->id >= 1 && e->id <= 4 && e->token == 1000 + e->id - 1, "%s: entry %zu: "
		      "id %llu token %llu", name, i, (unsigned long long)e->id,
		      (unsigned long long)e->token);
		CHECK(group_alive(e->pgid), "%s: item %llu's process group %d not running", name,
		      (unsigned long long)e->id, (int)e->pgid);
		for (size_t j = 0; j < i; j++)
			CHECK(e->pgid != t.snap[j].pgid, "%s: two items in one process group", name);
	}
	touch(go);
	CHECK(run_until(&t, dones_at_least, 5, 10000), "%s: all 5 done (%u)", name, t.ndone);
	for (unsigned i = 0; i < t.ndone; i++)
		CHECK(t.dones[i].status == HANDLER_OK, "%s: item %llu: status %d '%s'", name,
		      (unsigned long long)t.dones[i].id, t.dones[i].status, t.dones[i].error);
	/* The fifth started only after one of the first four ended. */
	n = log_lines(&t, "start", ids, 16);
	CHECK(n == 5 && ids[4] == 5, "%s: the fifth started last (%u starts)", name, n);
	{
		FILE *f = fopen(t.log, "r");
		char line[512];
		bool ended = false, fifth_after_end = false;
		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "end ", 4))
				ended = true;
			if (!strcmp(line, "start 5\n"))
				fifth_after_end = ended;
		}
		if (f)
			fclose(f);
		CHECK(fifth_after_end, "%s: the fifth started before any of the four ended", name);
	}
	t_close(&t, name);
}

/* A timeout stops its own item; the others run on. One that ignores SIGTERM gets SIGKILL
 * after the grace. */
static void exec_timeout_stops_only_its_item(uv_loop_t *loop)
{
	const char *name = "exec_timeout_stops_only_its_item";
	struct t t;
	char go[400], payload[420];
	pid_t sleeper = 0;

	t_open(&t, loop, "exec", 4, false);
	snprintf(go, sizeof(go), "%s/go%u", tmp, cases);
	snprintf(payload, sizeof(payload), "wait %s", go);
	t_submit(&t, payload, 20000);          /* 1 */
	t_submit(&t, "sleep 30", 800);         /* 2: times out */
	t_submit(&t, payload, 20000);          /* 3 */
	t_submit(&t, "deaf 30", 800);          /* 4: times out, ignores SIGTERM */
	CHECK(run_until(&t, started_at_least, 4, 10000), "%s: 4 started", name);
	snapshot(&t);
	for (size_t i = 0; i < t.snap_n; i++)
		if (t.snap[i].id == 2)
			sleeper = t.snap[i].pgid;
	CHECK(sleeper > 0, "%s: item 2 not on the scoreboard (%zu entries)", name, t.snap_n);
	CHECK(run_until(&t, dones_at_least, 2, 10000), "%s: 2 done", name);
	run_for(&t, 100);
	CHECK(t.ndone == 2 && done_of(&t, 2) && done_of(&t, 4), "%s: %u done (want 2 and 4)",
	      name, t.ndone);
	if (done_of(&t, 2) && done_of(&t, 4)) {
		CHECK(done_of(&t, 2)->status == HANDLER_TIMEOUT &&
		      strstr(done_of(&t, 2)->error, "timed out after 800 ms"),
		      "%s: item 2: %d '%s'", name, done_of(&t, 2)->status, done_of(&t, 2)->error);
		CHECK(done_of(&t, 4)->status == HANDLER_TIMEOUT, "%s: item 4: %d", name,
		      done_of(&t, 4)->status);
		CHECK(took_ms(&t, 4) >= 800 + GRACE_MS - SLACK_MS, "%s: item 4 (deaf to "
		      "SIGTERM) ended after %.0f ms, before its timeout and the grace", name,
		      took_ms(&t, 4));
		CHECK(done_of(&t, 2)->at_ns < done_of(&t, 4)->at_ns, "%s: the item that took "
		      "SIGTERM ended after the one that waited for SIGKILL", name);
	}
	CHECK(!group_alive(sleeper), "%s: item 2's process group %d still there", name,
	      (int)sleeper);
	CHECK(handler_running(t.h) == 2, "%s: %u running, want 2", name, handler_running(t.h));
	snapshot(&t);
	CHECK(t.snap_n == 2 && t.snap[0].id != 2 && t.snap[1].id != 2 && group_alive(t.snap[0].pgid)
	      && group_alive(t.snap[1].pgid), "%s: items 1 and 3 no longer run", name);
	touch(go);
	CHECK(run_until(&t, dones_at_least, 4, 10000), "%s: 4 done", name);
	CHECK(done_of(&t, 1) && done_of(&t, 1)->status == HANDLER_OK && done_of(&t, 3) &&
	      done_of(&t, 3)->status == HANDLER_OK, "%s: items 1 and 3 not OK", name);
	t_close(&t, name);
}

/* withdraw hands back what waits, newest first; stop_all stops what runs: RELEASED. */
static void exec_stop_all_releases_withdraw_newest_first(uv_loop_t *loop)
{
	const char *name = "exec_stop_all_releases_withdraw_newest_first";
	struct handler_job *out[8];
	struct t t;
	size_t n;

	t_open(&t, loop, "exec", 4, false);
	for (int i = 0; i < 7; i++)
		t_submit(&t, "sleep 30", 20000);
	CHECK(run_until(&t, started_at_least, 4, 10000), "%s: 4 started", name);
	snapshot(&t);
	n = handler_withdraw(t.h, out, 2);
	CHECK(n == 2 && out[0]->id == 7 && out[1]->id == 6, "%s: withdraw 2: %zu (%llu, %llu)",
	      name, n, n > 0 ? (unsigned long long)out[0]->id : 0ull,
	      n > 1 ? (unsigned long long)out[1]->id : 0ull);
	CHECK(handler_queued(t.h) == 1, "%s: %zu queued after withdrawing 2", name,
	      handler_queued(t.h));
	n = handler_withdraw(t.h, out, 8);
	CHECK(n == 1 && out[0]->id == 5, "%s: withdraw the rest: %zu", name, n);
	handler_stop_all(t.h, HANDLER_STOP_SHUTDOWN);
	CHECK(run_until(&t, dones_at_least, 4, 5000), "%s: 4 done", name);
	run_for(&t, 100);
	CHECK(t.ndone == 4, "%s: %u done, want 4 (none withdrawn)", name, t.ndone);
	for (unsigned i = 0; i < t.ndone; i++)
		CHECK(t.dones[i].id <= 4 && t.dones[i].status == HANDLER_RELEASED &&
		      strstr(t.dones[i].error, "stopped"), "%s: item %llu: %d '%s'", name,
		      (unsigned long long)t.dones[i].id, t.dones[i].status, t.dones[i].error);
	for (size_t i = 0; i < t.snap_n; i++)
		CHECK(group_gone_within(t.snap[i].pgid, 2000), "%s: group %d still there 2 s "
		      "after its item was reported", name, (int)t.snap[i].pgid);
	t_close(&t, name);
}

/* Once the lease has lapsed nothing starts: RELEASED. */
static void exec_lapsed_lease_starts_nothing(uv_loop_t *loop)
{
	const char *name = "exec_lapsed_lease_starts_nothing";
	struct t t;

	t_open(&t, loop, "exec", 4, false);
	t.lease_ok_ns = 0;
	t_submit(&t, "sleep 0", 20000);
	t_submit(&t, "sleep 0", 20000);
	CHECK(run_until(&t, dones_at_least, 2, 5000), "%s: 2 done", name);
	for (unsigned i = 0; i < t.ndone; i++)
		CHECK(t.dones[i].status == HANDLER_RELEASED, "%s: item %llu: %d", name,
		      (unsigned long long)t.dones[i].id, t.dones[i].status);
	run_for(&t, 100);
	CHECK(log_lines(&t, "start", NULL, 0) == 0, "%s: a process started", name);
	t.lease_ok_ns = UINT64_MAX;
	t_submit(&t, "sleep 0", 20000);
	CHECK(run_until(&t, dones_at_least, 3, 5000) && t.dones[2].status == HANDLER_OK,
	      "%s: with the lease held it runs", name);
	t_close(&t, name);
}

/* A process that cannot be started (no descriptor left for its pipes) fails its item; the
 * next one runs. */
static void exec_start_failure_fails_the_item(uv_loop_t *loop)
{
	const char *name = "exec_start_failure_fails_the_item";
	struct rlimit was, low;
	struct t t;

	t_open(&t, loop, "exec", 4, false);
	getrlimit(RLIMIT_NOFILE, &was);
	low = was;
	low.rlim_cur = 0;   /* no descriptor can be made: its pipes cannot */
	t_submit(&t, "sleep 0", 20000);
	setrlimit(RLIMIT_NOFILE, &low);
	run_until(&t, dones_at_least, 1, 5000);
	setrlimit(RLIMIT_NOFILE, &was);
	CHECK(t.ndone == 1 && t.dones[0].status == HANDLER_FAILED &&
	      strstr(t.dones[0].error, "cannot start /bin/sh") &&
	      strstr(t.dones[0].error, "Too many open files"), "%s: %u done: %d '%s'", name,
	      t.ndone, t.dones[0].status, t.dones[0].error);
	t_submit(&t, "sleep 0", 20000);
	CHECK(run_until(&t, dones_at_least, 2, 5000) && t.dones[1].status == HANDLER_OK,
	      "%s: the next one runs", name);
	t_close(&t, name);
}

/* stdout is the result (exec_result); a failure's error has its stderr's tail. */
static void exec_result_and_stderr(uv_loop_t *loop)
{
	static const struct {
		const char *payload;
		int status;
		const char *error, *result;
	} cases_[] = {
		{ "echo hello", HANDLER_OK, "", "hello\n" },
		{ "fail", HANDLER_FAILED, "exit status 3: exec_item: failing as asked\n", "" },
	};
	const char *name = "exec_result_and_stderr";
	size_t n = sizeof(cases_) / sizeof(cases_[0]);
	struct t t;

	t_open(&t, loop, "exec", 4, true);
	for (size_t i = 0; i < n; i++)
		t_submit(&t, cases_[i].payload, 20000);
	CHECK(run_until(&t, dones_at_least, (long)n, 5000), "%s: all done", name);
	for (size_t i = 0; i < n; i++) {
		const struct done_rec *d = done_of(&t, i + 1);
		CHECK(d && d->status == cases_[i].status && !strcmp(d->error, cases_[i].error) &&
		      !strcmp(d->result, cases_[i].result), "%s: '%s': %d '%s' result '%s'", name,
		      cases_[i].payload, d ? d->status : -1, d ? d->error : "", d ? d->result : "");
	}
	t_close(&t, name);
}

/* An exec: handler that writes jobs to its descriptor 3 as its payload says, after checking
 * that CLAIMD_ENQUEUE_FD names it and that it has no other descriptor from 4 to 9, nor
 * 1500 (the test holds one there, inheritable). */
static const char exec_enqueue_sh[] =
	"read -r what\n"
	"[ \"$CLAIMD_ENQUEUE_FD\" = 3 ] || { echo \"CLAIMD_ENQUEUE_FD='$CLAIMD_ENQUEUE_FD'\" >&2; "
	"exit 9; }\n"
	"for n in 4 5 6 7 8 9 1500; do\n"
	"\t[ ! -e /proc/$$/fd/$n ] || { echo \"descriptor $n is open\" >&2; exit 8; }\n"
	"done\n"
	"case $what in\n"
	"two) echo '{\"payload\":{\"n\":1}}' >&3; echo '{\"queue\":\"mail\",\"payload\":2}' >&3 ;;\n"
	"fail) echo '{\"payload\":{\"n\":1}}' >&3; echo 'exec_enqueue: failing' >&2; exit 1 ;;\n"
	"big) head -c 1100000 /dev/zero | tr '\\0' x >&3 ;;\n"
	"blank) echo >&3 ;;\n"
	"linger) printf '{\"payload\":3}' >&3; sleep 4 </dev/null >/dev/null 2>&1 & ;;\n"
	"esac\n";

/* The jobs a run adds (its descriptor 3): both lines of one that exits 0 (an incomplete last
 * line too), none of one that exits 1 or writes blank lines only, over 1 MiB fails it; a
 * process it left holding the descriptor does not hold the item past the settle time. */
static void exec_enqueue_on_descriptor_3(uv_loop_t *loop)
{
	static const struct {
		const char *payload;
		int status;
		const char *error, *enqueue;   /* enqueue NULL: res->enqueue NULL */
	} cases_[] = {
		{ "two", HANDLER_OK, "", "{\"payload\":{\"n\":1}}\n{\"queue\":\"mail\",\"payload\":2}\n" },
		{ "fail", HANDLER_FAILED, "exit status 1: exec_enqueue: failing\n", NULL },
		{ "big", HANDLER_FAILED, "its descriptor 3 (the jobs it adds) was 1100000 bytes, over "
		  "the 1048576-byte limit", NULL },
		{ "blank", HANDLER_OK, "", NULL },
		{ "linger", HANDLER_OK, "", "{\"payload\":3}" },
	};
	const char *name = "exec_enqueue_on_descriptor_3";
	size_t n = sizeof(cases_) / sizeof(cases_[0]);
	char path[300];
	FILE *f;
	struct t t;

	snprintf(path, sizeof(path), "%s/exec_enqueue.sh", tmp);
	f = fopen(path, "w");
	CHECK(f && fputs(exec_enqueue_sh, f) >= 0 && fclose(f) == 0, "%s: cannot write %s", name,
	      path);
	/* A descriptor past 1024, not close-on-exec, that no handler may see. */
	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max > 1500, "%s: the hard limit on "
	      "descriptors is under 1501", name);
	if (rl.rlim_cur <= 1500) {
		rl.rlim_cur = 1501;
		CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "%s: setrlimit: %s", name, strerror(errno));
	}
	int null = open("/dev/null", O_RDONLY);
	CHECK(null >= 0 && dup2(null, 1500) == 1500 && close(null) == 0, "%s: descriptor 1500: %s",
	      name, strerror(errno));
	t_open(&t, loop, "exec_enqueue", 4, false);
	for (size_t i = 0; i < n; i++)
		t_submit(&t, cases_[i].payload, 20000);
	CHECK(run_until(&t, dones_at_least, (long)n, 10000), "%s: all done", name);
	for (size_t i = 0; i < n; i++) {
		const struct done_rec *d = done_of(&t, i + 1);
		const char *want = cases_[i].enqueue;
		CHECK(d && d->status == cases_[i].status && !strcmp(d->error, cases_[i].error) &&
		      d->has_enqueue == (want != NULL) && !strcmp(d->enqueue, want ? want : ""),
		      "%s: '%s': %d '%s' enqueue '%s'", name, cases_[i].payload, d ? d->status : -1,
		      d ? d->error : "", d ? d->enqueue : "");
	}
	/* Its sleep holds descriptor 3 for 4 s: the run is over at the settle time after its
	 * exit all the same. */
	CHECK(took_ms(&t, n) >= 0 && took_ms(&t, n) < 3000, "%s: 'linger' took %.0f ms", name,
	      took_ms(&t, n));
	t_close(&t, name);
	close(1500);
}

static void exec_tests(uv_loop_t *loop)
{
	exec_runs_four_at_once_and_queues_the_fifth(loop);
	exec_timeout_stops_only_its_item(loop);
	exec_stop_all_releases_withdraw_newest_first(loop);
	exec_lapsed_lease_starts_nothing(loop);
	exec_start_failure_fails_the_item(loop);
	exec_result_and_stderr(loop);
	exec_enqueue_on_descriptor_3(loop);
}

/* ---- pipe: ---- */

/* Eight requests outstanding at once on one co-process, which answers them newest first,
 * with a progress line each before: all matched by id. A ninth waits for a free slot. */
static void pipe_eight_outstanding_answered_out_of_order(uv_loop_t *loop)
{
	const char *name = "pipe_eight_outstanding_answered_out_of_order";
	struct t t;
	pid_t pgid;

	t_open(&t, loop, "pipe", 8, false);
	for (int i = 0; i < 8; i++)
		t_submit(&t, "gather 8", 20000);
	t_submit(&t, "delay 0", 20000);
	CHECK(run_until(&t, dones_at_least, 9, 10000), "%s: 9 done (%u)", name, t.ndone);
	pgid = boot_pgid(&t, 0);
	CHECK(t.snapped && t.snap_running == 8 && t.snap_queued == 1, "%s: at the first progress "
	      "%u running, %zu queued", name, t.snap_running, t.snap_queued);
	CHECK(t.snap_n == 8, "%s: %zu scoreboard entries, want 8", name, t.snap_n);
	for (size_t i = 0; i < t.snap_n; i++)
		CHECK(t.snap[i].id <= 8 && t.snap[i].pgid == pgid && pgid > 0, "%s: entry of item "
		      "%llu: pgid %d, the co-process's %d", name, (unsigned long long)t.snap[i].id,
		      (int)t.snap[i].pgid, (int)pgid);
	CHECK(t.progress_calls == 8 && t.progress_wrong == 0, "%s: %u progress reports, %u for "
	      "the wrong item", name, t.progress_calls, t.progress_wrong);
	for (unsigned i = 0; i < t.ndone; i++) {
		const struct done_rec *d = &t.dones[i];
		char want[64];
		snprintf(want, sizeof(want), "{\"id\":%llu}", (unsigned long long)d->id);
		CHECK(d->id == (i < 8 ? 8 - i : 9), "%s: done #%u is item %llu (newest first)",
		      name, i, (unsigned long long)d->id);
		CHECK(d->status == HANDLER_OK && !strcmp(d->result, want), "%s: item %llu: %d, "
		      "result '%s'", name, (unsigned long long)d->id, d->status, d->result);
	}
	CHECK(log_lines(&t, "boot", NULL, 0) == 1, "%s: %u co-processes", name,
	      log_lines(&t, "boot", NULL, 0));
	t_close(&t, name);
}

/* A timed-out item's cancel is answered within the grace: TIMEOUT, and the co-process and
 * the other item go on. */
static void pipe_timeout_cancel_answered(uv_loop_t *loop)
{
	const char *name = "pipe_timeout_cancel_answered";
	uint64_t ids[4];
	struct t t;

	t_open(&t, loop, "pipe", 8, false);
	t_up(&t, name);
	t_submit(&t, "hang", 400);
	t_submit(&t, "delay 1000", 20000);
	CHECK(run_until(&t, dones_at_least, 3, 10000), "%s: 2 done", name);
	CHECK(t.ndone == 3 && t.dones[1].id == 2 && t.dones[1].status == HANDLER_TIMEOUT &&
	      strstr(t.dones[1].error, "timed out after 400 ms; the co-process answered its "
		     "cancel"), "%s: item 2: %d '%s'", name, t.dones[1].status, t.dones[1].error);
	CHECK(took_ms(&t, 2) >= 400 - SLACK_MS, "%s: item 2 ended after %.0f ms, before its "
	      "timeout", name, took_ms(&t, 2));
	CHECK(t.dones[2].id == 3 && t.dones[2].status == HANDLER_OK, "%s: item 3: %d '%s'", name,
	      t.dones[2].status, t.dones[2].error);
	CHECK(log_lines(&t, "cancel", ids, 4) == 1 && ids[0] == 2, "%s: cancel lines", name);
	CHECK(log_lines(&t, "boot", NULL, 0) == 1, "%s: the co-process was restarted", name);
	CHECK(group_alive(boot_pgid(&t, 0)), "%s: the co-process is gone", name);
	t_close(&t, name);
}

/* A timed-out item's cancel is not answered: the co-process is stopped after the grace, the
 * item is TIMEOUT, the others outstanding RELEASED; the next item gets a new co-process. */
static void pipe_timeout_cancel_unanswered(uv_loop_t *loop)
{
	const char *name = "pipe_timeout_cancel_unanswered";
	struct t t;
	pid_t first;

	t_open(&t, loop, "pipe", 8, false);
	t_up(&t, name);
	t_submit(&t, "hang deaf", 400);
	t_submit(&t, "hang", 20000);
	t_submit(&t, "hang", 20000);
	CHECK(run_until(&t, dones_at_least, 4, 10000), "%s: 3 done", name);
	first = boot_pgid(&t, 0);
	for (unsigned i = 1; i < t.ndone; i++) {
		const struct done_rec *d = &t.dones[i];
		if (d->id == 2)
			CHECK(d->status == HANDLER_TIMEOUT && strstr(d->error, "timed out after "
			      "400 ms; no reply to its cancel within 1000 ms"), "%s: item 2: %d '%s'",
			      name, d->status, d->error);
		else
			CHECK(d->status == HANDLER_RELEASED && strstr(d->error, "item 2 did not "
			      "answer its cancel"), "%s: item %llu: %d '%s'", name,
			      (unsigned long long)d->id, d->status, d->error);
	}
	CHECK(took_ms(&t, 2) >= 400 + GRACE_MS - SLACK_MS, "%s: item 2 ended after %.0f ms, "
	      "within the grace", name, took_ms(&t, 2));
	CHECK(!group_alive(first), "%s: the co-process %d is still there", name, (int)first);
	t_submit(&t, "delay 0", 20000);
	CHECK(run_until(&t, dones_at_least, 5, 10000) && t.dones[4].status == HANDLER_OK,
	      "%s: the next item", name);
	CHECK(log_lines(&t, "boot", NULL, 0) == 2 && boot_pgid(&t, 1) != first, "%s: %u "
	      "co-processes, want 2", name, log_lines(&t, "boot", NULL, 0));
	t_close(&t, name);
}

/* What breaks the protocol (or the co-process) fails every item outstanding; the next item
 * gets a new co-process, whose group its scoreboard entry names. */
static void pipe_broken_coprocess_fails_all_outstanding(uv_loop_t *loop)
{
	static const struct {
		const char *payload, *says, *also;
	} rows[] = {
		{ "garbage", "bad reply from the co-process: not a JSON object", "this is not json" },
		{ "wrongid", "bad reply from the co-process: wrong id 1003 (no item outstanding "
		  "has it)", "\\\"id\\\": 1003" },
		{ "huge", "bad reply from the co-process: longer than 1 MiB", "" },
		{ "die", "the co-process exited (exit status 3) while handling the item",
		  "pipe_concurrent: dying as asked" },
	};
	char name[120];

	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct t t;
		pid_t first, second;

		snprintf(name, sizeof(name), "pipe_broken_coprocess_fails_all_outstanding(%s)",
			 rows[r].payload);
		t_open(&t, loop, "pipe", 8, false);
		t_submit(&t, "hang", 20000);
		t_submit(&t, "hang", 20000);
		t_submit(&t, rows[r].payload, 20000);
		CHECK(run_until(&t, dones_at_least, 3, 10000), "%s: 3 done", name);
		first = boot_pgid(&t, 0);
		for (unsigned i = 0; i < t.ndone; i++)
			CHECK(t.dones[i].status == HANDLER_FAILED && strstr(t.dones[i].error,
			      rows[r].says) && strstr(t.dones[i].error, rows[r].also), "%s: item "
			      "%llu: %d '%.300s'", name, (unsigned long long)t.dones[i].id,
			      t.dones[i].status, t.dones[i].error);
		CHECK(!group_alive(first), "%s: the co-process %d is still there", name,
		      (int)first);
		t.snapped = false;
		t.progress_calls = 0;
		t_submit(&t, "gather 1", 20000);
		CHECK(run_until(&t, dones_at_least, 4, 10000) && t.dones[3].status == HANDLER_OK,
		      "%s: the next item", name);
		second = boot_pgid(&t, 1);
		CHECK(second > 0 && second != first, "%s: no new co-process", name);
		CHECK(t.snapped && t.snap_n == 1 && t.snap[0].id == 4 && t.snap[0].pgid == second,
		      "%s: the next item's entry: %zu, pgid %d (the new co-process's %d)", name,
		      t.snap_n, t.snap_n ? (int)t.snap[0].pgid : 0, (int)second);
		t_close(&t, name);
	}
}

/* A line when nothing is outstanding stops the co-process (the item before it is done); an
 * item that comes while it is being stopped (it ignores SIGTERM: until the SIGKILL after the
 * grace) waits for it to be gone, then gets a new one. */
static void pipe_output_with_nothing_outstanding_stops_it(uv_loop_t *loop)
{
	const char *name = "pipe_output_with_nothing_outstanding_stops_it";
	struct t t;
	pid_t first;

	t_open(&t, loop, "pipe", 8, false);
	t_submit(&t, "extra stubborn", 20000);
	CHECK(run_until(&t, dones_at_least, 1, 10000) && t.dones[0].status == HANDLER_OK,
	      "%s: item 1", name);
	first = boot_pgid(&t, 0);
	t_submit(&t, "gather 1", 20000);
	CHECK(run_until(&t, dones_at_least, 2, 10000) && t.dones[1].status == HANDLER_OK,
	      "%s: item 2", name);
	CHECK(took_ms(&t, 2) >= GRACE_MS / 2, "%s: item 2 did not wait for the stubborn "
	      "co-process to go (%.0f ms)", name, took_ms(&t, 2));
	CHECK(log_lines(&t, "boot", NULL, 0) == 2, "%s: %u co-processes, want 2", name,
	      log_lines(&t, "boot", NULL, 0));
	CHECK(!group_alive(first), "%s: the first co-process is still there", name);
	CHECK(t.snapped && t.snap_n == 1 && t.snap[0].pgid == boot_pgid(&t, 1), "%s: item 2's "
	      "entry names group %d, not the new co-process's", name,
	      t.snap_n ? (int)t.snap[0].pgid : 0);
	t_close(&t, name);
}

/* stop_all sends each item outstanding a cancel for "shutdown": an answer ok:true is OK (the
 * work was done), another answer RELEASED, and so is an item the co-process had to be stopped
 * for. withdraw hands back what waits, newest first. */
static void pipe_stop_all_cancels_for_shutdown(uv_loop_t *loop)
{
	const char *name = "pipe_stop_all_cancels_for_shutdown";
	struct handler_job *out[4];
	uint64_t ids[8];
	struct t t;
	size_t n;

	t_open(&t, loop, "pipe", 3, false);
	t_submit(&t, "hang", 20000);
	t_submit(&t, "hang cancel-ok", 20000);
	t_submit(&t, "hang deaf", 20000);
	t_submit(&t, "hang", 20000);
	t_submit(&t, "hang", 20000);
	run_until(&t, reqs_at_least, 3, 20000);
	run_for(&t, 200);
	CHECK(log_lines(&t, "req", NULL, 0) == 3, "%s: %u requests", name,
	      log_lines(&t, "req", NULL, 0));
	n = handler_withdraw(t.h, out, 4);
	CHECK(n == 2 && out[0]->id == 5 && out[1]->id == 4, "%s: withdrew %zu", name, n);
	handler_stop_all(t.h, HANDLER_STOP_SHUTDOWN);
	CHECK(run_until(&t, dones_at_least, 3, 10000), "%s: 3 done", name);
	CHECK(done_of(&t, 1) && done_of(&t, 1)->status == HANDLER_RELEASED, "%s: item 1", name);
	CHECK(done_of(&t, 2) && done_of(&t, 2)->status == HANDLER_OK, "%s: item 2 (answered "
	      "ok)", name);
	CHECK(done_of(&t, 3) && done_of(&t, 3)->status == HANDLER_RELEASED &&
	      strstr(done_of(&t, 3)->error, "no reply to its cancel"), "%s: item 3: '%s'", name,
	      done_of(&t, 3) ? done_of(&t, 3)->error : "");
	CHECK(log_lines(&t, "cancel", ids, 8) == 3, "%s: %u cancel lines", name,
	      log_lines(&t, "cancel", NULL, 0));
	{
		FILE *f = fopen(t.log, "r");
		char line[512];
		unsigned shutdown = 0;
		while (f && fgets(line, sizeof(line), f))
			shutdown += strncmp(line, "cancel ", 7) == 0 && strstr(line, " shutdown\n");
		if (f)
			fclose(f);
		CHECK(shutdown == 3, "%s: %u cancels for shutdown", name, shutdown);
	}
	run_for(&t, 100);
	CHECK(t.ndone == 3, "%s: a withdrawn job was reported", name);
	t_close(&t, name);
}

/* When each boot of the co-process happened (unix seconds), up to max. Returns how many. */
static unsigned boot_times(const struct t *t, double *out, unsigned max)
{
	FILE *f = fopen(t->log, "r");
	char line[512];
	long pid, pgid;
	unsigned n = 0;

	while (f && n < max && fgets(line, sizeof(line), f))
		if (sscanf(line, "boot %ld %ld %lf", &pid, &pgid, &out[n]) == 3)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* A co-process that exits before its first reply is started again after 100 ms, then 200 ms
 * (doubling); an item whose timeout comes while it waits for one times out unsent. */
static void pipe_startup_deaths_back_off(uv_loop_t *loop)
{
	const char *name = "pipe_startup_deaths_back_off";
	struct t t;
	double boots[4];
	unsigned n;

	t_open(&t, loop, "pipe", 8, false);
	for (unsigned i = 1; i <= 3; i++) {
		t_submit(&t, "die", 20000);
		CHECK(run_until(&t, dones_at_least, i, 10000) && t.dones[i - 1].status ==
		      HANDLER_FAILED, "%s: death %u", name, i);
	}
	n = boot_times(&t, boots, 4);
	CHECK(n == 3 && boots[1] - boots[0] >= 0.1 && boots[2] - boots[1] >= 0.2, "%s: %u boots, "
	      "%.3f s and %.3f s apart", name, n, n > 1 ? boots[1] - boots[0] : 0,
	      n > 2 ? boots[2] - boots[1] : 0);
	t_submit(&t, "delay 0", 50);    /* the next start is 400 ms away */
	CHECK(run_until(&t, dones_at_least, 4, 10000) && t.dones[3].status == HANDLER_TIMEOUT &&
	      strstr(t.dones[3].error, "waiting for a co-process"), "%s: an item waiting: %d '%s'",
	      name, t.dones[3].status, t.dones[3].error);
	CHECK(log_lines(&t, "req", NULL, 0) == 3, "%s: the item waiting was sent", name);
	t_close(&t, name);
}

/* Once the lease has lapsed nothing starts, not even the co-process. */
static void pipe_lapsed_lease_starts_nothing(uv_loop_t *loop)
{
	const char *name = "pipe_lapsed_lease_starts_nothing";
	struct t t;

	t_open(&t, loop, "pipe", 8, false);
	t.lease_ok_ns = 0;
	t_submit(&t, "delay 0", 20000);
	t_submit(&t, "delay 0", 20000);
	CHECK(run_until(&t, dones_at_least, 2, 5000), "%s: 2 done", name);
	for (unsigned i = 0; i < t.ndone; i++)
		CHECK(t.dones[i].status == HANDLER_RELEASED, "%s: item %llu: %d", name,
		      (unsigned long long)t.dones[i].id, t.dones[i].status);
	run_for(&t, 200);
	CHECK(log_lines(&t, "boot", NULL, 0) == 0, "%s: a co-process started", name);
	t_close(&t, name);
}

static void pipe_tests(uv_loop_t *loop)
{
	pipe_eight_outstanding_answered_out_of_order(loop);
	pipe_timeout_cancel_answered(loop);
	pipe_timeout_cancel_unanswered(loop);
	pipe_broken_coprocess_fails_all_outstanding(loop);
	pipe_output_with_nothing_outstanding_stops_it(loop);
	pipe_stop_all_cancels_for_shutdown(loop);
	pipe_startup_deaths_back_off(loop);
	pipe_lapsed_lease_starts_nothing(loop);
}

static int rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(d);
	return rmdir(dir);
}

int main(int argc, char **argv)
{
	uv_loop_t loop;

	if (argc < 3) {
		fprintf(stderr, "usage: test_handler_kinds TESTS_DIR PYTHON3\n");
		return 2;
	}
	tests_dir = argv[1];
	python = argv[2];
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	uv_loop_init(&loop);
	exec_tests(&loop);
	pipe_tests(&loop);
	uv_run(&loop, UV_RUN_DEFAULT);   /* the handles the handlers closed */
	CHECK(uv_loop_close(&loop) == 0, "handles left open on the loop");
	if (failures) {
		printf("%d check(s) failed (logs in %s)\n", failures, tmp);
		return 1;
	}
	rm_tree(tmp);
	printf("ok - handler kinds: exec and pipe, %u cases\n", cases);
	return 0;
}
