/* handler_util — what the handler kinds share: command lines, child environments, error
 * texts, clocks. Used by handler*.c only. Does not log. */
#ifndef CLAIMD_HANDLER_UTIL_H
#define CLAIMD_HANDLER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/child.h"
#include "worker/handler_job.h"

#define HANDLER_UTIL_MAX_ARGS 64
#define HANDLER_UTIL_ENV_OWN 12

/* A command split on spaces and tabs (no shell, no quoting). */
struct handler_util_argv {
	char *store;
	char *argv[HANDLER_UTIL_MAX_ARGS + 1];
};

/* Split cmd; argv[0] must be an absolute path to an executable file. kind ("exec", "pipe")
 * names the handler in messages. Returns 0, -EINVAL with a message in err, or -ENOMEM. */
int handler_util_argv(const char *kind, const char *cmd, struct handler_util_argv *ret,
		      char *err, size_t errlen);
void handler_util_argv_free(struct handler_util_argv *a);

/* The environment for a child: this process's, without any CLAIMD_* variable (the database
 * password among them), plus, with job, CLAIMD_ITEM_ID, CLAIMD_QUEUE, CLAIMD_ATTEMPT,
 * CLAIMD_MAX_ATTEMPTS, CLAIMD_DEADLINE_MS (ms left), CLAIMD_SEQ, CLAIMD_GROUP (when the item
 * has one), CLAIMD_ENQUEUED_AT (ISO 8601 UTC, when known) and CLAIMD_CONTENT_TYPE (when
 * the row has one), and with enqueue_fd >= 0 CLAIMD_ENQUEUE_FD (the descriptor the child
 * writes the jobs its run adds to: exec:'s). */
struct handler_util_env {
	char **vars;
	char *own[HANDLER_UTIL_ENV_OWN];
	size_t nown;
};

/* Returns 0 or -ENOMEM (nothing to free then). */
int handler_util_env(const struct handler_job *job, int enqueue_fd,
		     struct handler_util_env *ret);
void handler_util_env_free(struct handler_util_env *e);

/* res->error = "what" or "what: <tail of the child's stderr>" (t may be NULL), cut to fit. */
void handler_util_error(struct handler_result *res, const char *what,
			const struct child_tail *t);

/* Call hooks->done for job with status and what as its error (a job that did not run, or a
 * run whose outcome is only a status and a text). */
void handler_util_report(const struct handler_hooks *hooks, struct handler_job *job,
			 int status, const char *what);

/* Whether the leases of the items held may have ended: lease_ok_ns (handler_opts) has passed;
 * false when it is NULL. Any thread. */
bool handler_util_lease_lapsed(const uint64_t *lease_ok_ns);

/* Which of a kind's slots (scoreboard entries 0..n-1) are free. */
struct handler_util_slots {
	uint64_t used[(HANDLER_CONCURRENCY_MAX + 63) / 64];
	unsigned n, nused;
};

void handler_util_slots_init(struct handler_util_slots *s, unsigned n);
/* A free slot, now used; -1 when all are. */
int handler_util_slot_take(struct handler_util_slots *s);
void handler_util_slot_put(struct handler_util_slots *s, unsigned i);

/* A kind's queue of jobs not started yet, oldest first (linked through job->knext). */
struct handler_util_queue {
	struct handler_job *head, *tail;
	size_t n;
};

void handler_util_queue_push(struct handler_util_queue *q, struct handler_job *job);
/* The oldest job, taken out; NULL when empty. */
struct handler_job *handler_util_queue_pop(struct handler_util_queue *q);
/* Take job out of q if it is there. Returns whether it was. */
bool handler_util_queue_remove(struct handler_util_queue *q, struct handler_job *job);
/* Take out the newest jobs, up to max, into out newest first (handler_withdraw). Returns how
 * many. */
size_t handler_util_queue_withdraw(struct handler_util_queue *q, struct handler_job **out,
				   size_t max);

/* Wall clock, unix ms. */
int64_t handler_util_now_ms(void);

/* "2026-11-21T05:01:18.123Z" for unix ms into out (at least 32 bytes). */
void handler_util_iso_time(int64_t ms, char *out, size_t outlen);

#endif
