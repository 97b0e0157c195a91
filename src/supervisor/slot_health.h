/* slot_health — a pool slot's health as the supervisor sees it, apart from what the worker
 * reports of itself on the wire (enum proto_wstate), and what may follow what. */
#ifndef CLAIMD_SLOT_HEALTH_H
#define CLAIMD_SLOT_HEALTH_H

#include <stdbool.h>

/* What the supervisor knows of a slot's process, whatever the worker says. */
enum slot_health {
	SLOT_DOWN,          /* no process: waiting to be started (or for its back-off) */
	SLOT_FORKING,       /* the fork server is asked for its process; the answer comes to the
			     * loop (forker.c) */
	SLOT_UP,            /* running; what it does is its wire state (enum proto_wstate) */
	SLOT_UNRESPONSIVE,  /* its heartbeat answer is overdue: SIGTERM sent, SIGKILL after the
			     * kill grace; what it reports no longer counts */
	SLOT_EXITED,        /* its process has ended; its last reports are being read */
};

#define SLOT_HEALTH_COUNT 5

/* "down", "forking", "up", "unresponsive", "exited". */
const char *slot_health_name(enum slot_health h);

/* The transitions:  down -> forking -> up -> exited -> down,  forking -> down (no process),
 * up -> unresponsive -> exited. */
bool slot_health_may_follow(enum slot_health from, enum slot_health to);

#endif
