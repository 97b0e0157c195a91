/* admin_migrate — claimd --migrate: the migrations the database lacks, applied in order while
 * the database is in use. It says on stderr what it is doing (a statement still running after
 * a while, a batched fill's progress, a lock it waits for) and stops cleanly on SIGINT,
 * SIGTERM or SIGHUP: a thread of its own takes them and ends the running statement on the
 * server (KILL QUERY, from a second connection), so that nothing keeps running there for a
 * client that is gone. */
#include "admin.h"
#include "admin_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/proc.h"
#include "store/store_migrate.h"

#define TICK_MS 1000u
#define SHOW_AFTER_MS 2000u      /* a statement running this long is named */
#define SHOW_AGAIN_MS 15000u     /* and then this often */
#define SLOW_MS 1000u            /* a statement that took longer: its time when it ends */

/* What the main thread is at, for the watcher's lines. */
struct at {
	pthread_mutex_t mu;
	char mig[80];
	unsigned line;
	char what[120];
	uint64_t started_ms, shown_ms;
	bool running, shown, batched;
};

struct run {
	const struct config *cfg;
	struct store *s, *guard;
	unsigned long session;
	atomic_int sig;             /* the stop signal taken, 0: none */
	atomic_bool done;           /* the watcher may end (it is woken to see it) */
	struct at at;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Called by the watcher every TICK_MS: a statement that runs long is named (once after
 * SHOW_AFTER_MS, then every SHOW_AGAIN_MS; a batched one says its progress itself). */
static void tick(struct run *run)
{
	struct at *at = &run->at;
	uint64_t now = mono_ms();

	pthread_mutex_lock(&at->mu);
	if (at->running && !at->batched && now - at->started_ms >= SHOW_AFTER_MS &&
	    (!at->shown || now - at->shown_ms >= SHOW_AGAIN_MS)) {
		fprintf(stderr, "claimd --migrate: %s line %u: %s (%s for %.0f s)\n", at->mig, at->line,
			at->what, at->shown ? "still running" : "running",
			(double)(now - at->started_ms) / 1000.0);
		at->shown = true;
		at->shown_ms = now;
	}
	pthread_mutex_unlock(&at->mu);
}

/* SIGINT, SIGTERM, SIGHUP: stop before the next statement, and end the running one on the
 * server (again each tick: the main thread may have sent it a moment after the kill). A
 * second signal: exit at once. */
static void stop_now(struct run *run, int sig)
{
	char err[STORE_ERR_MAX];

	if (sig > 0 && atomic_exchange(&run->sig, sig) != 0) {
		fprintf(stderr, "claimd --migrate: %s again: exiting now (claimd --migrate run again "
			"ends what the server still runs for it)\n", strsignal(sig));
		_exit(1);
	}
	if (sig > 0)
		fprintf(stderr, "claimd --migrate: %s: stopping, the running statement ended on the "
			"server\n", strsignal(sig));
	pthread_mutex_lock(&run->at.mu);
	bool running = run->at.running;
	pthread_mutex_unlock(&run->at.mu);
	if (running && store_kill_query(run->guard, run->session, err, sizeof(err)) < 0)
		fprintf(stderr, "claimd --migrate: could not end the running statement (KILL QUERY "
			"%lu): %s\n", run->session, err);
}

static void *watcher(void *arg)
{
	struct run *run = arg;
	int sig;

	while (!atomic_load(&run->done)) {
		sig = proc_stop_signal_wait(TICK_MS);
		if (sig == -EINTR)
			continue;   /* woken: done, or a stray SIGUSR1 */
		if (sig > 0 || atomic_load(&run->sig))
			stop_now(run, sig);
		else
			tick(run);
	}
	return NULL;
}

static bool on_stop(void *arg)
{
	struct run *run = arg;

	return atomic_load(&run->sig) != 0;
}

static void on_step(void *arg, const struct store_migration *m, const struct store_migrate_step *st)
{
	struct run *run = arg;
	struct at *at = &run->at;
	char mig[80];

	snprintf(mig, sizeof(mig), "%03u_%s", m->version, m->name);
	pthread_mutex_lock(&at->mu);
	switch (st->what) {
	case STORE_MIGRATE_STATEMENT:
		snprintf(at->mig, sizeof(at->mig), "%s", mig);
		snprintf(at->what, sizeof(at->what), "%s", st->text);
		at->line = st->line;
		at->started_ms = mono_ms();
		at->running = true;
		at->shown = at->batched = false;
		break;
	case STORE_MIGRATE_ENDED:
		at->running = false;
		if (!at->batched && (at->shown || st->seconds * 1000 >= SLOW_MS))
			fprintf(stderr, "claimd --migrate: %s line %u: %s (done in %.1f s)\n", mig,
				st->line, st->text, st->seconds);
		break;
	case STORE_MIGRATE_BATCHES: {
		double left = st->done && st->done < st->total ?
			st->seconds * (double)(st->total - st->done) / (double)st->done : 0;
		at->batched = true;
		if (st->done < st->total)
			fprintf(stderr, "claimd --migrate: %s line %u: %s, %llu of about %llu rows "
				"(%.0f %%) in %.1f s, about %.0f s to go\n", mig, st->line, st->table,
				(unsigned long long)st->done, (unsigned long long)st->total,
				100.0 * (double)st->done / (double)st->total, st->seconds, left);
		else
			fprintf(stderr, "claimd --migrate: %s line %u: %s, %llu rows in %.1f s\n", mig,
				st->line, st->table, (unsigned long long)st->done, st->seconds);
		break;
	}
	case STORE_MIGRATE_WAIT:
		fprintf(stderr, "claimd --migrate: %s line %u: %s: trying again\n", mig, st->line,
			st->text);
		break;
	}
	pthread_mutex_unlock(&at->mu);
}

/* The second connection, the migration lock, and the watcher. Returns 0, or an exit status. */
static int start(struct run *run, pthread_t *ret_thread, char *err, size_t errlen)
{
	char note[400];
	int r = admin_connect(run->cfg, false, &run->guard, err, errlen);

	if (r == 0)
		r = store_migrate_lock(run->s, run->guard, note, sizeof(note), err, errlen);
	if (r == -ENOTSUP) {
		fprintf(stderr, "claimd --migrate: the server takes no named locks (%s): nothing "
			"keeps a second claimd --migrate off this database meanwhile\n", err);
		r = 0;
	}
	if (r < 0)
		return r == -ENOTCONN ? 2 : 1;
	if (*note)
		fprintf(stderr, "claimd --migrate: %s\n", note);
	run->session = store_session_id(run->s);
	r = proc_stop_signals_block();
	if (r == 0)
		r = -pthread_create(ret_thread, NULL, watcher, run);
	if (r < 0) {
		snprintf(err, errlen, "cannot start the thread that takes signals: %s", strerror(-r));
		return 1;
	}
	return 0;
}

/* The migrations from have on. Returns the exit status; *have: the version reached. */
static int apply(struct run *run, unsigned *have, struct buf *applied, char *err, size_t errlen)
{
	const struct store_migrate_watch w = { on_step, on_stop, run };
	unsigned from = *have;

	for (unsigned i = from; i < store_nmigrations; i++) {
		const struct store_migration *m = &store_migrations[i];
		uint64_t t0 = mono_ms();
		int r = store_migrate(run->s, m, &w, err, errlen);
		if (r == -EINTR || (r < 0 && atomic_load(&run->sig))) {
			snprintf(err, errlen, "stopped in migration %03u_%s (by %s): what it did stays "
				 "and nothing is half-done; claimd --migrate run again goes on from there",
				 m->version, m->name, strsignal(atomic_load(&run->sig)));
			return 1;
		}
		if (r < 0)
			return r == -EBUSY ? 3 : 1;
		if (run->cfg->json)
			buf_printf(applied, "%s\"%03u_%s\"", i > from ? "," : "", m->version, m->name);
		else
			printf("applied migration %03u_%s\n", m->version, m->name);
		fflush(stdout);
		if (mono_ms() - t0 >= SLOW_MS)
			fprintf(stderr, "claimd --migrate: %03u_%s took %.1f s\n", m->version, m->name,
				(double)(mono_ms() - t0) / 1000.0);
		*have = m->version;
	}
	return 0;
}

int admin_migrate(const struct config *cfg)
{
	struct run run = { .cfg = cfg, .at = { .mu = PTHREAD_MUTEX_INITIALIZER } };
	char err[800] = "", version[80];
	unsigned have = 0, from;
	pthread_t thread;
	bool threaded = false;
	struct buf b;
	int r = admin_connect(cfg, true, &run.s, err, sizeof(err)), rc = 0;

	if (r < 0) {
		admin_error(cfg, "--migrate", err);
		return 2;
	}
	r = admin_check_server(run.s, version, sizeof(version), err, sizeof(err));
	if (r == 0)
		r = store_schema_version(run.s, &have, err, sizeof(err));
	if (r < 0) {
		admin_error(cfg, "--migrate", err);
		store_free(run.s);
		return r == -ENOTSUP ? 2 : 1;
	}
	from = have;
	buf_init(&b);
	if (have >= store_nmigrations && !cfg->json)
		printf("the schema is at version %u: nothing to do\n", have);
	if (have < store_nmigrations) {
		rc = start(&run, &thread, err, sizeof(err));
		threaded = rc == 0;
	}
	if (rc == 0)
		rc = apply(&run, &have, &b, err, sizeof(err));
	if (threaded) {
		atomic_store(&run.done, true);
		proc_stop_signal_wake(thread);
		pthread_join(thread, NULL);
	}
	if (rc != 0)
		admin_error(cfg, "--migrate", err);
	if (cfg->json && rc == 0)
		printf("{\"from\":%u,\"applied\":[%.*s],\"version\":%u}\n", from, (int)b.len,
		       b.data ? b.data : "", have);
	buf_free(&b);
	store_free(run.guard);
	store_free(run.s);
	return rc;
}
