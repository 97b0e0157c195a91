/* cmd_limit — limit (set a queue's or a key's limits) and limits (read them): both answer
 * with the queue's limits as they are after the change (render_limits). */
#include "console/cmd_int.h"

#include "common/log.h"
#include "console/render_limits.h"

int cmd_limit_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	const struct ctl_request *q = call->req;
	struct store_limit_set set = {
		.queue = q->queue,
		.key = ctl_has(q, CTL_F_GROUP) ? q->group : NULL,
		.each_key = q->each_group,
		.has_concurrency = ctl_has(q, CTL_F_CONCURRENCY),
		.has_interval = ctl_has(q, CTL_F_INTERVAL),
		.has_burst = ctl_has(q, CTL_F_BURST),
		.concurrency = q->concurrency,
		.interval_ms = q->interval_ms,
		.burst = q->burst,
	};
	char after[STORE_GROUP_KEY_MAX + 1] = "";
	int r = store_set_limit(s, &set, err, errlen);

	/* Every key's: the rows a raised limit makes room for start now, a chunk of keys a
	 * statement (on a queue of many keys, many statements, none long). */
	while (r >= 0 && set.each_key && set.has_concurrency) {
		r = store_group_heal(s, q->queue, after, after, err, errlen);
		if (after[0] == '\0')
			break;
	}
	return r < 0 ? r : store_limits_get(s, q->queue, &call->limits, err, errlen);
}

void cmd_limit_after(struct call *call)
{
	const struct ctl_request *q = call->req;
	char key[600];

	cmd_changed(call->cmds);
	if (ctl_has(q, CTL_F_GROUP))
		log_info("queue '%s' key %s: limits set", q->queue,
			 log_quote(q->group, 255, key, sizeof(key)));
	else
		log_info("queue '%s': %s limits set", q->queue, q->each_group ? "its keys'" : "rate");
	call->res.limits = &call->limits;
}

int cmd_limits_db(struct call *call, struct store *s, char *err, size_t errlen)
{
	return store_limits_get(s, call->req->queue, &call->limits, err, errlen);
}

void cmd_limits_after(struct call *call)
{
	call->res.limits = &call->limits;
}

void cmd_limits_text(const struct ctl_request *req, const struct cmd_result *res,
		     struct buf *out)
{
	if (!res->limits)
		return;
	if (req->json)
		render_limits_json(res->limits, out);
	else
		render_limits_text(res->limits, out);
}
