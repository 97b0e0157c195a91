#include "handler.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"

extern char **environ;

#define HANDLER_MAX_ARGS 64
#define HANDLER_STDERR_SETTLE_MS 200

enum kind { KIND_NOOP, KIND_EXEC };

/* One running process. Lives until all of its handles are closed, which may be after the
 * result went to the worker. */
struct run {
	struct handler *h;
	pid_t pid;
	uv_pipe_t in, err;
	uv_timer_t timer;
	uv_write_t wreq;
	unsigned char *payload;
	int open_handles;
	bool exited, err_eof, timed_out, cancelled, term_sent, reported;
	int status;
	size_t tail_len;
	char tail[HANDLER_ERR_MAX];
};

struct handler {
	uv_loop_t *loop;
	enum kind kind;
	unsigned kill_grace_ms;
	char *argv_store;
	char *argv[HANDLER_MAX_ARGS + 1];
	uv_signal_t sigchld;
	bool sigchld_started;
	struct run *run;
	handler_cb cb;
	void *cb_data;
};

static int parse_exec(struct handler *h, const char *cmd, char *err, size_t errlen)
{
	size_t n = 0;
	char *p;

	h->argv_store = strdup(cmd);
	if (!h->argv_store)
		return -ENOMEM;
	for (p = strtok(h->argv_store, " \t"); p; p = strtok(NULL, " \t")) {
		if (n == HANDLER_MAX_ARGS) {
			snprintf(err, errlen, "--handler: more than %d arguments", HANDLER_MAX_ARGS);
			return -EINVAL;
		}
		h->argv[n++] = p;
	}
	h->argv[n] = NULL;
	if (n == 0 || h->argv[0][0] != '/') {
		snprintf(err, errlen, "--handler: exec: needs an absolute path, got '%s'", cmd);
		return -EINVAL;
	}
	if (access(h->argv[0], X_OK) < 0) {
		snprintf(err, errlen, "--handler: '%s' is not an executable file: %s", h->argv[0],
			 strerror(errno));
		return -EINVAL;
	}
	return 0;
}

static void on_sigchld(uv_signal_t *s, int signum);

int handler_new(uv_loop_t *loop, const char *spec, unsigned kill_grace_ms,
		struct handler **ret, char *err, size_t errlen)
{
	struct handler *h = calloc(1, sizeof(*h));
	int r = -ENOMEM;

	if (!h)
		goto fail;
	h->loop = loop;
	h->kill_grace_ms = kill_grace_ms;
	if (!strcmp(spec, "noop")) {
		h->kind = KIND_NOOP;
	} else if (!strncmp(spec, "exec:", 5)) {
		h->kind = KIND_EXEC;
		r = parse_exec(h, spec + 5, err, errlen);
		if (r < 0)
			goto fail;
		r = uv_signal_init(loop, &h->sigchld);
		if (r < 0)
			goto fail;
		h->sigchld.data = h;
		h->sigchld_started = true;
		r = uv_signal_start(&h->sigchld, on_sigchld, SIGCHLD);
		if (r < 0)
			goto fail;
	} else {
		snprintf(err, errlen, "--handler: unknown kind '%s'", spec);
		r = -EINVAL;
		goto fail;
	}
	*ret = h;
	return 0;
fail:
	if (r == -ENOMEM && err && !*err)
		snprintf(err, errlen, "out of memory");
	handler_free(h);
	return r;
}

static void on_signal_closed(uv_handle_t *hd)
{
	struct handler *h = hd->data;

	free(h->argv_store);
	free(h);
}

void handler_free(struct handler *h)
{
	if (!h)
		return;
	if (h->run) {
		proc_kill_group(h->run->pid, SIGKILL);
		h->run->h = NULL;
		h->run = NULL;
	}
	if (h->sigchld_started) {
		uv_close((uv_handle_t *)&h->sigchld, on_signal_closed);
		return;
	}
	free(h->argv_store);
	free(h);
}

bool handler_inline(const struct handler *h)
{
	return h->kind == KIND_NOOP;
}

pid_t handler_pid(const struct handler *h)
{
	return h->run ? h->run->pid : 0;
}

/* ---- one exec run ---- */

static void on_run_handle_closed(uv_handle_t *hd)
{
	struct run *run = hd->data;

	if (--run->open_handles == 0) {
		free(run->payload);
		free(run);
	}
}

static void run_close(struct run *run)
{
	uv_handle_t *hs[] = { (uv_handle_t *)&run->in, (uv_handle_t *)&run->err,
			      (uv_handle_t *)&run->timer };

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (!uv_is_closing(hs[i]))
			uv_close(hs[i], on_run_handle_closed);
}

static void tail_append(struct run *run, const char *p, size_t n)
{
	if (n >= sizeof(run->tail)) {
		p += n - sizeof(run->tail);
		n = sizeof(run->tail);
	}
	if (run->tail_len + n > sizeof(run->tail)) {
		size_t drop = run->tail_len + n - sizeof(run->tail);
		memmove(run->tail, run->tail + drop, run->tail_len - drop);
		run->tail_len -= drop;
	}
	memcpy(run->tail + run->tail_len, p, n);
	run->tail_len += n;
}

static void build_result(struct run *run, struct handler_result *res)
{
	char what[128];
	int n;

	memset(res, 0, sizeof(*res));
	if (run->cancelled) {
		res->status = HANDLER_CANCELLED;
		snprintf(what, sizeof(what), "cancelled (shutdown)");
	} else if (run->timed_out) {
		res->status = HANDLER_TIMEOUT;
		snprintf(what, sizeof(what), "timed out, killed");
	} else if (WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0) {
		res->status = HANDLER_OK;
		return;
	} else {
		res->status = HANDLER_FAILED;
		proc_describe_status(run->status, what, sizeof(what));
	}
	n = snprintf(res->error, sizeof(res->error), "%s", what);
	if (run->tail_len > 0 && n >= 0 && (size_t)n < HANDLER_ERR_MAX - 2) {
		size_t room = HANDLER_ERR_MAX - (size_t)n - 2, len = run->tail_len;
		const char *t = run->tail;
		if (len > room) {
			t += len - room;
			len = room;
		}
		memcpy(res->error + n, ": ", 2);
		memcpy(res->error + n + 2, t, len);
		res->error[n + 2 + len] = '\0';
	}
}

static void run_report(struct run *run)
{
	struct handler *h = run->h;
	struct handler_result res;

	if (run->reported)
		return;
	run->reported = true;
	run_close(run);
	if (!h)
		return;
	h->run = NULL;
	build_result(run, &res);
	h->cb(h->cb_data, &res);
}

static void on_settle(uv_timer_t *t)
{
	run_report(t->data);
}

static void on_kill_timer(uv_timer_t *t)
{
	struct run *run = t->data;

	if (run->exited)
		return;
	if (!run->term_sent) {
		run->term_sent = true;
		proc_kill_group(run->pid, SIGTERM);
		uv_timer_start(&run->timer, on_kill_timer, run->h ? run->h->kill_grace_ms : 1000, 0);
		return;
	}
	proc_kill_group(run->pid, SIGKILL);
}

static void on_timeout(uv_timer_t *t)
{
	struct run *run = t->data;

	run->timed_out = true;
	on_kill_timer(t);
}

static void on_err_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
	static char scratch[4096];

	*buf = uv_buf_init(scratch, sizeof(scratch));
}

static void on_err_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct run *run = s->data;

	if (nread > 0) {
		tail_append(run, buf->base, (size_t)nread);
		return;
	}
	if (nread == 0)
		return;
	run->err_eof = true;
	uv_read_stop(s);
	if (run->exited)
		run_report(run);
}

static void on_exited(struct run *run, int status)
{
	run->exited = true;
	run->status = status;
	/* Handles are reused for the settle wait: give stderr a moment to drain. */
	if (run->err_eof) {
		run_report(run);
		return;
	}
	uv_timer_stop(&run->timer);
	uv_timer_start(&run->timer, on_settle, HANDLER_STDERR_SETTLE_MS, 0);
}

static void on_sigchld(uv_signal_t *s, int signum)
{
	struct handler *h = s->data;
	int status;

	if (h->run && !h->run->exited && proc_reap(h->run->pid, &status) == 1)
		on_exited(h->run, status);
}

static void on_stdin_written(uv_write_t *req, int status)
{
	struct run *run = req->data;

	/* A handler that does not read its stdin is its own business: EPIPE is fine. */
	if (!uv_is_closing((uv_handle_t *)&run->in))
		uv_close((uv_handle_t *)&run->in, on_run_handle_closed);
}

static char **build_env(const struct handler_job *job)
{
	size_t n = 0, i = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 6, sizeof(*env));
	if (!env)
		return NULL;
	for (; i < n; i++) {
		if (strncmp(environ[i], "CLAIMD_", 7) == 0)
			continue;
		env[i] = environ[i];
	}
	/* Compact out the skipped entries. */
	size_t k = 0;
	for (i = 0; i < n; i++)
		if (env[i])
			env[k++] = env[i];
	if (asprintf(&env[k++], "CLAIMD_ITEM_ID=%llu", (unsigned long long)job->id) < 0 ||
	    asprintf(&env[k++], "CLAIMD_QUEUE=%s", job->queue) < 0 ||
	    asprintf(&env[k++], "CLAIMD_ATTEMPT=%u", job->attempt) < 0 ||
	    asprintf(&env[k++], "CLAIMD_MAX_ATTEMPTS=%u", job->max_attempts) < 0 ||
	    asprintf(&env[k++], "CLAIMD_DEADLINE_MS=%u", job->timeout_ms) < 0) {
		free(env);
		return NULL;
	}
	env[k] = NULL;
	return env;
}

static void free_env(char **env)
{
	size_t n = 0;

	if (!env)
		return;
	while (env[n])
		n++;
	/* The last five entries are ours. */
	for (size_t i = n >= 5 ? n - 5 : 0; i < n; i++)
		free(env[i]);
	free(env);
}

static int run_start_io(struct run *run, const struct proc_child *child, size_t len)
{
	uv_loop_t *loop = run->h->loop;
	uv_buf_t b;
	int r;

	uv_pipe_init(loop, &run->in, 0);
	uv_pipe_init(loop, &run->err, 0);
	uv_timer_init(loop, &run->timer);
	run->in.data = run->err.data = run->timer.data = run->wreq.data = run;
	run->open_handles = 3;
	r = uv_pipe_open(&run->in, child->stdin_fd);
	if (r == 0)
		r = uv_pipe_open(&run->err, child->stderr_fd);
	if (r == 0)
		r = uv_read_start((uv_stream_t *)&run->err, on_err_alloc, on_err_read);
	if (r < 0)
		return r;
	b = uv_buf_init((char *)(run->payload ? run->payload : (unsigned char *)""), (unsigned)len);
	r = uv_write(&run->wreq, (uv_stream_t *)&run->in, &b, 1, on_stdin_written);
	if (r < 0)
		uv_close((uv_handle_t *)&run->in, on_run_handle_closed);
	return 0;
}

static int run_exec(struct handler *h, const struct handler_job *job)
{
	struct proc_child child;
	struct run *run;
	char **env;
	int r;

	run = calloc(1, sizeof(*run));
	env = build_env(job);
	if (!run || !env || (job->payload_len && !(run->payload = malloc(job->payload_len)))) {
		free(run);
		free_env(env);
		return -ENOMEM;
	}
	if (job->payload_len)
		memcpy(run->payload, job->payload, job->payload_len);
	r = proc_spawn(h->argv, env, &child);
	free_env(env);
	if (r < 0) {
		free(run->payload);
		free(run);
		return r;
	}
	run->h = h;
	run->pid = child.pid;
	h->run = run;
	r = run_start_io(run, &child, job->payload_len);
	if (r < 0) {
		/* The process runs without its pipes: kill it, the result reports the failure. */
		proc_kill_group(run->pid, SIGKILL);
		return 0;
	}
	uv_timer_start(&run->timer, on_timeout, job->timeout_ms ? job->timeout_ms : 1, 0);
	return 0;
}

int handler_run(struct handler *h, const struct handler_job *job, handler_cb cb, void *data)
{
	struct handler_result res;

	if (h->run)
		return -EBUSY;
	h->cb = cb;
	h->cb_data = data;
	if (h->kind == KIND_NOOP) {
		memset(&res, 0, sizeof(res));
		res.status = HANDLER_OK;
		cb(data, &res);
		return 0;
	}
	return run_exec(h, job);
}

void handler_cancel(struct handler *h)
{
	struct run *run = h->run;

	if (!run || run->exited || run->cancelled)
		return;
	run->cancelled = true;
	uv_timer_stop(&run->timer);
	on_kill_timer(&run->timer);
}
