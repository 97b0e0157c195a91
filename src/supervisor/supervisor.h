/* supervisor — the parent process: pre-forks the worker pool, heartbeats every worker over its
 * channel, replaces the dead and the hung (with back-off for crash loops), releases the claims
 * of workers that died, wakes idle workers, opens the operator's surface (surface.h), and drains the pool on
 * SIGTERM/SIGINT. Logs as "sup". */
#ifndef CLAIMD_SUPERVISOR_H
#define CLAIMD_SUPERVISOR_H

#include "common/config.h"
#include "supervisor/surface.h"

/* argv is the supervisor's own command line, passed on to the workers it starts; ops, the
 * operator's surface it opens, reloads and stops (main gives console_ops). Returns the
 * process exit code: 0 after a clean stop, 1 if it could not start. */
int supervisor_main(struct config *cfg, int argc, char **argv, const struct surface_ops *ops);

#endif
