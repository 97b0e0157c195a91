// claimd for Node.js: handlers run by claimd's pipe: workers, and work added through the
// application's own mysql2 connection (in its own transaction).
//
//   run(handle)                              // serve items with handle(job): handler.js
//   await enqueue(conn, 'mail', payload)     // one row, in conn's transaction: enqueue.js
//   graph()                                  // rows that wait for each other
//   await new Client(url, { token }).add('mail', payload)   // the HTTP API: http.js
//
// No dependency; mysql2 (the application's) for enqueue; the global fetch for Client.
export { Job, RetryLater, run, main } from './handler.js';
export { Graph, GraphNode, enqueue, graph } from './enqueue.js';
export { Client, HTTPError, OPERATIONS } from './http.js';

export const version = '0.1.0'; // claimd's own (meson.build), as package.json's
