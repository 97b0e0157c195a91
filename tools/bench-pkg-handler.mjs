// The bench's pipe: handler written with claimd's Node.js package (src/node), as its README
// shows a user writing one: what the example co-process pipe-async.mjs does (a payload that is
// JSON with "sleep_ms" waits that long without CPU; a payload is echoed back, an empty one
// leaves no result), in a function. tools/bench runs it with the package from the checkout
// (imported by its path: it has no dependency) beside pipe-async.mjs: sections handlers
// (CPU-trivial) and iobound.
import { setTimeout as sleep } from 'node:timers/promises';
import { run } from '../src/node/index.js';

run(async (job) => {
  const p = job.payload;
  if (typeof p === 'string' && p[0] === '{') {
    const ms = JSON.parse(p).sleep_ms;
    if (ms)
      await sleep(ms, undefined, { signal: job.signal });
  }
  return p ? { echo: p } : undefined;
});
