/* What a worker tells the supervisor over its channel: messages, its state (STATE), and each
 * outcome in the log when --log-items asks for it. Which items it runs is in the scoreboard,
 * not on the wire. */
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

	log_info("item id=%llu queue=%s attempt=%u outcome=%s run_ms=%.3f wait_ms=%.3f%s",
		 (unsigned long long)x->ref.id, w->cfg->queues[x->queue < w->cfg->nqueues ?
		 x->queue : 0], x->attempt, proto_outcome_name(outcome), x->run_us / 1000.0,
		 x->wait_us / 1000.0, x->trace);
}

/* What the state means on the wire: asleep (room, and nothing to claim) is idle; waiting
 * for a permit with nothing held too; a handler that takes no items yet, nothing held, is
 * starting, asleep or full; holding rows or claiming is busy. */
static uint8_t wire_state(const struct worker *w)
{
	if (w->stopping)
		return PROTO_W_STOPPING;
	switch (w->state) {
	case WS_START:
		return PROTO_W_STARTING;
	case WS_CONNECT:
		return PROTO_W_DB_DOWN;
	case WS_SLEEP:
		return handler_ready(w->handler) ? PROTO_W_IDLE : PROTO_W_STARTING;
	case WS_WANT:
		return items_held(&w->items) > 0 ? PROTO_W_BUSY : PROTO_W_IDLE;
	case WS_FULL:
		return items_held(&w->items) == 0 && !handler_ready(w->handler) ?
		       PROTO_W_STARTING : PROTO_W_BUSY;
	default:
		return PROTO_W_BUSY;
	}
}

/* Tell the supervisor what we do (STATE), when it changed. */
void worker_report(struct worker *w)
{
	uint8_t wire = wire_state(w);
	struct proto_msg m;

	if (w->report_held || (w->wire_sent && w->wire == wire))
		return;
	w->wire = wire;
	w->wire_sent = true;
	memset(&m, 0, sizeof(m));
	m.type = PROTO_STATE;
	m.u.state.state = wire;
	worker_send(w, &m);
}

void worker_wire_told(struct worker *w, uint8_t wire)
{
	w->wire = wire;
	w->wire_sent = true;
}

uint8_t worker_wire_now(struct worker *w)
{
	worker_wire_told(w, wire_state(w));
	return w->wire;
}

/* The same rule as the supervisor's when it grants: idle or starting becomes busy. */
void worker_wire_woken(struct worker *w)
{
	if (w->wire_sent && (w->wire == PROTO_W_IDLE || w->wire == PROTO_W_STARTING))
		w->wire = PROTO_W_BUSY;
}
