/* cmd — what the supervisor does for a request (common/ctl.h), whichever way it came: the
 * control socket now, the HTTP API later. One table in cmd.c, an entry per verb: the handler
 * that answers at once, or the database job (its own function, run on the thread pool with
 * the supervisor's connection) and what follows it on the loop, and the reply's text for
 * claimctl. Adding a verb: its grammar in common/ctl.c, its entry here, its statement in the
 * store. Logs what a request changed (a queue paused, a rate limit set). */
#ifndef CLAIMD_CMD_H
#define CLAIMD_CMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "common/buf.h"
#include "common/config.h"
#include "common/ctl.h"
#include "store/store.h"
#include "store/store_graph.h"
#include "store/store_browse.h"
#include "supervisor/surface.h"
#include "console/status.h"

struct history_window;

struct cmd_result {
	int rc;                       /* < 0: failed, err says why: -EINVAL a bad request,
				       * -ENOENT no such row, -EBUSY a row in the wrong state,
				       * -ENOMEM, -ECANCELED (stopping), -ESTALE a bulk
				       * confirm that is not the count, other: the database */
	char err[STORE_ERR_MAX];
	uint64_t id;                  /* add: the new row, or the row holding the dedupe key */
	bool duplicate;               /* add: a row held the dedupe key; nothing was added */
	long long rows;               /* retry: rows put back */
	const struct status *status;  /* status: valid during the callback only */
	const struct store_job *job;  /* job: the row (callback only) */
	const struct store_queue *queues;  /* queues (callback only) */
	size_t nqueues;
	double queues_age_s;          /* queues: how long ago they were read */
	const struct store_supervisor *supervisors;  /* supervisors (callback only) */
	size_t nsupervisors;
	const struct store_job *jobs;      /* jobs (callback only) */
	size_t njobs;
	char state[16];               /* cancel refused (-EBUSY): the row's state */
	bool cancelling;              /* cancel: the row runs; summary is its claimed_by */
	char summary[700];            /* reload, workers: what was done */
	const struct store_schedule *schedules;   /* schedules, schedule (callback only) */
	size_t nschedules;
	bool replaced;                /* schedule: it replaced one of the same name */
	const struct store_batch *batches;   /* batch, batches (callback only) */
	size_t nbatches;
	const struct store_limits *limits;   /* limit, limits (callback only) */
	struct store_backoff backoff;  /* backoff: the queue's settings now */
	const struct history_window *window;       /* stats: what it covers (callback only) */
	const struct store_history_row *history;   /* stats: its steps with rows (callback only) */
	size_t nhistory;
	uint64_t next;                 /* jobs: the next page's before (0: none) */
	const struct store_job_extra *extra;  /* job: the page's parts (callback only) */
	uint64_t count;                /* bulk: the rows the filters pick (-ESTALE: now) */
	bool confirmed;                /* bulk: acted on (rows: how many) */
	unsigned transactions;         /* bulk: the chunks that acted on rows */
};

/* An added row's JSON object, {"id":N} with "duplicate":true if it was one (claimctl add's
 * answer, a line of jobs:batch's); NULL when out of memory. */
json_t *cmd_added_object(const struct cmd_result *res);
/* One batch's JSON object and a newline (the batch verb's, and its event stream's). */
void cmd_batch_json(const struct store_batch *b, struct buf *out);
/* The same object (jansson; the caller owns it), NULL when out of memory. */
json_t *cmd_batch_object(const struct store_batch *b);

typedef void (*cmd_done_cb)(void *data, const struct ctl_request *req,
			    const struct cmd_result *res);

#define CMD_LIST_PAGE 50         /* jobs and batches listed without --limit */
#define CMD_SCHEDULES_PAGE 100   /* schedules listed without --limit */

/* How many rows a list (jobs, batches, schedules) answers at most: --limit, or the list's
 * page without it. */
unsigned cmd_page(const struct ctl_request *req);

struct cmds;

/* host is copied. Returns 0 or -ENOMEM. */
int cmds_new(const struct sup_host *host, struct cmds **ret);
/* Requests still waiting are answered first (cmds_flush). Accepts NULL. */
void cmds_free(struct cmds *c);

/* Carry out req (ctl_decode or ctl_from_argv made it, so it follows the grammar). done is
 * called exactly once, before cmd_run returns or later on the loop; req and what it points to
 * must stay valid until then. */
void cmd_run(struct cmds *c, const struct ctl_request *req, cmd_done_cb done, void *data);

/* Rows that wait for each other, and maybe a batch of them: reqs[0..n) (add requests),
 * edges between them by index, written in one transaction (store_add_graph), all or nothing.
 * The caller owns everything and gives ids room for n ids. */
struct cmd_graph {
	const struct ctl_request *reqs;
	size_t n;
	const struct store_edge *edges;
	size_t nedges;
	bool batch;
	const char *description;     /* the batch's, or NULL */
	long callback;               /* the batch's callback (an index), or -1 */
	/* out */
	int rc;                      /* as cmd_result's */
	char err[STORE_ERR_MAX];
	uint64_t *ids;
	uint64_t batch_id;
};

/* Write g; done is called once, later, on the loop. Wakes a worker when written. */
void cmd_add_graph(struct cmds *c, struct cmd_graph *g,
		   void (*done)(void *data, struct cmd_graph *g), void *data);

/* Answer the requests still waiting for the database (status waiting for fresh counts)
 * with what there is; at stop. */
void cmds_flush(struct cmds *c);

/* The body of the ok reply to req, into out: text for people, or with req->json its JSON
 * form (claimctl --json, the HTTP API). */
void cmd_render(const struct ctl_request *req, const struct cmd_result *res, struct buf *out);

#endif
