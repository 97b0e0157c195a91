/* worker — one pool process: claims rows, runs the handler on each, completes them, and keeps
 * the supervisor informed over its channel (fd cfg->worker_fd). Logs as "w<slot>". */
#ifndef CLAIMD_WORKER_H
#define CLAIMD_WORKER_H

#include "common/config.h"

/* Runs until told to stop or until the supervisor goes away. Returns the process exit code. */
int worker_main(const struct config *cfg);

/* The fork server (cfg->fork_fd set): forks a worker for each request of the supervisor
 * (proc_forker_serve) until the supervisor closes the socket or dies. Returns the process exit
 * code; each worker exits from inside with worker_main's. */
int worker_forker_main(struct config *cfg);

#endif
