/* claimd — entry point: the supervisor, or (with the hidden --fork-server-fd option the
 * supervisor passes) its fork server, which forks the workers from this state: the client
 * library loaded and initialised, nothing else. */
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin.h"
#include "common/config.h"
#include "worker/handler.h"
#include "common/proc.h"
#include "store/store.h"
#include "console/api.h"
#include "console/console.h"
#include "supervisor/supervisor.h"
#include "worker/worker.h"


/* Whether claimd, once started, runs as root: it is root and --user is none or root. */
static bool stays_root(const struct config *cfg)
{
	return geteuid() == 0 && (!*cfg->user || !strcmp(cfg->user, "root"));
}

/* --handler-user: a user there is, other than claimd's own, that claimd can start processes
 * as (root it keeps, or the capabilities), not in --control-group, and a handler that runs
 * processes. *ret_root: whether handlers run as root. Returns 0 or -EINVAL with err. */
static int check_handler_user(const struct config *cfg, bool *ret_root, char *err,
			      size_t errlen)
{
	const char *name = cfg->handler_user;
	struct proc_user u;
	char why[300];

	*ret_root = stays_root(cfg);
	if (!*name)
		return 0;
	if (handler_user_check(cfg->handler, name, err, errlen) < 0)
		return -EINVAL;
	if (proc_user_lookup(name, &u, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "--handler-user %s: %s", name, why);
		return -EINVAL;
	}
	if (geteuid() == 0 && !stays_root(cfg)) {
		snprintf(err, errlen, "--handler-user %s: with --user %s claimd gives up root and "
			 "could not start its handlers as %s: leave --user out (claimd keeps root, "
			 "its handlers run as %s), or run claimd as its user with CAP_SETUID, "
			 "CAP_SETGID and CAP_KILL", name, cfg->user, name, name);
		return -EINVAL;
	}
	if (!proc_can_switch_user()) {
		snprintf(err, errlen, "--handler-user %s: claimd runs as uid %u without CAP_SETUID, "
			 "CAP_SETGID and CAP_KILL, and cannot start processes as another user: run "
			 "it as root, or give it those capabilities (systemd: AmbientCapabilities=)",
			 name, (unsigned)geteuid());
		return -EINVAL;
	}
	if (u.uid == geteuid()) {
		snprintf(err, errlen, "--handler-user %s: that is the user claimd runs as: its "
			 "handlers would read what claimd reads; name another user%s", name,
			 u.uid == 0 ? " (or give --allow-root instead)" : "");
		return -EINVAL;
	}
	if (*cfg->control_group) {
		const struct group *g = getgrnam(cfg->control_group);
		for (int i = 0; g && i < u.ngroups; i++)
			if (u.groups[i] == g->gr_gid) {
				snprintf(err, errlen, "--handler-user %s is in group %s "
					 "(--control-group): its handlers could use the control socket",
					 name, cfg->control_group);
				return -EINVAL;
			}
	}
	*ret_root = u.uid == 0;
	return 0;
}

int main(int argc, char **argv)
{
	static struct config cfg;
	char err[512] = "";
	bool root_handlers = false;
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
	if (cfg.fork_fd < 0 && check_handler_user(&cfg, &root_handlers, err, sizeof(err)) < 0) {
		fprintf(stderr, "claimd: %s\n", err);
		return 2;
	}
	/* Handlers run as the user claimd runs as, or --handler-user: root only when asked
	 * for. */
	if (cfg.fork_fd < 0 && root_handlers && strcmp(cfg.handler, "noop") != 0 &&
	    !cfg.allow_root) {
		fprintf(stderr, "claimd: handlers would run as root: give --user NAME (claimd "
			"drops to it after start-up) or --handler-user NAME, or --allow-root\n");
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
		r = supervisor_main(&cfg, argc, argv, &console_ops);
	store_library_end();
	return r;
}
