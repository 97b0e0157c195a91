/* ctl — the control protocol: what claimctl (or any program) asks of a running supervisor on
 * its control socket, as a struct, and the one-line text form it travels in. Pure: no I/O, no
 * allocation in decode, does not log. claimctl encodes (from its command line, ctl_from_argv),
 * the supervisor decodes; both go through the grammar table in ctl.c, which is the only place
 * a command's arguments are spelled out.
 *
 * Transport: a unix stream socket. The client connects, writes one request line and may shut
 * down its writing side; the supervisor answers with one reply and closes the connection.
 *
 * Request grammar (ABNF, RFC 5234):
 *
 *     request  = verb *( SP field ) [ CR ] LF      ; at most CTL_LINE_MAX bytes with the LF
 *     verb     = "status" / "add" / "retry" / "pause" / "resume" / "limit" / "job" /
 *                "cancel" / "queues" / "supervisors" / "jobs" / "reload" / "workers" /
 *                "schedule" / "schedules" / "unschedule" / "batch" / "batches" /
 *                "limits" / "backoff" / "stats" / "bulk"
 *     field    = name "=" value                    ; each name at most once
 *     name     = 1*( %x61-7A / "_" )               ; lower-case letters and '_'
 *     value    = *( unreserved / pct-encoded )     ; RFC 3986 percent-encoding of any bytes
 *     unreserved  = ALPHA / DIGIT / "-" / "." / "_" / "~"
 *     pct-encoded = "%" HEXDIG HEXDIG
 *
 * Fields by type (the value after percent-decoding):
 *     text     1..max bytes, no control characters (0x00-0x1f, 0x7f)
 *     bytes    0..CTL_PAYLOAD_MAX bytes, anything
 *     uint     decimal digits, no sign, no leading '+', within the field's range
 *     int      as uint with an optional leading '-'
 *     flag     exactly "1"
 *
 * Verbs and their fields (required ones marked *):
 *     status   json:flag  all:flag                the pool and the queue counts; with all=1
 *                                                  every supervisor sharing the database and
 *                                                  its pool (as its supervisors row has it)
 *     add      queue*:text(64) payload:bytes      insert one row, wake a worker for it
 *              run_at:text(64) ('YYYY-MM-DD HH:MM:SS' in UTC, or RFC 3339 with Z or an
 *              offset: common/utctime.h)
 *              delay_ms:uint  period_ms:uint  max_attempts:uint(1..1000000)
 *              timeout_ms:uint(1..)  dedupe:text(255)  priority:int(-10..10)
 *              group:text(255)  content_type:text(255) (the payload's type)
 *              traceparent:text(55) (a W3C traceparent, common/trace.h)
 *     retry    id:uint(1..)  or  queue:text(64) + dead:flag   dead rows back to ready
 *     pause    queue:text(64) or schedule:text(128)   pause a queue (or a schedule) for
 *                                                  every supervisor
 *     resume   queue:text(64) or schedule:text(128)   resume it
 *     limit    queue*:text(64)  interval_ms:uint(0..86400000)  burst:uint(1..1000000)
 *              concurrency:uint(0..1000000)  group:text(255) or each_group:flag
 *                                                  the queue's rate (a start per interval, up
 *                                                  to burst at once); with group, that key's
 *                                                  own limits; with each_group, every key's
 *                                                  (concurrency: of a key's rows at once)
 *     limits   queue*:text(64)  json:flag         a queue's limits and its keys' own
 *     job      id*:uint(1..)  json:flag             one row
 *     cancel   id*:uint(1..)                       delete a ready or dead row; stop a claimed
 *                                                  one (it ends dead, "cancelled")
 *     queues   json:flag                           every queue's counts and settings
 *     supervisors json:flag                        every supervisor sharing the database
 *     jobs     state:text(15) (ready, claimed, done, dead or any; dead when not given,
 *              any when id, group, dedupe or error is)
 *              queue:text(64)  limit:uint(1..200)  before:uint(1..)  json:flag
 *              id:uint(1..)  group:text(255)  dedupe:text(255)  error:text(200) (in
 *              last_error)                         the newest rows the filters pick (ids
 *                                                  below before), at most limit (50), from
 *                                                  one span of ids (store_jobs_find)
 *     bulk     action*:text(7) (retry, discard or cancel)  the filters as jobs has them
 *              (state any when not given)  confirm:uint   the rows the filters pick that
 *                                                  the action applies to, counted; with
 *                                                  confirm equal to that count, acted on
 *     reload                                       read the settings again (as SIGHUP)
 *     workers  count*:uint(1..1024)                grow or shrink the pool to count
 *     schedule name*:text(128) cron*:text(255) zone:text(64) (an IANA time zone, UTC when
 *              not given) queue:text(64) payload:bytes max_attempts, timeout_ms, priority,
 *              group, content_type (as add's) catch_up:text(4) (one, all or none)
 *              paused:flag                         add or replace a schedule
 *     schedules name:text(128)  json:flag         every schedule (or the one named)
 *     unschedule name*:text(128)                  delete a schedule (its rows stay)
 *     batch    id*:uint(1..)  json:flag            one batch: its members' states, its callback
 *     batches  limit:uint(1..200)  before:uint(1..)  json:flag   the newest batches
 *     backoff  queue*:text(64) base_ms:uint(1..604800000) max_ms:uint(1..604800000)
 *              jitter_pct:uint(0..100)  or  queue* + reset:flag   the queue's retry back-off
 *              (at least one; max_ms not below base_ms)
 *     stats    queue:text(64)  from:text(64) to:text(64) (times as add's run_at)
 *              since_ms:uint(1000..) (instead of from: to - since)
 *              step_ms:uint(60000..86400000, whole minutes)  json:flag
 *                                                  the queues' history (one queue or all)
 *                                                  over every supervisor, per step
 *
 * Reply grammar:
 *
 *     reply    = ok / error
 *     ok       = "ok" LF body                      ; body: the answer, any bytes, up to EOF
 *     error    = "error: " message LF              ; message: one line of text
 *
 * Bodies: status, a table (or with json=1 one JSON object, see console/status.h; with
 * all=1 a table per supervisor, or {"supervisors": [...]} as supervisors has them); add, the
 * row's id and a newline (with a dedupe key that a row holds, that row's id); retry, the number
 * of rows put back; pause and resume, "queue NAME paused|resumed"; limit and
 * limits, the queue's limits after the change as limits has them (a table, or with json=1 one
 * JSON object); job, the row as "name: value" lines (or with json=1 one
 * JSON object, see console/cmd.c); cancel, "1" or "0" rows deleted, or
 * for a claimed row "cancelling: row N runs on CLAIMED_BY; ..." (json=1: {"id":N,"state":
 * "claimed","cancelling":true,"claimed_by":...}); queues, a table (or
 * a JSON array); supervisors, a table (or a JSON array); jobs, a table (or a JSON array of
 * rows as job has them, with the payload and last_error cut short and no result); reload,
 * what it did ("reloaded: ..."), or an error with why the new settings were refused;
 * workers, "workers N"; schedule, "schedule NAME added|replaced, next ..." (with json=1
 * the schedule as schedules has it); schedules, a table (or a JSON array; with a name, that
 * schedule's object, or an error when there is none); unschedule, "1" or "0" schedules
 * deleted; backoff, "queue NAME retry_base_ms B retry_max_ms M retry_jitter_pct J" as the
 * queue has them now ("-" where not set; with json=1 an object, null there); stats, a table
 * of the steps and their total (json=1: one object, openapi.json's History); bulk, "N rows
 * to ACTION" and what confirms it, or "N rows ACTIONed" (json=1: {"action":..,"count":N,
 * "confirmed":false} or with "confirmed":true and "acted":M); a confirm that is not the count
 * is an error naming the count now. A request that does not follow the grammar gets an error
 * reply naming what is wrong; nothing is done for it. */
#ifndef CLAIMD_CTL_H
#define CLAIMD_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

#define CTL_PAYLOAD_MAX (1024u * 1024)               /* bytes one add may carry */
#define CTL_LINE_MAX (3 * CTL_PAYLOAD_MAX + 4096)    /* a request, percent-encoded */
#define CTL_QUEUE_MAX 64
#define CTL_KEY_MAX 255                              /* dedupe and group keys */
#define CTL_PRIORITY_MIN (-10)
#define CTL_PRIORITY_MAX 10
#define CTL_TYPE_MAX 255                             /* a content type */
#define CTL_LIST_MAX 200                             /* rows a jobs request may ask for */
#define CTL_SCHEDULE_NAME_MAX 128
#define CTL_CRON_MAX 255
#define CTL_ZONE_MAX 64
#define CTL_BACKOFF_MAX_MS 604800000u                /* a queue's retry base and max: 7 days */
#define CTL_DEDUPE_FOR_MAX_MS 2592000000u            /* how long a row keeps its key: 30 days */
#define CTL_ERROR_MAX 200                            /* text looked for in last_error */

enum ctl_verb {
	CTL_STATUS,
	CTL_ADD,
	CTL_RETRY,
	CTL_PAUSE,
	CTL_RESUME,
	CTL_LIMIT,
	CTL_JOB,
	CTL_CANCEL,
	CTL_QUEUES,
	CTL_SUPERVISORS,
	CTL_JOBS,
	CTL_RELOAD,
	CTL_WORKERS,
	CTL_SCHEDULE,
	CTL_SCHEDULES,
	CTL_UNSCHEDULE,
	CTL_BATCH,
	CTL_BATCHES,
	CTL_LIMITS,
	CTL_BACKOFF,
	CTL_STATS,
	CTL_BULK,
	CTL_VERB_COUNT,
};

enum ctl_field {
	CTL_F_QUEUE,
	CTL_F_PAYLOAD,
	CTL_F_RUN_AT,
	CTL_F_DELAY,
	CTL_F_PERIOD,
	CTL_F_MAX_ATTEMPTS,
	CTL_F_TIMEOUT,
	CTL_F_DEDUPE,
	CTL_F_PRIORITY,
	CTL_F_GROUP,
	CTL_F_ID,
	CTL_F_DEAD,
	CTL_F_INTERVAL,
	CTL_F_JSON,
	CTL_F_CONTENT_TYPE,
	CTL_F_STATE,
	CTL_F_LIMIT,
	CTL_F_BEFORE,
	CTL_F_ALL,
	CTL_F_COUNT,
	CTL_F_NAME,
	CTL_F_CRON,
	CTL_F_ZONE,
	CTL_F_CATCH_UP,
	CTL_F_PAUSED,
	CTL_F_SCHEDULE,
	CTL_F_BURST,
	CTL_F_CONCURRENCY,
	CTL_F_EACH_GROUP,
	CTL_F_TRACEPARENT,
	CTL_F_BASE,
	CTL_F_MAX,
	CTL_F_JITTER,
	CTL_F_RESET,
	CTL_F_FROM,
	CTL_F_TO,
	CTL_F_SINCE,
	CTL_F_STEP,
	CTL_F_ERROR,
	CTL_F_ACTION,
	CTL_F_CONFIRM,
	CTL_F_AFTER,
	CTL_F_RETRY_BASE,
	CTL_F_RETRY_MAX,
	CTL_F_DEDUPE_FOR,
	CTL_FIELD_COUNT,
};
_Static_assert(CTL_FIELD_COUNT <= 64, "a field is a bit of ctl_request.have");

/* One request. Strings point into the decoded line or the argv they came from (they are
 * NUL-terminated); payload is bytes. A field is given when its bit (1ull << CTL_F_x) is set in
 * have; the others are zero. */
struct ctl_request {
	enum ctl_verb verb;
	uint64_t have;
	const char *queue;
	const unsigned char *payload;
	size_t payload_len;
	const char *run_at;
	uint32_t delay_ms, period_ms, timeout_ms, interval_ms, max_attempts;
	const char *dedupe, *group, *content_type, *state;
	const char *name, *cron, *zone, *catch_up, *schedule, *traceparent;
	int32_t priority;
	uint32_t limit, count, burst, concurrency;
	uint64_t id, before;
	bool dead, json, all, paused, each_group;
	uint32_t base_ms, max_ms, jitter_pct;   /* backoff */
	bool reset;
	const char *from, *to;                  /* stats */
	uint32_t since_ms, step_ms;
	const char *error, *action;             /* jobs, bulk: filters; bulk's action */
	const char *after;                      /* schedules: the page after this name */
	uint64_t confirm;                       /* bulk: the count it was shown */
	uint32_t retry_base_ms, retry_max_ms;   /* add: the row's own retry back-off */
	uint32_t dedupe_for_ms;                 /* add: how long it keeps its dedupe key */
};

static inline bool ctl_has(const struct ctl_request *r, enum ctl_field f)
{
	return r->have & (1ull << f);
}

/* Decode one request line (without its LF; a trailing CR is dropped) of len bytes. line is
 * modified in place (values are percent-decoded and NUL-terminated where they lie; line[len],
 * the LF's place, must be writable) and must outlive *ret, whose strings point into it. Returns 0, or -EINVAL with a one-line message in
 * err (what is wrong, naming the verb and field). *ret is written only on success. */
int ctl_decode(char *line, size_t len, struct ctl_request *ret, char *err, size_t errlen);

/* Append req's request line (with its LF) to out. Returns 0, or -EINVAL with err filled when
 * req is not a valid request (the same rules as ctl_decode), or -ENOMEM. */
int ctl_encode(const struct ctl_request *req, struct buf *out, char *err, size_t errlen);

/* A request from a command line: argv[0] is the verb, then options (--queue NAME, --json, ...)
 * and positional arguments as claimctl documents them (ctl_usage). Durations take a unit (ms,
 * s, m, h, d; a bare number is seconds, milliseconds for limit's --interval). Strings point into
 * argv. A verb that takes a payload and was given none leaves CTL_F_PAYLOAD unset: the caller
 * reads it from stdin (ctl_wants_stdin). Returns 0 or -EINVAL with err filled. */
int ctl_from_argv(int argc, char **argv, struct ctl_request *ret, char *err, size_t errlen);

/* A request from named parameters, as the HTTP API's paths and query strings give them:
 * names[i] = values[i] for i < n, each value NUL-terminated. A name is a field's command-line
 * option without its dashes and with '_' for '-' ("max_attempts", "run_at", "delay",
 * "dedupe"), or for a field without an option its wire name ("id"); values are written as on
 * the command line (durations with a unit, a bare number is seconds; a flag is "1" or empty).
 * The payload is given apart (payload NULL: none). Strings point into values. Returns 0 or
 * -EINVAL with err filled (naming the parameter). */
int ctl_from_params(enum ctl_verb verb, const char *const *names, const char *const *values,
		    size_t n, const unsigned char *payload, size_t payload_len,
		    struct ctl_request *ret, char *err, size_t errlen);

/* Whether req's verb takes a payload and req has none yet. */
bool ctl_wants_stdin(const struct ctl_request *req);

/* The verb's name ("add"), or "?". */
const char *ctl_verb_name(enum ctl_verb v);

/* Every verb's synopsis ("  status [--all]") and, indented below it, its help; for
 * claimctl's usage. */
const char *ctl_usage(void);

/* A reply: "ok\n" + body, or "error: " + message (one line: line breaks become spaces) +
 * "\n". Append to out. */
void ctl_reply_ok(struct buf *out, const char *body, size_t len);
void ctl_reply_error(struct buf *out, const char *message);

/* Split a whole reply. Returns 1 for ok (*ret_body, *ret_len: the body), 0 for an error
 * (*ret_body, *ret_len: the message, without "error: " and the LF), -EBADMSG for anything
 * else (also an empty reply). */
int ctl_reply_parse(const char *reply, size_t len, const char **ret_body, size_t *ret_len);

#endif
