/* The control protocol's requests in the forms people write: claimctl's command line
 * (options, positional arguments, durations with units) and named parameters (the HTTP
 * API's query strings). Both are checked by the grammar tables of ctl.c, as on the wire. */
#include "common/ctl_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

static int find_option(const struct verb_def *v, const char *opt)
{
	for (int f = 0; f < CTL_FIELD_COUNT; f++)
		if ((v->takes & BIT(f)) && ctl_fields[f].option && !strcmp(ctl_fields[f].option, opt))
			return f;
	return -1;
}

/* A command-line value of field f into r: durations become milliseconds, the rest is checked
 * as on the wire. */
static int cli_value(struct ctl_request *r, enum ctl_field f, const char *label, const char *arg,
		     char *err, size_t errlen)
{
	const struct field_def *d = &ctl_fields[f];
	char num[32];
	unsigned ms;

	if (d->type == T_FLAG)
		return ctl_store_value(r, f, label, "1", 1, err, errlen);
	if (d->cli == CLI_NUMBER || (d->cli == CLI_DURATION_MS && *arg &&
				     strspn(arg, "0123456789") == strlen(arg)))
		return ctl_store_value(r, f, label, arg, strlen(arg), err, errlen);
	if (config_parse_duration(arg, &ms) < 0)
		return errmsg_invalid(err, errlen, "%s: %s: '%s' is not a duration (e.g. 500ms, 30s, 5m, 1h)",
			    ctl_verbs[r->verb].name, label, arg);
	snprintf(num, sizeof(num), "%u", ms);
	return ctl_store_value(r, f, label, num, strlen(num), err, errlen);
}

int ctl_from_argv(int argc, char **argv, struct ctl_request *ret, char *err, size_t errlen)
{
	const struct verb_def *v;
	struct ctl_request r;
	size_t pos = 0;
	int vi, f, rc;

	memset(&r, 0, sizeof(r));
	if (argc < 1)
		return errmsg_invalid(err, errlen, "no command given");
	vi = ctl_find_verb(argv[0], strlen(argv[0]));
	if (vi < 0)
		return errmsg_invalid(err, errlen, "unknown command '%s'", argv[0]);
	v = &ctl_verbs[vi];
	r.verb = (enum ctl_verb)vi;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *label;
		if (!strncmp(arg, "--", 2)) {
			f = find_option(v, arg);
			if (f < 0)
				return errmsg_invalid(err, errlen, "%s: unknown option '%s'", v->name, arg);
			label = ctl_fields[f].option;
			if (ctl_fields[f].type != T_FLAG) {
				if (i + 1 >= argc)
					return errmsg_invalid(err, errlen, "%s: %s needs a value", v->name, arg);
				arg = argv[++i];
			}
		} else {
			if (pos >= v->npositional)
				return errmsg_invalid(err, errlen, "%s: unexpected argument '%s'", v->name, arg);
			f = (int)v->positional[pos++];
			label = ctl_fields[f].meta;
		}
		if (r.have & BIT(f))
			return errmsg_invalid(err, errlen, "%s: %s given twice", v->name, label);
		r.have |= BIT(f);
		rc = cli_value(&r, (enum ctl_field)f, label, arg, err, errlen);
		if (rc < 0)
			return rc;
	}
	if (v->cli_queue && !ctl_has(&r, CTL_F_QUEUE)) {
		r.queue = v->cli_queue;
		r.have |= BIT(CTL_F_QUEUE);
	}
	rc = ctl_check_request(&r, err, errlen);
	if (rc < 0)
		return rc;
	*ret = r;
	return 0;
}

/* Whether name is field f's parameter name: its option without "--", '-' read as '_', or
 * for a field with no option its wire name. */
static bool param_is(const struct field_def *d, const char *name)
{
	const char *o = d->option;

	if (!o)
		return !strcmp(d->name, name);
	for (o += 2; *o && *name; o++, name++)
		if (*name != (*o == '-' ? '_' : *o))
			return false;
	return !*o && !*name;
}

int ctl_from_params(enum ctl_verb verb, const char *const *names, const char *const *values,
		    size_t n, const unsigned char *payload, size_t payload_len,
		    struct ctl_request *ret, char *err, size_t errlen)
{
	const struct verb_def *v;
	struct ctl_request r;
	int f, rc;

	if ((unsigned)verb >= CTL_VERB_COUNT)
		return errmsg_invalid(err, errlen, "unknown request");
	v = &ctl_verbs[verb];
	memset(&r, 0, sizeof(r));
	r.verb = verb;
	for (size_t i = 0; i < n; i++) {
		for (f = 0; f < CTL_FIELD_COUNT; f++)
			if ((v->takes & BIT(f)) && f != CTL_F_PAYLOAD && param_is(&ctl_fields[f], names[i]))
				break;
		if (f == CTL_FIELD_COUNT)
			return errmsg_invalid(err, errlen, "%s: unknown parameter '%.40s'", v->name, names[i]);
		if (r.have & BIT(f))
			return errmsg_invalid(err, errlen, "%s: %s given twice", v->name, names[i]);
		r.have |= BIT(f);
		/* A flag as a bare "?json" or "?json=1". */
		if (ctl_fields[f].type == T_FLAG && *values[i] && strcmp(values[i], "1"))
			return errmsg_invalid(err, errlen, "%s: %s takes no value but 1", v->name, names[i]);
		rc = cli_value(&r, (enum ctl_field)f, names[i], values[i], err, errlen);
		if (rc < 0)
			return rc;
	}
	if (payload) {
		if (!(v->takes & BIT(CTL_F_PAYLOAD)))
			return errmsg_invalid(err, errlen, "%s: takes no payload", v->name);
		if (payload_len > ctl_fields[CTL_F_PAYLOAD].max)
			return errmsg_invalid(err, errlen, "%s: payload is over %llu bytes", v->name,
					ctl_fields[CTL_F_PAYLOAD].max);
		r.payload = payload;
		r.payload_len = payload_len;
		r.have |= BIT(CTL_F_PAYLOAD);
	}
	rc = ctl_check_request(&r, err, errlen);
	if (rc < 0)
		return rc;
	*ret = r;
	return 0;
}

bool ctl_wants_stdin(const struct ctl_request *req)
{
	return (unsigned)req->verb < CTL_VERB_COUNT &&
	       (ctl_verbs[req->verb].takes & BIT(CTL_F_PAYLOAD)) && !ctl_has(req, CTL_F_PAYLOAD);
}

const char *ctl_usage(void)
{
	static char text[8192];
	size_t n = 0;

	if (text[0])
		return text;
	for (int v = 0; v < CTL_VERB_COUNT && n < sizeof(text); v++) {
		const char *syn = ctl_verbs[v].synopsis, *h = ctl_verbs[v].help;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "  ");
		while (*syn && n < sizeof(text)) {  /* continuation lines under the verb's words */
			size_t k = strcspn(syn, "\n");
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%.*s\n%s", (int)k, syn,
					      syn[k] ? "      " : "");
			syn += k + (syn[k] != 0);
		}
		while (*h && n < sizeof(text)) {
			size_t k = strcspn(h, "\n");
			n += (size_t)snprintf(text + n, sizeof(text) - n, "      %.*s\n", (int)k, h);
			h += k + (h[k] != 0);
		}
	}
	return text;
}
