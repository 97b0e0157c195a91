// tools/bench-peer-bullmq.mjs — BullMQ on a private redis-server, a peer of tools/bench
// (sections handlers, iobound, peers). tools/bench installs bullmq from npm into
// bench-out/peer and runs:
//
//   node tools/bench-peer-bullmq.mjs MODULES SOCKET load N SLEEP_MS   add N jobs (addBulk)
//   node tools/bench-peer-bullmq.mjs MODULES SOCKET work CONCURRENCY  run them until none is left
//
// MODULES: the node_modules directory bullmq is in; SOCKET: redis-server's unix socket. A job
// waits SLEEP_MS without CPU (0: returns at once). "work" prints one JSON line: {"done": jobs
// this process completed, "first_ms": when its first job started, "last_ms": when its last
// one completed} (Date.now(), this machine's clock), so that the bench takes the rate of
// several processes from the earliest start to the latest completion, as it does for
// claimd's rows.
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const [modules, socket, cmd, arg, arg2] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'bench-peer.cjs'));
const { Queue, Worker } = require('bullmq');
const connection = { path: socket, maxRetriesPerRequest: null };
const NAME = 'bench';

async function load(n, sleepMs) {
  const q = new Queue(NAME, { connection });
  for (let done = 0; done < n;) {
    const k = Math.min(1000, n - done);
    const jobs = [];
    for (let i = 0; i < k; i++)
      jobs.push({ name: 'job', data: { n: done + i, sleep_ms: sleepMs } });
    await q.addBulk(jobs);
    done += k;
  }
  await q.close();
}

async function work(concurrency) {
  const q = new Queue(NAME, { connection });
  let done = 0, first = 0, last = 0;
  const w = new Worker(NAME, async (job) => {
    if (!first)
      first = Date.now();
    if (job.data.sleep_ms > 0)
      await sleep(job.data.sleep_ms);
  }, { connection, concurrency });
  w.on('completed', () => {
    done++;
    last = Date.now();
  });
  w.on('error', (e) => console.error('bench-peer-bullmq: ' + e.message));
  // Until nothing waits or runs: polled, so the end is known within 50 ms (not in the rate).
  for (;;) {
    await sleep(50);
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
    if (c.waiting + c.active + c.delayed + c.prioritized === 0)
      break;
  }
  await w.close();
  await q.close();
  console.log(JSON.stringify({ done, first_ms: first, last_ms: last }));
}

if (cmd === 'load')
  await load(Number(arg), Number(arg2 || 0));
else if (cmd === 'work')
  await work(Number(arg));
else {
  console.error('usage: node tools/bench-peer-bullmq.mjs MODULES SOCKET load N SLEEP_MS | work CONCURRENCY');
  process.exit(2);
}
