// claimd/enqueue: add work through the application's own mysql2 connection, in its own
// transaction, with the plain SQL of claimd-table(5) (the same as the Python package's).
//
//   import mysql from 'mysql2/promise';
//   import { enqueue } from 'claimd';
//
//   const conn = await mysql.createConnection({ ... });
//   await conn.beginTransaction();
//   await conn.query('INSERT INTO orders ...');
//   await enqueue(conn, 'mail', { order: 7, to: 'a@example.com' });   // JSON: content_type set
//   await conn.commit();   // the order and its mail job commit together, or neither does
//
// conn is a mysql2 connection: a mysql2/promise one (or a PoolConnection from
// pool.getConnection()), or a callback one (its .promise() is used). Not a pool: each query
// of a pool may go to another connection, outside the transaction. Nothing is committed here.
// Options are checked before any SQL, with the limits the table enforces: a TypeError or
// RangeError names the one that is wrong. The server's own refusals (a cycle in `after`, a
// parent that is running) come as mysql2's error, with the trigger's message.
import { inspect } from 'node:util';

export const QUEUE_MAX = 64; // work_items.queue VARCHAR(64)
export const KEY_MAX = 255; // group_key, dedupe_key, content_type
export const TRACEPARENT_MAX = 55; // the W3C version-00 traceparent
export const PAYLOAD_MAX = 16 * 1024 * 1024 - 1; // MEDIUMBLOB
export const PRIORITY_MIN = -10;
export const PRIORITY_MAX = 10;
export const UINT_MAX = 2 ** 32 - 1; // INT UNSIGNED: max_attempts, timeout_s, period_s
export const DELAY_MAX = 10 * 365 * 86400;
export const ON_DEAD = ['cancel', 'run'];
const ROW_OPTIONS = ['runAt', 'delay', 'priority', 'group', 'dedupe', 'dedupeFor', 'maxAttempts',
  'timeout', 'every', 'retryBase', 'retryMax', 'contentType', 'traceparent'];
const BACKOFF_MAX_S = 7 * 86400; // a row's retry_base_ms and retry_max_ms: 1 ms to 7 days
const DEDUPE_FOR_MAX_S = 30 * 86400; // how long a row keeps its dedupe key: claimd's add's

export const repr = (v) => inspect(v, { depth: 1, breakLength: Infinity, maxStringLength: 80 });
const given = (v) => v !== undefined && v !== null;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function seconds(name, v, lo, hi) {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi)
    throw new RangeError(`${name}: seconds from ${lo} to ${hi}, not ${repr(v)}`);
  return v;
}

function uint(name, v, lo) {
  if (!Number.isInteger(v) || v < lo || v > UINT_MAX)
    throw new RangeError(`${name}: a whole number from ${lo} to ${UINT_MAX}, not ${repr(v)}`);
  return v;
}

export function text(name, v, most) {
  if (typeof v !== 'string' || !v || Buffer.byteLength(v) > most)
    throw new TypeError(`${name}: text of 1 to ${most} bytes, not ${repr(v)}`);
  return v;
}

export function checkOnDead(v) {
  if (!ON_DEAD.includes(v))
    throw new TypeError(`onDead: ${ON_DEAD.map((x) => `'${x}'`).join(' or ')}, not ${repr(v)}`);
  return v;
}

// JSON text of v, refusing what JSON cannot hold (undefined, functions, BigInt, cycles, NaN and
// the infinities, which JSON.stringify would write as null).
export function jsonText(name, v) {
  let s;
  try {
    s = JSON.stringify(v, (k, x) => {
      if (typeof x === 'number' && !Number.isFinite(x))
        throw new TypeError(`${x} is not a JSON number`);
      return x;
    });
  } catch (e) {
    throw new TypeError(`${name}: not text, bytes, or JSON: ${e.message}`);
  }
  if (s === undefined)
    throw new TypeError(`${name}: not text, bytes, or JSON: ${repr(v)}`);
  return s;
}

export const isBytes = (v) => v instanceof Uint8Array || v instanceof ArrayBuffer;
const toBuffer = (v) => (v instanceof ArrayBuffer ? Buffer.from(v) :
  Buffer.from(v.buffer, v.byteOffset, v.byteLength));

// Bytes that are UTF-8 as a string (a follow-up job's payload travels as JSON text).
export function utf8Text(v) {
  try {
    return utf8.decode(isBytes(v) ? toBuffer(v) : v);
  } catch {
    throw new TypeError("payload: bytes that are not UTF-8 (a follow-up job's payload " +
      'travels as JSON text)');
  }
}

// The payload's value as a query parameter (a string, or a Buffer for bytes) and its content
// type: a JSON value's is application/json unless given.
function payloadOf(payload, contentType) {
  let body;
  let size;
  if (typeof payload === 'string') {
    body = payload;
    size = payload.length * 3 > PAYLOAD_MAX ? Buffer.byteLength(payload) : payload.length;
  } else if (isBytes(payload)) {
    body = toBuffer(payload);
    size = body.length;
  } else {
    body = jsonText('payload', payload ?? null);
    size = body.length * 3 > PAYLOAD_MAX ? Buffer.byteLength(body) : body.length;
    contentType = contentType ?? 'application/json';
  }
  if (size > PAYLOAD_MAX)
    throw new RangeError(`payload: ${size} bytes, at most ${PAYLOAD_MAX}`);
  return [body, contentType];
}

// '1700000000.123000': a Date as FROM_UNIXTIME's argument, to the microsecond, exactly.
function unixSeconds(d) {
  const ms = d.getTime();
  const s = Math.floor(ms / 1000);
  return `${s}.${String(ms - s * 1000).padStart(3, '0')}000`;
}

// The checked columns of one row: {column: [sql expression, parameter]}; waits: it has rows
// to wait for. opts holds the row options only (ROW_OPTIONS).
export function row(queue, payload, opts, waits = false) {
  const { runAt, delay, group, dedupe, maxAttempts, timeout, every, traceparent } = opts;
  const priority = opts.priority ?? 0;
  const cols = { queue: ['?', text('queue', queue, QUEUE_MAX)] };
  const [body, contentType] = payloadOf(payload, opts.contentType ?? undefined);
  cols.payload = ['?', body];
  if (given(runAt) && given(delay))
    throw new TypeError('runAt and delay: one or the other');
  if (given(runAt)) {
    if (!(runAt instanceof Date) || Number.isNaN(runAt.getTime()))
      throw new TypeError(`runAt: a Date, not ${repr(runAt)}`);
    // A point in time whatever the session's time zone: FROM_UNIXTIME reads it in the
    // session's zone and the TIMESTAMP column stores the instant.
    cols.run_at = ['FROM_UNIXTIME(?)', unixSeconds(runAt)];
  } else if (given(delay)) {
    const us = Math.round(seconds('delay', delay, 0, DELAY_MAX) * 1e6);
    cols.run_at = ['NOW(6) + INTERVAL ? MICROSECOND', us];
  }
  if (!Number.isInteger(priority) || priority < PRIORITY_MIN || priority > PRIORITY_MAX)
    throw new RangeError(`priority: a whole number from ${PRIORITY_MIN} to ${PRIORITY_MAX} ` +
      `(smaller runs first), not ${repr(priority)}`);
  if (priority)
    cols.priority = ['?', priority];
  if (given(group)) {
    if (waits)
      throw new TypeError('after: a row in a FIFO group cannot wait for others');
    cols.group_key = ['?', text('group', group, KEY_MAX)];
  }
  if (given(dedupe))
    cols.dedupe_key = ['?', text('dedupe', dedupe, KEY_MAX)];
  if (given(maxAttempts))
    cols.max_attempts = ['?', uint('maxAttempts', maxAttempts, 1)];
  if (given(timeout)) {
    const s = seconds('timeout', timeout, 1, UINT_MAX);
    if (!Number.isInteger(s))
      throw new RangeError(`timeout: whole seconds, not ${repr(timeout)}`);
    cols.timeout_s = ['?', s];
  }
  if (given(every)) {
    const s = seconds('every', every, 0, UINT_MAX);
    if (!Number.isInteger(s))
      throw new RangeError(`every: whole seconds, not ${repr(every)}`);
    if (given(group))
      throw new TypeError('every: a recurring row takes no part in groups: not with group');
    cols.period_s = ['?', s];
  }
  const { retryBase, retryMax, dedupeFor } = opts;
  let baseMs = null;
  if (given(retryBase)) {
    baseMs = Math.round(seconds('retryBase', retryBase, 0.001, BACKOFF_MAX_S) * 1000);
    cols.retry_base_ms = ['?', baseMs];
  }
  if (given(retryMax)) {
    const maxMs = Math.round(seconds('retryMax', retryMax, 0.001, BACKOFF_MAX_S) * 1000);
    if (baseMs !== null && maxMs < baseMs)
      throw new RangeError(`retryMax: not below retryBase (${repr(retryMax)} < ${repr(retryBase)})`);
    cols.retry_max_ms = ['?', maxMs];
  }
  if (given(dedupeFor)) {
    if (!given(dedupe))
      throw new TypeError('dedupeFor: the window of a dedupe key: give dedupe too');
    cols.dedupe_for_s = ['?', Math.ceil(seconds('dedupeFor', dedupeFor, 0, DEDUPE_FOR_MAX_S))];
  }
  if (given(contentType))
    cols.content_type = ['?', text('contentType', contentType, KEY_MAX)];
  if (given(traceparent)) {
    const tp = text('traceparent', traceparent, TRACEPARENT_MAX);
    if (!/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(tp))
      throw new TypeError('traceparent: a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), ' +
        `not ${repr(tp)}`);
    cols.traceparent = ['?', tp];
  }
  return cols;
}

// Splits opts into the row options and the others named in extra; any other key is refused.
export function options(opts, extra, what = 'enqueue') {
  if (opts === undefined || opts === null)
    return [{}, {}];
  if (typeof opts !== 'object' || Array.isArray(opts))
    throw new TypeError(`${what}: options are an object, not ${repr(opts)}`);
  const rowOpts = {};
  const others = {};
  const unknown = [];
  for (const [k, v] of Object.entries(opts)) {
    if (ROW_OPTIONS.includes(k))
      rowOpts[k] = v;
    else if (extra.includes(k))
      others[k] = v;
    else
      unknown.push(k);
  }
  if (unknown.length)
    throw new TypeError(`${what}: no such option: ${unknown.sort().join(', ')}`);
  return [rowOpts, others];
}

const isId = (p) => (Number.isSafeInteger(p) && p >= 1) || (typeof p === 'bigint' && p >= 1n);

function parentIds(after, onDead) {
  checkOnDead(onDead);
  if (!given(after))
    return [];
  if (!Array.isArray(after))
    throw new TypeError(`after: an array of row ids, not ${repr(after)}`);
  for (const p of after)
    if (!isId(p))
      throw new TypeError(`after: row ids (whole numbers from 1), not ${repr(p)}`);
  if (new Set(after.map(String)).size !== after.length)
    throw new TypeError('after: an id given twice');
  return after;
}

// A promise-API connection of conn (mysql2's callback connection has .promise()); a pool is
// refused, since its queries may each take another connection.
function promiseConn(conn) {
  let c = conn;
  if (c && typeof c.promise === 'function' && typeof c.query === 'function' &&
      typeof c.then !== 'function')
    c = c.promise();
  if (!c || typeof c.query !== 'function')
    throw new TypeError(`a mysql2 connection (mysql2/promise), not ${repr(conn)}`);
  if (typeof c.getConnection === 'function' && typeof c.beginTransaction !== 'function')
    throw new TypeError('a pool: pass one connection (await pool.getConnection()), in whose ' +
      'transaction the rows are added');
  return c;
}

const idOf = (v) => Number(v); // a BIGINT UNSIGNED id: mysql2 gives a number (or text)

async function insert(conn, cols, after, onDead) {
  const names = Object.keys(cols);
  const exprs = names.map((n) => cols[n][0]);
  const params = names.map((n) => cols[n][1]);
  const dedupe = 'dedupe_key' in cols;
  const [res] = await conn.query(`INSERT ${dedupe ? 'IGNORE ' : ''}INTO work_items ` +
    `(${names.join(', ')}) VALUES (${exprs.join(', ')})`, params);
  if (dedupe && res.affectedRows === 0) {
    // Held by another row (live, or finished within the dedupe window): its id.
    const [rows] = await conn.query('SELECT id FROM work_items WHERE queue = ? AND ' +
      'dedupe_key = ?', [cols.queue[1], cols.dedupe_key[1]]);
    if (!rows.length) // the holder went meanwhile: not added, no id to give
      throw new Error(`enqueue: the dedupe key ${repr(cols.dedupe_key[1])} was held, and ` +
        'its row is gone');
    const r = rows[0];
    return idOf(Array.isArray(r) ? r[0] : r.id);
  }
  const rid = idOf(res.insertId);
  if (after.length)
    await conn.query('INSERT INTO work_deps (parent_id, child_id, on_dead) VALUES ' +
      after.map(() => '(?, ?, ?)').join(', '), after.flatMap((p) => [p, rid, onDead]));
  return rid;
}

// Adds one row to queue in conn's current transaction (not committed here); resolves to its
// id, or with dedupe, the id of the row that already holds the key.
export async function enqueue(conn, queue, payload, opts) {
  const [rowOpts, { after, onDead = 'cancel' }] = options(opts, ['after', 'onDead']);
  const parents = parentIds(after, onDead);
  const cols = row(queue, payload, rowOpts, parents.length > 0);
  return insert(promiseConn(conn), cols, parents, onDead);
}

// A node of a graph, as Graph.add returns it.
export class GraphNode {
  constructor(graph, index) {
    this.graph = graph;
    this.index = index;
  }
}

// Rows that wait for each other, added together:
//
//   const g = graph();
//   const fetch = g.add('etl', 'fetch');
//   const parse = g.add('etl', 'parse', { after: [fetch] });
//   g.add('etl', 'report', { after: [parse, fetch] });
//   const ids = await g.enqueue(conn);   // [id of fetch, id of parse, id of report]
//
// A node is a handle add returned (or an existing row's id); since a node can only wait for
// nodes added before it, a graph cannot hold a cycle.
export class Graph {
  #rows = [];

  add(queue, payload, opts) {
    const [rowOpts, { after, onDead = 'cancel' }] = options(opts, ['after', 'onDead'],
      'graph.add');
    const parents = [];
    if (given(after) && !Array.isArray(after))
      throw new TypeError(`after: an array of nodes or row ids, not ${repr(after)}`);
    for (const p of after ?? []) {
      if (p instanceof GraphNode) {
        if (p.graph !== this)
          throw new TypeError('after: a node of another graph');
        parents.push(p);
      } else {
        parents.push(...parentIds([p], onDead));
      }
    }
    checkOnDead(onDead);
    if (given(rowOpts.dedupe))
      throw new TypeError('dedupe: not in a graph (a row not added would leave its edges ' +
        'without a row)');
    const cols = row(queue, payload, rowOpts, parents.length > 0);
    this.#rows.push([cols, parents, onDead]);
    return new GraphNode(this, this.#rows.length - 1);
  }

  get size() {
    return this.#rows.length;
  }

  // Inserts every row, then its edges, in conn's transaction (not committed here); resolves
  // to the ids in the order the nodes were added.
  async enqueue(conn) {
    const c = promiseConn(conn);
    const ids = [];
    for (const [cols, parents, onDead] of this.#rows) {
      const resolved = parents.map((p) => (p instanceof GraphNode ? ids[p.index] : p));
      ids.push(await insert(c, cols, resolved, onDead));
    }
    return ids;
  }
}

export function graph() {
  return new Graph();
}
