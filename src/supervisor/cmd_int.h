/* cmd_int — the insides of the commands, shared by cmd.c (the table, the verbs) and
 * cmd_add.c (adds, written in batches), cmd_schedule.c (schedules), cmd_batch.c (batches),
 * cmd_limit.c (limits) and cmd_stats.c (the queues' history).
 * Not an interface. */
#ifndef CLAIMD_CMD_INT_H
#define CLAIMD_CMD_INT_H

#include "supervisor/cmd.h"
#include "supervisor/history.h"

struct cmds {
	struct cmd_host host;
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
	} batch[CMD_ADDS_PIPES];
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

#endif
