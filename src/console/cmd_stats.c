/* stats: the queues' history (history.h) as every supervisor wrote it, from a reading
 * (reading.h): many clients asking for the same window (the dashboard's last hour, whose end
 * moves once a minute) cost one query while it is fresh. */
#include "console/cmd_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "console/reading.h"

static int read_history(struct store *s, const void *key, void **ret, size_t *ret_n, char *err,
			size_t errlen)
{
	const struct history_window *w = key;
	struct store_history_row *rows;
	int r = store_history_read(s, w->any_queue ? NULL : w->queue, w->from, w->to, w->step,
				   &rows, ret_n, err, errlen);

	if (r >= 0)
		*ret = rows;
	return r;
}

static void free_history(void *value, size_t n)
{
	(void)n;
	free(value);
}

const struct reading_ops cmd_history_ops = { read_history, free_history,
					     sizeof(struct history_window) };

static void stats_read(void *data, int rc, const char *err, const void *value, size_t n)
{
	struct call *call = data;

	call->res.rc = rc;
	snprintf(call->res.err, sizeof(call->res.err), "%s", err);
	call->res.window = &call->window;
	call->res.history = value;
	call->res.nhistory = n;
	cmd_finish(call);
}

void cmd_stats_now(struct call *call)
{
	int r = history_window(call->req, (int64_t)time(NULL), &call->window, call->res.err,
			       sizeof(call->res.err));

	if (r < 0) {
		call->res.rc = r;
		cmd_finish(call);
		return;
	}
	reading_get(call->cmds->history, &call->window, stats_read, call);
}

void cmd_stats_text(const struct ctl_request *req, const struct cmd_result *res,
		    struct buf *out)
{
	if (req->json)
		history_render_json(res->window, res->history, res->nhistory, out);
	else
		history_render_text(res->window, res->history, res->nhistory, out);
}
