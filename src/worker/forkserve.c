/* The fork server's side of the worker: the process the supervisor runs once more at start,
 * which forks each worker from its lean state (common/proc.h, proc_forker_serve). */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/proc.h"
#include "store/store.h"
#include "worker/worker.h"

static int run_forked_worker(int slot, int fd, void *arg)
{
	struct config *cfg = arg;
	char title[64];
	int r;

	snprintf(title, sizeof(title), "claimd: worker %d of supervisor %d", slot, cfg->parent_pid);
	proc_set_title(title);
	proc_set_name("claimd");
	cfg->worker_slot = slot;
	cfg->worker_fd = fd;
	r = worker_main(cfg);
	store_library_end();
	return r;
}

int worker_forker_main(struct config *cfg)
{
	char title[64];
	int r;

	snprintf(title, sizeof(title), "claimd: fork server of supervisor %d", cfg->parent_pid);
	log_init("fork", cfg->log_level, cfg->log_format);
	proc_set_title(title);
	proc_set_name("claimd-fork");
	proc_ignore_stop_signals();
	if (proc_die_with_parent(cfg->parent_pid) < 0)
		log_warn("cannot ask to die with the supervisor; relying on the socket");
	r = proc_forker_serve(cfg->fork_fd, cfg->parent_pid, run_forked_worker, cfg);
	if (r < 0) {
		log_error("fork server: %s", strerror(-r));
		return 1;
	}
	return 0;
}
