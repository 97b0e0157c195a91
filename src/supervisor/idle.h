/* idle — how a supervisor's idle workers learn of work that is not theirs to know of (rows
 * added by plain SQL or by another supervisor, rows that come due), in one of two modes:
 *
 * push (--wake auto or binlog, on a server with a row-based binary log): the binary log is
 * followed (wake.h) and a change that may make a row claimable wakes an idle worker at once;
 * when a worker's claim finds nothing, one statement asks when the next row comes due (a
 * delayed row, a retry, a lease) and a timer wakes a worker then; just after a change that
 * statement is asked again a few times over half a second (the log has a change before
 * other connections see its commit), once only 100 ms later when a claim woken for the
 * change took rows (it saw the commit); a safety poll every IDLE_SAFETY_MS covers anything
 * else. A wake-up that finds no worker idle is owed to the next that says it is (the pool
 * learns a worker is idle from its STATE, which may come after the statement that found a
 * row due). While every worker has been busy for a while the stream is closed (its news
 * would wake nobody, and the server would stream every row the pool writes), unless
 * requests wait for rows (idle_follow_rows): a claim that finds nothing opens it again, from
 * the server's position then, and asks once what changed meanwhile.
 *
 * poll (--wake poll, or while the stream is not to be had): one poll per --poll-interval for
 * the whole pool, on the supervisor's connection, while a worker is idle.
 *
 * Either way it takes a poll tick only when the registry and maintenance did not. */
#ifndef CLAIMD_IDLE_H
#define CLAIMD_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "common/config.h"
#include "supervisor/dbq.h"

#define IDLE_SAFETY_MS 30000   /* push mode: a poll this often all the same */

struct idle_opts {
	uv_loop_t *loop;
	const struct config *cfg;
	struct dbq *dbq;
	const char *const *queues;   /* cfg->queues as pointers, nqueues of them */
	/* Whether an idle worker could be woken (and a permit is free). */
	bool (*wants)(void *data);
	/* Wake one. */
	void (*wake_one)(void *data);
	/* UINT64_MAX while a claim runs, else how many began (permits_claims): a statement that
	 * found a row due wakes no one when a claim ran or began meanwhile (it took the row, or
	 * its CLAIMED asks again or wakes another). */
	uint64_t (*claims)(void *data);
	/* A statement found a row due: it may lie behind the claim cursor (a claim that skipped
	 * it while another locked it went past), so the next claim scans from the head. */
	void (*rewind)(void *data);
	/* The mode changed (push up or down): the registry's refresh interval follows it. */
	void (*mode_changed)(void *data, bool push);
	/* Push mode: rows of work_items changed, by any statement (for the requests waiting for
	 * a row), or NULL. */
	void (*rows_changed)(void *data);
	uint64_t *asked;   /* counts the statements it asks (may be NULL) */
	void *data;
};

struct idle;

int idle_new(const struct idle_opts *o, struct idle **ret);
/* Start following the binary log (unless --wake poll). */
void idle_start(struct idle *d);
/* At a poll tick that nothing else took: the poll, if one is due. Returns whether it ran. */
bool idle_tick(struct idle *d);
/* A worker's claim took every due row it could: some (found), or none. */
void idle_claimed_short(struct idle *d, bool found);
/* A worker says it is idle now: a wake-up that found none idle is its. */
void idle_worker_idle(struct idle *d);
/* Whether a worker is idle, to close or open the stream (push mode; its own timer asks). */
void idle_watch(struct idle *d);
/* want: requests wait for rows (rows_changed): the stream stays open while every worker is
 * busy (it is closed then otherwise); !want: it may close again. */
void idle_follow_rows(struct idle *d, bool want);
/* Whether the binary log wakes the workers now. */
bool idle_push(const struct idle *d);
/* How many changes the binary log told of so far (while pushed, nothing changed in work_items
 * or queues between two equal readings but what claimd's own quiet statements did). */
uint64_t idle_changes(const struct idle *d);
/* "binlog", "poll", or "poll (why the binary log is not used)". */
const char *idle_mode(const struct idle *d);
/* Stopping: no more polls or wake-ups; the binary log's thread ends. */
void idle_stop(struct idle *d);
/* After idle_stop, with the database queue idle. Accepts NULL. */
void idle_free(struct idle *d);

#endif
