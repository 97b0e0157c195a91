// claimd for Node.js: handlers run by claimd's pipe: workers, and work added through the
// application's own mysql2 connection (in its own transaction).
//
//   run(handle)                              // serve items with handle(job): handler.js
//   await enqueue(conn, 'mail', payload)     // one row, in conn's transaction: enqueue.js
//   graph()                                  // rows that wait for each other
//
// No dependency; mysql2 (the application's) for enqueue.
export { Job, RetryLater, run, main } from './handler.js';
export { Graph, GraphNode, enqueue, graph } from './enqueue.js';

export const version = '0.1.0'; // claimd's own (meson.build), as package.json's
