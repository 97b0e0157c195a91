// tools/bench-peer.mjs — the Redis-based peer of tools/bench (section 11): a BullMQ queue on a
// private redis-server. tools/bench installs bullmq with npm into bench-out/peer and runs:
//
//   node tools/bench-peer.mjs MODULES SOCKET load N            add N no-op jobs (addBulk)
//   node tools/bench-peer.mjs MODULES SOCKET work CONCURRENCY  run them until none is left
//
// MODULES: the node_modules directory bullmq is in; SOCKET: redis-server's unix socket.
// "work" prints one JSON line: {"done": jobs this process completed, "first_ms": when its
// first job started, "last_ms": when its last one completed} (Date.now(), this machine's
// clock), so that the bench takes the rate of several processes from the earliest start to
// the latest completion, as it does for claimd's rows.
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, socket, cmd, arg] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'bench-peer.cjs'));
const { Queue, Worker } = require('bullmq');
const connection = { path: socket, maxRetriesPerRequest: null };
const NAME = 'bench';

async function load(n) {
  const q = new Queue(NAME, { connection });
  for (let done = 0; done < n;) {
    const k = Math.min(1000, n - done);
    const jobs = [];
    for (let i = 0; i < k; i++)
      jobs.push({ name: 'noop', data: { n: done + i } });
    await q.addBulk(jobs);
    done += k;
  }
  await q.close();
}

async function work(concurrency) {
  const q = new Queue(NAME, { connection });
  let done = 0, first = 0, last = 0;
  const w = new Worker(NAME, async () => {
    if (!first)
      first = Date.now();
  }, { connection, concurrency });
  w.on('completed', () => {
    done++;
    last = Date.now();
  });
  w.on('error', (e) => console.error('bench-peer: ' + e.message));
  // Until nothing waits or runs: polled, so the end is known within 50 ms (not in the rate).
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    if (c.waiting + c.active + c.delayed + c.prioritized === 0)
      break;
  }
  await w.close();
  await q.close();
  console.log(JSON.stringify({ done, first_ms: first, last_ms: last }));
}

if (cmd === 'load')
  await load(Number(arg));
else if (cmd === 'work')
  await work(Number(arg));
else {
  console.error('usage: node tools/bench-peer.mjs MODULES SOCKET load N | work CONCURRENCY');
  process.exit(2);
}
