/* What every verb's module (cmd.c and cmd_*.c) ends a call with: its answer handed back and
 * its memory freed, the page size it asked for, the readings made stale by a change. Calls
 * only down (the store's frees, reading). */
#include "console/cmd_int.h"

#include <stdlib.h>

#include "console/reading.h"

void cmd_finish(struct call *call)
{
	call->done(call->data, call->req, &call->res);
	store_job_clear(&call->row);
	store_supervisors_free(call->svs, call->res.nsupervisors);
	free(call->scheds);
	free(call->batches);
	store_limits_clear(&call->limits);
	store_job_extra_clear(&call->extra);
	free(call);
}

unsigned cmd_page(const struct ctl_request *req)
{
	if (ctl_has(req, CTL_F_LIMIT))
		return req->limit;
	return req->verb == CTL_SCHEDULES ? CMD_SCHEDULES_PAGE : CMD_LIST_PAGE;
}

/* A change an operator made: what the readings say is stale. */
void cmd_changed(struct cmds *c)
{
	reading_stale(c->queues);
	reading_stale(c->jobs);
}
