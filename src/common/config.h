/* config — claimd's command line: parsing and validation into struct config. Pure: no
 * logging, no I/O beyond getenv. Durations take a unit (ms, s, m, h); a bare number is
 * seconds. */
#ifndef CLAIMD_CONFIG_H
#define CLAIMD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/socket.h>

#include "common/dsn.h"

#ifndef CLAIMD_VERSION
#define CLAIMD_VERSION "0.1.0"   /* meson passes the project's version */
#endif

#define CONFIG_HANDLER_MAX 4096
#define CONFIG_QUEUE_MAX 64
#define CONFIG_QUEUES_MAX 16
#define CONFIG_PATH_MAX 108 /* sun_path */
#define CONFIG_TOKEN_MAX 256

struct config {
	struct dsn dsn;
	char handler[CONFIG_HANDLER_MAX];
	char queue[CONFIG_QUEUE_MAX + 1];   /* the first of queues */
	char queues[CONFIG_QUEUES_MAX][CONFIG_QUEUE_MAX + 1];
	unsigned nqueues;
	char queue_list[CONFIG_QUEUES_MAX * (CONFIG_QUEUE_MAX + 1)]; /* "a,b" for people */
	char control[CONFIG_PATH_MAX];
	unsigned workers;
	unsigned batch;
	unsigned claimers;      /* claim transactions at once per supervisor */
	unsigned lease_ms;
	unsigned timeout_ms;
	unsigned hang_ms;
	unsigned kill_grace_ms;
	unsigned grace_ms;
	unsigned heartbeat_ms;
	unsigned poll_ms;
	unsigned retry_base_ms;
	unsigned keep_done_ms;  /* 0 = keep done rows for ever */
	unsigned dedupe_window_ms;
	unsigned maintenance_ms;
	int log_level;
	/* HTTP (--http HOST:PORT): http[0] == 0 when off. */
	char http[64];
	struct sockaddr_storage http_addr;
	socklen_t http_addrlen;
	bool http_loopback;
	char http_token_file[4096];   /* "" = no token */
	char http_token[CONFIG_TOKEN_MAX + 1];  /* read from it at start (not by config_parse) */
	unsigned http_max_conns;
	bool exec_result;   /* an exec: handler's stdout is the row's result */
	/* Set only in the fork server (hidden options the supervisor passes) and its workers. */
	int fork_fd;      /* the fork server's socket; -1 in the supervisor */
	int parent_pid;   /* the supervisor */
	int worker_slot;  /* -1 but in a worker */
	int worker_fd;
};

enum config_result {
	CONFIG_RUN = 0,      /* run with *ret */
	CONFIG_HELP = 1,     /* --help was asked for: print config_usage() and exit 0 */
	CONFIG_VERSION = 2,  /* --version */
};

/* Parse argv. Returns enum config_result (>= 0), or -EINVAL with a one-line message in
 * err naming the option and what is wrong. Reads CLAIMD_DSN when --dsn is absent and
 * CLAIMD_CONTROL, XDG_RUNTIME_DIR for the default control path. Uses getopt_long: resets
 * optind itself. */
int config_parse(int argc, char **argv, struct config *ret, char *err, size_t errlen);

/* "100ms", "2s", "1.5", "5m", "1h" -> milliseconds. Returns 0 or -EINVAL (also for values
 * over ~49 days or negative). */
int config_parse_duration(const char *s, unsigned *ret_ms);

/* "127.0.0.1:8080", "[::1]:8080", "localhost:8080" -> an address. Returns 0 or -EINVAL. */
int config_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			bool *ret_loopback);

/* The default control socket path: $CLAIMD_CONTROL, else $XDG_RUNTIME_DIR/claimd.sock, else
 * /tmp/claimd-UID.sock. Returns 0 or -ENAMETOOLONG. */
int config_default_control(char *out, size_t outlen);

const char *config_usage(void);

#endif
