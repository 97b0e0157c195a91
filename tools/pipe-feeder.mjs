// The bench's feeder: a pipe: co-process run alone, without claimd, a queue or a database,
// fed as a worker with nothing else to do would feed it: its ready line awaited, then
// --concurrency requests at once, and a new one written for each answer the moment it is read
// (the requests of one read in one write, as claimd's worker writes them). What it measures
// is the co-process's own ceiling for a job shape: tools/bench (section iobound) divides
// claimd's figure through the same co-process by it, to tell the two sides of the pipe apart.
//
//   node tools/pipe-feeder.mjs --jobs N --concurrency C --payload TEXT -- /abs/cmd args...
//
// Prints one line of JSON: {"jobs": N, "seconds": from the ready line to the last answer,
// "failed": answers with "ok": false}. Exits 1 if the co-process exits or goes quiet first.
import { spawn } from 'node:child_process';

function usage(why) {
  process.stderr.write(`pipe-feeder: ${why}\nusage: node tools/pipe-feeder.mjs --jobs N ` +
    '--concurrency C --payload TEXT -- /abs/cmd args...\n');
  process.exit(2);
}

const argv = process.argv.slice(2);
const cut = argv.indexOf('--');
if (cut < 0 || cut === argv.length - 1) usage('no command after --');
const opts = { jobs: 0, concurrency: 0, payload: null };
for (let i = 0; i < cut; i += 2) {
  const k = argv[i].replace(/^--/, '');
  if (!(k in opts) || i + 1 >= cut) usage(`bad option ${argv[i]}`);
  opts[k] = k === 'payload' ? argv[i + 1] : Number(argv[i + 1]);
}
if (!(opts.jobs > 0) || !(opts.concurrency > 0) || opts.payload === null) usage('--jobs, ' +
  '--concurrency and --payload are needed');

const child = spawn(argv[cut + 1], argv.slice(cut + 2), { stdio: ['pipe', 'pipe', 'inherit'] });
const enqueued = new Date().toISOString().replace('T', ' ').replace('Z', '');
let next = 1, answered = 0, failed = 0, t0 = 0, rest = '', finished = false;

// The fields claimd's worker sends (src/worker/pipe_request.c), a fresh deadline each.
function request(id) {
  const now = Date.now();
  return JSON.stringify({ id, queue: 'default', group: null, attempt: 1, max_attempts: 5,
    seq: 0, enqueued_at: enqueued, deadline_ms: 300000, deadline_at: now + 300000,
    content_type: null, payload: opts.payload }) + '\n';
}

function feed(k) {
  let out = '';
  for (; k > 0 && next <= opts.jobs; k--) out += request(next++);
  if (out) child.stdin.write(out);
}

const quiet = setTimeout(() => fail('no answer for 120 s'), 120000);
function fail(why) {
  process.stderr.write(`pipe-feeder: ${why} (${answered} of ${opts.jobs} answered)\n`);
  child.kill();
  process.exit(1);
}

child.stdout.on('data', (chunk) => {
  const lines = (rest + chunk).split('\n');
  let done = 0;
  rest = lines.pop();
  for (const line of lines) {
    if (!line.trim()) continue;
    let m;
    try { m = JSON.parse(line); } catch { fail(`not JSON: ${line.slice(0, 200)}`); }
    if (m.ready === true && t0 === 0) {
      t0 = performance.now();
      feed(opts.concurrency);
    } else if (typeof m.id === 'number' && 'ok' in m) {
      done++;
      if (m.ok !== true) failed++;
    }
  }
  answered += done;
  if (done)
    quiet.refresh();
  if (answered >= opts.jobs && !finished) {
    finished = true;
    const seconds = (performance.now() - t0) / 1000;
    clearTimeout(quiet);
    process.stdout.write(JSON.stringify({ jobs: answered, seconds, failed }) + '\n');
    child.stdin.end();
  } else if (done) {
    feed(done);
  }
});
child.on('exit', (code, sig) => {
  if (!finished) fail(`the co-process exited (${sig || code})`);
});
