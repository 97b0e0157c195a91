/* claimd — entry point: the supervisor, or (with the hidden --fork-server-fd option the
 * supervisor passes) its fork server, which forks the workers from this state: the client
 * library loaded and initialised, nothing else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "common/config.h"
#include "worker/handler.h"
#include "common/proc.h"
#include "store/store.h"
#include "supervisor/api.h"
#include "supervisor/supervisor.h"
#include "worker/worker.h"


int main(int argc, char **argv)
{
	static struct config cfg;
	char err[512] = "";
	int r;

	proc_init(argc, argv);
	r = config_parse(argc, argv, &cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "claimd: %s\n", err);
		return 2;
	}
	if (r == CONFIG_HELP) {
		fputs(config_usage(), stdout);
		return 0;
	}
	if (r == CONFIG_VERSION) {
		printf("claimd %s\n", CLAIMD_VERSION);
		return 0;
	}
	if (r == CONFIG_EXAMPLE) {
		fputs(config_example(), stdout);
		return 0;
	}
	/* The lean OpenSSL start-up leaves out what TLS needs: only when no connection uses it. */
	if (store_library_init(dsn_may_use_tls(&cfg.dsn)) < 0) {
		fprintf(stderr, "claimd: cannot initialise the MySQL client library\n");
		return 1;
	}
	/* The supervisor checks the handler once (a so: library loads and speaks our ABI), so a
	 * bad one is an error at start rather than workers failing over and over. */
	if (cfg.migrate || cfg.doctor) {
		r = cfg.migrate ? admin_migrate(&cfg) : admin_doctor(&cfg);
		store_library_end();
		return r;
	}
	if (cfg.fork_fd < 0 && handler_spec_check(cfg.handler, err, sizeof(err)) < 0) {
		fprintf(stderr, "claimd: %s\n", err);
		return 2;
	}
	/* Handlers run as the user claimd runs as: root only when asked for. */
	if (cfg.fork_fd < 0 && geteuid() == 0 && (!*cfg.user || !strcmp(cfg.user, "root")) &&
	    strcmp(cfg.handler, "noop") != 0 && !cfg.allow_root) {
		fprintf(stderr, "claimd: handlers would run as root: give --user NAME (claimd "
			"drops to it after start-up), or --allow-root\n");
		return 2;
	}
	if (cfg.fork_fd < 0 && handler_check(cfg.handler, err, sizeof(err)) < 0) {
		fprintf(stderr, "claimd: %s\n", err);
		return 2;
	}
	if (cfg.fork_fd < 0 && api_serve_prepare(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "claimd: %s\n", err);
		return 2;
	}
	if (cfg.fork_fd < 0 && admin_preflight(&cfg) < 0)
		return 2;
	if (cfg.fork_fd >= 0)
		r = worker_forker_main(&cfg);
	else
		r = supervisor_main(&cfg, argc, argv);
	store_library_end();
	return r;
}
