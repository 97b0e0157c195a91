/* row_state — the states of a row of work_items (its `state` column), as an enum with one
 * name table: the store reads them into it, claimctl and the HTTP API parse them from it,
 * every renderer names them from it. Here in common/ because claimctl checks a --state too.
 * Pure. */
#ifndef CLAIMD_ROW_STATE_H
#define CLAIMD_ROW_STATE_H

#include <stdbool.h>

enum row_state {
	ROW_NONE = -1, /* no row: a batch's callback it lacks (or that was deleted), a batch */
	ROW_READY,     /* may run (now, or from its visible_at) */
	ROW_CLAIMED,   /* a worker holds it (its lease, its fencing token) */
	ROW_DONE,      /* its handler succeeded */
	ROW_DEAD,      /* out of attempts, cancelled, or failed for good */
	ROW_STATE_COUNT,
};

/* "ready", "claimed", "done", "dead"; "" for ROW_NONE (and out of range). */
const char *row_state_name(enum row_state s);

/* *ret from its name (exact, lower case). Returns false, *ret untouched, when s names none. */
bool row_state_parse(const char *s, enum row_state *ret);

/* The state s names (a column the server gave), or ROW_NONE when it names none (NULL). */
enum row_state row_state_of(const char *s);

/* Whether a row in s has ended (done or dead): nothing will run it again unless retried. */
bool row_state_final(enum row_state s);

/* A set of states as bits: ROW_STATE_BIT(ROW_DEAD) | ...; ROW_STATE_ALL every one. */
#define ROW_STATE_BIT(s) (1u << (s))
#define ROW_STATE_ALL ((1u << ROW_STATE_COUNT) - 1)

/* The bit of the state s names, 0 when it names none. */
unsigned row_state_bit(const char *s);

#endif
