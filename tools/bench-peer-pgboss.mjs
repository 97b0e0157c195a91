// tools/bench-peer-pgboss.mjs — pg-boss on a private PostgreSQL, a peer of tools/bench
// (sections handlers, iobound, peers). tools/bench installs pg-boss from npm into
// bench-out/peer and runs:
//
//   node tools/bench-peer-pgboss.mjs MODULES DATABASE_URL load N SLEEP_MS  add N jobs (insert)
//   node tools/bench-peer-pgboss.mjs MODULES DATABASE_URL work BATCH       run them until none is left
//
// A worker fetches BATCH jobs at a time and runs them at once (a job waits SLEEP_MS without
// CPU; 0 returns at once), fetching again at once while batches come back full
// (burstWhenBatchFull), else every 0.5 s. "work" prints {"done", "first_ms", "last_ms"} as
// tools/bench-peer-bullmq.mjs does.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const [modules, url, cmd, arg, arg2] = process.argv.slice(2);

async function importPackage(name) {
  const dir = path.join(path.resolve(modules), name);
  const main = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).main;
  return import(pathToFileURL(path.join(dir, main)).href);
}

const { PgBoss } = await importPackage('pg-boss');
const NAME = 'bench';

async function started() {
  const boss = new PgBoss({ connectionString: url, max: 4 });
  boss.on('error', (e) => console.error('bench-peer-pgboss: ' + e.message));
  await boss.start();
  return boss;
}

async function load(n, sleepMs) {
  const boss = await started();
  await boss.createQueue(NAME);
  for (let done = 0; done < n;) {
    const k = Math.min(1000, n - done);
    const jobs = [];
    for (let i = 0; i < k; i++)
      jobs.push({ data: { n: done + i, sleep_ms: sleepMs } });
    await boss.insert(NAME, jobs);
    done += k;
  }
  await boss.stop({ graceful: false, wait: true });
}

async function work(batch) {
  const boss = await started();
  let done = 0, first = 0, last = 0;
  await boss.work(NAME, { batchSize: batch, burstWhenBatchFull: true,
    pollingIntervalSeconds: 0.5 }, async (jobs) => {
    if (!first)
      first = Date.now();
    await Promise.all(jobs.map((j) => (j.data.sleep_ms > 0 ? sleep(j.data.sleep_ms) : null)));
    done += jobs.length;
    last = Date.now();
  });
  // Until nothing waits or runs: polled, so the end is known within 50 ms (not in the rate).
  const db = boss.getDb();
  for (;;) {
    await sleep(50);
    const r = await db.executeSql(
      "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'", [NAME]);
    if (r.rows[0].n === 0)
      break;
  }
  await boss.stop({ graceful: true, wait: true });
  console.log(JSON.stringify({ done, first_ms: first, last_ms: last }));
}

if (cmd === 'load')
  await load(Number(arg), Number(arg2 || 0));
else if (cmd === 'work')
  await work(Number(arg));
else {
  console.error('usage: node tools/bench-peer-pgboss.mjs MODULES URL load N SLEEP_MS | work BATCH');
  process.exit(2);
}
