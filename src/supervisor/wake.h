/* wake — push wake-ups from the server's binary log (--wake auto or binlog). A thread follows
 * the stream (store/store_binlog) on a connection of its own and tells the loop when rows of
 * work_items or queues changed in a way that may make a row claimable, whoever changed them
 * (plain SQL, any client, any host); the loop wakes an idle worker. A stream that breaks is
 * opened again from the last transaction seen (its GTID), with back-off; meanwhile, and for
 * good when the server writes no row-based log or the user may not read it, the supervisor
 * polls as before. Logs when the stream is lost and back; the loop is told of each. */
#ifndef CLAIMD_WAKE_H
#define CLAIMD_WAKE_H

#include <stdbool.h>
#include <uv.h>

#include "common/config.h"

#define WAKE_HEARTBEAT_S 4         /* the server's heartbeat when nothing happens */

struct wake_opts {
	uv_loop_t *loop;
	const struct config *cfg;
	/* On the loop: rows may have become claimable. */
	void (*changed)(void *data);
	/* On the loop: rows of work_items changed, by any statement (claimd's quiet ones too),
	 * for the requests that wait for a row. NULL: not told. */
	void (*rows)(void *data);
	/* On the loop: the stream is up, or down (why; for good when final: --wake binlog
	 * cannot be had on this server). */
	void (*state)(void *data, bool up, bool final, const char *why);
	void *data;
};

struct wake;

/* Start following the stream. Returns 0 or -ENOMEM. */
int wake_start(const struct wake_opts *o, struct wake **ret);
/* Stop the thread (a read that blocks is cut short) and free. Accepts NULL. */
void wake_stop(struct wake *w);
/* pause: close the stream (every worker is busy: its news would wake nobody, and the server
 * would send every row the pool writes for nothing); !pause: open it again from the server's
 * current position and tell the loop the stream is up (which then asks once what changed
 * meanwhile). */
void wake_pause(struct wake *w, bool pause);

#endif
