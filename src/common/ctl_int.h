/* ctl_int — the control protocol's grammar tables, shared by the codec (ctl.c) and the
 * command-line and named-parameter forms (ctl_args.c); no one else includes this. */
#ifndef CLAIMD_CTL_INT_H
#define CLAIMD_CTL_INT_H

#include "common/ctl.h"
#include "common/errmsg.h"   /* errmsg_invalid: a message in err, -EINVAL */

#define BIT(f) (1ull << (f))

enum type {
	T_TEXT,   /* 1..max bytes, no control characters */
	T_BYTES,  /* 0..max bytes, anything */
	T_UINT,   /* min..max */
	T_INT,    /* min..max, may be negative */
	T_FLAG,   /* "1" on the wire, a bare option on the command line */
};

/* How claimctl's command line writes a number. */
enum cli_form {
	CLI_NUMBER,
	CLI_DURATION,     /* "1.5s", "100ms", "5m", "1h"; a bare number is seconds */
	CLI_DURATION_MS,  /* the same, but a bare number is milliseconds */
};

struct field_def {
	const char *name;     /* on the wire */
	const char *option;   /* on the command line, or NULL (positional only) */
	const char *meta;     /* the option's value in usage texts */
	enum type type;
	enum cli_form cli;
	long long min;
	unsigned long long max;   /* T_TEXT, T_BYTES: bytes */
	size_t off;               /* in struct ctl_request */
	size_t size;              /* of a number there (4 or 8) */
};

struct verb_def {
	const char *name;
	uint64_t takes, needs;         /* fields (bits) it may have, and must */
	enum ctl_field positional[2];  /* command-line arguments without an option, in order */
	size_t npositional;
	const char *cli_queue;         /* on the command line, the queue when none is given */
	const char *synopsis;          /* after "claimctl [--control PATH] " */
	const char *help;
	/* Rules between fields; NULL: none. */
	int (*check)(const struct ctl_request *r, char *err, size_t errlen);
};

extern const struct field_def ctl_fields[CTL_FIELD_COUNT];
extern const struct verb_def ctl_verbs[CTL_VERB_COUNT];

/* Checks a decoded value (s[0..len), NUL-terminated) of field f and stores it in r. label
 * names the field in messages (its wire name, or its command-line option). */
int ctl_store_value(struct ctl_request *r, enum ctl_field f, const char *label, const char *s,
		    size_t len, char *err, size_t errlen);
/* The verb named s[0..len), or -1. */
int ctl_find_verb(const char *s, size_t len);
/* The rules every request follows, whichever way it came: the fields the verb needs are
 * there, and its own rules hold. */
int ctl_check_request(const struct ctl_request *r, char *err, size_t errlen);

#endif
