/* cmd_schedule — the schedules' verbs: schedule (add or replace), schedules (list, or one),
 * unschedule, and pause/resume --schedule. The expression and the zone are checked on the
 * database queue's thread (reading a zone reads a file), before anything is written. */
#include "console/cmd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "console/answers.h"
#include "console/render_schedule.h"
#include "common/cron.h"

static enum store_catch_up catch_up_of(const char *s)
{
	for (int i = 0; i < STORE_CATCH_UP_COUNT; i++)
		if (s && !strcmp(s, store_catch_up_names[i]))
			return (enum store_catch_up)i;
	return STORE_CATCH_UP_ONE;
}

/* The schedule name, read back into call->scheds. */
static int read_back(struct call *call, struct store *s, const char *name, char *err,
		     size_t errlen)
{
	const struct ctl_request *q = call->req;
	int r = store_schedules(s, name, !name && ctl_has(q, CTL_F_AFTER) ? q->after : NULL,
				name ? 0 : cmd_page(q),
				&call->scheds, &call->nscheds, err, errlen);

	if (r == 0 && name && call->nscheds == 0) {
		snprintf(err, errlen, "no schedule '%s'", name);
		return -ENOENT;
	}
	return r;
}

int cmd_schedule_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	struct store_schedule_def d = {
		.name = q->name, .cron = q->cron, .time_zone = q->zone, .queue = q->queue,
		.payload = q->payload, .len = q->payload_len, .content_type = q->content_type,
		.group_key = q->group, .priority = q->priority, .max_attempts = q->max_attempts,
		.timeout_s = (q->timeout_ms + 999) / 1000, .catch_up = catch_up_of(q->catch_up),
		.paused = q->paused,
	};
	char why[256];
	int r;

	if ((r = cron_check(q->cron, q->zone, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "schedule: %s", why);
		return r == -EINVAL ? r : -EAGAIN;   /* a zone file that may read later */
	}
	if (!ctl_has(q, CTL_F_PAYLOAD))
		d.payload = NULL;
	if ((r = store_schedule_put(s, &d, err, errlen)) < 0)
		return r;
	call->res.replaced = r == 1;
	return read_back(call, s, q->name, err, errlen);
}

void cmd_schedule_after(struct call *call)
{
	struct sup_host *h = &call->cmds->host;

	call->res.schedules = call->scheds;
	call->res.nschedules = call->nscheds;
	log_info("schedule '%s' %s: '%s' in %s", call->req->name,
		 call->res.replaced ? "replaced" : "added", call->req->cron,
		 call->req->zone ? call->req->zone : "UTC");
	if (h->schedules_changed)
		h->schedules_changed(h->data);
}

void cmd_schedule_text(const struct ctl_request *req, const struct cmd_result *res,
		       struct buf *out)
{
	if (req->json) {
		if (res->nschedules)
			render_schedule_json(&res->schedules[0], out);
		return;
	}
	buf_printf(out, "schedule %s %s\n", req->name, res->replaced ? "replaced" : "added");
}

int cmd_schedules_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return read_back(call, s, ctl_has(call->req, CTL_F_NAME) ? call->req->name : NULL, err,
			 errlen);
}

void cmd_schedules_after(struct call *call)
{
	call->res.schedules = call->scheds;
	call->res.nschedules = call->nscheds;
}

void cmd_schedules_text(const struct ctl_request *req, const struct cmd_result *res,
			struct buf *out)
{
	bool one = ctl_has(req, CTL_F_NAME);

	if (req->json && one && res->nschedules)
		render_schedule_json(&res->schedules[0], out);
	else if (req->json)
		render_schedules_json(res->schedules, res->nschedules, out);
	else if (one && res->nschedules)
		render_schedule_text(&res->schedules[0], out);
	else
		render_schedules_text(res->schedules, res->nschedules, out);
}

int cmd_unschedule_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	int r = store_schedule_delete(s, call->req->name, err, errlen);

	if (r == 0) {
		snprintf(err, errlen, "no schedule '%s'", call->req->name);
		return -ENOENT;
	}
	if (r > 0)
		call->res.rows = r;
	return r;
}

void cmd_unschedule_after(struct call *call)
{
	log_info("schedule '%s' deleted", call->req->name);
}

void cmd_unschedule_text(const struct ctl_request *req, const struct cmd_result *res,
			 struct buf *out)
{
	if (!req->json)
		buf_printf(out, "%lld\n", res->rows);
	else
		answer_json(&schedule_deleted_entity, &(struct answer_count){ .deleted = res->rows },
			    out);
}

int cmd_schedule_pause_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const char *name = call->req->schedule;
	int r = store_schedule_set_paused(s, name, call->req->verb == CTL_PAUSE, err, errlen);

	if (r == 0) {
		snprintf(err, errlen, "no schedule '%s'", name);
		return -ENOENT;
	}
	return r;
}

void cmd_schedule_pause_after(struct call *call)
{
	struct sup_host *h = &call->cmds->host;
	bool pause = call->req->verb == CTL_PAUSE;

	log_info("schedule '%s': %s", call->req->schedule, pause ? "paused" : "resumed");
	if (!pause && h->schedules_changed)
		h->schedules_changed(h->data);
}

void cmd_schedule_pause_text(const struct ctl_request *req, struct buf *out)
{
	bool pause = req->verb == CTL_PAUSE;

	if (!req->json) {
		buf_printf(out, "schedule %s %s\n", req->schedule, pause ? "paused" : "resumed");
		return;
	}
	answer_json(&schedule_paused_entity, &(struct answer_paused){ .name = req->schedule,
							   .paused = pause }, out);
}
