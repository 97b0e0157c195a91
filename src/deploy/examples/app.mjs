#!/usr/bin/env node
// claimd from Node.js with its package (npm install /path/to/claimd/src/node, and mysql2): a
// handler claimd runs, and work added by the application in its own transaction.
//
//   claimd --handler 'pipe:/usr/bin/node /path/to/app.mjs' --pipe-ready --concurrency 50
import { pathToFileURL } from 'node:url';
import { enqueue, run } from 'claimd';

export async function handle(job) {              // many at once; job.payload: JSON decoded
  const order = job.payload;
  job.progress({ order: order.id });
  if (order.gift)                                // committed with this job's outcome, once
    job.enqueue('wrap', { order: order.id }, { priority: -1 });
  return { mailed: order.to };                   // the row's result
}

export async function orderPaid(conn, orderId, to) { // conn: the application's (mysql2/promise)
  await conn.beginTransaction();
  await conn.query("UPDATE orders SET state = 'paid' WHERE id = ?", [orderId]);
  await enqueue(conn, 'mail', { id: orderId, to }, { dedupe: `mail-${orderId}` });
  await conn.commit();                           // the order and its mail, or neither
}

if (import.meta.url === pathToFileURL(process.argv[1]).href)
  run(handle);
