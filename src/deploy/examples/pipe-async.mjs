#!/usr/bin/env node
// A pipe: co-process for claimd in Node.js (no npm packages) that runs many items at once:
// one co-process per worker, up to --concurrency items of it outstanding.
//
//   claimd --handler 'pipe:/usr/bin/node /usr/local/share/claimd/examples/pipe-async.mjs' \
//          --concurrency 50 --pipe-ready ...
//
// Replace handle() below with your work; the rest is the protocol, which you can keep as it is.
//
// The protocol (JSON lines; claimd's side is described in claimd-handlers(7)):
//   out, once, when it can take items (with --pipe-ready claimd sends, and its worker claims,
//   nothing before; without, the line is ignored): {"ready":true}
//   in, one line per item as it starts, many outstanding at once:
//     {"id":1,"queue":"default","group":null,"attempt":1,"max_attempts":5,"seq":0,
//      "enqueued_at":"...","deadline_ms":299998,"deadline_at":1795...,"content_type":null,
//      "payload":"..."}                 (bytes that are not UTF-8: "payload_b64" instead)
//   in, to stop an item: {"id":1,"cancel":true,"reason":"timeout"|"shutdown"|"cancelled"}
//   out, answering each item by id, in any order, after any number of progress lines:
//     {"id":1,"progress":0.5}
//     {"id":1,"ok":true,"result":{...}}        done (the result is kept in the row)
//     {"id":1,"ok":false,"error":"why"}        failed: retried with back-off, dead after max_attempts
//     {"id":1,"ok":false,"retry_in_ms":5000}   run it again later, not counted as a failure
// A cancelled item's AbortSignal fires and it is answered: failed, or done if it finished
// after all. A line for an id that is not outstanding is ignored, and so is a line that is
// not such JSON (logged). At the end of stdin the outstanding items are finished and
// answered, then the co-process exits 0. Nothing but replies goes to stdout: log to stderr.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

// Throw a RetryLater(ms) in handle() to run the item again in ms, not counted as a failure.
export class RetryLater extends Error {
  constructor(ms) {
    super(`retry in ${ms} ms`);
    this.ms = Math.max(0, Math.floor(ms));
  }
}

// ---- your work: replace handle() ----------------------------------------------------------

// Runs one item. job is the request (job.payload the payload as text). Return the result
// (any JSON value, or undefined for none); throw to fail the item, or throw a RetryLater(ms).
// ctx.progress(value) reports progress (any JSON value); ctx.signal aborts when claimd cancels
// the item: pass it on to what you await. Await, never block: every item shares one thread.
//
// The example: a payload that is JSON with "sleep_ms" waits that long (without using the
// CPU), reporting its progress once half-way; a payload is echoed back as the result (an empty
// one leaves none).
async function handle(job, ctx) {
  let data = null;
  if (job.payload && job.payload[0] === '{') {
    try {
      data = JSON.parse(job.payload);
    } catch {
      data = null;
    }
  }
  if (data !== null && typeof data === 'object' && 'sleep_ms' in data) {
    const ms = data.sleep_ms;
    if (typeof ms !== 'number' || !(ms >= 0 && ms <= 3600000))
      throw new Error(`sleep_ms must be a number of milliseconds, 0..3600000: ${JSON.stringify(ms)}`);
    const half = setTimeout(() => ctx.progress(0.5), ms / 2);
    try {
      await sleep(ms, undefined, { signal: ctx.signal });
    } finally {
      clearTimeout(half);
    }
  }
  return job.payload ? { echo: job.payload } : undefined;
}

// ---- the protocol --------------------------------------------------------------------------

const log = (msg) => process.stderr.write(`pipe-async.mjs: ${msg}\n`);
// Replies made in one turn of the event loop go out in one write (a write to a pipe is a
// system call each: many items at once would pay one per reply).
let pending = [];
const flush = () => {
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
};
const reply = (obj) => {
  if (pending.push(JSON.stringify(obj) + '\n') === 1)
    setImmediate(flush);
};

// An item outstanding. Its AbortController is made when handle() first asks for ctx.signal:
// most items never do, and making one costs more than the rest of a quick item's round trip.
class Item {
  controller = null;
  cancelled = null; // why claimd cancelled it, once it has
  done = null; // the promise of its run

  get signal() {
    this.controller ??= new AbortController();
    if (this.cancelled !== null && !this.controller.signal.aborted)
      this.controller.abort(this.cancelled);
    return this.controller.signal;
  }

  cancel(reason) {
    this.cancelled ??= reason;
    this.controller?.abort(reason);
  }
}
const running = new Map(); // id -> Item

async function run(job, item) {
  const id = job.id;
  const ctx = {
    progress: (value) => {
      if (running.has(id))
        reply({ id, progress: value });
    },
    get signal() {
      return item.signal;
    },
  };
  let answer;
  try {
    const result = await handle(job, ctx);
    answer = result === undefined ? { ok: true } : { ok: true, result };
  } catch (e) {
    if (item.cancelled !== null)
      answer = { ok: false, error: `cancelled (${item.cancelled})` };
    else if (e instanceof RetryLater)
      answer = { ok: false, retry_in_ms: e.ms };
    else
      answer = { ok: false, error: `${e?.name ?? 'Error'}: ${e?.message ?? e}` };
  }
  running.delete(id);
  reply({ id, ...answer });
}

function line(text) {
  if (!text.trim())
    return;
  let msg;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    log(`ignored a line that is not JSON (${e.message}): ${text.slice(0, 200)}`);
    return;
  }
  const id = msg !== null && typeof msg === 'object' ? msg.id : undefined;
  if (!Number.isSafeInteger(id)) {
    log(`ignored a line without a numeric "id": ${text.slice(0, 200)}`);
    return;
  }
  if (msg.cancel === true) {
    // not outstanding (answered already): nothing to do
    running.get(id)?.cancel(String(msg.reason ?? 'cancelled'));
    return;
  }
  if (running.has(id)) {
    log(`ignored a second request for item ${id} while it runs`);
    return;
  }
  const item = new Item();
  running.set(id, item);
  item.done = run(msg, item);
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', line);
reply({ ready: true }); // load what handle() needs before this line
rl.on('close', async () => {
  // stdin closed: finish what is outstanding, answer it, exit 0
  while (running.size)
    await Promise.allSettled([...running.values()].map((e) => e.done));
  process.exitCode = 0;
});
