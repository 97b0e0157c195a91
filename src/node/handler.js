// claimd/handler: a function run as claimd's pipe: co-process.
//
//   // handler.mjs
//   import { run } from 'claimd';
//
//   async function handle(job) {      // or a plain function
//     const order = job.payload;       // JSON decoded when the row's content_type says JSON
//     await sendMail(order.to, { signal: job.signal });
//     return { sent: 1 };              // kept in the row's result
//   }
//
//   run(handle);
//
//   claimd --handler 'pipe:/usr/bin/node /srv/app/handler.mjs' --pipe-ready --concurrency 50
//
// or, without the last line and with handle exported:
//   --handler 'pipe:/usr/bin/node /srv/app/node_modules/claimd/bin.js /srv/app/handler.mjs'
//
// The protocol is claimd-handlers(7)'s: one JSON line in per item, many outstanding at once;
// one reply line out per item, by id, in any order. What the runtime does with it:
//
// - a request becomes a Job and a call of handle(job), all on the one event loop (a plain
//   function blocks it while it runs: await, never block, for items to overlap);
// - the return value is the result (undefined or null: none); a throw fails the attempt with
//   its name and message, its stack goes to standard error (claimd's log), not into the row;
//   a RetryLater(seconds) runs the item again later without counting an attempt; the jobs
//   job.enqueue() added go on the reply of a success, and claimd commits them with its
//   outcome;
// - a cancel line (timeout, shutdown, an operator's cancel) aborts job.signal and sets
//   job.cancelled; a handler that then throws fails as "cancelled (reason)";
// - standard output carries the replies alone: from run() on, process.stdout.write and
//   console.log, info and debug go to standard error, so a stray console.log cannot break the
//   protocol. File descriptor 1 itself is still claimd's pipe: a child process must not
//   inherit it (spawn with stdio: ['ignore', 2, 2] or 'pipe', not 'inherit');
// - replies made in one turn of the event loop go out in one write;
// - {"ready":true} is written as run() starts (run claimd with --pipe-ready);
// - at the end of standard input the items still running are finished and answered, then
//   the process exits 0.
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

import { UINT_MAX, checkOnDead, isBytes, jsonText, options, repr, row,
  seconds, text, utf8Text } from './enqueue.js';

// A reply line claimd takes is at most 1 MiB; a result at most 64 KiB, progress 1 KiB
// (claimd-handlers(7)). Checked here so that the handler's author reads which one was over.
export const RESULT_MAX = 64 * 1024;
export const PROGRESS_MAX = 1024;
export const REPLY_MAX = 1024 * 1024;
export const ENQUEUE_MAX = 1000; // follow-up jobs of one item (a graph's rows)
const LINE_DURATION_MAX_S = Math.floor(UINT_MAX / 1000); // a job line's durations: ms in 32 bits
const REF_MAX = 64;
const AFTER_MAX = 32;

const log = (msg) => process.stderr.write(`claimd.handler: ${msg}\n`);
const bytes = (s) => (s.length * 3 > PROGRESS_MAX ? Buffer.byteLength(s) : s.length);

// Throw a RetryLater(seconds) in a handler to run the item again after that long, without
// counting an attempt (a rate limit hit, a dependency not ready).
export class RetryLater extends Error {
  constructor(seconds) {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0)
      throw new RangeError(`RetryLater: seconds must be a number >= 0, not ${repr(seconds)}`);
    super(`retry in ${seconds} s`);
    this.name = 'RetryLater';
    this.seconds = seconds;
  }
}

function isJsonType(contentType) {
  if (!contentType)
    return false;
  const kind = contentType.split(';', 1)[0].trim().toLowerCase();
  return kind === 'application/json' || kind.endsWith('+json');
}

function parseTime(s) {
  if (typeof s !== 'string')
    return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? null : d;
}

let enqueuedOf;
let cancelJob;

// One item, as its request line gave it.
export class Job {
  #rt;
  #controller = null; // made when the handler first asks for job.signal: most never do
  #cancelled = null;
  #deadline; // performance.now() of the item's timeout, or null
  #text; // the payload as text (when not payload_b64)
  #body = null;
  #enqueued = null;

  constructor(req, rt = null) {
    this.#rt = rt;
    this.id = req.id;
    this.queue = req.queue ?? null;
    this.group = req.group ?? null;
    this.attempt = req.attempt ?? 1;
    this.maxAttempts = req.max_attempts ?? 1;
    this.seq = req.seq ?? 0;
    this.enqueuedAt = parseTime(req.enqueued_at);
    this.deadline = typeof req.deadline_at === 'number' ? new Date(req.deadline_at) : null;
    this.#deadline = typeof req.deadline_ms === 'number' ? performance.now() + req.deadline_ms
      : null;
    this.contentType = req.content_type ?? null;
    this.traceparent = req.traceparent ?? null;
    if (req.payload_b64 !== undefined && req.payload_b64 !== null) {
      this.#body = Buffer.from(req.payload_b64, 'base64');
      this.payload = this.#body;
    } else {
      this.#text = req.payload ?? '';
      this.payload = isJsonType(this.contentType) ? JSON.parse(this.#text) : this.#text;
    }
  }

  // The payload's bytes.
  get body() {
    this.#body ??= Buffer.from(this.#text, 'utf8');
    return this.#body;
  }

  // Aborts when claimd asks to stop this item; its reason an AbortError naming why.
  get signal() {
    this.#controller ??= new AbortController();
    if (this.#cancelled !== null && !this.#controller.signal.aborted)
      this.#controller.abort(abortError(this.#cancelled));
    return this.#controller.signal;
  }

  // Why claimd asked to stop this item ('timeout', 'shutdown' or 'cancelled'), or null.
  get cancelled() {
    return this.#cancelled;
  }

  // Milliseconds until the item's timeout (0 when past), or null when not told.
  timeLeft() {
    return this.#deadline === null ? null : Math.max(0, this.#deadline - performance.now());
  }

  // Reports progress (any JSON value but null, at most 1 KiB as JSON); claimd keeps the last
  // in the row's progress, at most once a second.
  progress(value) {
    const s = jsonText('progress', value);
    if (s === 'null')
      throw new TypeError('progress: null is not a progress value');
    if (bytes(s) > PROGRESS_MAX)
      throw new RangeError(`progress: ${Buffer.byteLength(s)} bytes of JSON, at most ` +
        `${PROGRESS_MAX}`);
    this.#rt?.progress(this.id, s);
  }

  // Adds a job that claimd commits in the same transaction as this item's outcome (a
  // follow-up job): written only if the item ends done, never if its claim was lost or its
  // worker died first (its retry adds it again, once). Options as enqueue()'s (runAt, delay,
  // priority, group, dedupe, maxAttempts, timeout, every, contentType, traceparent: this
  // item's unless given); ref names it for the after: [refs] of the other jobs this item adds
  // (a graph: no group, dedupe or every then), onDead 'cancel' or 'run'. Checked here: a
  // TypeError or RangeError names what is wrong. A payload is text or JSON (bytes: UTF-8).
  enqueue(queue, payload, opts) {
    const [o, { ref, after = [], onDead = 'cancel' }] = options(opts, ['ref', 'after',
      'onDead'], 'job.enqueue');
    if (ref !== undefined && ref !== null)
      text('ref', ref, REF_MAX);
    if (!Array.isArray(after))
      throw new TypeError(`after: an array of refs, not ${repr(after)}`);
    for (const a of after)
      text('after', a, REF_MAX);
    if (after.length > AFTER_MAX)
      throw new RangeError(`after: at most ${AFTER_MAX} refs, not ${after.length}`);
    checkOnDead(onDead);
    if (isBytes(payload))
      payload = utf8Text(payload);
    if ((o.traceparent === undefined || o.traceparent === null) && this.traceparent)
      o.traceparent = this.traceparent;
    row(queue, payload, o, after.length > 0); // every check, as enqueue() makes them
    const line = { queue };
    // Text as it is; any other JSON value as itself: claimd writes it compact, content_type
    // JSON unless given.
    line.payload = payload === undefined ? null : payload;
    if (o.runAt !== undefined && o.runAt !== null)
      line.run_at = o.runAt.toISOString();
    for (const [name, opt] of [['priority', 'priority'], ['group', 'group'],
      ['dedupe', 'dedupe'], ['max_attempts', 'maxAttempts'], ['content_type', 'contentType'],
      ['traceparent', 'traceparent']])
      if (o[opt] !== undefined && o[opt] !== null)
        line[name] = o[opt];
    // A job line's durations are milliseconds in 32 bits (about 49.7 days): a longer one is
    // refused here, not by claimd after the run (runAt reaches further).
    for (const [name, opt] of [['delay', 'delay'], ['timeout', 'timeout'], ['period', 'every'],
      ['retry_base', 'retryBase'], ['retry_max', 'retryMax'], ['dedupe_for', 'dedupeFor']])
      if (o[opt] !== undefined && o[opt] !== null)
        line[name] = `${Math.round(seconds(opt, o[opt], 0, LINE_DURATION_MAX_S) * 1000)}ms`;
    if (ref !== undefined && ref !== null)
      line.ref = ref;
    if (after.length) {
      line.after = [...after];
      line.on_dead = onDead;
    }
    this.#enqueued ??= [];
    if (this.#enqueued.length >= ENQUEUE_MAX)
      throw new RangeError(`job.enqueue: at most ${ENQUEUE_MAX} jobs per item`);
    this.#enqueued.push(line);
  }

  // The runtime's: the jobs enqueue() added (null: none), and the cancel.
  static {
    enqueuedOf = (job) => job.#enqueued;
    cancelJob = (job, reason) => {
      job.#cancelled ??= reason;
      job.#controller?.abort(abortError(job.#cancelled));
    };
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Job { id: ${this.id}, queue: ${repr(this.queue)}, attempt: ${this.attempt} }`;
  }
}

function abortError(reason) {
  return new DOMException(`claimd cancelled the item (${reason})`, 'AbortError');
}

// The co-process: reads requests, runs handle(job) for each, writes replies.
class Runtime {
  constructor(handle, write, concurrency) {
    this.handle = handle;
    this.write = write; // the real standard output's
    this.concurrency = concurrency;
    this.pending = []; // reply lines of this turn of the loop
    this.running = new Map(); // id -> Job (started or waiting for a slot)
    this.started = 0; // handle() calls not yet answered
    this.waiting = []; // jobs waiting for a slot (with a concurrency limit)
    this.closed = false; // standard input ended
    this.flush = this.flush.bind(this);
  }

  // Lines written in one turn of the loop go out in one write.
  reply(line) {
    if (this.pending.push(line) === 1)
      setImmediate(this.flush);
  }

  flush(done) {
    const text = this.pending.join('');
    this.pending = [];
    if (typeof done === 'function')
      this.write(text, done);
    else if (text)
      this.write(text);
  }

  progress(id, text) {
    if (this.running.has(id))
      this.reply(`{"id":${id},"progress":${text}}\n`);
  }

  line(text) {
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
      const job = this.running.get(id); // else answered already: nothing to do
      if (job)
        this.cancel(job, String(msg.reason ?? 'cancelled'));
      return;
    }
    if (this.running.has(id)) {
      log(`ignored a second request for item ${id} while it runs`);
      return;
    }
    let job;
    try {
      job = new Job(msg, this);
    } catch (e) {
      // A payload its content_type calls JSON that is not: the attempt fails, clearly.
      this.reply(JSON.stringify({ id, ok: false, error: `payload: ${e.name}: ${e.message}` }) +
        '\n');
      return;
    }
    this.running.set(id, job);
    if (this.started < this.concurrency)
      this.start(job);
    else
      this.waiting.push(job);
  }

  cancel(job, reason) {
    cancelJob(job, reason);
    const i = this.waiting.indexOf(job);
    if (i >= 0) { // not started: answered at once
      this.waiting.splice(i, 1);
      this.running.delete(job.id);
      this.reply(JSON.stringify({ id: job.id, ok: false, error: `cancelled (${reason})` }) +
        '\n');
      this.ended();
    }
  }

  start(job) {
    this.started++;
    this.call(job).then((result) => this.done(job, result), (e) => this.failed(job, e));
  }

  async call(job) {
    return this.handle(job);
  }

  done(job, result) {
    let text = '';
    if (result !== undefined && result !== null) {
      try {
        text = JSON.stringify(result);
      } catch (e) {
        return this.failed(job, new TypeError(`the result is not JSON: ${e.message}`));
      }
      if (text === undefined)
        return this.failed(job, new TypeError(`the result is not JSON: ${repr(result)}`));
      const n = text.length * 3 > RESULT_MAX ? Buffer.byteLength(text) : text.length;
      if (n > RESULT_MAX)
        return this.failed(job, new RangeError(`the result is ${n} bytes of JSON, at most ` +
          `${RESULT_MAX}`));
    }
    const jobs = enqueuedOf(job);
    let line = `{"id":${job.id},"ok":true${text ? `,"result":${text}` : ''}`;
    if (jobs) {
      let list;
      try {
        list = JSON.stringify(jobs);
      } catch (e) {
        return this.failed(job, new TypeError(`the jobs it adds are not JSON: ${e.message}`));
      }
      line += `,"enqueue":${list}`;
    }
    line += '}\n';
    if (line.length > REPLY_MAX / 3 && Buffer.byteLength(line) > REPLY_MAX)
      return this.failed(job, new RangeError(`the reply is ${Buffer.byteLength(line)} bytes ` +
        `(its result and the jobs it adds), at most ${REPLY_MAX}`));
    this.finish(job, line);
  }

  failed(job, e) {
    let answer;
    if (job.cancelled !== null)
      answer = { ok: false, error: `cancelled (${job.cancelled})` };
    else if (e instanceof RetryLater)
      answer = { ok: false, retry_in_ms: Math.round(e.seconds * 1000) };
    else {
      const name = e instanceof Error ? e.name : 'Error';
      const message = e instanceof Error ? e.message : String(e);
      log(`item ${job.id} (attempt ${job.attempt}) failed:\n` +
        (e instanceof Error && e.stack ? e.stack : `${name}: ${message}`));
      answer = { ok: false, error: `${name}: ${message}` };
    }
    this.answer(job, answer);
  }

  answer(job, answer) {
    this.finish(job, JSON.stringify({ id: job.id, ...answer }) + '\n');
  }

  finish(job, line) {
    if (this.running.get(job.id) !== job)
      return;
    this.running.delete(job.id);
    this.reply(line);
    this.started--;
    const next = this.waiting.shift();
    if (next)
      this.start(next);
    this.ended();
  }

  // At the end of standard input, once every item is answered: the last write, then exit 0.
  ended() {
    if (this.closed && this.running.size === 0)
      this.flush(() => process.exit(0));
  }

  serve() {
    this.reply('{"ready":true}\n');
    const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
    rl.on('line', (text) => this.line(text));
    // stdin closed: finish what is outstanding, answer it, exit 0
    rl.on('close', () => {
      this.closed = true;
      this.ended();
    });
  }
}

let serving = false;

// A private writer on the real standard output; process.stdout.write and console.log, info
// and debug then go to standard error, so that nothing but replies reaches claimd.
function protocolOut() {
  if (serving)
    throw new Error('claimd: run() is called once per process');
  serving = true;
  const stdout = process.stdout;
  const write = stdout.write.bind(stdout);
  const stderr = process.stderr;
  stdout.write = stderr.write.bind(stderr);
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  return write;
}

function checkConcurrency(concurrency) {
  if (concurrency !== Infinity && (!Number.isInteger(concurrency) || concurrency < 1))
    throw new RangeError(`run: concurrency is a whole number from 1 (or Infinity), not ` +
      repr(concurrency));
  return concurrency;
}

// Serves claimd's items with handle(job) until standard input ends, then exits 0. handle may
// be async or a plain function; concurrency limits the calls at once (default: as many as
// claimd sends, its --concurrency). Call it once, at the end of the handler's module.
export function run(handle, { concurrency = Infinity } = {}) {
  if (typeof handle !== 'function')
    throw new TypeError(`run: handle must be a function, not ${repr(handle)}`);
  checkConcurrency(concurrency);
  new Runtime(handle, protocolOut(), concurrency).serve();
}

// node node_modules/claimd/bin.js MODULE[:EXPORT]: serves claimd's pipe: items with that
// module's export (handle by default); the module's path is taken from the current directory.
export async function main(argv = process.argv.slice(2)) {
  if (argv.length !== 1 || argv[0] === '-h' || argv[0] === '--help') {
    process.stderr.write('usage: node node_modules/claimd/bin.js MODULE[:EXPORT]\n' +
      '  serves claimd pipe: items with that export of the module (default: handle)\n' +
      "  (claimd --handler 'pipe:/usr/bin/node /srv/app/node_modules/claimd/bin.js " +
      "/srv/app/jobs.mjs' --pipe-ready)\n");
    process.exit(argv[0] === '-h' || argv[0] === '--help' ? 0 : 2);
  }
  const m = /^(.*?)(?::([A-Za-z_$][\w$]*))?$/.exec(argv[0]);
  const [spec, name = 'handle'] = [m[1], m[2]];
  const write = protocolOut(); // before the module runs anything
  let handle;
  try {
    const mod = await import(pathToFileURL(resolve(spec)).href);
    handle = mod[name];
    if (typeof handle !== 'function')
      throw new TypeError(`its export ${repr(name)} is not a function: ${repr(handle)}`);
  } catch (e) {
    log(`cannot load ${argv[0]}: ${e?.name ?? 'Error'}: ${e?.message ?? e}`);
    process.exit(2);
  }
  new Runtime(handle, write, Infinity).serve();
}
