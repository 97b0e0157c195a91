/* The control protocol's grammar is the two tables below: every field once (its name on the
 * wire and on claimctl's command line, its type and range, where it lives in struct
 * ctl_request), and every verb once (the fields it takes and needs, its positional arguments,
 * its usage). Decoding, encoding and claimctl's command line all read them, so a verb's
 * arguments are checked the same way at both ends. */
#include "common/ctl_int.h"
#include "common/errmsg.h"
#include "common/row_state.h"
#include "common/trace.h"
#include "common/utctime.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define AT(member) offsetof(struct ctl_request, member), sizeof(((struct ctl_request *)0)->member)

const struct field_def ctl_fields[CTL_FIELD_COUNT] = {
	[CTL_F_QUEUE] = { "queue", "--queue", "NAME", T_TEXT, CLI_NUMBER, 1, CTL_QUEUE_MAX,
			  AT(queue) },
	[CTL_F_PAYLOAD] = { "payload", NULL, "PAYLOAD", T_BYTES, CLI_NUMBER, 0, CTL_PAYLOAD_MAX,
			    AT(payload) },
	[CTL_F_RUN_AT] = { "run_at", "--run-at", "'YYYY-MM-DD HH:MM:SS[Z|+HH:MM]'", T_TEXT,
			   CLI_NUMBER, 1, 64, AT(run_at) },
	[CTL_F_DELAY] = { "delay_ms", "--delay", "DUR", T_UINT, CLI_DURATION, 0, UINT32_MAX,
			  AT(delay_ms) },
	[CTL_F_PERIOD] = { "period_ms", "--period", "DUR", T_UINT, CLI_DURATION, 0, UINT32_MAX,
			   AT(period_ms) },
	[CTL_F_MAX_ATTEMPTS] = { "max_attempts", "--max-attempts", "N", T_UINT, CLI_NUMBER, 1,
				 1000000, AT(max_attempts) },
	[CTL_F_TIMEOUT] = { "timeout_ms", "--timeout", "DUR", T_UINT, CLI_DURATION, 1, UINT32_MAX,
			    AT(timeout_ms) },
	[CTL_F_DEDUPE] = { "dedupe", "--dedupe", "KEY", T_TEXT, CLI_NUMBER, 1, CTL_KEY_MAX,
			   AT(dedupe) },
	[CTL_F_PRIORITY] = { "priority", "--priority", "N", T_INT, CLI_NUMBER, CTL_PRIORITY_MIN,
			     CTL_PRIORITY_MAX, AT(priority) },
	[CTL_F_GROUP] = { "group", "--group", "KEY", T_TEXT, CLI_NUMBER, 1, CTL_KEY_MAX,
			  AT(group) },
	[CTL_F_ID] = { "id", "--id", "ID", T_UINT, CLI_NUMBER, 1, UINT64_MAX, AT(id) },
	[CTL_F_DEAD] = { "dead", "--dead", NULL, T_FLAG, CLI_NUMBER, 0, 1, AT(dead) },
	[CTL_F_INTERVAL] = { "interval_ms", "--interval", "DUR", T_UINT, CLI_DURATION_MS, 0,
			     24u * 3600u * 1000u, AT(interval_ms) },
	[CTL_F_JSON] = { "json", "--json", NULL, T_FLAG, CLI_NUMBER, 0, 1, AT(json) },
	[CTL_F_CONTENT_TYPE] = { "content_type", "--content-type", "TYPE", T_TEXT, CLI_NUMBER, 1,
				 CTL_TYPE_MAX, AT(content_type) },
	[CTL_F_STATE] = { "state", "--state", "STATE", T_TEXT, CLI_NUMBER, 1, 15, AT(state) },
	[CTL_F_LIMIT] = { "limit", "--limit", "N", T_UINT, CLI_NUMBER, 1, CTL_LIST_MAX, AT(limit) },
	[CTL_F_BEFORE] = { "before", "--before", "ID", T_UINT, CLI_NUMBER, 1, UINT64_MAX,
			   AT(before) },
	[CTL_F_ALL] = { "all", "--all", NULL, T_FLAG, CLI_NUMBER, 0, 1, AT(all) },
	[CTL_F_COUNT] = { "count", NULL, "N", T_UINT, CLI_NUMBER, 1, 1024, AT(count) },
	[CTL_F_NAME] = { "name", NULL, "NAME", T_TEXT, CLI_NUMBER, 1, CTL_SCHEDULE_NAME_MAX,
			 AT(name) },
	[CTL_F_CRON] = { "cron", "--cron", "'MIN HOUR DAY MONTH WEEKDAY'", T_TEXT, CLI_NUMBER, 1,
			 CTL_CRON_MAX, AT(cron) },
	[CTL_F_ZONE] = { "tz", "--tz", "ZONE", T_TEXT, CLI_NUMBER, 1, CTL_ZONE_MAX, AT(zone) },
	[CTL_F_CATCH_UP] = { "catch_up", "--catch-up", "one|all|none", T_TEXT, CLI_NUMBER, 1, 4,
			     AT(catch_up) },
	[CTL_F_PAUSED] = { "paused", "--paused", NULL, T_FLAG, CLI_NUMBER, 0, 1, AT(paused) },
	[CTL_F_SCHEDULE] = { "schedule", "--schedule", "NAME", T_TEXT, CLI_NUMBER, 1,
			     CTL_SCHEDULE_NAME_MAX, AT(schedule) },
	[CTL_F_BURST] = { "burst", "--burst", "N", T_UINT, CLI_NUMBER, 1, 1000000, AT(burst) },
	[CTL_F_CONCURRENCY] = { "concurrency", "--concurrency", "N", T_UINT, CLI_NUMBER, 0,
				1000000, AT(concurrency) },
	[CTL_F_TRACEPARENT] = { "traceparent", "--traceparent", "00-TRACE-PARENT-FLAGS", T_TEXT,
				CLI_NUMBER, 1, 55, AT(traceparent) },
	[CTL_F_EACH_GROUP] = { "each_group", "--each-group", NULL, T_FLAG, CLI_NUMBER, 0, 1,
			       AT(each_group) },
	[CTL_F_BASE] = { "base_ms", "--base", "DUR", T_UINT, CLI_DURATION, 1, CTL_BACKOFF_MAX_MS,
			 AT(base_ms) },
	[CTL_F_MAX] = { "max_ms", "--max", "DUR", T_UINT, CLI_DURATION, 1, CTL_BACKOFF_MAX_MS,
			AT(max_ms) },
	[CTL_F_JITTER] = { "jitter_pct", "--jitter", "PCT", T_UINT, CLI_NUMBER, 0, 100,
			   AT(jitter_pct) },
	[CTL_F_RESET] = { "reset", "--reset", NULL, T_FLAG, CLI_NUMBER, 0, 1, AT(reset) },
	[CTL_F_FROM] = { "from", "--from", "TIME", T_TEXT, CLI_NUMBER, 1, 64, AT(from) },
	[CTL_F_TO] = { "to", "--to", "TIME", T_TEXT, CLI_NUMBER, 1, 64, AT(to) },
	[CTL_F_SINCE] = { "since_ms", "--since", "DUR", T_UINT, CLI_DURATION, 1000, UINT32_MAX,
			  AT(since_ms) },
	[CTL_F_STEP] = { "step_ms", "--step", "DUR", T_UINT, CLI_DURATION, 60000, 86400000,
			 AT(step_ms) },
	[CTL_F_ERROR] = { "error", "--error", "TEXT", T_TEXT, CLI_NUMBER, 1, CTL_ERROR_MAX,
			  AT(error) },
	[CTL_F_ACTION] = { "action", NULL, "retry|discard|cancel", T_TEXT, CLI_NUMBER, 1, 7,
			   AT(action) },
	[CTL_F_CONFIRM] = { "confirm", "--confirm", "N", T_UINT, CLI_NUMBER, 0, UINT64_MAX,
			    AT(confirm) },
	[CTL_F_RETRY_BASE] = { "retry_base_ms", "--retry-base", "DUR", T_UINT, CLI_DURATION, 1,
			       CTL_BACKOFF_MAX_MS, AT(retry_base_ms) },
	[CTL_F_RETRY_MAX] = { "retry_max_ms", "--retry-max", "DUR", T_UINT, CLI_DURATION, 1,
			      CTL_BACKOFF_MAX_MS, AT(retry_max_ms) },
	[CTL_F_DEDUPE_FOR] = { "dedupe_for_ms", "--dedupe-for", "DUR", T_UINT, CLI_DURATION, 0,
			       CTL_DEDUPE_FOR_MAX_MS, AT(dedupe_for_ms) },
	[CTL_F_AFTER] = { "after", "--after", "NAME", T_TEXT, CLI_NUMBER, 1, CTL_SCHEDULE_NAME_MAX,
			  AT(after) },
};


/* run_at: a time utctime_parse reads (UTC unless it says its offset), which the database
 * can hold. */
static int check_add(const struct ctl_request *r, char *err, size_t errlen)
{
	char why[200];
	int64_t us;

	if (ctl_has(r, CTL_F_TRACEPARENT) && !trace_parent_valid(r->traceparent))
		return errmsg_invalid(err, errlen, "add: traceparent '%.60s' is not a W3C traceparent "
				"(00-<32 hex>-<16 hex>-<2 hex>, lower case, ids not all zeros)",
				r->traceparent);
	if (ctl_has(r, CTL_F_RETRY_MAX) && r->retry_max_ms <
	    (ctl_has(r, CTL_F_RETRY_BASE) ? r->retry_base_ms : 1))
		return errmsg_invalid(err, errlen, "add: retry_max is below retry_base");
	if (ctl_has(r, CTL_F_DEDUPE_FOR) && !ctl_has(r, CTL_F_DEDUPE))
		return errmsg_invalid(err, errlen, "add: dedupe_for is a dedupe key's: give dedupe");
	if (!ctl_has(r, CTL_F_RUN_AT))
		return 0;
	if (utctime_parse(r->run_at, &us, why, sizeof(why)) < 0)
		return errmsg_invalid(err, errlen, "add: run_at %s", why);
	if (us < UTCTIME_DB_MIN_US || us > UTCTIME_DB_MAX_US)
		return errmsg_invalid(err, errlen, "add: run_at '%.40s' is outside " UTCTIME_DB_RANGE
				", the times the database's TIMESTAMP holds", r->run_at);
	return 0;
}

static int check_jobs(const struct ctl_request *r, char *err, size_t errlen)
{
	enum row_state st;

	if (!ctl_has(r, CTL_F_STATE) || row_state_parse(r->state, &st))
		return 0;
	if (!strcmp(r->state, "any"))
		return 0;
	return errmsg_invalid(err, errlen, "%s: state '%s' is not %s, %s, %s, %s or any",
			ctl_verbs[r->verb].name, r->state, row_state_name(ROW_READY),
			row_state_name(ROW_CLAIMED), row_state_name(ROW_DONE),
			row_state_name(ROW_DEAD));
}

/* bulk: a known action, and a state it acts on. */
static int check_bulk(const struct ctl_request *r, char *err, size_t errlen)
{
	static const struct { const char *action, *states; } acts[] = {
		{ "retry", "dead any" },
		{ "discard", "ready dead any" },
		{ "cancel", "ready claimed dead any" },
	};
	int rc = check_jobs(r, err, errlen);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		const char *st = ctl_has(r, CTL_F_STATE) ? r->state : "any", *p;
		if (strcmp(r->action, acts[i].action))
			continue;
		p = strstr(acts[i].states, st);
		if (p && (p == acts[i].states || p[-1] == ' ') &&
		    (p[strlen(st)] == ' ' || !p[strlen(st)]))
			return 0;
		return errmsg_invalid(err, errlen, "bulk: %s acts on %s rows, not %s ones", r->action,
				i == 0 ? "dead" : i == 1 ? "ready and dead" : "ready, claimed and dead",
				st);
	}
	return errmsg_invalid(err, errlen, "bulk: action '%s' is not retry, discard or cancel",
			r->action);
}

static int check_schedule(const struct ctl_request *r, char *err, size_t errlen)
{
	static const char *const catch_ups[] = { "one", "all", "none" };

	if (!ctl_has(r, CTL_F_CATCH_UP))
		return 0;
	for (size_t i = 0; i < sizeof(catch_ups) / sizeof(catch_ups[0]); i++)
		if (!strcmp(r->catch_up, catch_ups[i]))
			return 0;
	return errmsg_invalid(err, errlen, "schedule: catch_up '%s' is not one, all or none",
			r->catch_up);
}

/* pause and resume: a queue or a schedule. */
static int check_pause(const struct ctl_request *r, char *err, size_t errlen)
{
	if (ctl_has(r, CTL_F_QUEUE) == ctl_has(r, CTL_F_SCHEDULE))
		return errmsg_invalid(err, errlen, "%s takes a queue NAME, or --schedule NAME",
				ctl_verbs[r->verb].name);
	return 0;
}

/* limit: something to set; a key's concurrency needs the key (or every key). */
static int check_limit(const struct ctl_request *r, char *err, size_t errlen)
{
	bool keyed = ctl_has(r, CTL_F_GROUP) || ctl_has(r, CTL_F_EACH_GROUP);

	if (ctl_has(r, CTL_F_GROUP) && ctl_has(r, CTL_F_EACH_GROUP))
		return errmsg_invalid(err, errlen, "limit takes --group KEY or --each-group, not both");
	if (!ctl_has(r, CTL_F_INTERVAL) && !ctl_has(r, CTL_F_BURST) &&
	    !ctl_has(r, CTL_F_CONCURRENCY))
		return errmsg_invalid(err, errlen, "limit needs --interval DUR, --burst N or "
				"--concurrency N");
	if (ctl_has(r, CTL_F_CONCURRENCY) && !keyed)
		return errmsg_invalid(err, errlen, "limit: --concurrency limits the rows of one key at "
				"once: give --group KEY, or --each-group for every key");
	return 0;
}

/* backoff: something to set, --reset alone, a max not below the base. */
static int check_backoff(const struct ctl_request *r, char *err, size_t errlen)
{
	bool any = ctl_has(r, CTL_F_BASE) || ctl_has(r, CTL_F_MAX) || ctl_has(r, CTL_F_JITTER);

	if (any == ctl_has(r, CTL_F_RESET))
		return errmsg_invalid(err, errlen, "backoff takes --base DUR, --max DUR and/or --jitter "
				"PCT, or --reset alone");
	if (ctl_has(r, CTL_F_BASE) && ctl_has(r, CTL_F_MAX) && r->max_ms < r->base_ms)
		return errmsg_invalid(err, errlen, "backoff: the maximum (%u ms) is below the base (%u ms)",
				r->max_ms, r->base_ms);
	return 0;
}

/* stats: times utctime_parse reads, from or since (not both), a step of whole minutes. */
static int check_stats(const struct ctl_request *r, char *err, size_t errlen)
{
	const char *times[2] = { ctl_has(r, CTL_F_FROM) ? r->from : NULL,
				 ctl_has(r, CTL_F_TO) ? r->to : NULL };
	char why[200];
	int64_t us;

	for (int i = 0; i < 2; i++)
		if (times[i] && utctime_parse(times[i], &us, why, sizeof(why)) < 0)
			return errmsg_invalid(err, errlen, "stats: %s %s", i ? "to" : "from", why);
	if (ctl_has(r, CTL_F_FROM) && ctl_has(r, CTL_F_SINCE))
		return errmsg_invalid(err, errlen, "stats takes from or since, not both");
	if (ctl_has(r, CTL_F_STEP) && r->step_ms % 60000)
		return errmsg_invalid(err, errlen, "stats: step %u ms is not whole minutes (60, 300, "
				"3600 s ...)", r->step_ms);
	return 0;
}

static int check_retry(const struct ctl_request *r, char *err, size_t errlen)
{
	bool by_id = ctl_has(r, CTL_F_ID);
	bool by_queue = ctl_has(r, CTL_F_QUEUE) && ctl_has(r, CTL_F_DEAD);

	if (by_id == by_queue || (by_id && (ctl_has(r, CTL_F_QUEUE) || ctl_has(r, CTL_F_DEAD))))
		return errmsg_invalid(err, errlen, "retry takes an item id, or --queue NAME --dead");
	return 0;
}

const struct verb_def ctl_verbs[CTL_VERB_COUNT] = {
	[CTL_STATUS] = { "status", BIT(CTL_F_JSON) | BIT(CTL_F_ALL), 0, { 0 }, 0, NULL,
			 "status [--all]",
			 "the worker pool and the queue counts; --all:\n"
			 "every claimd sharing the database and its pool (lost ones marked)", NULL },
	[CTL_ADD] = { "add",
		      BIT(CTL_F_QUEUE) | BIT(CTL_F_PAYLOAD) | BIT(CTL_F_RUN_AT) | BIT(CTL_F_DELAY) |
		      BIT(CTL_F_PERIOD) | BIT(CTL_F_MAX_ATTEMPTS) | BIT(CTL_F_TIMEOUT) |
		      BIT(CTL_F_DEDUPE) | BIT(CTL_F_PRIORITY) | BIT(CTL_F_GROUP) |
		      BIT(CTL_F_CONTENT_TYPE) | BIT(CTL_F_TRACEPARENT) | BIT(CTL_F_JSON) |
		      BIT(CTL_F_RETRY_BASE) | BIT(CTL_F_RETRY_MAX) | BIT(CTL_F_DEDUPE_FOR),
		      BIT(CTL_F_QUEUE), { CTL_F_PAYLOAD }, 1, "default",
		      "add [--queue NAME] [--run-at 'YYYY-MM-DD HH:MM:SS']\n"
		      "[--delay DUR] [--period DUR] [--max-attempts N] [--timeout DUR]\n"
		      "[--dedupe KEY [--dedupe-for DUR]] [--priority N] [--group KEY]\n"
		      "[--retry-base DUR] [--retry-max DUR] [--content-type TYPE]\n"
		      "[--traceparent 00-TRACE-PARENT-FLAGS] [PAYLOAD]",
		      "enqueue one item (payload from the argument, else stdin, at most 1 MiB)\n"
		      "through claimd, which wakes an idle worker for it; prints the new id (with\n"
		      "--dedupe, the id of the row holding KEY if there is one); --priority -10..10,\n"
		      "smaller first; --group KEY: one at a time, in order; --retry-base/-max: its\n"
		      "own retry back-off (else its queue's); --dedupe-for: how long it keeps KEY\n"
		      "once finished (else --dedupe-window)", check_add },
	[CTL_RETRY] = { "retry", BIT(CTL_F_ID) | BIT(CTL_F_QUEUE) | BIT(CTL_F_DEAD) | BIT(CTL_F_JSON),
			0,
			{ CTL_F_ID }, 1, NULL, "retry ID | retry --queue NAME --dead",
			"put a dead row (or every dead row of a queue, 500 a transaction) back to\n"
			"ready with its attempts reset, waiting for its parents that are not done, with\n"
			"the rows its death cancelled (claimd-workflows(7)); prints how many rows", check_retry },
	[CTL_PAUSE] = { "pause", BIT(CTL_F_QUEUE) | BIT(CTL_F_SCHEDULE) | BIT(CTL_F_JSON), 0,
			{ CTL_F_QUEUE }, 1, NULL,
			"pause NAME | pause --schedule NAME",
			"stop new starts of the queue's items on every claimd sharing\n"
			"the database (running items finish); --schedule: stop the schedule adding rows",
			check_pause },
	[CTL_RESUME] = { "resume", BIT(CTL_F_QUEUE) | BIT(CTL_F_SCHEDULE) | BIT(CTL_F_JSON), 0,
			 { CTL_F_QUEUE }, 1, NULL,
			 "resume NAME | resume --schedule NAME",
			 "start them again (a schedule goes on from its next tick; the ticks of\n"
			 "the pause are not caught up)", check_pause },
	[CTL_LIMIT] = { "limit", BIT(CTL_F_QUEUE) | BIT(CTL_F_INTERVAL) | BIT(CTL_F_BURST) |
			BIT(CTL_F_CONCURRENCY) | BIT(CTL_F_GROUP) | BIT(CTL_F_EACH_GROUP) |
			BIT(CTL_F_JSON), BIT(CTL_F_QUEUE), { CTL_F_QUEUE }, 1, NULL,
			"limit NAME [--interval DUR] [--burst N]\n"
			"limit NAME --group KEY | --each-group [--concurrency N] [--interval DUR] "
			"[--burst N]",
			"limit starts across every claimd sharing the database: the queue's to one\n"
			"per --interval (0: no limit; a bare number is milliseconds here), up to\n"
			"--burst at once after a quiet spell; with --group, the rows of that key\n"
			"(group_key): at most --concurrency running at once (1: one at a time, in\n"
			"order, the default; 0: no limit) and their own rate; --each-group: every\n"
			"key's, where it has none of its own. Prints the queue's limits", check_limit },
	[CTL_LIMITS] = { "limits", BIT(CTL_F_QUEUE) | BIT(CTL_F_JSON), BIT(CTL_F_QUEUE),
			 { CTL_F_QUEUE }, 1, NULL, "limits NAME",
			 "the queue's rate limit, its keys' limits, and each key with limits of its\n"
			 "own with how many of its rows run now", NULL },
	[CTL_JOB] = { "job", BIT(CTL_F_ID) | BIT(CTL_F_JSON), BIT(CTL_F_ID), { CTL_F_ID }, 1, NULL,
		      "job ID", "one row: its state, attempts, times, error and the\n"
		      "start of its payload", NULL },
	[CTL_CANCEL] = { "cancel", BIT(CTL_F_ID) | BIT(CTL_F_JSON), BIT(CTL_F_ID), { CTL_F_ID }, 1,
			 NULL, "cancel ID",
			 "delete a ready or dead row; a claimed one is stopped wherever it\n"
			 "runs (within a second) and ends dead, \"cancelled\"", NULL },
	[CTL_QUEUES] = { "queues", BIT(CTL_F_JSON), 0, { 0 }, 0, NULL, "queues",
			 "every queue: rows per state, the oldest ready row's age, paused, rate\n"
			 "limit", NULL },
	[CTL_SUPERVISORS] = { "supervisors", BIT(CTL_F_JSON), 0, { 0 }, 0, NULL,
			      "supervisors", "every claimd sharing the database, as it last\n"
			      "said of itself (lost: not heard from for 15 s)", NULL },
	[CTL_JOBS] = { "jobs", BIT(CTL_F_STATE) | BIT(CTL_F_QUEUE) | BIT(CTL_F_LIMIT) |
		       BIT(CTL_F_BEFORE) | BIT(CTL_F_JSON) | BIT(CTL_F_ID) | BIT(CTL_F_GROUP) |
		       BIT(CTL_F_DEDUPE) | BIT(CTL_F_ERROR), 0, { 0 }, 0, NULL,
		       "jobs [--state STATE] [--queue NAME] [--id ID] [--group KEY] [--dedupe KEY]\n"
		       "[--error TEXT] [--limit N] [--before ID]",
		       "the newest rows in a state (ready, claimed, done, dead or any; dead when\n"
		       "not given, any with --id, --group, --dedupe or --error), of one queue or\n"
		       "all, whose last_error has TEXT (any case), with ids below --before; at\n"
		       "most --limit (1..200, default 50) from the newest 100,000 ids below\n"
		       "--before: a short page ends with where the next one starts", check_jobs },
	[CTL_RELOAD] = { "reload", BIT(CTL_F_JSON), 0, { 0 }, 0, NULL, "reload",
			 "read the settings again (config file, environment, command line) and\n"
			 "apply what can change live, as SIGHUP does", NULL },
	[CTL_WORKERS] = { "workers", BIT(CTL_F_COUNT) | BIT(CTL_F_JSON), BIT(CTL_F_COUNT),
			  { CTL_F_COUNT }, 1,
			  NULL, "workers N", "grow or shrink the pool to N workers (those that go\n"
			  "retire after their item), as SIGTTIN and SIGTTOU do one at a time", NULL },
	[CTL_SCHEDULE] = { "schedule",
			   BIT(CTL_F_NAME) | BIT(CTL_F_CRON) | BIT(CTL_F_ZONE) | BIT(CTL_F_QUEUE) |
			   BIT(CTL_F_PAYLOAD) | BIT(CTL_F_MAX_ATTEMPTS) | BIT(CTL_F_TIMEOUT) |
			   BIT(CTL_F_PRIORITY) | BIT(CTL_F_GROUP) | BIT(CTL_F_CONTENT_TYPE) |
			   BIT(CTL_F_CATCH_UP) | BIT(CTL_F_PAUSED) | BIT(CTL_F_JSON),
			   BIT(CTL_F_NAME) | BIT(CTL_F_CRON), { CTL_F_NAME, CTL_F_PAYLOAD }, 2, NULL,
			   "schedule NAME --cron 'MIN HOUR DAY MONTH WEEKDAY' [--tz ZONE]\n"
			   "[--queue NAME] [--max-attempts N] [--timeout DUR] [--priority N]\n"
			   "[--group KEY] [--content-type TYPE] [--catch-up one|all|none] [--paused]\n"
			   "[PAYLOAD]",
			   "add or replace a schedule: a row with PAYLOAD (else stdin; none with\n"
			   "</dev/null) in the queue at each time the cron expression names in ZONE\n"
			   "(an IANA name; UTC by default), once across every claimd; --catch-up: what\n"
			   "ticks missed while no claimd ran get (one row, a row each, none)",
			   check_schedule },
	[CTL_SCHEDULES] = { "schedules", BIT(CTL_F_NAME) | BIT(CTL_F_AFTER) | BIT(CTL_F_LIMIT) |
			    BIT(CTL_F_JSON), 0, { CTL_F_NAME }, 1, NULL,
			    "schedules [NAME] [--after NAME] [--limit N]",
			    "the schedules by name (or the one named): expression, zone, next and\n"
			    "last tick, and why one cannot run if it cannot; at most --limit (1..200,\n"
			    "default 100) after --after", NULL },
	[CTL_UNSCHEDULE] = { "unschedule", BIT(CTL_F_NAME) | BIT(CTL_F_JSON), BIT(CTL_F_NAME),
			     { CTL_F_NAME }, 1, NULL, "unschedule NAME",
			     "delete a schedule (the rows it added stay)", NULL },
	[CTL_BATCH] = { "batch", BIT(CTL_F_ID) | BIT(CTL_F_JSON), BIT(CTL_F_ID), { CTL_F_ID }, 1,
			NULL, "batch ID", "one batch (POST .../jobs:batch?batch=1): how many of its\n"
			"rows are ready, claimed, done and dead, and its callback", NULL },
	[CTL_BATCHES] = { "batches", BIT(CTL_F_LIMIT) | BIT(CTL_F_BEFORE) | BIT(CTL_F_JSON), 0,
			  { 0 }, 0, NULL, "batches [--limit N] [--before ID]",
			  "the newest batches (ids below --before), at most --limit (1..200,\n"
			  "default 50)", NULL },
	[CTL_BACKOFF] = { "backoff", BIT(CTL_F_QUEUE) | BIT(CTL_F_BASE) | BIT(CTL_F_MAX) |
			  BIT(CTL_F_JITTER) | BIT(CTL_F_RESET) | BIT(CTL_F_JSON), BIT(CTL_F_QUEUE),
			  { CTL_F_QUEUE }, 1, NULL,
			  "backoff NAME [--base DUR] [--max DUR] [--jitter PCT] | backoff NAME --reset",
			  "the queue's own retry back-off on every claimd sharing the database: a\n"
			  "failed item waits base*2^(attempt-1) +-PCT %, at most max (7d at most;\n"
			  "PCT 0..100, 0: exact); what is not given stays; --reset: claimd's\n"
			  "--retry-base, 1h and 25 % again. Rows claimed after it use it",
			  check_backoff },
	[CTL_STATS] = { "stats", BIT(CTL_F_QUEUE) | BIT(CTL_F_FROM) | BIT(CTL_F_TO) |
			BIT(CTL_F_SINCE) | BIT(CTL_F_STEP) | BIT(CTL_F_JSON), 0, { 0 }, 0, NULL,
			"stats [--queue NAME] [--since DUR | --from TIME] [--to TIME] [--step DUR]",
			"what every claimd sharing the database finished, per step (whole minutes;\n"
			"by default the last hour, in steps that make at most 120 lines): done,\n"
			"failed and dead, and the run and wait times' 50th, 95th and 99th\n"
			"percentiles (each the upper bound of its histogram bucket); of one queue\n"
			"or all. Kept for --keep-history, written every --history-flush", check_stats },
	[CTL_BULK] = { "bulk", BIT(CTL_F_ACTION) | BIT(CTL_F_STATE) | BIT(CTL_F_QUEUE) |
		       BIT(CTL_F_ID) | BIT(CTL_F_GROUP) | BIT(CTL_F_DEDUPE) | BIT(CTL_F_ERROR) |
		       BIT(CTL_F_CONFIRM) | BIT(CTL_F_JSON), BIT(CTL_F_ACTION), { CTL_F_ACTION },
		       1, NULL,
		       "bulk retry|discard|cancel [--state STATE] [--queue NAME] [--id ID]\n"
		       "[--group KEY] [--dedupe KEY] [--error TEXT] [--yes | --confirm N]",
		       "act on every row the filters pick (as jobs has them; the action's states\n"
		       "when --state is not given): retry puts dead rows back, discard deletes\n"
		       "ready and dead rows, cancel deletes those and stops claimed ones (they end\n"
		       "dead, \"cancelled\"); 500 rows a transaction. Prints how many rows it\n"
		       "would act on and does nothing, unless --yes (or --confirm with that count);\n"
		       "on a terminal it asks", check_bulk },
};

const char *ctl_verb_name(enum ctl_verb v)
{
	return (unsigned)v < CTL_VERB_COUNT ? ctl_verbs[v].name : "?";
}

/* ---- values ---- */

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Checks a decoded value (s[0..len), NUL-terminated) of field f and stores it in r. label
 * names the field in messages (its wire name, or its command-line option). */
int ctl_store_value(struct ctl_request *r, enum ctl_field f, const char *label, const char *s,
		       size_t len, char *err, size_t errlen)
{
	const struct field_def *d = &ctl_fields[f];
	char *at = (char *)r + d->off;
	unsigned long long u;
	size_t neg;
	long long v;
	char *end;

	switch (d->type) {
	case T_TEXT:
		if (len < (size_t)d->min || len > d->max)
			return errmsg_invalid(err, errlen, "%s: %s must be %lld to %llu bytes", ctl_verbs[r->verb].name,
				    label, d->min, d->max);
		for (size_t i = 0; i < len; i++)
			if (is_control((unsigned char)s[i]))
				return errmsg_invalid(err, errlen, "%s: %s has a control character", ctl_verbs[r->verb].name,
					    label);
		memcpy(at, &s, sizeof(s));
		return 0;
	case T_BYTES:
		if (len > d->max)
			return errmsg_invalid(err, errlen, "%s: %s is over %llu bytes", ctl_verbs[r->verb].name, label,
				    d->max);
		r->payload = (const unsigned char *)s;
		r->payload_len = len;
		return 0;
	case T_FLAG:
		if (len != 1 || s[0] != '1')
			return errmsg_invalid(err, errlen, "%s: %s takes no value but 1", ctl_verbs[r->verb].name, label);
		*(bool *)at = true;
		return 0;
	case T_UINT:
	case T_INT:
		break;
	}
	/* Digits, and for T_INT a '-' before them: strto* alone would take spaces and '+'. */
	neg = d->type == T_INT && len > 0 && s[0] == '-';
	if (len == neg || strlen(s) != len || strspn(s + neg, "0123456789") != len - neg)
		goto bad;
	errno = 0;
	if (d->type == T_UINT) {
		u = strtoull(s, &end, 10);
		if (errno || *end || u < (unsigned long long)d->min || u > d->max)
			goto bad;
		if (d->size == sizeof(uint64_t))
			*(uint64_t *)(void *)at = u;
		else
			*(uint32_t *)(void *)at = (uint32_t)u;
		return 0;
	}
	v = strtoll(s, &end, 10);
	if (errno || *end || v < d->min || v > (long long)d->max)
		goto bad;
	*(int32_t *)(void *)at = (int32_t)v;
	return 0;
bad:
	if (d->type == T_INT)
		return errmsg_invalid(err, errlen, "%s: %s must be a whole number from %lld to %lld",
			    ctl_verbs[r->verb].name, label, d->min, (long long)d->max);
	return errmsg_invalid(err, errlen, "%s: %s must be a whole number from %lld to %llu",
		    ctl_verbs[r->verb].name, label, d->min, d->max);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-decodes s[0..len) in place and writes a NUL after it (s[len] must be writable).
 * Returns the decoded length, or -EINVAL for a character outside the grammar or a bad escape. */
static long pct_decode(char *s, size_t len)
{
	size_t i = 0, o = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				return -EINVAL;
			s[o++] = (char)(hi << 4 | lo);
			i += 3;
		} else if (unreserved(c)) {
			s[o++] = (char)c;
			i++;
		} else {
			return -EINVAL;
		}
	}
	s[o] = '\0';
	return (long)o;
}

/* ---- decode ---- */

int ctl_find_verb(const char *s, size_t len)
{
	for (int v = 0; v < CTL_VERB_COUNT; v++)
		if (strlen(ctl_verbs[v].name) == len && !memcmp(ctl_verbs[v].name, s, len))
			return v;
	return -1;
}

static int find_field(const char *s, size_t len)
{
	for (int f = 0; f < CTL_FIELD_COUNT; f++)
		if (strlen(ctl_fields[f].name) == len && !memcmp(ctl_fields[f].name, s, len))
			return f;
	return -1;
}

/* The rules every request follows, whichever way it came: the fields the verb needs are
 * there, and its own rules hold. */
int ctl_check_request(const struct ctl_request *r, char *err, size_t errlen)
{
	const struct verb_def *v = &ctl_verbs[r->verb];
	uint64_t missing = v->needs & ~r->have;

	if (missing) {
		for (int f = 0; f < CTL_FIELD_COUNT; f++)
			if (missing & BIT(f))
				return errmsg_invalid(err, errlen, "%s: %s is required", v->name, ctl_fields[f].name);
	}
	return v->check ? v->check(r, err, errlen) : 0;
}

/* One "name=value" of s[0..len) into r. */
static int decode_field(struct ctl_request *r, char *s, size_t len, char *err, size_t errlen)
{
	const struct verb_def *v = &ctl_verbs[r->verb];
	char *eq = memchr(s, '=', len);
	long n;
	int f;

	if (!eq)
		return errmsg_invalid(err, errlen, "%s: '%.*s' is not name=value", v->name,
			    (int)(len > 40 ? 40 : len), s);
	f = find_field(s, (size_t)(eq - s));
	if (f < 0 || !(v->takes & BIT(f)))
		return errmsg_invalid(err, errlen, "%s: unknown field '%.*s'", v->name,
			    (int)(eq - s > 40 ? 40 : eq - s), s);
	if (r->have & BIT(f))
		return errmsg_invalid(err, errlen, "%s: %s given twice", v->name, ctl_fields[f].name);
	n = pct_decode(eq + 1, len - (size_t)(eq + 1 - s));
	if (n < 0)
		return errmsg_invalid(err, errlen, "%s: %s: bad character or %%-escape", v->name, ctl_fields[f].name);
	r->have |= BIT(f);
	return ctl_store_value(r, (enum ctl_field)f, ctl_fields[f].name, eq + 1, (size_t)n, err, errlen);
}

int ctl_decode(char *line, size_t len, struct ctl_request *ret, char *err, size_t errlen)
{
	struct ctl_request r;
	size_t i, start;
	int v, rc;

	memset(&r, 0, sizeof(r));
	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len >= CTL_LINE_MAX)
		return errmsg_invalid(err, errlen, "request too long");
	for (i = 0; i < len && line[i] != ' '; i++)
		;
	v = ctl_find_verb(line, i);
	if (v < 0) {
		return errmsg_invalid(err, errlen, "unknown request '%.*s'; try status, add, retry, pause, "
			    "resume or limit", (int)(i > 40 ? 40 : i), line);
	}
	r.verb = (enum ctl_verb)v;
	while (i < len) {
		start = ++i;  /* past the space */
		while (i < len && line[i] != ' ')
			i++;
		if (i == start)
			return errmsg_invalid(err, errlen, "%s: empty field (two spaces, or one at the end)",
				    ctl_verbs[v].name);
		line[i] = '\0';  /* the space (or one past the end: the caller's CR, LF or room) */
		rc = decode_field(&r, line + start, i - start, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = ctl_check_request(&r, err, errlen);
	if (rc < 0)
		return rc;
	*ret = r;
	return 0;
}

/* ---- encode ---- */

static void pct_encode(struct buf *out, const void *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *u = p;
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		if (unreserved(u[i])) {
			run++;
			continue;
		}
		buf_append(out, u + i - run, run);
		run = 0;
		char e[3] = { '%', hex[u[i] >> 4], hex[u[i] & 15] };
		buf_append(out, e, 3);
	}
	buf_append(out, u + n - run, run);
}

static void encode_field(const struct ctl_request *r, enum ctl_field f, struct buf *out)
{
	const struct field_def *d = &ctl_fields[f];
	const char *at = (const char *)r + d->off;
	const char *text;

	buf_printf(out, " %s=", d->name);
	switch (d->type) {
	case T_TEXT:
		memcpy(&text, at, sizeof(text));
		pct_encode(out, text ? text : "", text ? strlen(text) : 0);
		break;
	case T_BYTES:
		pct_encode(out, r->payload, r->payload_len);
		break;
	case T_FLAG:
		buf_puts(out, "1");
		break;
	case T_UINT:
		buf_printf(out, "%llu", d->size == sizeof(uint64_t) ?
			   (unsigned long long)*(const uint64_t *)(const void *)at :
			   (unsigned long long)*(const uint32_t *)(const void *)at);
		break;
	case T_INT:
		buf_printf(out, "%ld", (long)*(const int32_t *)(const void *)at);
		break;
	}
}

int ctl_encode(const struct ctl_request *req, struct buf *out, char *err, size_t errlen)
{
	struct ctl_request check;
	size_t start = out->len;
	char *copy;
	int r;

	if ((unsigned)req->verb >= CTL_VERB_COUNT)
		return errmsg_invalid(err, errlen, "unknown verb %d", (int)req->verb);
	if (req->have & ~ctl_verbs[req->verb].takes)
		return errmsg_invalid(err, errlen, "%s: a field it does not take is set", ctl_verbs[req->verb].name);
	buf_puts(out, ctl_verbs[req->verb].name);
	for (int f = 0; f < CTL_FIELD_COUNT; f++)
		if (ctl_has(req, (enum ctl_field)f))
			encode_field(req, (enum ctl_field)f, out);
	buf_puts(out, "\n");
	if (buf_failed(out))
		return -ENOMEM;
	/* What the other end will check, checked here by its own code: the line decodes. */
	copy = malloc(out->len - start);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, out->data + start, out->len - start);
	r = ctl_decode(copy, out->len - start - 1, &check, err, errlen);
	free(copy);
	if (r < 0) {
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
	}
	return r;
}

/* ---- claimctl's command line ---- */

/* ---- replies ---- */

void ctl_reply_ok(struct buf *out, const char *body, size_t len)
{
	buf_puts(out, "ok\n");
	buf_append(out, body, len);
}

void ctl_reply_error(struct buf *out, const char *message)
{
	buf_puts(out, "error: ");
	for (const char *p = message; *p; p++)
		buf_append(out, *p == '\n' || *p == '\r' ? " " : p, 1);
	buf_puts(out, "\n");
}

int ctl_reply_parse(const char *reply, size_t len, const char **ret_body, size_t *ret_len)
{
	const char *nl;

	if (len >= 3 && !memcmp(reply, "ok\n", 3)) {
		*ret_body = reply + 3;
		*ret_len = len - 3;
		return 1;
	}
	if (len < 8 || memcmp(reply, "error: ", 7) != 0 ||
	    !(nl = memchr(reply, '\n', len)) || nl != reply + len - 1)
		return -EBADMSG;
	*ret_body = reply + 7;
	*ret_len = len - 8;
	return 0;
}
