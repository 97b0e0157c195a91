// Types of the claimd package: the pipe: handler runtime (run, Job, RetryLater) and enqueue
// through the application's own mysql2 connection (enqueue, graph).

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

/** The package's version: claimd's own. */
export const version: string;
