/* claim_stress DSN NPROC NROWS BATCH — the store against a real server.
 *
 * Phase 1 (stress): NROWS claimable rows plus decoys (another queue, not yet due, already
 * done); NPROC forked claimers, each with its own connection, claim BATCH rows at a time
 * and complete the previous batch in the same call, until two claims in a row come back
 * empty. Every claimable row must be claimed exactly once and end 'done'; no decoy may be
 * touched. Prints claims/s.
 * Phase 2 (fencing): a claimer whose lease ran out and whose row was claimed again can no
 * longer complete, fail, release or extend it, one row or many in one statement; release gives the attempt back or not;
 * fail and release turn rows dead at max_attempts with last_error kept; an outcome written
 * twice (its first answer lost) counts the rows that wait for its row off once.
 * Phase 3 (connection): a killed connection and an unreachable server give -ENOTCONN.
 *
 * WARNING: empties work_items. Exit 0 on success, 1 on failure. Never 77: an unreachable
 * server is a failure here.
 */
#include "common/dsn.h"
#include "store/store.h"

#include <errno.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STRESS_QUEUE "default"
#define LEASE_LONG_MS 120000u

static const char *role = "parent";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void sql(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint64_t sql_u64(MYSQL *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "claim_stress: FAIL (%s): ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* ---- a plain client connection for setup and checks ---- */

static MYSQL *admin_connect(const struct dsn *d)
{
	const char *host = d->hosts[0].host[0] ? d->hosts[0].host : "localhost";
	const char *pw = getenv("CLAIMD_DB_PASSWORD");
	char buf[1024] = "";
	MYSQL *m = mysql_init(NULL);
	FILE *f;

	if (!m)
		die("mysql_init failed");
	if ((!pw || !*pw) && d->password_file[0] && (f = fopen(d->password_file, "r"))) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\r\n")] = '\0';
		fclose(f);
	}
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (!mysql_real_connect(m, host, d->user[0] ? d->user : NULL, pw && *pw ? pw : buf, d->db,
				d->hosts[0].port, strcmp(host, "localhost") == 0 && d->socket[0] ? d->socket : NULL,
				0))
		die("cannot connect to the database: mysql error %u: %s", mysql_errno(m),
		    mysql_error(m));
	return m;
}

static void vsql(MYSQL *m, const char *fmt, va_list ap)
{
	char *q;
	int n = vasprintf(&q, fmt, ap);

	if (n < 0)
		die("out of memory");
	if (mysql_real_query(m, q, (unsigned long)n) != 0)
		die("SQL failed: mysql error %u: %s\n  in: %.300s", mysql_errno(m), mysql_error(m), q);
	free(q);
}

static void sql(MYSQL *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsql(m, fmt, ap);
	va_end(ap);
}

/* One row, one column: the value as text (NULL -> "NULL"), into out. */
static void sql_text(MYSQL *m, char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void sql_text(MYSQL *m, char *out, size_t outlen, const char *fmt, ...)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	va_list ap;

	va_start(ap, fmt);
	vsql(m, fmt, ap);
	va_end(ap);
	res = mysql_store_result(m);
	if (!res || !(row = mysql_fetch_row(res)))
		die("query returned no row (%s)", fmt);
	snprintf(out, outlen, "%s", row[0] ? row[0] : "NULL");
	mysql_free_result(res);
}

static uint64_t sql_u64(MYSQL *m, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	char *q;

	va_start(ap, fmt);
	if (vasprintf(&q, fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
	sql_text(m, buf, sizeof(buf), "%s", q);
	free(q);
	return strtoull(buf, NULL, 10);
}

static uint64_t insert_row(MYSQL *m, const char *queue, unsigned max_attempts, const char *payload)
{
	char q[2 * 64 + 1], p[256];

	mysql_real_escape_string(m, q, queue, (unsigned long)strlen(queue));
	if (payload)
		snprintf(p, sizeof(p), "'%s'", payload);
	sql(m, "INSERT INTO work_items (queue, max_attempts, payload) VALUES ('%s', %u, %s)",
	    q, max_attempts, payload ? p : "NULL");
	return mysql_insert_id(m);
}

/* ---- stores ---- */

static struct store *open_store(const struct dsn *d, const char *claimer)
{
	char err[STORE_ERR_MAX];
	struct store *s;
	int r;

	if (store_new(d, claimer, &s) < 0)
		die("store_new failed");
	r = store_connect(s, err, sizeof(err));
	if (r < 0)
		die("store_connect (%s): %d %s", claimer, r, err);
	if (!store_connected(s))
		die("store_connected false after store_connect");
	return s;
}

/* Claims exactly one row of queue (and completes done[0..ndone)), or dies. */
static struct store_item claim1(struct store *s, const char *queue, unsigned lease_ms)
{
	char err[STORE_ERR_MAX];
	struct store_item it;
	size_t n, completed;
	int r;

	r = store_claim(s, queue, 1, lease_ms, NULL, 0, &it, &n, &completed, err, sizeof(err));
	if (r < 0)
		die("store_claim(%s): %d %s", queue, r, err);
	if (n != 1)
		die("store_claim(%s) returned %zu rows, want 1", queue, n);
	return it;
}

/* ---- phase 1: many claimers ---- */

static void fill(MYSQL *m, unsigned nrows)
{
	char *q = malloc(64 + 16 * 1000);
	unsigned done = 0, i, chunk;
	size_t len;

	if (!q)
		die("out of memory");
	sql(m, "TRUNCATE TABLE work_items");
	while (done < nrows) {
		chunk = nrows - done < 1000 ? nrows - done : 1000;
		len = (size_t)sprintf(q, "INSERT INTO work_items (payload) VALUES ");
		for (i = 0; i < chunk; i++)
			len += (size_t)sprintf(q + len, "%s('x')", i ? "," : "");
		sql(m, "%s", q);
		done += chunk;
	}
	free(q);
	sql(m, "UPDATE work_items SET payload = CONCAT('item-', id)");
	/* Decoys: another queue, not due for an hour, inserted as done. */
	sql(m, "INSERT INTO work_items (queue, payload) SELECT 'other', 'decoy' FROM seq_1_to_20");
	sql(m, "INSERT INTO work_items (payload, run_at) SELECT 'decoy', NOW(6) + INTERVAL 1 HOUR "
	    "FROM seq_1_to_20");
	sql(m, "INSERT INTO work_items (payload, state) SELECT 'decoy', 'done' FROM seq_1_to_5");
}

static void check_item(const struct store_item *it)
{
	char want[64];

	snprintf(want, sizeof(want), "item-%llu", (unsigned long long)it->id);
	if (it->token != 1 || it->attempt != 1 || it->max_attempts != 5)
		die("row %llu: token %llu attempt %u max %u, want 1 1 5", (unsigned long long)it->id,
		    (unsigned long long)it->token, it->attempt, it->max_attempts);
	if (strcmp(it->queue, STRESS_QUEUE) != 0)
		die("row %llu: queue \"%s\"", (unsigned long long)it->id, it->queue);
	if (!it->payload || it->payload_len != strlen(want) || strcmp((char *)it->payload, want))
		die("row %llu: payload \"%s\", want \"%s\"", (unsigned long long)it->id,
		    it->payload ? (char *)it->payload : "(null)", want);
}

static void claimer(const struct dsn *d, int idx, unsigned batch, int ready_fd, int go_fd,
		    int out_fd)
{
	struct store_item *items = calloc(batch, sizeof(*items));
	struct store_ref *done = calloc(batch, sizeof(*done));
	char name[64], err[STORE_ERR_MAX], c = 1;
	size_t n, ndone = 0, completed, i;
	unsigned empties = 0;
	struct store *s;
	int r;

	snprintf(name, sizeof(name), "stress/%d:%d", idx, (int)getpid());
	role = name;
	if (!items || !done)
		die("out of memory");
	s = open_store(d, name);
	if (write(ready_fd, &c, 1) != 1 || read(go_fd, &c, 1) != 0)
		die("start barrier broken");
	while (empties < 2) {
		r = store_claim(s, STRESS_QUEUE, batch, LEASE_LONG_MS, done, ndone, items, &n,
				&completed, err, sizeof(err));
		if (r < 0)
			die("store_claim: %d %s", r, err);
		if (completed != ndone)
			die("completed %zu of %zu rows this claimer held", completed, ndone);
		for (i = 0; i < n; i++) {
			check_item(&items[i]);
			done[i].id = items[i].id;
			done[i].token = items[i].token;
			if (write(out_fd, &items[i].id, sizeof(items[i].id)) != sizeof(items[i].id))
				die("write to the id file failed");
		}
		store_items_clear(items, n);
		ndone = n;
		if (n == 0 && ++empties < 2)
			sleep_ms(5);
		else if (n > 0)
			empties = 0;
	}
	store_free(s);
	free(items);
	free(done);
	_exit(0); /* not exit(): the parent's connection and stdio are not ours to flush */
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t *read_ids(FILE **files, unsigned nproc, size_t *ret_n)
{
	size_t n = 0, cap = 1024, got;
	uint64_t *ids = malloc(cap * sizeof(*ids));
	unsigned i;

	for (i = 0; i < nproc && ids; i++) {
		rewind(files[i]);
		for (;;) {
			if (n == cap && !(ids = realloc(ids, (cap *= 2) * sizeof(*ids))))
				break;
			got = fread(ids + n, sizeof(*ids), cap - n, files[i]);
			if (got == 0)
				break;
			n += got;
		}
		fclose(files[i]);
	}
	if (!ids)
		die("out of memory");
	qsort(ids, n, sizeof(*ids), cmp_u64);
	*ret_n = n;
	return ids;
}

/* The ids claimed must be exactly the inserted rows (payload item-<id>), each once. */
static void check_claimed_once(MYSQL *m, const uint64_t *ids, size_t n, unsigned nrows)
{
	MYSQL_RES *res;
	MYSQL_ROW row;
	size_t i;

	for (i = 1; i < n; i++)
		if (ids[i] == ids[i - 1])
			die("row %llu was claimed twice", (unsigned long long)ids[i]);
	sql(m, "SELECT id FROM work_items WHERE payload LIKE 'item-%%' ORDER BY id");
	res = mysql_store_result(m);
	if (!res || mysql_num_rows(res) != nrows)
		die("the table does not hold the %u inserted rows", nrows);
	for (i = 0; (row = mysql_fetch_row(res)); i++) {
		uint64_t want = strtoull(row[0], NULL, 10);

		if (i >= n || ids[i] != want)
			die("row %llu was never claimed (or row %llu was claimed and not inserted)",
			    (unsigned long long)want, i < n ? (unsigned long long)ids[i] : 0ULL);
	}
	mysql_free_result(res);
	if (n != nrows)
		die("%zu distinct rows claimed, want %u", n, nrows);
}

static void check_final_states(MYSQL *m, unsigned nrows)
{
	uint64_t bad;

	bad = sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE payload LIKE 'item-%%' AND NOT "
		      "(state = 'done' AND attempts = 1 AND claim_token = 2 AND visible_at IS NULL "
		      "AND finished_at IS NOT NULL AND claimed_by LIKE 'stress/%%')");
	if (bad)
		die("%llu of %u rows are not done (or have wrong attempts/token/history)",
		    (unsigned long long)bad, nrows);
	bad = sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE payload = 'decoy' AND "
		      "(attempts <> 0 OR claim_token <> 0 OR claimed_by IS NOT NULL)");
	if (bad)
		die("%llu decoy rows (other queue / not due / done) were claimed",
		    (unsigned long long)bad);
}

static void phase_stress(const struct dsn *d, MYSQL *m, unsigned nproc, unsigned nrows,
			 unsigned batch)
{
	int ready[2], go[2], status;
	FILE **files = calloc(nproc, sizeof(*files));
	unsigned i, bad = 0;
	double t0, t;
	uint64_t *ids;
	size_t n;
	char c;

	if (!files || pipe(ready) < 0 || pipe(go) < 0)
		die("setup: %s", strerror(errno));
	fill(m, nrows);
	fflush(NULL);
	for (i = 0; i < nproc; i++) {
		pid_t pid;

		if (!(files[i] = tmpfile()))
			die("tmpfile: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			close(ready[0]);
			close(go[1]);
			claimer(d, (int)i, batch, ready[1], go[0], fileno(files[i]));
		}
	}
	close(ready[1]);
	close(go[0]);
	for (i = 0; i < nproc; i++)
		if (read(ready[0], &c, 1) != 1)
			die("a claimer died before it was ready");
	t0 = now_s();
	close(go[1]);
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	t = now_s() - t0;
	close(ready[0]);
	if (bad)
		die("%u of %u claimers failed", bad, nproc);
	ids = read_ids(files, nproc, &n);
	free(files);
	check_claimed_once(m, ids, n, nrows);
	free(ids);
	check_final_states(m, nrows);
	printf("claim_stress: %u rows, %u claimers, batch %u: %.3f s, %.0f claims/s\n",
	       nrows, nproc, batch, t, nrows / t);
}

/* ---- phase 2: fencing ---- */

static void expect_row(MYSQL *m, uint64_t id, const char *want)
{
	char got[512];

	sql_text(m, got, sizeof(got), "SELECT CONCAT_WS(' ', state, claim_token, attempts, "
		 "IFNULL(claimed_by, '-'), IF(visible_at IS NULL, 'invisible', IF(visible_at <= "
		 "NOW(6), 'visible', 'leased')), IF(finished_at IS NULL, 'open', 'finished')) "
		 "FROM work_items WHERE id = %llu", (unsigned long long)id);
	if (strcmp(got, want) != 0)
		die("row %llu is \"%s\", want \"%s\"", (unsigned long long)id, got, want);
}

static void expect_rc(const char *what, int got, int want, const char *err)
{
	if (got != want)
		die("%s returned %d, want %d (%s)", what, got, want, got < 0 ? err : "");
}

/* A's lease runs out, B claims the row again: nothing A does may touch it any more. */
static void fence_stale_owner(MYSQL *m, struct store *a, struct store *b)
{
	char err[STORE_ERR_MAX];
	struct store_item ia, ib;
	struct store_ref ra, rb;
	size_t n, completed;
	uint64_t id = insert_row(m, "fence", 5, NULL);
	int r;

	ia = claim1(a, "fence", 1);
	if (ia.id != id || ia.token != 1 || ia.attempt != 1 || ia.payload || ia.payload_len)
		die("first claim: id %llu token %llu attempt %u payload %p",
		    (unsigned long long)ia.id, (unsigned long long)ia.token, ia.attempt,
		    (void *)ia.payload);
	sleep_ms(20);
	ib = claim1(b, "fence", LEASE_LONG_MS);
	if (ib.id != id || ib.token != 2 || ib.attempt != 2)
		die("second claim: token %llu attempt %u, want 2 2", (unsigned long long)ib.token,
		    ib.attempt);
	ra = (struct store_ref){ .id = id, .token = ia.token };
	rb = (struct store_ref){ .id = id, .token = ib.token };
	r = store_claim(a, "fence", 0, 0, &ra, 1, NULL, &n, &completed, err, sizeof(err));
	expect_rc("stale complete", r, 0, err);
	if (n != 0 || completed != 0)
		die("stale complete applied %zu rows", completed);
	expect_rc("stale fail", store_fail(a, ra, 0, "stale", err, sizeof(err)), 0, err);
	expect_rc("stale release",
		  store_release(a, &ra, 1, false, NULL, NULL, err, sizeof(err)), 0, err);
	expect_rc("stale release counted", store_release(a, &ra, 1, true, "x", NULL, err, sizeof(err)),
		  0, err);
	expect_rc("stale extend", store_extend(a, &ra, 1, 1, err, sizeof(err)), 0, err);
	expect_row(m, id, "claimed 2 2 fence/B leased open");
	expect_rc("owner extend", store_extend(b, &rb, 1, LEASE_LONG_MS, err, sizeof(err)), 1, err);
	r = store_claim(b, "fence", 0, 0, &rb, 1, NULL, &n, &completed, err, sizeof(err));
	expect_rc("owner complete", r, 0, err);
	if (completed != 1)
		die("owner complete applied %zu rows, want 1", completed);
	expect_row(m, id, "done 3 2 fence/B invisible finished");
	expect_rc("fail of a done row", store_fail(b, rb, 0, "late", err, sizeof(err)), 0, err);
}

/* Many rows fenced in one statement: ids in runs, alone, and far apart (the fence's ELT
 * list, its runs and its CASE). A claims them all on a short lease, B claims some of them
 * again: A's completion of all of them, its refs in reverse order with one given twice,
 * applies to exactly the others, and B's to its own. */
static void fence_many_of(MYSQL *m, struct store *a, struct store *b, const char *queue,
			  unsigned nslots, unsigned gap, bool (*take)(unsigned))
{
	char err[STORE_ERR_MAX], other[64];
	struct store_item ia[64], ib[64];
	struct store_ref ra[65], rb[64];
	size_t na = 0, nb, n, completed;
	unsigned i;
	int r;

	snprintf(other, sizeof(other), "%s-decoy", queue);
	for (i = 0; i < nslots; i++) {
		if (take(i))
			insert_row(m, queue, 5, NULL);
		else
			insert_row(m, other, 5, NULL);
		for (unsigned k = 0; k < gap; k++)
			insert_row(m, other, 5, NULL);
	}
	r = store_claim(a, queue, 64, 1, NULL, 0, ia, &na, &completed, err, sizeof(err));
	expect_rc("many: A claims", r, 0, err);
	sleep_ms(20);
	r = store_claim(b, queue, (unsigned)na / 3, LEASE_LONG_MS, NULL, 0, ib, &nb, &completed,
			err, sizeof(err));
	expect_rc("many: B claims a third again", r, 0, err);
	if (na < 6 || nb != na / 3)
		die("many (%s): A claimed %zu, B %zu", queue, na, nb);
	/* Every other row of A's a result (with a quote and a byte that is no text), which only
	 * the rows A still holds may keep. */
	char res[64][32];
	for (i = 0; i < na; i++) {
		const struct store_item *it = &ia[na - 1 - i];
		ra[i] = (struct store_ref){ .id = it->id, .token = it->token };
		if (i % 2)
			continue;
		snprintf(res[i], sizeof(res[i]), "r-%llu'\xff", (unsigned long long)it->id);
		ra[i].result = (const unsigned char *)res[i];
		ra[i].result_len = strlen(res[i]);
		ra[i].result_type = "text/plain";
	}
	ra[na] = ra[0];
	r = store_claim(a, queue, 0, 0, ra, na + 1, NULL, &n, &completed, err, sizeof(err));
	expect_rc("many: A completes", r, 0, err);
	if (completed != na - nb)
		die("many (%s): A's completion applied %zu rows, want %zu", queue, completed, na - nb);
	for (i = 0; i < nb; i++) {
		rb[i] = (struct store_ref){ .id = ib[i].id, .token = ib[i].token };
		expect_row(m, ib[i].id, "claimed 2 2 fence/B leased open");
	}
	r = store_claim(b, queue, 0, 0, rb, nb, NULL, &n, &completed, err, sizeof(err));
	expect_rc("many: B completes", r, 0, err);
	if (completed != nb)
		die("many (%s): B's completion applied %zu rows, want %zu", queue, completed, nb);
	if (sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = '%s' AND state = 'done'",
		    queue) != na || sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = "
		    "'%s-decoy' AND state <> 'ready'", queue) != 0)
		die("many (%s): not every row done, or a decoy touched", queue);
	if (sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = '%s' AND result IS NOT NULL "
		    "AND (result <> CONCAT('r-', id, '\\'', UNHEX('FF')) OR result_type <> "
		    "'text/plain' OR claimed_by <> 'fence/A')", queue) != 0 ||
	    sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = '%s' AND (result IS NULL) <> "
		    "(result_type IS NULL)", queue) != 0)
		die("many (%s): a result written to the wrong row, or wrong", queue);
	for (i = 0, n = 0; i < na; i++)
		n += ra[i].result && sql_u64(m, "SELECT claimed_by = 'fence/A' FROM work_items WHERE "
					     "id = %llu", (unsigned long long)ra[i].id) == 1;
	if (sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = '%s' AND result IS NOT NULL",
		    queue) != n || n == 0)
		die("many (%s): %zu rows with a result, want %llu", queue, n, (unsigned long long)
		    sql_u64(m, "SELECT COUNT(*) FROM work_items WHERE queue = '%s' AND result IS NOT "
			    "NULL", queue));
	store_items_clear(ia, na);
	store_items_clear(ib, nb);
}

static bool runs_and_alone(unsigned i)
{
	return i < 30 ? i % 5 != 2 : i % 2 == 0;
}

static bool every_one(unsigned i)
{
	(void)i;
	return true;
}

static void fence_many(MYSQL *m, struct store *a, struct store *b)
{
	fence_many_of(m, a, b, "many-elt", 60, 0, runs_and_alone);
	fence_many_of(m, a, b, "many-case", 12, 40, every_one);
}

static void fence_release(MYSQL *m, struct store *a)
{
	char err[STORE_ERR_MAX];
	uint64_t id = insert_row(m, "release", 5, "r");
	struct store_item it = claim1(a, "release", LEASE_LONG_MS);
	struct store_ref ref = { .id = id, .token = it.token };

	store_items_clear(&it, 1);
	expect_rc("release, attempt given back",
		  store_release(a, &ref, 1, false, NULL, NULL, err, sizeof(err)), 1, err);
	expect_row(m, id, "ready 1 0 fence/A visible open");
	it = claim1(a, "release", LEASE_LONG_MS);
	if (it.attempt != 1 || it.token != 2)
		die("claim after release: attempt %u token %llu, want 1 2", it.attempt,
		    (unsigned long long)it.token);
	store_items_clear(&it, 1);
	ref.token = 2;
	/* A gone worker's rows, by its name: the supervisor's release of a claim that worker
	 * locked and never committed leaves the row alone when another worker (here: A) has
	 * claimed it since, with the same token. */
	expect_rc("release by another worker's name",
		  store_release(a, &ref, 1, false, NULL, "fence/B", err, sizeof(err)), 0, err);
	expect_rc("release by another worker's name, counted",
		  store_release(a, &ref, 1, true, "gone", "fence/B", err, sizeof(err)), 0, err);
	expect_row(m, id, "claimed 2 1 fence/A leased open");
	expect_rc("release, attempt counted",
		  store_release(a, &ref, 1, true, "shutdown", "fence/A", err, sizeof(err)), 1, err);
	expect_row(m, id, "ready 3 1 fence/A visible open");
	expect_rc("release again",
		  store_release(a, &ref, 1, true, "x", NULL, err, sizeof(err)), 0, err);

	/* At max_attempts a counted release is the last attempt: dead, reason kept. */
	id = insert_row(m, "release1", 1, "r");
	it = claim1(a, "release1", LEASE_LONG_MS);
	store_items_clear(&it, 1);
	ref = (struct store_ref){ .id = id, .token = it.token };
	expect_rc("release at max", store_release(a, &ref, 1, true, "shutdown", NULL, err, sizeof(err)),
		  1, err);
	expect_row(m, id, "dead 2 1 fence/A invisible finished");
	if (sql_u64(m, "SELECT last_error = 'shutdown' FROM work_items WHERE id = %llu",
		    (unsigned long long)id) != 1)
		die("release at max: last_error is not the reason");
}

static void fence_fail(MYSQL *m, struct store *a)
{
	char err[STORE_ERR_MAX], msg[6000];
	uint64_t id = insert_row(m, "fail", 2, "f");
	struct store_item it = claim1(a, "fail", LEASE_LONG_MS);
	struct store_ref ref = { .id = id, .token = it.token };
	size_t n, completed, i;

	store_items_clear(&it, 1);
	expect_rc("first fail", store_fail(a, ref, 0, "boom 1", err, sizeof(err)), 1, err);
	expect_row(m, id, "ready 2 1 fence/A visible open");
	it = claim1(a, "fail", LEASE_LONG_MS);
	store_items_clear(&it, 1);
	if (it.attempt != 2)
		die("second claim attempt %u, want 2", it.attempt);
	ref.token = it.token;
	/* "a" + 2500 two-byte characters + invalid bytes: cut to 3999 bytes, no half char. */
	n = (size_t)sprintf(msg, "a");
	for (i = 0; i < 2500; i++)
		n += (size_t)sprintf(msg + n, "\xc3\xa9");
	expect_rc("last fail", store_fail(a, ref, 0, msg, err, sizeof(err)), 2, err);
	expect_row(m, id, "dead 4 2 fence/A invisible finished");
	if (sql_u64(m, "SELECT LENGTH(last_error) = 3999 AND CHAR_LENGTH(last_error) = 2000 "
		    "FROM work_items WHERE id = %llu", (unsigned long long)id) != 1)
		die("last_error not cut to 3999 bytes on a character boundary");

	/* Invalid UTF-8 in an error must not make the UPDATE fail; a back-off hides the row. */
	id = insert_row(m, "fail", 5, "f");
	it = claim1(a, "fail", LEASE_LONG_MS);
	store_items_clear(&it, 1);
	ref = (struct store_ref){ .id = id, .token = it.token };
	expect_rc("fail with bad bytes", store_fail(a, ref, 60000, "bad \xff\xfe\xc3 end", err,
						    sizeof(err)), 1, err);
	expect_row(m, id, "ready 2 1 fence/A leased open");
	if (sql_u64(m, "SELECT last_error = 'bad ??? end' FROM work_items WHERE id = %llu",
		    (unsigned long long)id) != 1)
		die("invalid UTF-8 in last_error not replaced by '?'");
	if (store_claim(a, "fail", 1, 1000, NULL, 0, &it, &n, &completed, err, sizeof(err)) < 0 ||
	    n != 0)
		die("a row in its retry back-off was claimed (or error: %s)", err);
	if (store_poll(a, "fail", err, sizeof(err)) != 0)
		die("store_poll sees a row that is not due");
}

/* Failures written together (store_fail_many): each row its own outcome, delay and error;
 * one fenced out (B claimed it again after A's lease ran out) is neither changed nor given
 * an attempt error. */
static void fence_fail_many(MYSQL *m, struct store *a, struct store *b)
{
	static const unsigned max[5] = { 1, 5, 5, 5, 5 };
	static const char *const want[5] = {
		"dead 2 1 fence/A invisible finished", "ready 2 1 fence/A leased open",
		"ready 2 1 fence/A visible open", "claimed 2 2 fence/B leased open",
		"ready 2 1 fence/A visible open",
	};
	static const char *const error[5] = { "e0", "e1 'quoted'", NULL, "stale", "bad \xff end" };
	static const char *const kept[5] = { "e0", "e1 'quoted'", "-", "-", "bad ? end" };
	struct store_failure f[5];
	char err[STORE_ERR_MAX], got[64];
	struct store_item it;
	uint64_t id[5];
	int r;

	for (int i = 0; i < 5; i++)
		id[i] = insert_row(m, "failmany", max[i], "f");
	for (int i = 0; i < 5; i++) {
		it = claim1(a, "failmany", i == 3 ? 1 : LEASE_LONG_MS);
		if (it.id != id[i])
			die("fail many: claimed %llu, want %llu", (unsigned long long)it.id,
			    (unsigned long long)id[i]);
		f[i] = (struct store_failure){ .ref = { .id = it.id, .token = it.token },
					       .retry_ms = i == 1 ? 60000 : 0, .error = error[i] };
		store_items_clear(&it, 1);
	}
	sleep_ms(20);
	it = claim1(b, "failmany", LEASE_LONG_MS);
	if (it.id != id[3])
		die("fail many: B claimed %llu, want %llu", (unsigned long long)it.id,
		    (unsigned long long)id[3]);
	store_items_clear(&it, 1);
	r = store_fail_many(a, f, 5, err, sizeof(err));
	expect_rc("fail many", r, 0, err);
	for (int i = 0; i < 5; i++) {
		if (f[i].result != (i == 0 ? 2 : i == 3 ? 0 : 1))
			die("fail many: row %d's result is %d", i, f[i].result);
		expect_row(m, id[i], want[i]);
		sql_text(m, got, sizeof(got), "SELECT IFNULL(last_error, '-') FROM work_items "
			 "WHERE id = %llu", (unsigned long long)id[i]);
		if (strcmp(got, kept[i]) != 0)
			die("fail many: row %d's last_error is \"%s\", want \"%s\"", i, got, kept[i]);
		if (sql_u64(m, "SELECT COUNT(*) FROM attempt_errors WHERE item_id = %llu",
			    (unsigned long long)id[i]) != (i == 3 ? 0u : 1u))
			die("fail many: row %d has the wrong number of attempt errors", i);
	}
	f[0].ref = f[3].ref;
	expect_rc("fail many, too many", store_fail_many(a, f, STORE_FAIL_MAX + 1, err,
							 sizeof(err)), -EINVAL, err);
}

static void queue_escaping(MYSQL *m, struct store *a)
{
	const char *q = "it's a \\ queue";
	char err[STORE_ERR_MAX];
	uint64_t id = insert_row(m, q, 5, "e");
	struct store_item it;
	struct store_count *c;
	size_t n, i;
	int found = 0;

	if (store_poll(a, q, err, sizeof(err)) != 1)
		die("store_poll misses a due row of a queue with quotes: %s", err);
	it = claim1(a, q, LEASE_LONG_MS);
	if (it.id != id || strcmp(it.queue, q) != 0 || it.payload_len != 1)
		die("claim from a queue with quotes returned the wrong row");
	store_items_clear(&it, 1);
	if (store_counts(a, &c, &n, err, sizeof(err)) < 0)
		die("store_counts: %s", err);
	for (i = 0; i < n; i++)
		if (strcmp(c[i].queue, q) == 0 && strcmp(c[i].state, "claimed") == 0 &&
		    c[i].count == 1)
			found = 1;
	free(c);
	if (!found)
		die("store_counts has no claimed=1 row for the quoted queue");
}

/* Claims up to max rows of queue; the sorted ids into ids[]; returns how many. */
static size_t claim_ids(struct store *s, const char *queue, unsigned max, uint64_t *ids)
{
	char err[STORE_ERR_MAX];
	struct store_item it[8];
	size_t n, completed, i, j;

	if (max > 8 || store_claim(s, queue, max, LEASE_LONG_MS, NULL, 0, it, &n, &completed,
				   err, sizeof(err)) < 0)
		die("store_claim(%s, %u): %s", queue, max, err);
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && ids[j - 1] > it[i].id; j--)
			ids[j] = ids[j - 1];
		ids[j] = it[i].id;
	}
	store_items_clear(it, n);
	return n;
}

static void expect_ids(const char *what, const uint64_t *got, size_t n, uint64_t a, uint64_t b)
{
	size_t want = (a != 0) + (b != 0);

	if (n != want || (want > 0 && got[0] != a) || (want > 1 && got[1] != b))
		die("%s: claimed %zu rows (%llu, %llu), want %zu (%llu, %llu)", what, n,
		    n > 0 ? (unsigned long long)got[0] : 0ULL,
		    n > 1 ? (unsigned long long)got[1] : 0ULL, want,
		    (unsigned long long)a, (unsigned long long)b);
}

/* The store scans on from where its last claim ended; a row that becomes due behind
 * that point must still be claimed: at once when the rows ahead run short, and within a
 * second (the scan from the oldest row) when they do not. */
static void cursor_finds_rows_behind(MYSQL *m, struct store *a)
{
	uint64_t r[8], back, got[8];
	size_t i;

	for (i = 0; i < 3; i++)
		r[i] = insert_row(m, "cursor", 5, "c");
	expect_ids("first claim", got, claim_ids(a, "cursor", 2, got), r[0], r[1]);
	sql(m, "INSERT INTO work_items (queue, run_at) VALUES ('cursor', NOW(6) - INTERVAL 1 HOUR)");
	back = mysql_insert_id(m);
	expect_ids("short tail falls back to the head", got, claim_ids(a, "cursor", 2, got),
		   r[2], back);
	for (i = 3; i < 7; i++)
		r[i] = insert_row(m, "cursor", 5, "c");
	expect_ids("claim ahead", got, claim_ids(a, "cursor", 2, got), r[3], r[4]);
	sql(m, "INSERT INTO work_items (queue, run_at) VALUES ('cursor', NOW(6) - INTERVAL 1 HOUR)");
	back = mysql_insert_id(m);
	expect_ids("full batch ahead", got, claim_ids(a, "cursor", 2, got), r[5], r[6]);
	r[7] = insert_row(m, "cursor", 5, "c");
	sleep_ms(1100);
	expect_ids("periodic scan from the head", got, claim_ids(a, "cursor", 1, got), back, 0);
	expect_ids("and on after it", got, claim_ids(a, "cursor", 2, got), r[7], 0);
}

/* The child's waiting_for and whether it has a visible_at, "2 invisible". */
static void expect_waiting(MYSQL *m, uint64_t child, const char *what, const char *want)
{
	char got[64];

	sql_text(m, got, sizeof(got), "SELECT CONCAT_WS(' ', waiting_for, IF(visible_at IS NULL, "
		 "'invisible', 'visible')) FROM work_items WHERE id = %llu",
		 (unsigned long long)child);
	if (strcmp(got, want) != 0)
		die("%s: the child is \"%s\", want \"%s\"", what, got, want);
}

/* An outcome written a second time, as a worker does when the answer to its first was lost
 * (the connection dropped after the COMMIT went through: it sends the same outcomes with
 * its next claim), changes nothing, and counts the rows that wait for its row off once:
 * done (with a claim), dead (a failure, a counted release); and written again beside a new
 * one in the same transaction (two completions, two failures), only the new one counts. */
static void fence_replay(MYSQL *m, struct store *a)
{
	char err[STORE_ERR_MAX];
	uint64_t p[5], child;
	struct store_ref ref[5];
	struct store_item it;
	size_t n, completed;

	for (int i = 0; i < 5; i++)
		p[i] = insert_row(m, "replay", 1, "p");
	child = insert_row(m, "replay-child", 1, "c");
	for (int i = 0; i < 5; i++)
		sql(m, "INSERT INTO work_deps (parent_id, child_id, on_dead) VALUES (%llu, %llu, "
		    "'run')", (unsigned long long)p[i], (unsigned long long)child);
	expect_waiting(m, child, "five parents", "5 invisible");
	for (int i = 0; i < 5; i++) {
		it = claim1(a, "replay", LEASE_LONG_MS);
		if (!it.has_dependents)
			die("replay: the claim of parent %llu says no row waits for it",
			    (unsigned long long)it.id);
		ref[i] = (struct store_ref){ .id = it.id, .token = it.token, .dependents = true };
		store_items_clear(&it, 1);
	}
	for (int k = 0; k < 2; k++) {
		if (store_claim(a, "replay", 0, LEASE_LONG_MS, &ref[0], 1, &it, &n, &completed, err,
				sizeof(err)) < 0 || completed != (k ? 0u : 1u))
			die("replay: completion %d of row %llu: %zu completed (%s)", k + 1,
			    (unsigned long long)ref[0].id, completed, err);
		expect_waiting(m, child, k ? "a done parent's completion again" :
			       "a done parent", "4 invisible");
	}
	struct store_ref two[2] = { ref[0], ref[3] };
	if (store_claim(a, "replay", 0, LEASE_LONG_MS, two, 2, &it, &n, &completed, err,
			sizeof(err)) < 0 || completed != 1u)
		die("replay: a completion again beside a new one: %zu completed (%s)", completed,
		    err);
	expect_waiting(m, child, "a completion again beside a new one", "3 invisible");
	for (int k = 0; k < 2; k++) {
		expect_rc(k ? "a failure again" : "a last failure",
			  store_fail(a, ref[1], 0, "boom", err, sizeof(err)), k ? 0 : 2, err);
		expect_waiting(m, child, k ? "a dead parent's failure again" :
			       "a dead parent (run edge)", "2 invisible");
	}
	struct store_failure f[2] = { { .ref = ref[1], .error = "boom" },
				      { .ref = ref[4], .error = "boom" } };
	if (store_fail_many(a, f, 2, err, sizeof(err)) < 0 || f[0].result != 0 || f[1].result != 2)
		die("replay: a failure again beside a new one: results %d, %d (%s)", f[0].result,
		    f[1].result, err);
	expect_waiting(m, child, "a failure again beside a new one", "1 invisible");
	for (int k = 0; k < 2; k++) {
		expect_rc(k ? "a counted release again" : "a counted last release",
			  store_release(a, &ref[2], 1, true, "gone", NULL, err, sizeof(err)), k ? 0 : 1,
			  err);
		expect_waiting(m, child, "the last parent dead", "0 visible");
	}
}

static void phase_fence(const struct dsn *d, MYSQL *m)
{
	struct store *a = open_store(d, "fence/A"), *b = open_store(d, "fence/B");

	role = "fence";
	fence_stale_owner(m, a, b);
	fence_many(m, a, b);
	fence_release(m, a);
	fence_fail(m, a);
	fence_fail_many(m, a, b);
	fence_replay(m, a);
	queue_escaping(m, a);
	cursor_finds_rows_behind(m, a);
	store_free(a);
	store_free(b);
	printf("claim_stress: fencing, release, fail, escaping and cursor checks passed\n");
}

/* ---- phase 3: connection loss ---- */

static void phase_connection(const struct dsn *d, MYSQL *m)
{
	uint64_t before = sql_u64(m, "SELECT MAX(ID) FROM information_schema.PROCESSLIST");
	struct store *s = open_store(d, "conn");
	char err[STORE_ERR_MAX];
	struct dsn bad = *d;
	uint64_t victim;
	int r;

	role = "connection";
	/* The store's connection: the one new session of our user on our database. */
	if (sql_u64(m, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID > %llu AND "
		    "ID <> CONNECTION_ID() AND DB = DATABASE() AND USER = SUBSTRING_INDEX(USER(), "
		    "'@', 1)", (unsigned long long)before) != 1)
		die("cannot tell the store's connection from others on the server");
	victim = sql_u64(m, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID > %llu AND "
			 "ID <> CONNECTION_ID() AND DB = DATABASE() AND USER = SUBSTRING_INDEX(USER(), "
			 "'@', 1)", (unsigned long long)before);
	sql(m, "KILL CONNECTION %llu", (unsigned long long)victim);
	r = store_poll(s, "default", err, sizeof(err));
	if (r != -ENOTCONN || store_connected(s) || !strstr(err, "mysql error"))
		die("poll on a killed connection: %d connected=%d \"%s\"", r, store_connected(s), err);
	r = store_claim(s, "default", 1, 1000, NULL, 0, NULL, NULL, NULL, err, sizeof(err));
	if (r != -EINVAL)
		die("store_claim without outputs: %d, want -EINVAL", r);
	expect_rc("extend while disconnected",
		  store_extend(s, &(struct store_ref){ .id = 1, .token = 1 }, 1, 1, err, sizeof(err)), -ENOTCONN, err);
	expect_rc("reconnect", store_connect(s, err, sizeof(err)), 0, err);
	expect_rc("poll after reconnect", store_poll(s, "default", err, sizeof(err)), 0, err);
	store_free(s);

	snprintf(bad.socket, sizeof(bad.socket), "/nonexistent/claimd-test.sock");
	snprintf(bad.hosts[0].host, sizeof(bad.hosts[0].host), "localhost");
	bad.nhosts = 1;
	if (store_new(&bad, "conn", &s) < 0)
		die("store_new failed");
	r = store_connect(s, err, sizeof(err));
	if (r != -ENOTCONN || !strstr(err, "2002"))
		die("connect to a missing socket: %d \"%s\", want -ENOTCONN and error 2002", r, err);
	store_free(s);
	printf("claim_stress: connection loss checks passed\n");
}

static unsigned parse_arg(const char *s, const char *what, unsigned min, unsigned max)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < min || v > max)
		die("%s must be %u..%u, got \"%s\"", what, min, max, s);
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	unsigned nproc, nrows, batch;
	char err[256];
	struct dsn d;
	MYSQL *m;

	if (argc != 5) {
		fprintf(stderr, "usage: claim_stress DSN NPROC NROWS BATCH (empties work_items)\n");
		return 1;
	}
	if (dsn_parse(argv[1], &d, err, sizeof(err)) < 0)
		die("bad DSN: %s", err);
	nproc = parse_arg(argv[2], "NPROC", 1, 256);
	nrows = parse_arg(argv[3], "NROWS", 1, 10000000);
	batch = parse_arg(argv[4], "BATCH", 1, 4096);
	if (store_library_init(false) < 0)
		die("store_library_init failed");
	m = admin_connect(&d);
	phase_stress(&d, m, nproc, nrows, batch);
	phase_fence(&d, m);
	phase_connection(&d, m);
	mysql_close(m);
	store_library_end();
	printf("claim_stress: OK\n");
	return 0;
}
