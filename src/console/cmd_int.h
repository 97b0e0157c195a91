/* cmd_int — the insides of the commands, shared by cmd.c (the table, the verbs) and
 * cmd_add.c (adds, written in batches), cmd_schedule.c (schedules), cmd_batch.c (batches),
 * cmd_limit.c (limits) and cmd_stats.c (the queues' history).
 * Not an interface. */
#ifndef CLAIMD_CMD_INT_H
#define CLAIMD_CMD_INT_H

#include "console/cmd.h"
#include "console/history_view.h"

struct cmds {
	struct sup_host host;
	/* what people look at (status, queues, jobs), read for many at a time */
	struct reading *queues, *jobs;
	struct reading *history;   /* stats */
	/* add: requests waiting, and the batches being written (one per adds connection) */
	struct call **adds;
	size_t nadds, capadds;
	struct adds_batch {
		struct cmds *c;
		struct dbq *dbq;
		struct call **calls;
		size_t n;                  /* 0: free */
		struct dbq_job job;
		struct store_add_row *rows;
	} batch[SUP_ADDS_PIPES];
};

/* A bulk action in flight (cmd_browse.c): the spans of ids walked down from the top, first
 * counting, then (confirmed) acting. */
struct cmd_bulk {
	struct store_filter filter;    /* as the request gives it */
	struct store_filter counted;   /* narrowed to the action's states */
	size_t action;                 /* in cmd_browse.c's table */
	bool started, acting;
	uint64_t top;                  /* one past the highest id when it started */
	uint64_t lo, hi;               /* the span at hand: [lo, hi) */
	uint64_t count, acted;
	unsigned transactions;         /* chunks that acted on rows */
	char reason[160];              /* a cancel's */
};

/* One request in flight. */
struct call {
	struct dbq_job job;        /* used when the verb needs the database */
	struct cmds *cmds;
	const struct ctl_request *req;
	cmd_done_cb done;
	void *data;
	struct cmd_result res;
	struct store_add_opts add;
	struct store_job row;          /* job */
	struct store_supervisor *svs;  /* supervisors */
	struct store_schedule *scheds; /* schedule, schedules */
	size_t nscheds;
	struct store_batch *batches;   /* batch, batches */
	size_t nbatches;
	struct store_limits limits;    /* limit, limits */
	struct history_window window;  /* stats: the key of its reading */
	struct store_job_extra extra;  /* job */
	struct cmd_bulk bulk;          /* bulk */
};

/* Answer the call (its done callback) and free it. */
void cmd_finish(struct call *call);
/* A change an operator made: what the readings say is stale. */
void cmd_changed(struct cmds *c);

/* ---- cmd_add.c ---- */

int cmd_adds_init(struct cmds *c);
/* Adds not yet given to the database are refused (the ones being written are answered when
 * they are over). */
void cmd_adds_flush(struct cmds *c);
void cmd_adds_free(struct cmds *c);
void cmd_add_now(struct call *call);
void cmd_add_text(const struct ctl_request *req, const struct cmd_result *res, struct buf *out);

/* ---- cmd_schedule.c ---- */

int cmd_schedule_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_schedule_after(struct call *call);
void cmd_schedule_text(const struct ctl_request *req, const struct cmd_result *res,
		       struct buf *out);
int cmd_schedules_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_schedules_after(struct call *call);
void cmd_schedules_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out);
int cmd_unschedule_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_unschedule_after(struct call *call);
void cmd_unschedule_text(const struct ctl_request *req, const struct cmd_result *res,
			 struct buf *out);
/* pause and resume --schedule */
int cmd_schedule_pause_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_schedule_pause_after(struct call *call);
void cmd_schedule_pause_text(const struct ctl_request *req, struct buf *out);

/* ---- cmd_limit.c ---- */

int cmd_limit_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_limit_after(struct call *call);
int cmd_limits_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_limits_after(struct call *call);
void cmd_limits_text(const struct ctl_request *req, const struct cmd_result *res,
		     struct buf *out);

/* ---- cmd_batch.c ---- */

int cmd_batch_db(struct call *call, struct store *s, char *err, size_t errlen);
void cmd_batch_after(struct call *call);
void cmd_batch_text(const struct ctl_request *req, const struct cmd_result *res,
		    struct buf *out);

/* ---- cmd_stats.c ---- */

extern const struct reading_ops cmd_history_ops;
void cmd_stats_now(struct call *call);
void cmd_stats_text(const struct ctl_request *req, const struct cmd_result *res,
		    struct buf *out);
/* ---- cmd_browse.c ---- */

/* The filters of a jobs or bulk request (their strings point into it); the state dead for
 * a jobs request that names neither id, group, dedupe nor error, else any. Returns 0 or
 * -EINVAL (a state the grammar should have refused). */
int cmd_filter_of(const struct ctl_request *q, struct store_filter *f);
/* A job page: the row as job has it (render_job_text, render_job_json) and x's parts. */
void cmd_job_page_text(const struct store_job *j, const struct store_job_extra *x,
		       struct buf *out);
void cmd_job_page_json(const struct store_job *j, const struct store_job_extra *x,
		       struct buf *out);
/* claimctl retry --queue Q --dead: Q's dead rows put back as a bulk retry does, 500 rows a
 * transaction, without a count or a confirmation first. */
void cmd_bulk_retry_queue(struct call *call);
void cmd_bulk_now(struct call *call);
void cmd_bulk_text(const struct ctl_request *req, const struct cmd_result *res,
		   struct buf *out);

#endif
