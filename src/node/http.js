// claimd/http: claimd's HTTP API (claimd-api(7)), for programs without database access.
//
//   import { readFileSync } from 'node:fs';
//   import { Client } from 'claimd';
//
//   const client = new Client('http://127.0.0.1:8080',
//     { token: readFileSync('/run/claimd/token', 'utf8') });
//   const id = await client.add('mail', { to: 'a@example.com' }, { delay: '30s', dedupe: 'w-7' });
//   const job = await client.job(id, { wait: '20s' });  // the row once done or dead, or in 20 s
//   const { jobs } = await client.addBatch('etl', [{ ref: 'a', payload: 'extract' },
//     { after: ['a'], payload: 'load' }]);
//
// Every operation of claimd's openapi.json is in OPERATIONS (method, path, query parameters),
// from which call() builds each request: tests/integration/test_node_package.py holds the two
// equal, so the client cannot drift from the server it talks to (the Python package's
// claimd.http has the same table). No dependency: the global fetch of Node.js 18 or later. An
// answer other than 2xx throws an HTTPError with its status and claimd's message.
import { isBytes, jsonText, repr } from './enqueue.js';

// operationId -> [method, path, query parameters]: claimd's openapi.json, operation by operation.
export const OPERATIONS = deepFreeze({
  healthz: ['GET', '/healthz', []],
  metrics: ['GET', '/metrics', []],
  openapi: ['GET', '/v1/openapi.json', []],
  status: ['GET', '/v1/status', []],
  supervisors: ['GET', '/v1/supervisors', []],
  stats: ['GET', '/v1/stats', ['seconds', 'queue', 'from', 'to', 'since', 'step']],
  queues: ['GET', '/v1/queues', []],
  addJob: ['POST', '/v1/queues/{queue}/jobs',
    ['run_at', 'delay', 'period', 'max_attempts', 'timeout', 'dedupe', 'priority', 'group',
      'content_type', 'retry_base', 'retry_max', 'dedupe_for']],
  addJobs: ['POST', '/v1/queues/{queue}/jobs:batch', ['batch', 'description']],
  pauseQueue: ['POST', '/v1/queues/{queue}/pause', []],
  resumeQueue: ['POST', '/v1/queues/{queue}/resume', []],
  limitQueue: ['POST', '/v1/queues/{queue}/limit',
    ['interval', 'burst', 'concurrency', 'group', 'each_group']],
  queueLimits: ['GET', '/v1/queues/{queue}/limits', []],
  backoffQueue: ['POST', '/v1/queues/{queue}/backoff', ['base', 'max', 'jitter', 'reset']],
  jobs: ['GET', '/v1/jobs',
    ['state', 'queue', 'id', 'group', 'dedupe', 'error', 'limit', 'before']],
  job: ['GET', '/v1/jobs/{id}', ['wait']],
  cancelJob: ['DELETE', '/v1/jobs/{id}', []],
  jobEvents: ['GET', '/v1/jobs/{id}/events', []],
  retryJob: ['POST', '/v1/jobs/{id}/retry', []],
  schedules: ['GET', '/v1/schedules', ['limit', 'after']],
  schedule: ['GET', '/v1/schedules/{name}', []],
  putSchedule: ['PUT', '/v1/schedules/{name}',
    ['cron', 'tz', 'queue', 'catch_up', 'paused', 'max_attempts', 'timeout', 'priority', 'group',
      'content_type']],
  deleteSchedule: ['DELETE', '/v1/schedules/{name}', []],
  pauseSchedule: ['POST', '/v1/schedules/{name}/pause', []],
  resumeSchedule: ['POST', '/v1/schedules/{name}/resume', []],
  batches: ['GET', '/v1/batches', ['limit', 'before']],
  batch: ['GET', '/v1/batches/{id}', []],
  batchEvents: ['GET', '/v1/batches/{id}/events', []],
  'jobs.bulk': ['POST', '/v1/jobs/bulk',
    ['action', 'state', 'queue', 'id', 'group', 'dedupe', 'error', 'confirm']],
});

const WAIT_MAX_S = 60; // job's ?wait: claimd answers after at most this long
const given = (v) => v !== undefined && v !== null;

function deepFreeze(table) {
  for (const op of Object.values(table)) {
    Object.freeze(op[2]);
    Object.freeze(op);
  }
  return Object.freeze(table);
}

// claimd answered status (not 2xx) with message: its JSON error, or the body.
export class HTTPError extends Error {
  constructor(status, message, operation, answer = null) {
    super(message);
    this.name = 'HTTPError';
    this.status = status;
    this.operation = operation;
    this.answer = answer;
  }
}

// A query parameter's value: true and false as 1 and 0, a Date as RFC 3339 (UTC).
function value(name, v) {
  if (typeof v === 'boolean')
    return v ? '1' : '0';
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime()))
      throw new TypeError(`${name}: an invalid Date`);
    return v.toISOString();
  }
  if (typeof v === 'object' || typeof v === 'function' || typeof v === 'symbol')
    throw new TypeError(`${name}: text, a number, a boolean or a Date, not ${repr(v)}`);
  return String(v);
}

// dedupeFor -> dedupe_for: the options' names as the query's.
const snake = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function snakeKeys(options, what, allowed) {
  if (options !== undefined && options !== null &&
      (typeof options !== 'object' || Array.isArray(options)))
    throw new TypeError(`${what}: an object of options, not ${repr(options)}`);
  const out = {};
  const unknown = [];
  for (const [k, v] of Object.entries(options ?? {})) {
    if (given(v) && !allowed.includes(snake(k)))
      unknown.push(k);
    out[snake(k)] = v;
  }
  if (unknown.length)
    throw new TypeError(`${what} takes no ${unknown.sort().join(', ')}`);
  return out;
}

// Seconds of a duration ('20s', '500ms', '1m', '2h', or a number of seconds); NaN when not one.
function durationSeconds(v) {
  if (typeof v === 'number')
    return v;
  const m = /^([0-9.]+)(ms|s|m|h)?$/.exec(String(v));
  if (!m)
    return NaN;
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] ?? 's'];
}

// One claimd's HTTP API at baseUrl (http://host:port or https://...), with its token (the
// file's text: surrounding white space is dropped). timeout: seconds a request may take (a
// job(id, {wait}) is given its wait on top).
export class Client {
  constructor(baseUrl, { token, timeout = 30 } = {}) {
    if (typeof baseUrl !== 'string' || !/^https?:\/\//i.test(baseUrl))
      throw new TypeError(`baseUrl: http://host:port or https://..., not ${repr(baseUrl)}`);
    if (typeof timeout !== 'number' || !(timeout > 0))
      throw new RangeError(`timeout: seconds above 0, not ${repr(timeout)}`);
    if (given(token) && typeof token !== 'string')
      throw new TypeError(`token: text, not ${repr(token)}`);
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = token ? token.trim() || null : null;
    this.timeout = timeout;
  }

  // Any operation of OPERATIONS by its openapi.json operationId: params holds its path and
  // query parameters by name (undefined or null: left out). Resolves to {status, answer,
  // headers}: answer is the JSON answer, or its text when it is not JSON (null when empty).
  async call(operationId, { params = {}, body, headers = {}, timeout } = {}) {
    if (!Object.hasOwn(OPERATIONS, operationId))
      throw new TypeError(`no operation ${repr(operationId)} in claimd's API`);
    const [method, template, names] = OPERATIONS[operationId];
    const rest = { ...params };
    const path = template.replace(/\{([^}]+)\}/g, (_, name) => {
      const v = rest[name];
      delete rest[name];
      if (!given(v))
        throw new TypeError(`${operationId}: ${name} is required`);
      return encodeURIComponent(value(name, v));
    });
    const unknown = Object.keys(rest).filter((k) => given(rest[k]) && !names.includes(k));
    if (unknown.length)
      throw new TypeError(`${operationId} takes no ${unknown.sort().join(', ')}`);
    const query = new URLSearchParams();
    for (const name of Object.keys(rest))
      if (given(rest[name]))
        query.append(name, value(name, rest[name]));
    const q = query.toString();
    const h = { ...headers };
    if (this.token)
      h.Authorization = `Bearer ${this.token}`;
    const seconds = timeout ?? this.timeout;
    const res = await fetch(`${this.baseUrl}${path}${q ? `?${q}` : ''}`, {
      method,
      headers: h,
      body: given(body) ? body : undefined,
      signal: AbortSignal.timeout(Math.ceil(seconds * 1000)),
    });
    const raw = await res.text();
    let answer = null;
    if (raw) {
      try {
        answer = JSON.parse(raw);
      } catch {
        answer = raw;
      }
    }
    if (res.status < 200 || res.status > 299) {
      let message = answer !== null && typeof answer === 'object' ? answer.error : answer;
      if (!given(message) || message === '')
        message = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
      throw new HTTPError(res.status, String(message), operationId, answer);
    }
    return { status: res.status, answer, headers: res.headers };
  }

  // -- jobs

  // Adds one job; resolves to its id (with dedupe, the id of the row holding the key).
  // payload: text (text/plain; charset=utf-8), bytes (a Buffer, Uint8Array or ArrayBuffer:
  // application/octet-stream), or any other JSON value (application/json). options: addJob's
  // query parameters in camelCase (delay: '30s', priority: -1, group, dedupe, dedupeFor,
  // maxAttempts, timeout, period, runAt (a Date or text), retryBase, retryMax, contentType),
  // and traceparent and idempotencyKey, sent as headers.
  async add(queue, payload = new Uint8Array(0), options = {}) {
    const { traceparent, idempotency_key: key, ...params } = snakeKeys(options, 'add',
      [...OPERATIONS.addJob[2], 'traceparent', 'idempotency_key']);
    let body;
    let type;
    if (typeof payload === 'string') {
      body = payload;
      type = 'text/plain; charset=utf-8';
    } else if (isBytes(payload) || ArrayBuffer.isView(payload)) {
      body = payload;
      type = 'application/octet-stream';
    } else {
      body = jsonText('payload', payload);
      type = 'application/json';
    }
    const headers = { 'Content-Type': type };
    if (given(traceparent))
      headers.traceparent = traceparent;
    if (given(key))
      headers['Idempotency-Key'] = key;
    params.queue = queue;
    const { answer } = await this.call('addJob', { params, body, headers });
    return Number(answer.id);
  }

  // Adds many jobs in one transaction: each an object as a jobs:batch line ({payload, delay:
  // '30s', ref: 'a', after: ['b']}, claimd-workflows(7)). Resolves to claimd's answer:
  // {jobs: [{id}, ...]} (with batch for a graph or a batch).
  async addBatch(queue, jobs, { batch = false, description, traceparent } = {}) {
    let body = '';
    for (const j of jobs)
      body += `${jsonText('jobs', j)}\n`;
    const headers = { 'Content-Type': 'application/x-ndjson' };
    if (given(traceparent))
      headers.traceparent = traceparent;
    const params = { queue, batch: batch ? '1' : undefined, description };
    return (await this.call('addJobs', { params, body, headers })).answer;
  }

  // The row (claimd-api(7)'s Job); with wait ('20s', at most 60 s), once it is done or dead,
  // or after that long.
  async job(id, { wait } = {}) {
    let timeout = this.timeout;
    if (given(wait)) {
      const s = durationSeconds(wait);
      timeout += (Number.isFinite(s) ? Math.min(s, WAIT_MAX_S) : WAIT_MAX_S) + 1;
    }
    return (await this.call('job', { params: { id, wait }, timeout })).answer;
  }

  // Deletes a ready or dead row; a running one is cancelled where it runs (202).
  async cancel(id) {
    return (await this.call('cancelJob', { params: { id } })).answer;
  }

  async retry(id) {
    return (await this.call('retryJob', { params: { id } })).answer;
  }

  // The rows the filters select (state, queue, id, group, dedupe, error, limit, before).
  async jobs(filters = {}) {
    const params = snakeKeys(filters, 'jobs', OPERATIONS.jobs[2]);
    return (await this.call('jobs', { params })).answer;
  }

  // -- queues and the rest

  async queues() {
    return (await this.call('queues')).answer;
  }

  async pause(queue) {
    return (await this.call('pauseQueue', { params: { queue } })).answer;
  }

  async resume(queue) {
    return (await this.call('resumeQueue', { params: { queue } })).answer;
  }

  async batch(id) {
    return (await this.call('batch', { params: { id } })).answer;
  }

  async status() {
    return (await this.call('status')).answer;
  }
}
