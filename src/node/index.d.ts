// Types of the claimd package: the pipe: handler runtime (run, Job, RetryLater), enqueue
// through the application's own mysql2 connection (enqueue, graph), and the HTTP API's client
// (Client, HTTPError, OPERATIONS).

/** Any value JSON can hold. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A payload: text, bytes (enqueue: any; job.enqueue: UTF-8), or any other JSON value (then
 * content_type application/json unless given). */
export type Payload = string | Uint8Array | ArrayBuffer | JsonValue | object;

/** The options of a row, checked before any SQL (a TypeError or RangeError names the one that
 * is wrong). Null or undefined: not given. */
export interface RowOptions {
  /** When it may run (an instant); not with delay. */
  runAt?: Date | null;
  /** Seconds from now before it may run (0 to ten years); not with runAt. */
  delay?: number | null;
  /** -10 to 10, smaller runs first (default 0). */
  priority?: number | null;
  /** A FIFO group (its key, 1 to 255 bytes): its rows run one at a time, in order. */
  group?: string | null;
  /** A key (1 to 255 bytes): not added while another row of the queue holds it. */
  dedupe?: string | null;
  /** With dedupe: seconds the finished row keeps the key (0 to 30 days), instead of claimd's
   * --dedupe-window. */
  dedupeFor?: number | null;
  /** Seconds: the row's own retry back-off, its first retry's wait (1 ms to 7 days), instead
   * of its queue's. */
  retryBase?: number | null;
  /** Seconds: the row's longest retry wait (not below retryBase, at most 7 days). */
  retryMax?: number | null;
  /** Attempts before the row is dead (1 to 2^32-1). */
  maxAttempts?: number | null;
  /** Whole seconds a run may take, instead of claimd's --timeout. */
  timeout?: number | null;
  /** Whole seconds: a recurring row, run again that long after each run (its period); not
   * with group. */
  every?: number | null;
  /** The payload's content type (1 to 255 bytes). */
  contentType?: string | null;
  /** A W3C traceparent, 00-<32 hex>-<16 hex>-<2 hex>. */
  traceparent?: string | null;
}

/** What a dead parent does to a row that waits for it: 'cancel' (it is cancelled too) or
 * 'run' (the parent counts as done). */
export type OnDead = 'cancel' | 'run';

/** The options of enqueue(): a row's, and the ids of the rows it waits for. */
export interface EnqueueOptions extends RowOptions {
  /** Ids of existing rows it waits for (not with group). */
  after?: Array<number | bigint> | null;
  onDead?: OnDead;
}

/** The options of a follow-up job (job.enqueue): a row's (traceparent: the item's own unless
 * given), its ref and the refs of the jobs of the same item it waits for (a graph: no group,
 * dedupe or every then). */
export interface FollowUpOptions extends RowOptions {
  /** A name (1 to 64 bytes) the after of the item's other jobs may give. */
  ref?: string | null;
  /** At most 32 refs of jobs this item added before. */
  after?: string[];
  onDead?: OnDead;
}

/** The options of graph.add(): a row's (no dedupe), and the nodes or row ids it waits for. */
export interface GraphAddOptions extends Omit<RowOptions, 'dedupe'> {
  after?: Array<GraphNode | number | bigint>;
  onDead?: OnDead;
}

/** Why claimd asked to stop an item: its timeout, the worker's shutdown, an operator's cancel. */
export type CancelReason = 'timeout' | 'shutdown' | 'cancelled';

/** One item, as its request line gave it. */
export class Job {
  /** The row's id. */
  readonly id: number;
  readonly queue: string | null;
  /** Its FIFO group, or null. */
  readonly group: string | null;
  /** 1 for the first run. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Its number in its group, 0 without one. */
  readonly seq: number;
  /** When it was added, or null when unknown. */
  readonly enqueuedAt: Date | null;
  /** When its timeout runs out, or null when not told. */
  readonly deadline: Date | null;
  readonly contentType: string | null;
  readonly traceparent: string | null;
  /** The payload's bytes. */
  readonly body: Buffer;
  /** The payload: JSON decoded when contentType says JSON (application/json, or +json), else
   * text; a Buffer when its bytes are not UTF-8. */
  readonly payload: any;
  /** Aborts when claimd asks to stop this item (its reason an AbortError naming why): pass it
   * on to what the handler awaits. */
  readonly signal: AbortSignal;
  /** Why claimd asked to stop this item, or null. */
  readonly cancelled: CancelReason | string | null;
  /** Milliseconds until the item's timeout (0 when past), or null when not told. */
  timeLeft(): number | null;
  /** Reports progress (any JSON value but null, at most 1 KiB as JSON; throws otherwise);
   * claimd keeps the last in the row's progress, at most once a second. */
  progress(value: JsonValue): void;
  /** Adds a follow-up job, which claimd commits in the same transaction as this item's
   * outcome: written only if the item ends done. At most 1000 per item; throws a TypeError or
   * RangeError naming what is wrong. */
  enqueue(queue: string, payload?: Payload, options?: FollowUpOptions): void;
}

/** Throw a RetryLater(seconds) in a handler to run the item again after that long, without
 * counting an attempt. */
export class RetryLater extends Error {
  constructor(seconds: number);
  readonly seconds: number;
}

/** A handler: its return value (any JSON value, at most 64 KiB; undefined or null: none) is
 * kept in the row's result; a throw fails the attempt. */
export type Handler = (job: Job) => unknown | Promise<unknown>;

export interface RunOptions {
  /** At most this many handle() calls at once (default: as many as claimd sends). */
  concurrency?: number;
}

/** Serves claimd's pipe: items with handle(job) until standard input ends, then exits 0. Call
 * it once, at the end of the handler's module: from then on process.stdout.write and
 * console.log, info and debug go to standard error. */
export function run(handle: Handler, options?: RunOptions): void;

/** The command line of bin.js: MODULE[:EXPORT] (default export name: handle). */
export function main(argv?: string[]): Promise<void>;

/** What enqueue and graph take: a mysql2 connection (mysql2/promise's, a PoolConnection, or a
 * callback one, whose .promise() is used); not a pool. */
export interface Queryable {
  query(sql: string, values?: unknown[]): unknown;
}

/** Adds one row to queue in conn's current transaction (not committed here); resolves to its
 * id, or with dedupe, the id of the row that already holds the key. */
export function enqueue(conn: Queryable, queue: string, payload: Payload,
  options?: EnqueueOptions): Promise<number>;

/** A node of a graph, as Graph.add returns it. */
export class GraphNode {
  private constructor();
  readonly graph: Graph;
  readonly index: number;
}

/** Rows that wait for each other, added together. A node can only wait for nodes added
 * before it, so a graph cannot hold a cycle. */
export class Graph {
  /** Adds a row; returns its node, for the after of those added later. */
  add(queue: string, payload: Payload, options?: GraphAddOptions): GraphNode;
  /** How many rows were added. */
  readonly size: number;
  /** Inserts every row, then its edges, in conn's transaction (not committed here); resolves
   * to the ids in the order the nodes were added. */
  enqueue(conn: Queryable): Promise<number[]>;
}

export function graph(): Graph;

/** The operationIds of claimd's openapi.json. */
export type OperationId =
  'healthz' | 'metrics' | 'openapi' | 'status' | 'supervisors' | 'stats' | 'queues' | 'addJob' |
  'addJobs' | 'pauseQueue' | 'resumeQueue' | 'limitQueue' | 'queueLimits' | 'backoffQueue' |
  'jobs' | 'job' | 'cancelJob' | 'jobEvents' | 'retryJob' | 'schedules' | 'schedule' |
  'putSchedule' | 'deleteSchedule' | 'pauseSchedule' | 'resumeSchedule' | 'batches' | 'batch' |
  'batchEvents' | 'jobs.bulk';

/** Every operation of claimd's openapi.json: [method, path (with {name} parameters), its query
 * parameters]. Frozen. */
export const OPERATIONS: Readonly<Record<OperationId,
  readonly [method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, query: readonly string[]]>>;

/** A path or query parameter's value: a boolean is sent as 1 or 0, a Date as RFC 3339 (UTC),
 * a number (seconds, for a duration) as its text; undefined or null: left out. */
export type ParamValue = string | number | bigint | boolean | Date | null | undefined;

/** claimd answered status (not 2xx); message is its JSON error (or the body's text). */
export class HTTPError extends Error {
  constructor(status: number, message: string, operation: string, answer?: unknown);
  readonly name: 'HTTPError';
  readonly status: number;
  /** The operationId of the request. */
  readonly operation: string;
  /** The answer: its JSON, or its text; null when empty. */
  readonly answer: unknown;
}

export interface ClientOptions {
  /** The token (claimd's token file's text, or --http-token-file's); white space around it is
   * dropped. */
  token?: string | null;
  /** Seconds a request may take (default 30); job() with wait gets its wait on top. */
  timeout?: number;
}

export interface CallOptions {
  /** The operation's path and query parameters by name (openapi.json's: snake_case). Another
   * name is a TypeError naming it; a missing path parameter too. */
  params?: Record<string, ParamValue>;
  body?: string | Uint8Array | ArrayBuffer | null;
  headers?: Record<string, string>;
  /** Seconds, instead of the client's. */
  timeout?: number;
}

export interface CallResult<T = any> {
  status: number;
  /** The JSON answer, or its text when it is not JSON; null when empty. */
  answer: T;
  headers: Headers;
}

/** A duration as the API takes it: '30s', '500ms', '5m', '2h', or a number of seconds. */
export type Duration = string | number;

/** addJob's query parameters in camelCase, and two of its headers. */
export interface AddOptions {
  /** When (a Date, or 'YYYY-MM-DD HH:MM:SS' UTC or RFC 3339 text); not with delay. */
  runAt?: Date | string | null;
  delay?: Duration | null;
  /** Recurring: again this long after each run. */
  period?: Duration | null;
  maxAttempts?: number | null;
  timeout?: Duration | null;
  dedupe?: string | null;
  /** -10 to 10, smaller runs first. */
  priority?: number | null;
  group?: string | null;
  /** The payload's type, instead of the one the payload's kind gives. */
  contentType?: string | null;
  retryBase?: Duration | null;
  retryMax?: Duration | null;
  /** With dedupe: how long the finished row keeps the key (up to 30 days). */
  dedupeFor?: Duration | null;
  /** Sent as the traceparent header. */
  traceparent?: string | null;
  /** Sent as the Idempotency-Key header. */
  idempotencyKey?: string | null;
}

/** One line of a jobs:batch request (claimd-workflows(7)). */
export interface BatchJob {
  payload?: JsonValue;
  ref?: string;
  after?: string[];
  [option: string]: unknown;
}

export interface AddBatchOptions {
  /** A batch (its members counted, a callback): claimd answers its id. */
  batch?: boolean;
  description?: string | null;
  /** Sent as the traceparent header. */
  traceparent?: string | null;
}

/** claimd's HTTP API (claimd-api(7)) at baseUrl (http://host:port or https://...), through the
 * global fetch. An answer other than 2xx throws an HTTPError; a request past its timeout
 * rejects with a TimeoutError (AbortSignal.timeout). */
export class Client {
  constructor(baseUrl: string, options?: ClientOptions);
  readonly baseUrl: string;
  readonly token: string | null;
  readonly timeout: number;
  /** Any operation by its operationId. */
  call<T = any>(operationId: OperationId, options?: CallOptions): Promise<CallResult<T>>;
  /** Adds one job; resolves to its id (with dedupe, the id of the row that holds the key). A
   * string is sent as text/plain; charset=utf-8, bytes as application/octet-stream, any other
   * value as JSON (application/json). */
  add(queue: string, payload?: Payload, options?: AddOptions): Promise<number>;
  /** Adds many jobs in one transaction (newline-delimited JSON); resolves to claimd's answer,
   * {jobs: [{id}, ...]} (with batch for a graph or a batch). */
  addBatch(queue: string, jobs: Iterable<BatchJob>, options?: AddBatchOptions): Promise<any>;
  /** The row; with wait (at most 60 s), once it is done or dead, or after that long. */
  job(id: number | bigint | string, options?: { wait?: Duration | null }): Promise<any>;
  /** Deletes a ready or dead row; a running one is cancelled where it runs. */
  cancel(id: number | bigint | string): Promise<any>;
  retry(id: number | bigint | string): Promise<any>;
  jobs(filters?: Record<string, ParamValue>): Promise<any>;
  queues(): Promise<any[]>;
  pause(queue: string): Promise<any>;
  resume(queue: string): Promise<any>;
  batch(id: number | bigint | string): Promise<any>;
  status(): Promise<any>;
}

/** The package's version: claimd's own. */
export const version: string;
