/* handler_job — what a handler is given for one item and what it gives back: the types that
 * the handler interface (handler.h) and each kind (handler_kind.h) share. */
#ifndef CLAIMD_HANDLER_JOB_H
#define CLAIMD_HANDLER_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "common/child.h"

#define HANDLER_ERR_MAX CHILD_TAIL_MAX
#define HANDLER_RESULT_MAX (64u * 1024)   /* bytes of a result (store's STORE_RESULT_MAX) */
#define HANDLER_PROGRESS_MAX 1024          /* bytes of a progress report (JSON text) */
#define HANDLER_CONCURRENCY_MAX 256        /* items one handler runs at once (scoreboard.h) */
/* A worker's exit code when an in-process handler ran past its kill grace (it marks the items
 * whose deadline was the reason SB_OVERRAN in the scoreboard first). */
#define HANDLER_EXIT_STUCK 70

enum handler_status {
	HANDLER_OK = 0,
	HANDLER_FAILED,       /* non-zero exit, signal, bad reply, or could not start */
	HANDLER_TIMEOUT,      /* ran past timeout_ms and was stopped */
	HANDLER_RELEASED,     /* not run, or stopped for a reason not its own (the worker stops,
			       * its lease may have ended, the co-process it shared was stopped for
			       * another item): it goes back, its attempt given back */
	HANDLER_RETRY_LATER,  /* the handler asked to run it again in retry_in_ms: not a failure */
};

/* Why the worker stops a running item (handler_cancel). */
enum handler_stop {
	HANDLER_STOP_SHUTDOWN,   /* the worker stops and its grace is over: HANDLER_RELEASED */
};

struct handler_result {
	int status;                       /* enum handler_status */
	unsigned retry_in_ms;             /* HANDLER_RETRY_LATER */
	char error[HANDLER_ERR_MAX + 1];  /* what happened + tail of stderr; "" on success */
	/* HANDLER_OK: what the run returned (at most HANDLER_RESULT_MAX bytes), or NULL; the
	 * kind's, valid during the callback. result_type: its content type, a static string. */
	const unsigned char *result;
	size_t result_len;
	const char *result_type;
	/* HANDLER_OK: the jobs the run adds, committed with its outcome (follow-up jobs): job
	 * lines as common/jobset.h reads them (each may name its queue), or NULL; the kind's,
	 * valid during the callback. */
	const char *enqueue;
	size_t enqueue_len;
};

/* One item. The worker fills the first part and owns the memory: it stays valid, and is not
 * changed, from handler_submit until the handler's done hook for it returns. The rest is the
 * kind's, for its queues and the run's result on its way to the loop. */
struct handler_job {
	uint64_t id;
	uint64_t token;             /* the claim's fencing token (for the scoreboard) */
	const char *queue;
	const char *group;          /* group key; NULL when the item has none */
	uint32_t attempt;
	uint32_t max_attempts;
	uint64_t seq;               /* sequence number within the group (0 when unknown) */
	int64_t enqueued_at_ms;     /* row's created_at, unix ms; 0 when unknown */
	const unsigned char *payload;
	size_t payload_len;
	const char *content_type;   /* the payload's type; NULL when the row has none */
	const char *traceparent;    /* its W3C traceparent; NULL when the row has none */
	unsigned timeout_ms;        /* from its start; at least 1 */

	/* ---- the kind's, from submit to done ---- */
	uint64_t kstarted_ns;       /* when it started (uv_hrtime); 0: it has not (or never did) */
	uint64_t kended_ns;         /* when its run ended where it ran (an in-process handler's
	                             * thread), before the loop took it back; 0: when taken */
	int64_t deadline_ms;        /* unix ms, set when it starts */
	struct handler_job *knext;  /* the kind's queues */
	unsigned kslot;             /* the kind's slot (its scoreboard entry) while it runs */
	int kstatus;                /* so: its result, from its thread to the loop */
	unsigned kretry_ms;
	char *kerror;               /* malloc'd */
	unsigned char *kresult;     /* malloc'd */
	size_t kresult_len;
	const char *kresult_type;
	char *kprogress;            /* malloc'd: the latest progress the loop has not taken */
	char *kenqueue;             /* malloc'd: the jobs the run adds, a line each */
	size_t kenqueue_len;
};

/* What the worker hears from its handler, on the loop. */
struct handler_hooks {
	/* job's run ended (or it never started): called once per submitted job, never from inside
	 * handler_submit. After it returns the job is the worker's again. */
	void (*done)(void *data, struct handler_job *job, const struct handler_result *res);
	/* job's progress, as JSON text of len bytes (at most HANDLER_PROGRESS_MAX, valid during
	 * the call); any number of times before done. */
	void (*progress)(void *data, struct handler_job *job, const char *json, size_t len);
	/* handler_ready changed (a pipe: co-process wrote its ready line, or a ready one is
	 * gone); NULL: not told. */
	void (*ready)(void *data);
	/* Something its operator should read (the handler does not log): text, valid during
	 * the call. NULL: dropped. */
	void (*notice)(void *data, const char *text);
	/* A line a pipe: co-process wrote to its stderr (its log), len bytes, valid during the
	 * call; at most ERR_LINES_PER_S a second, then one line that says how many were not
	 * passed on. NULL: dropped (the tail still says why one exited). */
	void (*output)(void *data, const char *line, size_t len);
	void *data;
};

#endif
