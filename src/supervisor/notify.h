/* notify — systemd's service notification protocol, as its documentation (sd_notify(3))
 * describes it: one datagram of "KEY=value" lines to the unix socket $NOTIFY_SOCKET names (a
 * path, or an abstract name after '@'). claimd says READY=1 once its pool serves, STATUS= what
 * it is doing, RELOADING=1 and READY=1 around a reload, STOPPING=1, and WATCHDOG=1 from its
 * loop every half $WATCHDOG_USEC (when $WATCHDOG_PID is unset or is this process). Written
 * here instead of linking libsystemd: that library, mapped in every worker (the same binary),
 * costs memory for ~50 lines of code (README: Dependencies). Without $NOTIFY_SOCKET every
 * call does nothing. Does not log. */
#ifndef CLAIMD_NOTIFY_H
#define CLAIMD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

/* Read the environment and open the socket; the variables are removed, so that no worker or
 * handler inherits them. Returns 0, or a negative errno (a malformed $NOTIFY_SOCKET). */
int notify_init(void);

/* Whether there is a socket to tell. */
bool notify_enabled(void);

/* Send text (one or more "KEY=value" lines). Returns 0 or a negative errno. */
int notify_send(const char *text);

/* The watchdog's interval to ping at (half $WATCHDOG_USEC), in ms; 0: no watchdog. */
uint64_t notify_watchdog_ms(void);

/* Closes the socket. */
void notify_end(void);

#endif
