/* claimd/handler.h — the interface of an in-process claimd handler plugin (--handler so:PATH).
 *
 * A plugin is a shared library that exports
 *
 *     const struct claimd_plugin *claimd_plugin_v3(void);
 *
 * returning a pointer to a static struct whose abi_version is CLAIMD_PLUGIN_ABI_VERSION (3).
 * Plugins built for version 2 (claimd_plugin_v2) or 1 (claimd_plugin_v1) still load: each
 * version's structs are the one before's with fields added at their end.
 * Build it with e.g. `cc -shared -fPIC -o myplugin.so myplugin.c`; run claimd with
 * `--handler 'so:/abs/path/myplugin.so [args]'` (the rest of the spec after the path is
 * given to init as ctx->args).
 *
 * Each worker process loads the plugin once (dlopen) and calls init on its main thread, then
 * handle once per item on threads of the worker's own (never the main one: the worker keeps
 * answering its supervisor meanwhile), and fini when it stops normally. With
 * CLAIMD_PLUGIN_THREAD_SAFE in flags (version 3), handle runs on up to --concurrency threads
 * at once, so it must be safe to call concurrently; without it (and for every version 1 or 2
 * plugin) calls never overlap within one worker, whatever --concurrency says. Every worker
 * process has its own copy of the plugin's globals.
 *
 * What the worker cannot protect you from, and what it does about it:
 *   - a crash (SIGSEGV, abort, ...) in the plugin kills its worker process; the supervisor
 *     replaces it, and every item the worker was running is released and retried with its
 *     attempt counted (any of them may have caused it);
 *   - handle running past the item's deadline (--timeout, or the row's timeout_s): from then
 *     on job->cancelled() (version 3) answers non-zero, and handle has --kill-grace to return
 *     (the item then fails as timed out). A thread cannot be killed: if handle has not
 *     returned by the end of the grace, the worker logs it and exits at once (_exit); the
 *     supervisor replaces it, that item fails as timed out (its attempt counts), and the
 *     worker's other items are released (their attempts given back).
 * When the worker stops (SIGTERM to claimd), running items get --grace to finish; then
 * cancelled() answers non-zero and they have --kill-grace more before the worker exits.
 *
 * A run may leave a result in the row (job->set_result, at most CLAIMD_RESULT_MAX bytes,
 * kept when handle returns CLAIMD_OK) and report its progress while it runs (job->progress:
 * JSON text of at most CLAIMD_PROGRESS_MAX bytes; the row gets the latest at most once a
 * second). Both may be called from handle's thread only, during handle.
 *
 * ABI rules: struct layouts and meanings are fixed for a given CLAIMD_PLUGIN_ABI_VERSION;
 * any change bumps it (and the exported symbol's suffix). claimd refuses to start with a
 * plugin that exports none of claimd_plugin_v3, _v2 and _v1, or whose abi_version is not the
 * one its symbol names.
 */
#ifndef CLAIMD_HANDLER_PLUGIN_H
#define CLAIMD_HANDLER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLAIMD_PLUGIN_ABI_VERSION 3
#define CLAIMD_PLUGIN_SYMBOL "claimd_plugin_v3"
#define CLAIMD_PLUGIN_SYMBOL_V2 "claimd_plugin_v2"
#define CLAIMD_PLUGIN_SYMBOL_V1 "claimd_plugin_v1"
#define CLAIMD_ERROR_MAX 1024
#define CLAIMD_RESULT_MAX (64 * 1024)
#define CLAIMD_PROGRESS_MAX 1024
#define CLAIMD_ENQUEUE_MAX (1024 * 1024)

/* One item. Everything it points to is valid only during the handle call. */
struct claimd_job {
	uint64_t id;                   /* work_items.id */
	const char *queue;             /* never NULL */
	const char *group;             /* group key, NULL when the item has none */
	uint32_t attempt;              /* 1 for the first run */
	uint32_t max_attempts;         /* the run with attempt == max_attempts is the last */
	uint64_t seq;                  /* sequence number within the group (0 without one) */
	int64_t enqueued_at_ms;        /* when it was added, unix ms; 0 if unknown */
	int64_t deadline_ms;           /* unix ms by which handle must have returned */
	const unsigned char *payload;  /* the payload bytes (not NUL-terminated; may be NULL */
	size_t payload_len;            /*  when payload_len is 0) */
	void *user;                    /* what init stored in ctx->user */
	/* ---- since ABI version 2 ---- */
	const char *content_type;      /* the payload's type as its producer gave it (an HTTP
	                                * POST's Content-Type), NULL without one */
	/* The run's result: len bytes (copied) of type (NULL: application/octet-stream; with
	 * "application/json" they must be one JSON value), kept in the row if handle returns
	 * CLAIMD_OK; a later call replaces an earlier one. Returns 0, -EMSGSIZE (over
	 * CLAIMD_RESULT_MAX), -EINVAL (not JSON though said to be) or -ENOMEM. */
	int (*set_result)(const struct claimd_job *job, const void *data, size_t len,
			  const char *type);
	/* The run's progress: one JSON value as text ("0.5", "{\"done\":3,\"of\":10}"), at most
	 * CLAIMD_PROGRESS_MAX bytes compact. Cheap: the row gets the latest, at most once a
	 * second. Returns 0, -EINVAL (not JSON, or too long) or -ENOMEM. */
	int (*progress)(const struct claimd_job *job, const char *json);
	/* ---- since ABI version 3 ---- */
	/* Non-zero once the item should stop as soon as it can: its deadline has passed, or the
	 * worker is stopping and its grace is over. Cheap (one atomic load): call it between
	 * steps, or around a blocking call with a timeout. handle then has --kill-grace to
	 * return before the worker exits. */
	int (*cancelled)(const struct claimd_job *job);
	/* The W3C traceparent of the request that added the row ("00-<trace-id>-<parent-id>-
	 * <flags>"), NULL without one: start the item's span as its child. (Added to ABI
	 * version 3 at its end: a plugin built without it is not affected.) */
	const char *traceparent;
	/* Add a job, committed in the same transaction as this run's outcome (a follow-up job):
	 * json is one JSON object, a line of the HTTP API's jobs:batch with the queue it goes to
	 * ({"queue":"mail","payload":{"to":"a@b"},"delay":"30s"}; without "queue", this job's;
	 * "ref" and "after" between the jobs of one run make them a graph). Kept only if handle
	 * returns CLAIMD_OK, and written only with its outcome: a run whose claim was lost, or
	 * whose worker died before the commit, adds none (its retry adds them again, once).
	 * Checked as any add when handle returns: a job that is not valid fails the run, naming
	 * it. Returns 0, -EINVAL (not one JSON object), -EMSGSIZE (this run's jobs over
	 * CLAIMD_ENQUEUE_MAX bytes) or -ENOMEM. (Added to ABI version 3 at its end, as
	 * traceparent: a plugin built without it is not affected.) */
	int (*enqueue)(const struct claimd_job *job, const char *json);
};

enum claimd_status {
	CLAIMD_OK = 0,           /* done */
	CLAIMD_FAIL = 1,         /* failed: retried with back-off, dead after max_attempts */
	CLAIMD_RETRY_LATER = 2,  /* not a failure: run it again in retry_in_ms */
};

/* Zeroed before each handle call (status CLAIMD_OK). */
struct claimd_result {
	int status;                    /* enum claimd_status */
	uint32_t retry_in_ms;          /* with CLAIMD_RETRY_LATER */
	char error[CLAIMD_ERROR_MAX];  /* with CLAIMD_FAIL: why (NUL-terminated), kept in last_error */
};

struct claimd_plugin_ctx {
	uint32_t abi_version;          /* the worker's CLAIMD_PLUGIN_ABI_VERSION */
	const char *args;              /* the spec after the library's path ("" if none) */
	void *user;                    /* the plugin's: set in init, given back in each job */
	char error[CLAIMD_ERROR_MAX];  /* init failing: why */
};

struct claimd_plugin {
	uint32_t abi_version;          /* CLAIMD_PLUGIN_ABI_VERSION */
	const char *name;              /* for log lines */
	/* Optional. Called once per worker before any item. Return 0, or a negative value
	 * with ctx->error filled: the worker then logs it and exits. */
	int (*init)(struct claimd_plugin_ctx *ctx);
	/* Required. Run one item; fill res (it starts zeroed: CLAIMD_OK). */
	void (*handle)(const struct claimd_job *job, struct claimd_result *res);
	/* Optional. Called once when the worker stops normally (not after a crash or timeout). */
	void (*fini)(struct claimd_plugin_ctx *ctx);
	/* ---- since ABI version 3 ---- */
	uint32_t flags;                /* CLAIMD_PLUGIN_* */
};

/* handle may run on several threads of one worker at once (up to --concurrency). */
#define CLAIMD_PLUGIN_THREAD_SAFE 0x1u

typedef const struct claimd_plugin *(*claimd_plugin_fn)(void);
typedef claimd_plugin_fn claimd_plugin_v1_fn;

const struct claimd_plugin *claimd_plugin_v3(void);

#ifdef __cplusplus
}
#endif

#endif
