/* claim_probe — the bare-SQL baseline for tools/bench: the store's claim and complete
 * statements with no supervisor, no IPC and no handler.
 *
 *   claim_probe DSN NPROC BATCH
 *       Forks NPROC claimers, each with its own store (connection). Each loops
 *       store_claim(queue "default", BATCH, lease 30 s, done = its previous batch) exactly as
 *       a claimd worker with the noop handler does, until a claim comes back empty (that call
 *       also completes the last batch). The claimers start together, after all connected.
 *       Prints one JSON object: {"mode":"throughput","nproc":..,"batch":..,"rows":..,
 *       "claims":..,"seconds":..,"rows_per_s":..}; seconds is wall time from the start signal
 *       to the exit of the last claimer.
 *
 *   claim_probe latency DSN BATCH NCLAIMS
 *       One store; WARMUP_CLAIMS untimed claims, then NCLAIMS timed store_claim calls of
 *       BATCH rows, each completing the previous batch; then one untimed call completes the
 *       last. Prints {"mode":"latency","batch":..,"claims":..,"warmup":..,"p50_us":..,
 *       "p90_us":..,"p99_us":..,"mean_us":..,"min_us":..,"max_us":..}. Fails if the queue
 *       runs dry before NCLAIMS claims were timed.
 *
 * The rows it claims end 'done', as with claimd. Errors go to stderr as one line
 * "claim_probe: ..."; exit status 0 on success, 1 on a failure, 2 on bad usage.
 */
#include "common/dsn.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_QUEUE "default"
#define PROBE_LEASE_MS 30000u
#define PROBE_MAX_NPROC 256u
#define PROBE_MAX_BATCH 1024u
#define PROBE_MAX_CLAIMS 10000000u
#define WARMUP_CLAIMS 50u
#define READY_TIMEOUT_MS 30000

/* One claimer: its connection and the batch it holds. */
struct claimer {
	struct store *store;
	struct store_item items[PROBE_MAX_BATCH];
	struct store_ref done[PROBE_MAX_BATCH];
	size_t ndone;
	unsigned batch;
	uint64_t rows, claims;
};

static void usage(FILE *f)
{
	fputs("usage: claim_probe DSN NPROC BATCH\n"
	      "       claim_probe latency DSN BATCH NCLAIMS\n", f);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "123" in [1, max] -> *ret. Returns 0 or -EINVAL. */
static int parse_count(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

/* A store connected to dsn, named "probe/<role>:<pid>" in claimed_by. */
static int claimer_open(struct claimer *c, const struct dsn *dsn, const char *role,
			unsigned batch)
{
	char name[128], err[STORE_ERR_MAX] = "";
	int r;

	memset(c, 0, sizeof(*c));
	c->batch = batch;
	snprintf(name, sizeof(name), "probe/%s:%d", role, (int)getpid());
	r = store_new(dsn, name, &c->store);
	if (r < 0) {
		fprintf(stderr, "claim_probe: out of memory\n");
		return r;
	}
	r = store_connect(c->store, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "claim_probe: %s\n", err);
	return r;
}

static void claimer_close(struct claimer *c)
{
	store_free(c->store);
	c->store = NULL;
}

/* One store_claim of up to max rows that completes the previous batch; the rows claimed
 * become the next call's done list. Returns the number of rows claimed, or -errno. */
static int claimer_step(struct claimer *c, unsigned max)
{
	char err[STORE_ERR_MAX] = "";
	size_t n = 0, completed = 0, i;
	int r;

	r = store_claim(c->store, PROBE_QUEUE, max, PROBE_LEASE_MS, c->done, c->ndone, c->items,
			&n, &completed, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "claim_probe: %s\n", err);
		return r;
	}
	if (completed != c->ndone) {
		fprintf(stderr, "claim_probe: %zu of %zu completions were fenced out\n",
			c->ndone - completed, c->ndone);
		return -EIO;
	}
	for (i = 0; i < n; i++)
		c->done[i] = (struct store_ref){ .id = c->items[i].id, .token = c->items[i].token };
	store_items_clear(c->items, n);
	c->ndone = n;
	c->rows += n;
	c->claims++;
	return (int)n;
}

/* ---- throughput ---- */

/* Claims until the queue is empty; the last (empty) claim completes the last batch. */
static int drain(struct claimer *c)
{
	int r;

	do
		r = claimer_step(c, c->batch);
	while (r > 0);
	return r;
}

/* The child: connect, say so (one byte on ready_fd: 'r' connected, 'x' failed), wait for the
 * start signal (one byte on go_fd; EOF means give up), drain the queue, write "rows claims\n" to result_fd. Never
 * returns. */
static void child_main(const struct dsn *dsn, unsigned idx, unsigned batch, int ready_fd,
		       int go_fd, int result_fd)
{
	struct claimer c;
	char role[32], line[64], b;
	int r, len;

	snprintf(role, sizeof(role), "c%u", idx);
	r = claimer_open(&c, dsn, role, batch);
	if (write(ready_fd, r < 0 ? "x" : "r", 1) != 1 || r < 0)
		_exit(1);
	while ((r = (int)read(go_fd, &b, 1)) < 0 && errno == EINTR)
		;
	if (r != 1) /* EOF: the parent gave up */
		_exit(1);
	r = drain(&c);
	claimer_close(&c);
	if (r < 0)
		_exit(1);
	len = snprintf(line, sizeof(line), "%llu %llu\n", (unsigned long long)c.rows,
		       (unsigned long long)c.claims);
	/* One write of less than PIPE_BUF bytes: the children's lines never interleave. */
	_exit(write(result_fd, line, (size_t)len) == len ? 0 : 1);
}

/* Waits for every child; returns 0 if all exited 0, else -EIO. */
static int reap(const pid_t *pids, unsigned n)
{
	int status, r = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			r = -EIO;
	}
	return r;
}

/* Sums the children's "rows claims" lines. */
static int read_results(int fd, uint64_t *ret_rows, uint64_t *ret_claims)
{
	unsigned long long rows = 0, claims = 0, a, b;
	FILE *f = fdopen(fd, "r");

	if (!f) {
		close(fd);
		return -EIO;
	}
	while (fscanf(f, "%llu %llu", &a, &b) == 2) {
		rows += a;
		claims += b;
	}
	fclose(f);
	*ret_rows = rows;
	*ret_claims = claims;
	return 0;
}

/* Forks nproc children; fills pids[]. The children inherit the three pipes. */
static int spawn(const struct dsn *dsn, unsigned nproc, unsigned batch, const int ready[2],
		 const int go[2], const int result[2], pid_t *pids)
{
	unsigned i;

	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			fprintf(stderr, "claim_probe: fork: %s\n", strerror(errno));
			return -errno;
		}
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			close(result[0]);
			child_main(dsn, i, batch, ready[1], go[0], result[1]);
		}
	}
	return 0;
}

/* Waits for nproc 'r' bytes; fails on an 'x' (a child could not connect) or when nothing
 * came for READY_TIMEOUT_MS (a child died before it said anything). */
static int wait_ready(int fd, unsigned nproc)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	unsigned got = 0;
	char buf[PROBE_MAX_NPROC];
	ssize_t n;

	while (got < nproc) {
		if (poll(&pfd, 1, READY_TIMEOUT_MS) == 0)
			return -ETIMEDOUT;
		n = read(fd, buf, nproc - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || memchr(buf, 'x', (size_t)n))
			return -EIO;
		got += (unsigned)n;
	}
	return 0;
}

/* The start signal: one byte per child, in one write (fewer than PIPE_BUF bytes). */
static int start_all(int fd, unsigned nproc)
{
	char buf[PROBE_MAX_NPROC];

	memset(buf, 'g', nproc);
	return write(fd, buf, nproc) == (ssize_t)nproc ? 0 : -EIO;
}

static int run_throughput(const struct dsn *dsn, unsigned nproc, unsigned batch)
{
	int ready[2] = { -1, -1 }, go[2] = { -1, -1 }, result[2] = { -1, -1 }, r;
	pid_t pids[PROBE_MAX_NPROC] = { 0 };
	uint64_t rows = 0, claims = 0;
	double t0, t1;

	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(result, O_CLOEXEC) < 0) {
		r = -errno;
		fprintf(stderr, "claim_probe: pipe: %s\n", strerror(errno));
		goto fail;
	}
	r = spawn(dsn, nproc, batch, ready, go, result, pids);
	close(ready[1]);
	close(go[0]);
	close(result[1]);
	ready[1] = go[0] = result[1] = -1;
	if (r == 0 && wait_ready(ready[0], nproc) < 0) {
		fprintf(stderr, "claim_probe: a claimer could not connect\n");
		r = -EIO;
	}
	t0 = now_s();
	if (r == 0 && start_all(go[1], nproc) < 0) {
		fprintf(stderr, "claim_probe: write: %s\n", strerror(errno));
		r = -EIO;
	}
	close(go[1]); /* EOF: children not started give up */
	go[1] = -1;
	if (reap(pids, nproc) < 0 && r == 0) {
		fprintf(stderr, "claim_probe: a claimer failed\n");
		r = -EIO;
	}
	t1 = now_s();
	if (r < 0)
		goto fail;
	r = read_results(result[0], &rows, &claims);
	result[0] = -1;
	if (r < 0)
		goto fail;
	printf("{\"mode\":\"throughput\",\"nproc\":%u,\"batch\":%u,\"rows\":%llu,\"claims\":%llu,"
	       "\"seconds\":%.6f,\"rows_per_s\":%.1f}\n", nproc, batch, (unsigned long long)rows,
	       (unsigned long long)claims, t1 - t0, t1 > t0 ? (double)rows / (t1 - t0) : 0.0);
	close(ready[0]);
	return 0;
fail:
	for (int *fd = ready; fd != ready + 2; fd++)
		if (*fd >= 0)
			close(*fd);
	if (go[1] >= 0)
		close(go[1]);
	if (result[0] >= 0)
		close(result[0]);
	return r;
}

/* ---- latency ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

	return v[rank < 1 ? 0 : rank > n ? n - 1 : rank - 1];
}

static void print_latency(unsigned batch, double *us, size_t n)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += us[i];
	qsort(us, n, sizeof(*us), cmp_double);
	printf("{\"mode\":\"latency\",\"batch\":%u,\"claims\":%zu,\"warmup\":%u,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f,"
	       "\"min_us\":%.1f,\"max_us\":%.1f}\n", batch, n, WARMUP_CLAIMS,
	       percentile(us, n, 50), percentile(us, n, 90), percentile(us, n, 99), sum / (double)n,
	       us[0], us[n - 1]);
}

/* NCLAIMS timed claims into us[]; each must return at least one row. */
static int time_claims(struct claimer *c, double *us, unsigned nclaims)
{
	double t;
	unsigned i;
	int r;

	for (i = 0; i < WARMUP_CLAIMS + nclaims; i++) {
		t = now_s();
		r = claimer_step(c, c->batch);
		if (r < 0)
			return r;
		if (r == 0) {
			fprintf(stderr, "claim_probe: the queue ran dry after %u claims; load more rows\n", i);
			return -ENODATA;
		}
		if (i >= WARMUP_CLAIMS)
			us[i - WARMUP_CLAIMS] = (now_s() - t) * 1e6;
	}
	return 0;
}

static int run_latency(const struct dsn *dsn, unsigned batch, unsigned nclaims)
{
	double *us = calloc(nclaims, sizeof(*us));
	struct claimer c;
	int r;

	if (!us) {
		fprintf(stderr, "claim_probe: out of memory\n");
		return -ENOMEM;
	}
	r = claimer_open(&c, dsn, "latency", batch);
	if (r < 0)
		goto fail;
	r = time_claims(&c, us, nclaims);
	if (r < 0)
		goto fail;
	r = claimer_step(&c, 0); /* completes the last batch */
	if (r < 0)
		goto fail;
	print_latency(batch, us, nclaims);
fail:
	claimer_close(&c);
	free(us);
	return r;
}

/* ---- main ---- */

static int parse_dsn(const char *s, struct dsn *ret)
{
	char err[256];

	if (dsn_parse(s, ret, err, sizeof(err)) < 0) {
		fprintf(stderr, "claim_probe: bad DSN: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bool latency = argc > 1 && strcmp(argv[1], "latency") == 0;
	unsigned a, b;
	struct dsn dsn;
	int r;

	if (argc != 4 + latency || parse_count(argv[2 + latency], latency ? PROBE_MAX_BATCH :
					       PROBE_MAX_NPROC, &a) < 0 ||
	    parse_count(argv[3 + latency], latency ? PROBE_MAX_CLAIMS : PROBE_MAX_BATCH, &b) < 0) {
		usage(stderr);
		return 2;
	}
	if (parse_dsn(argv[1 + latency], &dsn) < 0)
		return 2;
	if (store_library_init(false) < 0) {
		fprintf(stderr, "claim_probe: cannot initialise the MySQL client library\n");
		return 1;
	}
	r = latency ? run_latency(&dsn, a, b) : run_throughput(&dsn, a, b);
	fflush(stdout);
	store_library_end();
	return r < 0 ? 1 : 0;
}
