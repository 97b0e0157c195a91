/* config — claimd's settings: one table of options (config.c), each settable as a
 * command-line flag (--workers 8), an environment variable (CLAIMD_WORKERS=8) and a key of the
 * config file (workers = 8, in the INI file --config or $CLAIMD_CONFIG names, read by inih);
 * a flag beats the environment, which beats the file. An unknown key or a bad value is an
 * error naming where it came from (the file and line, the variable, the flag). No logging,
 * no I/O beyond getenv, reading the config file and looking at the directories a default
 * control socket may go in. Durations take a unit (ms, s, m, h, d); a bare number is seconds
 * (at most 49 days: milliseconds in 32 bits). */
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
#define CONFIG_FILE_MAX 4096

enum config_log_format { CONFIG_LOG_TEXT, CONFIG_LOG_LOGFMT, CONFIG_LOG_JSON }; /* log.h's */
enum config_wake { CONFIG_WAKE_AUTO, CONFIG_WAKE_BINLOG, CONFIG_WAKE_POLL };

struct config {
	char config_file[CONFIG_FILE_MAX];  /* "" = none */
	char dsn_text[1024];
	struct dsn dsn;
	char handler[CONFIG_HANDLER_MAX];
	char queue[CONFIG_QUEUE_MAX + 1];   /* the first of queues */
	char queues[CONFIG_QUEUES_MAX][CONFIG_QUEUE_MAX + 1];
	unsigned nqueues;
	char queue_list[CONFIG_QUEUES_MAX * (CONFIG_QUEUE_MAX + 1)]; /* "a,b" for people */
	char control[CONFIG_PATH_MAX];
	char control_group[64];   /* "" = the socket is 0600, claimd's user's only */
	unsigned workers;
	unsigned batch;     /* rows per claim, 1..256; 0: auto (worker/prefetch.h) */
	unsigned concurrency;   /* items one worker runs at once, 1..256 */
	unsigned claimers;      /* claim transactions at once per supervisor */
	unsigned lease_ms;
	unsigned timeout_ms;
	unsigned hang_ms;
	unsigned kill_grace_ms;
	unsigned grace_ms;
	unsigned heartbeat_ms;
	unsigned poll_ms;
	int wake;               /* enum config_wake */
	unsigned retry_base_ms;
	unsigned keep_done_ms;  /* 0 = keep done rows for ever */
	unsigned keep_dead_ms;  /* 0 = keep dead rows for ever */
	unsigned dedupe_window_ms;
	unsigned maintenance_ms;
	unsigned keep_history_ms;     /* the queues' history (queue_history); 0 = for ever */
	unsigned history_flush_ms;    /* how often this supervisor writes its part of it */
	int log_level;          /* 0 error .. 3 debug (common/log.h) */
	int log_format;         /* enum config_log_format */
	bool log_items;         /* a log line per finished item */
	/* HTTP (--http HOST:PORT): http[0] == 0 when off. */
	char http[64];
	struct sockaddr_storage http_addr;
	socklen_t http_addrlen;
	bool http_loopback;
	char http_token_file[4096];   /* "" = a token made at start (or none: http_no_auth) */
	char http_token[CONFIG_TOKEN_MAX + 1];  /* read from it at start (not by config_parse) */
	char http_read_token_file[4096];        /* "" = no read-only token */
	char http_read_token[CONFIG_TOKEN_MAX + 1];  /* read from it at start */
	bool http_no_auth;            /* --http-insecure-no-auth: no token (loopback only) */
	bool http_cleartext;          /* a token over plain HTTP on a non-loopback address */
	char http_tls_cert[4096];     /* PEM files: HTTPS; "" = plain HTTP */
	char http_tls_key[4096];
	char http_hosts[1024];        /* more names the Host header may give: "a,b" */
	unsigned http_max_conns;
	unsigned http_max_conns_per_ip;
	unsigned http_max_streams;    /* 0: auto (config_http_max_streams) */
	bool exec_result;   /* an exec: handler's stdout is the row's result */
	bool pipe_ready;    /* a pipe: co-process says {"ready":true} before it is sent work */
	char user[64];      /* drop to this user after start-up ("" = stay) */
	char handler_user[64];   /* exec: and pipe: handlers run as this user ("" = claimd's) */
	bool allow_root;    /* handlers may run as root */
	bool migrate;       /* --migrate: bring the schema up to date and exit */
	bool doctor;        /* --doctor: check the set-up and exit */
	bool json;          /* --json: --migrate's and --doctor's report as one JSON object */
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
	CONFIG_EXAMPLE = 3,  /* --example-config: print config_example() and exit 0 */
};

/* Parse the config file (if --config or $CLAIMD_CONFIG names one), the environment and argv,
 * in that order, each overriding the one before. Returns enum config_result (>= 0), or
 * -EINVAL with a one-line message in err naming where the bad setting came from ("--workers:
 * ...", "CLAIMD_WORKERS: ...", "/etc/claimd/claimd.conf:12: unknown key 'wrokers'"). Uses
 * getopt_long: resets optind itself. */
int config_parse(int argc, char **argv, struct config *ret, char *err, size_t errlen);

/* What a reload changes, compared: the options whose values differ between a and b that
 * only a restart applies, as "dsn, queue" into out ("" when none). */
void config_needs_restart(const struct config *a, const struct config *b, char *out,
			  size_t outlen);
/* Whether a worker started from b would differ from one started from a (its options
 * changed: the workers are replaced one by one). */
bool config_workers_differ(const struct config *a, const struct config *b);

/* Copy into cur what a reload applies from next: every option but those only a restart
 * applies (config_needs_restart names them). */
void config_apply_live(struct config *cur, const struct config *next);

/* --http-max-streams as it applies: the number given, or for auto half of
 * --http-max-connections (rounded down). */
unsigned config_http_max_streams(const struct config *c);

/* "100ms", "2s", "1.5", "5m", "1h" -> milliseconds. Returns 0 or -EINVAL (also for values
 * over ~49 days or negative). */
int config_parse_duration(const char *s, unsigned *ret_ms);

/* "127.0.0.1:8080", "[::1]:8080", "localhost:8080" -> an address. Returns 0 or -EINVAL. */
int config_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			bool *ret_loopback);

/* Where the control socket is when neither --control, CLAIMD_CONTROL nor the config file
 * says (config_control.c). Never in a directory others may write in (such as /tmp), where
 * another user could take the name first.
 *
 * CONFIG_CONTROL_LISTEN, where claimd listens: CONFIG_CONTROL_SERVICE_DIR/claimd.sock when
 * that directory is there, claimd may write in it and not everybody may (the service's,
 * systemd's RuntimeDirectory); else $XDG_RUNTIME_DIR/claimd.sock when that is a directory
 * of claimd's user's own that nobody else may write in. Neither: -ENOENT, with why in err.
 *
 * CONFIG_CONTROL_FIND, where claimctl (and --doctor) look: the service's socket when it is
 * there (or its directory cannot be searched: connecting will say why), else
 * $XDG_RUNTIME_DIR/claimd.sock when that is set, else the service's. Always a path.
 *
 * Returns 0, -ENOENT or -ENAMETOOLONG (err filled). Looks at the directories (stat). */
#define CONFIG_CONTROL_SERVICE_DIR "/run/claimd"
enum config_control_use { CONFIG_CONTROL_LISTEN, CONFIG_CONTROL_FIND };
int config_control_default(enum config_control_use use, char *out, size_t outlen, char *err,
			   size_t errlen);

/* Where the settings name the control socket for a client (claimctl): $CLAIMD_CONTROL, else
 * the control key of the config file (config_file, else $CLAIMD_CONFIG, else
 * CONFIG_DEFAULT_FILE when it is there and readable), else config_control_default(FIND).
 * A config file that was named but cannot be read is an error; other keys of the file are
 * not checked (claimd does that). *ret_from says which of them gave the path. Returns 0 or
 * a negative errno with err filled. */
#ifndef CLAIMD_SYSCONFDIR
#define CLAIMD_SYSCONFDIR "/etc"   /* meson passes the prefix's */
#endif
#define CONFIG_DEFAULT_FILE CLAIMD_SYSCONFDIR "/claimd/claimd.conf"
enum config_control_from { CONFIG_FROM_ENV, CONFIG_FROM_FILE, CONFIG_FROM_DEFAULT };
int config_control_find(const char *config_file, char *out, size_t outlen,
			enum config_control_from *ret_from, char *err, size_t errlen);

/* claimd's usage text, from the option table. */
const char *config_usage(void);

/* The example config file: every option as a commented key with its default, from the
 * table (for share/claimd/claimd.conf). */
const char *config_example(void);

#endif
