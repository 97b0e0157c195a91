/* What a worker tells the supervisor over its channel: messages, its state (STATE), and each
 * outcome in the log when --log-items asks for it. */
#include "worker/worker_int.h"

#include <string.h>

#include "common/log.h"

void worker_send(struct worker *w, struct proto_msg *m)
{
	int r = chan_send(w->chan, m);

	if (r < 0 && w->state != WS_EXIT)
		log_warn("cannot send %s to supervisor: %s", proto_type_name(m->type), strerror(-r));
}

void worker_send_out(void *data, struct proto_msg *m)
{
	worker_send(data, m);
}

void worker_log_item(void *data, const struct outcome *x, unsigned outcome)
{
	const struct worker *w = data;

	log_info("item id=%llu queue=%s attempt=%u outcome=%s run_ms=%.3f wait_ms=%.3f",
		 (unsigned long long)x->ref.id, w->cfg->queues[x->queue < w->cfg->nqueues ?
		 x->queue : 0], x->attempt, proto_outcome_name(outcome), x->run_us / 1000.0,
		 x->wait_us / 1000.0);
}

/* Tell the supervisor what we do (STATE), when it changed. The handler's pid lets the
 * supervisor kill the handler's whole process group should this worker die. */
void worker_report(struct worker *w, uint8_t wire, uint64_t item)
{
	uint32_t hpid = (uint32_t)handler_pid(w->handler);
	struct proto_msg m;

	if (w->wire_sent && w->wire == wire && w->wire_item == item && w->wire_hpid == hpid)
		return;
	w->wire = wire;
	w->wire_item = item;
	w->wire_hpid = hpid;
	w->wire_sent = true;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_STATE;
	m.u.state.state = wire;
	m.u.state.item_id = item;
	m.u.state.handler_pid = hpid;
	worker_send(w, &m);
}
