/* handler_pipe — the pipe: kind: one long-lived co-process per worker, fed its items as
 * newline-delimited JSON, up to --concurrency of them outstanding at once.
 *
 * The co-process (pipe:/path args: split on spaces, no shell) is started on the first item
 * (with env->pipe_ready: when the kind is made, again whenever one is gone, and sent nothing
 * until it writes {"ready":true}; handler_ready is false until then), through proc_spawn_io: its own process group under a guard, killed when the worker dies,
 * this process's environment without any CLAIMD_* variable. Per item it reads one line on
 * its stdin:
 *
 *   {"id":1,"queue":"default","group":null,"attempt":1,"max_attempts":5,"seq":0,
 *    "enqueued_at":"2026-11-21T05:01:18.123Z","deadline_ms":299998,"deadline_at":1795...,
 *    "content_type":"application/json","payload":"the payload as a JSON string"}
 *
 * group is null when the item has none; enqueued_at is null when unknown; content_type is
 * the payload's type as its producer gave it (an HTTP POST's Content-Type), null without one;
 * deadline_ms is how many ms it has left, deadline_at the same as unix ms; "traceparent"
 * (after content_type) only when the row has one. A payload that is
 * not valid UTF-8 comes as "payload":null,"payload_b64":"<standard base64 of the bytes>"
 * instead, so any bytes survive. It answers with one line on its stdout per item:
 *
 *   {"id":1,"ok":true}                                  done
 *   {"id":1,"ok":true,"result":{"sent":3}}              done, with a result (any JSON value,
 *                                                       at most 64 KiB compact) kept in the row
 *   {"id":1,"progress":0.5}                             before the reply, any number of times:
 *                                                       the item's progress (any JSON value,
 *                                                       at most 1 KiB compact), kept in the row
 *                                                       (at most one write a second)
 *   {"id":1,"ok":false,"error":"why"}                   failed: retried with back-off, then dead
 *   {"id":1,"ok":false,"retry_in_ms":5000}              not a failure: run it again later
 *                                                       (HANDLER_RETRY_LATER)
 *
 * The reply is one JSON object, read by jansson (pipe_reply.h has the rules); its values may
 * be nested, fields other than these are ignored, empty lines are skipped. Nothing else may
 * go to stdout: log to stderr, whose last 4000 bytes go into the error when the co-process
 * dies.
 *
 * Up to --concurrency requests are outstanding at once (a new one is written as soon as an
 * earlier one is answered); replies and progress lines carry the id of their item and may
 * come in any order. A co-process that handles one item at a time simply answers them in
 * turn (the others wait in its stdin; each item's timeout runs from when its request was
 * written).
 *
 * Cancel. When an item runs past its timeout, the worker stops (its grace over) while
 * items are outstanding, or an operator cancels a running item (claimctl cancel, DELETE
 * /v1/jobs/ID), the co-process reads, for each such item,
 *
 *   {"id":1,"cancel":true,"reason":"timeout"}           reason: "timeout", "shutdown", or
 *                                                       "cancelled" (an operator's)
 *
 * and has the kill grace (--kill-grace) to answer that item with its usual reply, as soon as
 * it has stopped working on it. After a "timeout" cancel the item ends as timed out whatever
 * the reply says; after a "shutdown" cancel {"ok":true} counts (the work was done) and any
 * other reply puts the item back to run again, its attempt given back; after a "cancelled"
 * one {"ok":true} counts too and any other reply ends the row dead, "cancelled", with no
 * retry. A co-process that
 * does not know cancels may ignore the line; one must ignore a cancel for an id it has
 * answered already, and never answer an id twice. Without an answer within the grace the
 * co-process is stopped (SIGTERM to its group, SIGKILL after the grace again): that item
 * ends as timed out (or goes back, for "shutdown"; dead, for "cancelled"), and the other items outstanding go back
 * to run again, their attempts given back (not failed: it was not their doing).
 *
 * Every item outstanding fails, and the co-process is stopped and started again for the
 * next items, when it writes a line that is not such an object, names an id that is not
 * outstanding (output with nothing outstanding too), has no boolean "ok", is longer than
 * 1 MiB, or when it exits (with its exit status and stderr tail in the error). A co-process
 * that keeps exiting before its first reply is restarted after 100 ms, doubling up to 10 s
 * (the items' timeouts run meanwhile). When the handler is freed its co-process gets SIGKILL.
 * Does not log. */
#ifndef CLAIMD_HANDLER_PIPE_H
#define CLAIMD_HANDLER_PIPE_H

#include "worker/handler.h"

/* The kind itself is handler_pipe in handler_kind.h. */

#endif
