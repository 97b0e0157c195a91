#include "worker/handler_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

extern char **environ;

int handler_util_argv(const char *kind, const char *cmd, struct handler_util_argv *ret,
		      char *err, size_t errlen)
{
	struct handler_util_argv a;
	size_t n = 0;
	char *p, *save = NULL;

	memset(&a, 0, sizeof(a));
	a.store = strdup(cmd);
	if (!a.store)
		return -ENOMEM;
	for (p = strtok_r(a.store, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (n == HANDLER_UTIL_MAX_ARGS) {
			snprintf(err, errlen, "--handler: more than %d arguments", HANDLER_UTIL_MAX_ARGS);
			goto fail;
		}
		a.argv[n++] = p;
	}
	if (n == 0 || a.argv[0][0] != '/') {
		snprintf(err, errlen, "--handler: %s: needs an absolute path, got '%s'", kind, cmd);
		goto fail;
	}
	if (access(a.argv[0], X_OK) < 0) {
		snprintf(err, errlen, "--handler: '%s' is not an executable file: %s", a.argv[0],
			 strerror(errno));
		goto fail;
	}
	*ret = a;
	return 0;
fail:
	free(a.store);
	return -EINVAL;
}

void handler_util_argv_free(struct handler_util_argv *a)
{
	if (!a)
		return;
	free(a->store);
	a->store = NULL;
}

static int add_var(struct handler_util_env *e, size_t *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int add_var(struct handler_util_env *e, size_t *k, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	e->own[e->nown++] = s;
	e->vars[(*k)++] = s;
	return 0;
}

static int add_job_vars(struct handler_util_env *e, size_t *k, const struct handler_job *job)
{
	int64_t left = job->deadline_ms - handler_util_now_ms();
	char when[40];
	int r = 0;

	r |= add_var(e, k, "CLAIMD_ITEM_ID=%llu", (unsigned long long)job->id);
	r |= add_var(e, k, "CLAIMD_QUEUE=%s", job->queue);
	r |= add_var(e, k, "CLAIMD_ATTEMPT=%u", job->attempt);
	r |= add_var(e, k, "CLAIMD_MAX_ATTEMPTS=%u", job->max_attempts);
	r |= add_var(e, k, "CLAIMD_DEADLINE_MS=%lld", (long long)(left > 0 ? left : 0));
	r |= add_var(e, k, "CLAIMD_SEQ=%llu", (unsigned long long)job->seq);
	if (job->group)
		r |= add_var(e, k, "CLAIMD_GROUP=%s", job->group);
	if (job->enqueued_at_ms > 0) {
		handler_util_iso_time(job->enqueued_at_ms, when, sizeof(when));
		r |= add_var(e, k, "CLAIMD_ENQUEUED_AT=%s", when);
	}
	if (job->content_type)
		r |= add_var(e, k, "CLAIMD_CONTENT_TYPE=%s", job->content_type);
	if (job->traceparent)
		r |= add_var(e, k, "TRACEPARENT=%s", job->traceparent);
	return r < 0 ? -ENOMEM : 0;
}

int handler_util_env(const struct handler_job *job, int enqueue_fd,
		     struct handler_util_env *ret)
{
	struct handler_util_env e;
	size_t n = 0, k = 0;

	memset(&e, 0, sizeof(e));
	while (environ[n])
		n++;
	e.vars = calloc(n + HANDLER_UTIL_ENV_OWN + 1, sizeof(*e.vars));
	if (!e.vars)
		return -ENOMEM;
	/* Not claimd's own (nor a trace of its own: the item's is the one that counts). */
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "CLAIMD_", 7) != 0 && strncmp(environ[i], "TRACEPARENT=", 12))
			e.vars[k++] = environ[i];
	if ((job && add_job_vars(&e, &k, job) < 0) ||
	    (enqueue_fd >= 0 && add_var(&e, &k, "CLAIMD_ENQUEUE_FD=%d", enqueue_fd) < 0)) {
		handler_util_env_free(&e);
		return -ENOMEM;
	}
	e.vars[k] = NULL;
	*ret = e;
	return 0;
}

void handler_util_env_free(struct handler_util_env *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nown; i++)
		free(e->own[i]);
	free(e->vars);
	memset(e, 0, sizeof(*e));
}

void handler_util_error(struct handler_result *res, const char *what,
			const struct child_tail *t)
{
	int n = snprintf(res->error, sizeof(res->error), "%s", what);

	if (!t || t->len == 0 || n < 0 || (size_t)n >= HANDLER_ERR_MAX - 2)
		return;
	size_t room = HANDLER_ERR_MAX - (size_t)n - 2, len = t->len;
	const char *p = t->buf;
	if (len > room) {
		p += len - room;
		len = room;
	}
	memcpy(res->error + n, ": ", 2);
	memcpy(res->error + n + 2, p, len);
	res->error[n + 2 + len] = '\0';
}

void handler_util_report(const struct handler_hooks *hooks, struct handler_job *job,
			 int status, const char *what)
{
	struct handler_result res;

	memset(&res, 0, sizeof(res));
	res.status = status;
	snprintf(res.error, sizeof(res.error), "%s", what);
	hooks->done(hooks->data, job, &res);
}

int64_t handler_util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void handler_util_iso_time(int64_t ms, char *out, size_t outlen)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char base[24];

	gmtime_r(&secs, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outlen, "%s.%03dZ", base, (int)(ms % 1000));
}

bool handler_util_lease_lapsed(const uint64_t *lease_ok_ns)
{
	return lease_ok_ns && uv_hrtime() >= __atomic_load_n(lease_ok_ns, __ATOMIC_ACQUIRE);
}

void handler_util_slots_init(struct handler_util_slots *s, unsigned n)
{
	memset(s, 0, sizeof(*s));
	s->n = n > HANDLER_CONCURRENCY_MAX ? HANDLER_CONCURRENCY_MAX : n;
}

int handler_util_slot_take(struct handler_util_slots *s)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (!(s->used[i / 64] & (1ull << (i % 64)))) {
			s->used[i / 64] |= 1ull << (i % 64);
			s->nused++;
			return (int)i;
		}
	}
	return -1;
}

void handler_util_slot_put(struct handler_util_slots *s, unsigned i)
{
	if (i < s->n && (s->used[i / 64] & (1ull << (i % 64)))) {
		s->used[i / 64] &= ~(1ull << (i % 64));
		s->nused--;
	}
}

void handler_util_queue_push(struct handler_util_queue *q, struct handler_job *job)
{
	job->knext = NULL;
	if (q->tail)
		q->tail->knext = job;
	else
		q->head = job;
	q->tail = job;
	q->n++;
}

struct handler_job *handler_util_queue_pop(struct handler_util_queue *q)
{
	struct handler_job *job = q->head;

	if (!job)
		return NULL;
	q->head = job->knext;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	job->knext = NULL;
	return job;
}

bool handler_util_queue_remove(struct handler_util_queue *q, struct handler_job *job)
{
	struct handler_job **pp = &q->head, *prev = NULL;

	while (*pp && *pp != job) {
		prev = *pp;
		pp = &(*pp)->knext;
	}
	if (!*pp)
		return false;
	*pp = job->knext;
	if (q->tail == job)
		q->tail = prev;
	job->knext = NULL;
	q->n--;
	return true;
}

size_t handler_util_queue_withdraw(struct handler_util_queue *q, struct handler_job **out,
				   size_t max)
{
	size_t k = max < q->n ? max : q->n, keep = q->n - k;
	struct handler_job *last = NULL, *job = q->head;

	for (size_t i = 0; i < keep; i++) {
		last = job;
		job = job->knext;
	}
	/* job..tail are the k newest: out gets them from the end. */
	for (size_t i = 0; i < k; i++) {
		struct handler_job *next = job->knext;
		job->knext = NULL;
		out[k - 1 - i] = job;
		job = next;
	}
	if (last)
		last->knext = NULL;
	else
		q->head = NULL;
	q->tail = last;
	q->n = keep;
	return k;
}
