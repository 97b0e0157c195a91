// tools/bench-peer-graphile.mjs — graphile-worker on a private PostgreSQL, a peer of
// tools/bench (sections handlers, iobound, peers). tools/bench installs graphile-worker from
// npm into bench-out/peer and runs:
//
//   node tools/bench-peer-graphile.mjs MODULES DATABASE_URL load N SLEEP_MS  add N jobs (addJobs)
//   node tools/bench-peer-graphile.mjs MODULES DATABASE_URL work CONCURRENCY run them until none is left
//
// A job waits SLEEP_MS without CPU (0 returns at once). "work" prints {"done", "first_ms",
// "last_ms"} as tools/bench-peer-bullmq.mjs does.
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

const { run, makeWorkerUtils } = await importPackage('graphile-worker');
const logger = { scope: () => logger, debug() {}, info() {},
  warn: (m) => console.error('bench-peer-graphile: ' + m),
  error: (m) => console.error('bench-peer-graphile: ' + m) };

async function load(n, sleepMs) {
  const utils = await makeWorkerUtils({ connectionString: url });
  await utils.migrate();
  for (let done = 0; done < n;) {
    const k = Math.min(1000, n - done);
    const jobs = [];
    for (let i = 0; i < k; i++)
      jobs.push({ identifier: 'job', payload: { n: done + i, sleep_ms: sleepMs } });
    await utils.addJobs(jobs);
    done += k;
  }
  await utils.release();
}

async function work(concurrency) {
  let done = 0, first = 0, last = 0;
  const runner = await run({
    connectionString: url, concurrency, noHandleSignals: true, pollInterval: 500,
    taskList: {
      job: async (payload) => {
        if (!first)
          first = Date.now();
        if (payload.sleep_ms > 0)
          await sleep(payload.sleep_ms);
      },
    },
  });
  runner.events.on('job:success', () => {
    done++;
    last = Date.now();
  });
  // Until no job is left (done jobs are deleted): polled, so the end is known within 50 ms.
  const utils = await makeWorkerUtils({ connectionString: url });
  for (;;) {
    await sleep(50);
    const r = await utils.withPgClient((c) =>
      c.query('SELECT count(*)::int AS n FROM graphile_worker._private_jobs'));
    if (r.rows[0].n === 0)
      break;
  }
  await utils.release();
  await runner.stop();
  console.log(JSON.stringify({ done, first_ms: first, last_ms: last }));
}

if (cmd === 'load')
  await load(Number(arg), Number(arg2 || 0));
else if (cmd === 'work')
  await work(Number(arg));
else {
  console.error('usage: node tools/bench-peer-graphile.mjs MODULES URL load N SLEEP_MS | work CONCURRENCY');
  process.exit(2);
}
