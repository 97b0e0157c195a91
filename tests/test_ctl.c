/* The control protocol codec (common/ctl): request lines that decode and what they decode to,
 * lines that are refused and why, encode -> decode round trips, claimctl's command lines, and
 * replies. Table-driven; every prefix of a good line is fed to the decoder too. */
#include "common/ctl.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ctl_decode on a private copy with room for the LF's place. */
static int decode(const char *line, struct ctl_request *r, char *err, size_t errlen, char **keep)
{
	size_t len = strlen(line);
	char *copy = malloc(len + 1);
	int rc;

	memcpy(copy, line, len + 1);
	rc = ctl_decode(copy, len, r, err, errlen);
	*keep = copy;
	return rc;
}

static const struct good {
	const char *line;
	enum ctl_verb verb;
	uint64_t have;
	const char *queue;
	const char *payload;
	size_t payload_len;
	uint64_t id;
	int32_t priority;
	uint32_t ms;       /* delay_ms, interval_ms or timeout_ms: whichever is given */
} goods[] = {
	{ "status", CTL_STATUS, 0, NULL, NULL, 0, 0, 0, 0 },
	{ "status json=1", CTL_STATUS, 1u << CTL_F_JSON, NULL, NULL, 0, 0, 0, 0 },
	{ "status json=1\r", CTL_STATUS, 1u << CTL_F_JSON, NULL, NULL, 0, 0, 0, 0 },
	{ "add queue=default payload=hello", CTL_ADD, 1u << CTL_F_QUEUE | 1u << CTL_F_PAYLOAD,
	  "default", "hello", 5, 0, 0, 0 },
	{ "add queue=mail", CTL_ADD, 1u << CTL_F_QUEUE, "mail", NULL, 0, 0, 0, 0 },
	{ "add queue=a%20b payload=%00%FFx%0a", CTL_ADD, 1u << CTL_F_QUEUE | 1u << CTL_F_PAYLOAD,
	  "a b", "\0\xffx\n", 4, 0, 0, 0 },
	{ "add payload= queue=q", CTL_ADD, 1u << CTL_F_QUEUE | 1u << CTL_F_PAYLOAD, "q", "", 0,
	  0, 0, 0 },
	{ "add queue=q priority=-10 delay_ms=4294967295", CTL_ADD,
	  1u << CTL_F_QUEUE | 1u << CTL_F_PRIORITY | 1u << CTL_F_DELAY, "q", NULL, 0, 0, -10,
	  4294967295u },
	{ "add queue=q priority=10 timeout_ms=1", CTL_ADD,
	  1u << CTL_F_QUEUE | 1u << CTL_F_PRIORITY | 1u << CTL_F_TIMEOUT, "q", NULL, 0, 0, 10, 1 },
	{ "retry id=18446744073709551615", CTL_RETRY, 1u << CTL_F_ID, NULL, NULL, 0,
	  UINT64_MAX, 0, 0 },
	{ "retry queue=q dead=1", CTL_RETRY, 1u << CTL_F_QUEUE | 1u << CTL_F_DEAD, "q", NULL, 0,
	  0, 0, 0 },
	{ "pause queue=q", CTL_PAUSE, 1u << CTL_F_QUEUE, "q", NULL, 0, 0, 0, 0 },
	{ "resume queue=%71", CTL_RESUME, 1u << CTL_F_QUEUE, "q", NULL, 0, 0, 0, 0 },
	{ "pause schedule=nightly", CTL_PAUSE, 1u << CTL_F_SCHEDULE, NULL, NULL, 0, 0, 0, 0 },
	{ "schedule name=n cron=%2A%20%2A%20%2A%20%2A%20%2A tz=Europe%2FBerlin catch_up=all paused=1 "
	  "queue=q payload=x timeout_ms=5",
	  CTL_SCHEDULE, 1u << CTL_F_NAME | 1u << CTL_F_CRON | 1u << CTL_F_ZONE |
	  1u << CTL_F_CATCH_UP | 1u << CTL_F_PAUSED | 1u << CTL_F_QUEUE | 1u << CTL_F_PAYLOAD |
	  1u << CTL_F_TIMEOUT, "q", "x", 1, 0, 0, 5 },
	{ "schedules", CTL_SCHEDULES, 0, NULL, NULL, 0, 0, 0, 0 },
	{ "jobs state=any group=g dedupe=k id=5 error=50%25_", CTL_JOBS,
	  1ull << CTL_F_STATE | 1ull << CTL_F_GROUP | 1ull << CTL_F_DEDUPE | 1ull << CTL_F_ID |
	  1ull << CTL_F_ERROR, NULL, NULL, 0, 5, 0, 0 },
	{ "bulk action=cancel queue=q state=claimed confirm=0", CTL_BULK,
	  1ull << CTL_F_ACTION | 1ull << CTL_F_QUEUE | 1ull << CTL_F_STATE | 1ull << CTL_F_CONFIRM,
	  "q", NULL, 0, 0, 0, 0 },
	{ "unschedule name=n", CTL_UNSCHEDULE, 1u << CTL_F_NAME, NULL, NULL, 0, 0, 0, 0 },
	{ "limit queue=q interval_ms=0", CTL_LIMIT, 1u << CTL_F_QUEUE | 1u << CTL_F_INTERVAL, "q",
	  NULL, 0, 0, 0, 0 },
	{ "limit interval_ms=86400000 queue=q", CTL_LIMIT,
	  1u << CTL_F_QUEUE | 1u << CTL_F_INTERVAL, "q", NULL, 0, 0, 0, 86400000 },
	/* A field past the 32nd bit. */
	{ "backoff queue=q reset=1", CTL_BACKOFF, 1ull << CTL_F_QUEUE | 1ull << CTL_F_RESET, "q",
	  NULL, 0, 0, 0, 0 },
	{ "backoff queue=q base_ms=5 max_ms=5 jitter_pct=0", CTL_BACKOFF, 1ull << CTL_F_QUEUE |
	  1ull << CTL_F_BASE | 1ull << CTL_F_MAX | 1ull << CTL_F_JITTER, "q", NULL, 0, 0, 0, 0 },
};

static void test_good_lines(void)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct ctl_request r;
		char err[256] = "", *keep;
		int rc = decode(g->line, &r, err, sizeof(err), &keep);
		uint32_t ms;

		CHECK(rc == 0, "decode '%s': %d %s", g->line, rc, err);
		if (rc == 0) {
			CHECK(r.verb == g->verb, "'%s': verb %d", g->line, (int)r.verb);
			CHECK(r.have == g->have, "'%s': have %#llx, want %#llx", g->line,
			      (unsigned long long)r.have, (unsigned long long)g->have);
			CHECK(!g->queue || (r.queue && !strcmp(r.queue, g->queue)), "'%s': queue '%s'",
			      g->line, r.queue ? r.queue : "(null)");
			CHECK(!g->payload || (r.payload_len == g->payload_len &&
					      !memcmp(r.payload, g->payload, g->payload_len)),
			      "'%s': payload of %zu bytes", g->line, r.payload_len);
			CHECK(r.id == g->id, "'%s': id %llu", g->line, (unsigned long long)r.id);
			CHECK(r.priority == g->priority, "'%s': priority %d", g->line, (int)r.priority);
			ms = r.delay_ms | r.interval_ms | r.timeout_ms;
			CHECK(ms == g->ms, "'%s': ms %u", g->line, ms);
		}
		free(keep);
	}
}

static const struct bad {
	const char *line;
	const char *says;  /* part of the message */
} bads[] = {
	{ "", "unknown request" },
	{ "frobnicate", "unknown request 'frobnicate'" },
	{ "STATUS", "unknown request" },
	{ "status ", "empty field" },
	{ "status  json=1", "empty field" },
	{ "status json", "not name=value" },
	{ "status json=2", "json takes no value but 1" },
	{ "status queue=q", "unknown field 'queue'" },
	{ "add payload=x", "queue is required" },
	{ "bulk queue=q", "action is required" },
	{ "bulk action=frob", "action 'frob' is not retry, discard or cancel" },
	{ "bulk action=retry state=ready", "retry acts on dead rows, not ready ones" },
	{ "bulk action=discard state=claimed", "discard acts on ready and dead rows" },
	{ "bulk action=retry confirm=-1", "confirm must be a whole number" },
	{ "jobs state=bogus", "state 'bogus' is not ready, claimed, done, dead or any" },
	{ "jobs error=", "error must be 1 to 200 bytes" },
	{ "jobs id=0", "id must be a whole number" },
	{ "add queue=", "queue must be 1 to 64 bytes" },
	{ "add queue=q queue=r", "queue given twice" },
	{ "add queue=q%0a", "control character" },
	{ "add queue=q%7F", "control character" },
	{ "add queue=q payload=a b", "unknown request" /* never reached: see below */ },
	{ "add queue=q payload=a+b", "bad character" },
	{ "add queue=q payload=%4", "bad character or %-escape" },
	{ "add queue=q payload=%zz", "bad character or %-escape" },
	{ "add queue=q payload=\"x\"", "bad character" },
	{ "add queue=q priority=11", "priority must be a whole number from -10 to 10" },
	{ "add queue=q priority=-11", "priority must be" },
	{ "add queue=q priority=+1", "bad character" },
	{ "add queue=q priority=%2B1", "priority must be" },
	{ "add queue=q priority=-", "priority must be" },
	{ "add queue=q priority=", "priority must be" },
	{ "add queue=q delay_ms=-1", "delay_ms must be" },
	{ "add queue=q delay_ms=4294967296", "delay_ms must be" },
	{ "add queue=q delay_ms=1%200", "delay_ms must be" },
	{ "add queue=q delay_ms=1%000", "delay_ms must be" },
	{ "add queue=q timeout_ms=0", "timeout_ms must be" },
	{ "add queue=q max_attempts=0", "max_attempts must be" },
	{ "add queue=q run_at=tomorrow", "run_at 'tomorrow' is not" },
	{ "add queue=q run_at=2030-01-02%2003%3A04", "is not 'YYYY-MM-DD" },
	{ "add queue=q run_at=2030-01-02T03%3A04%3A05%2B2", "is not 'YYYY-MM-DD" },
	{ "add queue=q run_at=2030-01-02%2003%3A04%3A05.", "is not 'YYYY-MM-DD" },
	{ "add queue=q run_at=2030-01-02%2003%3A04%3A05.1234567", "is not 'YYYY-MM-DD" },
	{ "add queue=q max_attempts=1000001", "max_attempts must be" },
	{ "add queue=q dead=1", "unknown field 'dead'" },
	{ "retry", "retry takes an item id" },
	{ "retry id=0", "id must be" },
	{ "retry id=18446744073709551616", "id must be" },
	{ "retry queue=q", "retry takes an item id" },
	{ "retry dead=1", "retry takes an item id" },
	{ "retry id=1 queue=q dead=1", "retry takes an item id" },
	{ "pause", "pause takes a queue NAME, or --schedule NAME" },
	{ "pause queue=q schedule=s", "pause takes a queue NAME, or --schedule NAME" },
	{ "schedule name=n", "cron is required" },
	{ "schedule name=n cron=x catch_up=some", "catch_up 'some' is not one, all or none" },
	{ "unschedule", "name is required" },
	{ "limit queue=q", "limit needs --interval" },
	{ "limit queue=q concurrency=2", "give --group KEY, or --each-group" },
	{ "limit queue=q group=k each_group=1 burst=2", "not both" },
	{ "limit queue=q burst=0", "burst must be" },
	{ "limit queue=q interval_ms=86400001", "interval_ms must be" },
	{ "backoff queue=q", "backoff takes --base DUR, --max DUR and/or --jitter PCT, or --reset" },
	{ "backoff queue=q reset=1 jitter_pct=0", "or --reset alone" },
	{ "backoff queue=q base_ms=2000 max_ms=1000", "the maximum (1000 ms) is below the base" },
	{ "backoff queue=q jitter_pct=101", "jitter_pct must be a whole number from 0 to 100" },
	{ "backoff queue=q base_ms=0", "base_ms must be a whole number from 1 to 604800000" },
	{ "backoff queue=q max_ms=604800001", "max_ms must be" },
	{ "backoff queue=q base_ms=-1", "base_ms must be" },
	{ "backoff base_ms=1", "queue is required" },
	{ "backoff queue=a%09b base_ms=1", "queue has a control character" },
	{ "=x", "unknown request" },
};

static void test_bad_lines(void)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		struct ctl_request r;
		char err[256] = "", *keep;
		int rc = decode(b->line, &r, err, sizeof(err), &keep);

		free(keep);
		if (!strcmp(b->line, "add queue=q payload=a b")) {
			/* "b" alone is not name=value */
			CHECK(rc == -EINVAL && strstr(err, "not name=value"), "'%s': %d '%s'", b->line,
			      rc, err);
			continue;
		}
		CHECK(rc == -EINVAL, "decode '%s' gave %d, want -EINVAL", b->line, rc);
		CHECK(strstr(err, b->says) != NULL, "decode '%s': message '%s' lacks '%s'", b->line,
		      err, b->says);
	}
}

/* Every prefix of a good line decodes to a request or to a clear refusal; none crashes (run
 * under the sanitizers) and a cut %-escape is always refused. */
static void test_prefixes(void)
{
	const char *line = "add queue=q%20x payload=%00%ffabc priority=-3 dedupe=k%25 group=g";

	for (size_t n = 0; n <= strlen(line); n++) {
		char *copy = malloc(n + 1), err[256] = "";
		struct ctl_request r;
		int rc;

		memcpy(copy, line, n);
		copy[n] = '\n';
		rc = ctl_decode(copy, n, &r, err, sizeof(err));
		CHECK(rc == 0 || (rc == -EINVAL && err[0]), "prefix %zu: %d '%s'", n, rc, err);
		if (n > 0 && line[n - 1] == '%')
			CHECK(rc == -EINVAL, "prefix %zu ends in a cut escape but decoded", n);
		free(copy);
	}
}

static void test_round_trip(void)
{
	static const unsigned char bytes[] = { 0, 1, ' ', '%', '=', '\n', '\r', 0x7f, 0x80, 0xff,
					       'a', '~', '-', '.', '_' };
	struct ctl_request in, out;
	struct buf b;
	char err[256] = "";
	int rc;

	memset(&in, 0, sizeof(in));
	in.verb = CTL_ADD;
	in.have = 1u << CTL_F_QUEUE | 1u << CTL_F_PAYLOAD | 1u << CTL_F_RUN_AT |
		  1u << CTL_F_DELAY | 1u << CTL_F_PERIOD | 1u << CTL_F_MAX_ATTEMPTS |
		  1u << CTL_F_TIMEOUT | 1u << CTL_F_DEDUPE | 1u << CTL_F_PRIORITY | 1u << CTL_F_GROUP;
	in.queue = "mail q";
	in.payload = bytes;
	in.payload_len = sizeof(bytes);
	in.run_at = "2030-01-02 03:04:05";
	in.delay_ms = 1;
	in.period_ms = 1800000;
	in.max_attempts = 9;
	in.timeout_ms = 20000;
	in.dedupe = "order=7%";
	in.priority = -5;
	in.group = "g\xc3\xa9";
	buf_init(&b);
	rc = ctl_encode(&in, &b, err, sizeof(err));
	CHECK(rc == 0, "encode: %d %s", rc, err);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n' && !memchr(b.data, '\n', b.len - 1),
	      "encoded request is not one line");
	rc = ctl_decode(b.data, b.len - 1, &out, err, sizeof(err));
	CHECK(rc == 0, "decode of encoded: %d %s", rc, err);
	if (rc == 0) {
		CHECK(out.have == in.have, "have %#llx", (unsigned long long)out.have);
		CHECK(!strcmp(out.queue, in.queue) && !strcmp(out.run_at, in.run_at) &&
		      !strcmp(out.dedupe, in.dedupe) && !strcmp(out.group, in.group), "strings");
		CHECK(out.payload_len == sizeof(bytes) && !memcmp(out.payload, bytes, sizeof(bytes)),
		      "payload bytes");
		CHECK(out.delay_ms == 1 && out.period_ms == 1800000 && out.max_attempts == 9 &&
		      out.timeout_ms == 20000 && out.priority == -5, "numbers");
	}
	/* encode refuses what decode would. */
	buf_reset(&b);
	in.priority = 11;
	rc = ctl_encode(&in, &b, err, sizeof(err));
	CHECK(rc == -EINVAL && strstr(err, "priority") && b.len == 0, "encode priority 11: %d %s",
	      rc, err);
	in.priority = 0;
	in.have |= 1u << CTL_F_DEAD;
	rc = ctl_encode(&in, &b, err, sizeof(err));
	CHECK(rc == -EINVAL && b.len == 0, "encode add with dead: %d", rc);
	buf_free(&b);
}

static const struct cli {
	const char *argv[12];
	int ok;               /* 1: parses */
	const char *says;     /* the line it encodes to, or part of the message */
} clis[] = {
	{ { "status" }, 1, "status\n" },
	{ { "status", "--json" }, 1, "status json=1\n" },
	{ { "status", "--json", "x" }, 0, "unexpected argument 'x'" },
	{ { "add", "hi there" }, 1, "add queue=default payload=hi%20there\n" },
	{ { "add" }, 1, "add queue=default\n" },
	{ { "add", "--queue", "mail", "--delay", "1h", "--max-attempts", "9", "--timeout", "20s",
	    "--period", "30m", "x" }, 1,
	  "add queue=mail payload=x delay_ms=3600000 period_ms=1800000 max_attempts=9 "
	  "timeout_ms=20000\n" },
	{ { "add", "--priority", "-5", "--group", "g", "--dedupe", "k", "x" }, 1,
	  "add queue=default payload=x dedupe=k priority=-5 group=g\n" },
	{ { "add", "--priority", "11", "x" }, 0, "--priority must be a whole number from -10 to 10" },
	{ { "add", "--timeout", "0", "x" }, 0, "--timeout must be" },
	{ { "add", "--delay", "soon", "x" }, 0, "'soon' is not a duration" },
	{ { "add", "--frobnicate", "1", "x" }, 0, "unknown option '--frobnicate'" },
	{ { "add", "--queue" }, 0, "--queue needs a value" },
	{ { "add", "x", "y" }, 0, "unexpected argument 'y'" },
	{ { "add", "--queue", "a", "--queue", "b" }, 0, "--queue given twice" },
	{ { "retry", "17" }, 1, "retry id=17\n" },
	{ { "retry", "nope" }, 0, "retry: ID must be a whole number" },
	{ { "retry", "--queue", "q", "--dead" }, 1, "retry queue=q dead=1\n" },
	{ { "retry", "--queue", "q" }, 0, "retry takes an item id" },
	{ { "pause", "q" }, 1, "pause queue=q\n" },
	{ { "pause" }, 0, "pause takes a queue NAME, or --schedule NAME" },
	{ { "resume", "q", "r" }, 0, "unexpected argument 'r'" },
	{ { "pause", "--schedule", "nightly" }, 1, "pause schedule=nightly\n" },
	{ { "schedule", "n", "--cron", "@daily", "--tz", "UTC", "--catch-up", "none", "x" }, 1,
	  "schedule payload=x name=n cron=%40daily tz=UTC catch_up=none\n" },
	{ { "schedule", "n", "x" }, 0, "cron is required" },
	{ { "schedules", "n" }, 1, "schedules name=n\n" },
	{ { "unschedule" }, 0, "name is required" },
	{ { "limit", "q", "--interval", "250" }, 1, "limit queue=q interval_ms=250\n" },
	{ { "limit", "q", "--interval", "1.5s" }, 1, "limit queue=q interval_ms=1500\n" },
	{ { "limit", "q" }, 0, "limit needs --interval" },
	{ { "limit", "q", "--group", "tenant 7", "--concurrency", "3", "--burst", "5" }, 1,
	  "limit queue=q group=tenant%207 burst=5 concurrency=3\n" },
	{ { "limit", "q", "--each-group", "--interval", "1s" }, 1,
	  "limit queue=q interval_ms=1000 each_group=1\n" },
	{ { "limits", "q", "--json" }, 1, "limits queue=q json=1\n" },
	{ { "backoff", "q", "--base", "2s", "--max", "1m", "--jitter", "0" }, 1,
	  "backoff queue=q base_ms=2000 max_ms=60000 jitter_pct=0\n" },
	{ { "backoff", "q", "--base", "1.5" }, 1, "backoff queue=q base_ms=1500\n" },
	{ { "backoff", "q", "--reset" }, 1, "backoff queue=q reset=1\n" },
	{ { "backoff", "q", "--jitter", "0.25" }, 0, "--jitter must be a whole number from 0 to 100" },
	{ { "backoff", "q", "--base", "-1s" }, 0, "'-1s' is not a duration" },
	{ { "backoff", "q", "--base", "1m", "--max", "1s" }, 0, "the maximum (1000 ms) is below" },
	{ { "backoff", "q" }, 0, "backoff takes --base DUR" },
	{ { "stats", "--queue", "q", "--since", "2d", "--step", "5m", "--json" }, 1,
	  "stats queue=q json=1 since_ms=172800000 step_ms=300000\n" },
	{ { "stats", "--from", "2026-09-21T00:00:00Z", "--to", "2026-09-21 01:00" }, 0,
	  "stats: to" },
	{ { "stats", "--from", "2026-09-21T00:00:00Z" }, 1,
	  "stats from=2026-09-21T00%3A00%3A00Z\n" },
	{ { "stats", "--step", "90" }, 0, "not whole minutes" },
	{ { "stats", "q" }, 0, "unexpected argument 'q'" },
	{ { "frobnicate" }, 0, "unknown command 'frobnicate'" },
};

static void test_command_lines(void)
{
	for (size_t i = 0; i < sizeof(clis) / sizeof(clis[0]); i++) {
		const struct cli *c = &clis[i];
		struct ctl_request r;
		char err[256] = "";
		char *argv[12];
		struct buf b;
		int argc = 0, rc;

		while (argc < 12 && c->argv[argc]) {
			argv[argc] = (char *)(uintptr_t)c->argv[argc];
			argc++;
		}
		rc = ctl_from_argv(argc, argv, &r, err, sizeof(err));
		if (!c->ok) {
			CHECK(rc == -EINVAL && strstr(err, c->says), "argv %s ...: %d '%s', want '%s'",
			      c->argv[0], rc, err, c->says);
			continue;
		}
		CHECK(rc == 0, "argv %s %s: %d %s", c->argv[0], c->argv[1] ? c->argv[1] : "", rc, err);
		if (rc < 0)
			continue;
		buf_init(&b);
		rc = ctl_encode(&r, &b, err, sizeof(err));
		CHECK(rc == 0 && !strcmp(b.data, c->says), "argv %s: encoded '%s', want '%s' (%s)",
		      c->argv[0], b.data ? b.data : "", c->says, err);
		buf_free(&b);
	}
}

static void test_stdin_and_usage(void)
{
	struct ctl_request r;
	char *add[] = { "add" }, *add_x[] = { "add", "x" }, *status[] = { "status" };
	char err[256];

	CHECK(ctl_from_argv(1, add, &r, err, sizeof(err)) == 0 && ctl_wants_stdin(&r),
	      "add without payload wants stdin");
	CHECK(ctl_from_argv(2, add_x, &r, err, sizeof(err)) == 0 && !ctl_wants_stdin(&r),
	      "add x does not want stdin");
	CHECK(ctl_from_argv(1, status, &r, err, sizeof(err)) == 0 && !ctl_wants_stdin(&r),
	      "status does not want stdin");
	for (int v = 0; v < CTL_VERB_COUNT; v++) {
		char want[64], name[32], json[] = "--json", *argv[3] = { name, json, NULL };
		snprintf(name, sizeof(name), "%s", ctl_verb_name(v));
		snprintf(want, sizeof(want), "  %s", ctl_verb_name(v));
		CHECK(strstr(ctl_usage(), want), "usage lacks '%s'", want);
		/* Every verb takes --json (it may still want its arguments). */
		CHECK(ctl_from_argv(2, argv, &r, err, sizeof(err)) == 0 ||
		      !strstr(err, "unknown option"), "%s --json: %s", argv[0], err);
	}
}

static void test_replies(void)
{
	static const struct {
		const char *text;
		int rc;
		const char *body;
	} cases[] = {
		{ "ok\n17\n", 1, "17\n" },
		{ "ok\n", 1, "" },
		{ "error: no such thing\n", 0, "no such thing" },
		{ "error: two\nlines\n", -EBADMSG, NULL },
		{ "error: no newline", -EBADMSG, NULL },
		{ "", -EBADMSG, NULL },
		{ "ok", -EBADMSG, NULL },
		{ "17\n", -EBADMSG, NULL },
	};
	struct buf b;
	const char *body;
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = ctl_reply_parse(cases[i].text, strlen(cases[i].text), &body, &len);
		CHECK(rc == cases[i].rc, "reply '%s': %d", cases[i].text, rc);
		if (rc >= 0)
			CHECK(len == strlen(cases[i].body) && !memcmp(body, cases[i].body, len),
			      "reply '%s': body '%.*s'", cases[i].text, (int)len, body);
	}
	buf_init(&b);
	ctl_reply_error(&b, "line one\nline two");
	CHECK(!strcmp(b.data, "error: line one line two\n"), "error reply '%s'", b.data);
	CHECK(ctl_reply_parse(b.data, b.len, &body, &len) == 0, "error reply parses");
	buf_reset(&b);
	ctl_reply_ok(&b, "42\n", 3);
	CHECK(ctl_reply_parse(b.data, b.len, &body, &len) == 1 && len == 3, "ok reply parses");
	buf_free(&b);
}

int main(void)
{
	test_good_lines();
	test_bad_lines();
	test_prefixes();
	test_round_trip();
	test_command_lines();
	test_stdin_and_usage();
	test_replies();
	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok - ctl\n");
	return 0;
}
