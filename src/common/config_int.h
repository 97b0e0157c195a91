/* config_int — the option table and what its files share: config.c (the sources: the file,
 * the environment, the command line), config_value.c (values: durations, addresses) and
 * config_text.c (the usage and the example file). Not an interface. */
#ifndef CLAIMD_CONFIG_INT_H
#define CLAIMD_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config.h"

enum kind {
	K_TEXT,      /* a string of at most the field's size */
	K_UINT,      /* min..max */
	K_UINT_AUTO, /* "auto" (0) or min..max */
	K_DURATION,  /* milliseconds; 0 allowed when min is 0 */
	K_FLAG,      /* true/false (a bare flag on the command line) */
	K_QUEUES,    /* a list, "a,b" or the option repeated */
	K_LISTEN,    /* HOST:PORT */
	K_LEVEL,     /* error, warn, info, debug */
	K_FORMAT,    /* text, logfmt, json */
	K_WAKE,      /* auto, binlog, poll */
	K_SET_LEVEL, /* --verbose, --quiet: a level, flags only */
	K_ACTION,    /* --help, --version, --config: flags only */
	K_HIDDEN,    /* the fork server's options: flags only, not in the usage */
	K_MODE,      /* --migrate, --doctor: what claimd does instead of running; flags only */
};

/* What applies a new value at a reload (SIGHUP). */
enum applies { A_SUPERVISOR, A_WORKERS, A_RESTART };

struct option_def {
	const char *name;        /* the flag without "--"; the key; CLAIMD_ + upper, '-' -> '_' */
	enum kind kind;
	const char *meta;        /* the value in the usage ("N", "DUR") */
	size_t off, size;
	unsigned long min, max;
	enum applies applies;
	const char *help;        /* lines of the usage after the flag; the default at its end */
};

extern const struct option_def config_defs[];
extern const size_t config_ndefs;

/* Options only a flag sets: actions, --verbose/--quiet, the fork server's. */
bool config_flag_only(const struct option_def *d);

/* The HTTP options together: a token unless refused on purpose (loopback only), HTTPS or the
 * cleartext acknowledged for a non-loopback address, --http for any of them. Returns 0 or
 * -EINVAL with err filled. */
int config_check_http(const struct config *c, char *err, size_t errlen);

/* c->control when no setting gave one (config_control.c): where claimd listens, decided
 * once per process; for --doctor, where claimctl would look; nothing for --migrate and the
 * fork server. Returns 0 or -errno with a message in err. */
int config_control_settle(struct config *c, char *err, size_t errlen);

/* A decimal number from lo to hi. Returns 0 or -EINVAL. */
int config_parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned *ret);

#endif
