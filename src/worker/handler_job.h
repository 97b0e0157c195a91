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

/* The running job's progress, as JSON text of len bytes (at most HANDLER_PROGRESS_MAX, valid
 * during the call): data is handler_run's. Called on the loop, any number of times before
 * the result. */
typedef void (*handler_progress_cb)(void *data, const char *json, size_t len);

struct handler_job {
	uint64_t id;
	const char *queue;
	const char *group;          /* group key; NULL when the item has none */
	uint32_t attempt;
	uint32_t max_attempts;
	uint64_t seq;               /* sequence number within the group (0 when unknown) */
	int64_t enqueued_at_ms;     /* row's created_at, unix ms; 0 when unknown */
	int64_t deadline_ms;        /* unix ms; 0: handler_run makes it now + timeout_ms */
	const unsigned char *payload;
	size_t payload_len;
	const char *content_type;   /* the payload's type; NULL when the row has none */
	unsigned timeout_ms;
	handler_progress_cb on_progress;  /* NULL: progress is dropped */
};

enum handler_status {
	HANDLER_OK = 0,
	HANDLER_FAILED,       /* non-zero exit, signal, bad reply, or could not start */
	HANDLER_TIMEOUT,      /* ran past timeout_ms and was killed */
	HANDLER_CANCELLED,    /* handler_cancel() */
	HANDLER_RETRY_LATER,  /* the handler asked to run it again in retry_in_ms: not a failure */
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
};

typedef void (*handler_cb)(void *data, const struct handler_result *r);

#endif
