#!/usr/bin/env python3
"""The Node.js package (src/node), installed as a user installs it (npm pack, then npm install
of the tarball into a fresh npm project, and mysql2 from the npm registry), run by the real
claimd as a pipe: handler, and enqueueing through mysql2 in the application's own
transaction: results, failures with their stack in the log and not in the row, retry later, a
timeout's cancel through job.signal, progress, a stray console.log, JSON payloads, follow-up
jobs committed with the outcome (and refused ones failing the run), bin.js with a plain
function, rollback and commit, a graph, options refused before any SQL, and the HTTP API's
client, its operations held equal to openapi.json's."""

import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import check, check_eq, wait_for
from test_followups import followups

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'src', 'node')
NODE_MIN = 18
_project = {}


def _missing(msg):
    """A tool or the registry missing: a failure where CI installs them, else a skip."""
    if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
        harness.fail(msg)
    raise harness.Skip(msg)


def _npm(args, cwd):
    env = dict(os.environ, npm_config_update_notifier='false', npm_config_fund='false',
               npm_config_audit='false')
    r = subprocess.run([_project['npm']] + args, cwd=cwd, capture_output=True, text=True,
                       timeout=300, env=env)
    if r.returncode != 0:
        msg = f'npm {" ".join(args)}: {r.stdout[-1500:]} {r.stderr[-1500:]}'
        if args[0] == 'install' and 'mysql2' in args:
            _missing(f'the npm registry is needed for mysql2 ({msg})')
        harness.fail(msg)
    return r.stdout


def project():
    """An npm project (made once per run) with the package's tarball and mysql2 installed:
    (its directory, node's absolute path)."""
    if 'dir' in _project:
        return _project['dir'], _project['node']
    node, npm = shutil.which('node'), shutil.which('npm')
    if not node or not npm:
        _missing('Node.js and npm are needed (tools/setup-debian --test)')
    r = subprocess.run([node, '-p', 'process.versions.node'], capture_output=True, text=True)
    if r.returncode != 0 or int(r.stdout.split('.')[0]) < NODE_MIN:
        _missing(f'Node.js {NODE_MIN} or later is needed, not {r.stdout.strip()} {r.stderr}')
    _project['npm'] = npm
    dest = tempfile.mkdtemp(prefix='claimd-npm-')
    atexit.register(shutil.rmtree, dest, True)
    # A copy of the source: npm pack runs in the tree it is given, and the checkout stays clean.
    src = os.path.join(dest, 'src')
    shutil.copytree(SRC, src)
    out = _npm(['pack', '--pack-destination', dest], src)
    tarball = os.path.join(dest, out.strip().splitlines()[-1])
    check(os.path.exists(tarball), f'the tarball: {tarball}')
    proj = os.path.join(dest, 'app')
    os.mkdir(proj)
    _npm(['init', '-y'], proj)
    _npm(['install', tarball], proj)
    _npm(['install', 'mysql2'], proj)
    with open(os.path.join(SRC, '..', '..', 'meson.build')) as f:
        meson = f.read()
    version = re.search(r"version : '([^']+)'", meson).group(1)
    licence = re.search(r"license : '([^']+)'", meson).group(1)
    r = subprocess.run([node, '--input-type=module', '-e',
                        "import { version } from 'claimd'; import { createRequire } from "
                        "'node:module'; const req = createRequire(process.cwd() + '/x.js'); "
                        "console.log(version, req('claimd/package.json').version)"],
                       capture_output=True, text=True, cwd=proj)
    check_eq(r.returncode, 0, f'import claimd from the project: {r.stderr[-2000:]}')
    check_eq(r.stdout.split()[:2], [version, version],
             "the package's version (its export and package.json) is claimd's (meson.build)")
    with open(os.path.join(proj, 'node_modules', 'claimd', 'package.json')) as f:
        meta = json.load(f)
    check_eq((meta['type'], meta['types'], meta['license']), ('module', './index.d.ts', licence),
             "package.json: ESM, its types, the project's licence (meson.build)")
    check_eq(sorted(os.listdir(os.path.join(proj, 'node_modules', 'claimd'))),
             ['README.md', 'bin.js', 'enqueue.js', 'handler.js', 'http.js', 'index.d.ts',
              'index.js', 'package.json'], 'the files the tarball installs')
    _project.update(dir=proj, node=node)
    return proj, node


def write(dir, name, text):
    path = os.path.join(dir, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


HANDLER = r'''
import fs from 'node:fs';
import path from 'node:path';
import { run, RetryLater } from 'claimd';

const MARK = process.argv[2];
const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

run(async (job) => {
  console.log('a stray console.log from item', job.id, '\x1b[2J'); // the log, not the protocol
  process.stdout.write(`a stray write from item ${job.id}\n`);
  const p = job.payload;
  const kind = p !== null && typeof p === 'object' && !Buffer.isBuffer(p) ? p.kind : p;
  if (kind === 'fail')
    throw new Error(`boom ${job.id}`);
  if (kind === 'later') {
    const mark = path.join(MARK, `later-${job.id}`);
    if (!fs.existsSync(mark)) {
      fs.writeFileSync(mark, '');
      throw new RetryLater(0.3);
    }
  }
  if (kind === 'sleep') {
    try {
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, 60000);
        job.signal.addEventListener('abort', () => {
          clearTimeout(t);
          reject(job.signal.reason);
        });
      });
    } catch (e) {
      fs.writeFileSync(path.join(MARK, `cancelled-${job.id}-${job.cancelled}-${e.name}`), '');
      throw e;
    }
  }
  if (kind === 'progress') {
    job.progress({ step: 1 });
    job.progress({ step: 2 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
  }
  if (kind === 'fu') {
    job.enqueue('fu', { parent: job.id, n: 1 }, { group: `g-${job.id}`, maxAttempts: 7,
      timeout: 30 });
    job.enqueue('fu', `text of ${job.id}`, { dedupe: `d-${job.id}`, priority: -2, delay: 0.2,
      contentType: 'text/plain', traceparent: TP });
  }
  if (kind === 'fu-graph') { // a graph: its rows have no group, dedupe key or period
    job.enqueue('fu', { parent: job.id, step: 'a' }, { ref: 'a' });
    job.enqueue('fu', { parent: job.id, step: 'b' }, { ref: 'b', after: ['a'], onDead: 'run' });
  }
  if (kind === 'fu-then-fail') {
    job.enqueue('fu', { parent: job.id });
    throw new Error('failed after adding a job');
  }
  if (kind === 'fu-bad-option')
    job.enqueue('fu', { parent: job.id }, { priority: 11 });
  if (kind === 'fu-refused') { // a row of a graph in a FIFO group: the database's rule
    job.enqueue('fu', { parent: job.id }, { ref: 'a', group: 'g' });
    job.enqueue('fu', { parent: job.id }, { after: ['a'] });
  }
  return { echo: p, attempt: job.attempt, type: job.contentType, deadline: job.deadline !== null,
           left: job.timeLeft() > 0, enqueued: job.enqueuedAt instanceof Date };
});
'''


def _result(db, item):
    r = db.row(item, 'state, attempts, result, last_error')
    return r[0], int(r[1]), (json.loads(r[2]) if r[2] not in (None, 'NULL') else None), r[3]


def it_runs_a_handler_with_results_failures_retries_cancels_and_follow_ups(t):
    proj, node = project()
    db = t.database()
    mark = os.path.join(t.tmpdir, 'marks')
    os.mkdir(mark)
    handler = write(proj, 'handler.mjs', HANDLER)
    c = t.claimd(db, '--workers', '1', '--concurrency', '8', '--pipe-ready', '--handler',
                 f'pipe:{node} {handler} {mark}', '--retry-base', '100ms')
    c.wait_ready()
    text = db.insert_item('hello')
    js = db.insert_item('{"kind":"ok","n":[1,2]}', content_type="'application/json'")
    fail = db.insert_item('fail', max_attempts=1)
    later = db.insert_item('later', max_attempts=1)
    sleep = db.insert_item('sleep', max_attempts=1, timeout_s=1)
    progress = db.insert_item('progress')
    own_tp = '00-11111111111111111111111111111111-2222222222222222-01'
    fu = db.insert_item('fu', traceparent=f"'{own_tp}'")
    fu_graph = db.insert_item('fu-graph')
    fu_fail = db.insert_item('fu-then-fail', max_attempts=1)
    fu_bad = db.insert_item('fu-bad-option', max_attempts=1)
    fu_refused = db.insert_item('fu-refused', max_attempts=1)
    mine = [text, js, fail, later, sleep, progress, fu, fu_graph, fu_fail, fu_bad, fu_refused]
    wait_for(lambda: [db.row(i, 'state')[0] for i in mine], 30, 'every run finished',
             until=lambda s: all(x in ('done', 'dead') for x in s))
    state, _, res, _ = _result(db, text)
    check_eq((state, res['echo'], res['type'], res['deadline'], res['left'], res['enqueued']),
             ('done', 'hello', None, True, True, True), 'a text payload: done, echoed')
    state, _, res, _ = _result(db, js)
    check_eq((state, res['echo'], res['type']),
             ('done', {'kind': 'ok', 'n': [1, 2]}, 'application/json'),
             'a JSON payload comes decoded')
    state, attempts, _, err = _result(db, fail)
    check_eq((state, attempts, err), ('dead', 1, f'Error: boom {fail}'),
             'a throw fails the attempt with its name and message')
    state, attempts, res, _ = _result(db, later)
    check_eq((state, attempts, res and res['echo']), ('done', 1, 'later'),
             'RetryLater: run again, no attempt counted (max_attempts 1)')
    state, _, _, err = _result(db, sleep)
    check(state == 'dead' and 'time' in (err or ''), f'the sleeping item timed out: {state} {err}')
    check(os.path.exists(os.path.join(mark, f'cancelled-{sleep}-timeout-AbortError')),
          f'the timeout reached the handler through job.signal: {os.listdir(mark)}')
    check_eq(list(db.row(progress, 'state, progress')), ['done', '{"step":2}'],
             'the last progress is kept in the row')
    log = c.log()
    check(f'Error: boom {fail}' in log and 'handler.mjs:' in log,
          'the stack is in claimd\'s log')
    check('handler.mjs' not in (err or '') and '\n' not in (_result(db, fail)[3] or ''),
          'and not in the row')
    check(f'a stray console.log from item {text} ?[2J' in log and '\x1b' not in log and
          f'a stray write from item {text}' in log,
          'a stray console.log and stdout write went to the log, control characters as ?')

    # Follow-up jobs: committed with the run's success, with their options.
    state, _, _, err = _result(db, fu)
    check_eq(state, 'done', f'the run that adds jobs is done ({err})')
    rows = followups(db, fu)
    check_eq(len(rows), 2, f'its two jobs are added: {rows}')
    check_eq((rows[0]['payload'], rows[0]['group'], rows[0]['type'], rows[0]['max_attempts'],
              rows[0]['timeout'], rows[0]['traceparent']),
             ({'parent': fu, 'n': 1}, f'g-{fu}', 'application/json', 7, '30', own_tp),
             "a JSON payload, its group, content type, max_attempts, timeout, the run's "
             'traceparent')
    check_eq((rows[1]['payload'], rows[1]['dedupe'], rows[1]['priority'], rows[1]['type'],
              rows[1]['traceparent'], rows[1]['later']),
             (f'text of {fu}', f'd-{fu}', -2, 'text/plain',
              '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', True),
             'a text payload, its dedupe key, priority, content type, traceparent, delay')
    check_eq(_result(db, fu_graph)[0], 'done', 'the run that adds a graph is done')
    a, b = followups(db, fu_graph)
    check_eq([(x['payload']['step'], x['waiting_for'], x['traceparent']) for x in (a, b)],
             [('a', 0, None), ('b', 1, None)], 'a graph: b waits for a')
    check_eq(db.scalar(f"SELECT COUNT(*) FROM work_deps WHERE parent_id = {a['id']} AND "
                       f"child_id = {b['id']} AND on_dead = 'run'"), '1',
             'a graph: b waits for a (on_dead run), the edge written')
    state, _, _, err = _result(db, fu_fail)
    check_eq((state, followups(db, fu_fail)), ('dead', []),
             'a run that fails after job.enqueue adds nothing')
    state, _, _, err = _result(db, fu_bad)
    check(state == 'dead' and 'RangeError: priority' in (err or ''),
          f'an option the package refuses fails the run, naming it: {state} {err!r}')
    state, _, _, err = _result(db, fu_refused)
    check(state == 'dead' and 'the jobs it adds were refused' in (err or ''),
          f'jobs the database refuses fail the run: {state} {err!r}')
    check_eq((followups(db, fu_bad), followups(db, fu_refused)), ([], []), 'and add nothing')
    check_eq(c.stop(), 0, 'claimd exit code')


PLAIN = r'''
export function handle(job) {             // a plain function: no promise
  console.log('loaded and running', job.id);
  return { upper: job.payload.toUpperCase(), body: job.body.length };
}
'''


def it_serves_a_modules_plain_function_with_bin_js(t):
    proj, node = project()
    db = t.database()
    write(proj, 'jobs.mjs', 'console.log("printed as the module loads");\n' + PLAIN)
    binjs = os.path.join(proj, 'node_modules', 'claimd', 'bin.js')
    wrapper = t.script(f'cd {proj} && exec {node} {binjs} ./jobs.mjs\n', name='run.sh')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--pipe-ready', '--handler',
                 f'pipe:{wrapper}')
    c.wait_ready()
    ids = db.insert_items(6, payload="CONCAT('item-', seq)")
    wait_for(db.states, 30, 'six rows done', until=lambda s: s['done'] == 6)
    check_eq([_result(db, i)[2] for i in ids],
             [{'upper': f'ITEM-{k}', 'body': 6} for k in range(1, 7)], 'results')
    check('printed as the module loads' in c.log(), 'what the module prints goes to the log')
    check_eq(c.stop(), 0, 'claimd exit code')
    bad = t.claimd(db, '--workers', '1', '--pipe-ready', '--handler',
                   f'pipe:{node} {binjs} ./no_such_module.mjs', name='bad')
    wait_for(lambda: 'cannot load ./no_such_module.mjs' in bad.log(), 15,
             'a handler that cannot load says why in the log')


APP = r'''
import mysql from 'mysql2/promise';
import mysqlCallback from 'mysql2';
import { enqueue, graph } from 'claimd';

const [sock, database, what] = process.argv.slice(2);
const opts = { socketPath: sock, user: 'root', database };
const conn = await mysql.createConnection(opts);
const out = {};
if (what === 'rollback') {
  await conn.query('CREATE TABLE IF NOT EXISTS orders (id INT PRIMARY KEY)');
  await conn.beginTransaction();
  await conn.query('INSERT INTO orders VALUES (1)');
  out.rolled_back = await enqueue(conn, 'default', 'never', { delay: 0 });
  await conn.rollback();
  await conn.beginTransaction();
  await conn.query('INSERT INTO orders VALUES (2)');
  out.committed = await enqueue(conn, 'default', { order: 2 }, { priority: -5 });
  out.again = await enqueue(conn, 'default', 'once', { dedupe: 'order-2' });
  out.deduped = await enqueue(conn, 'default', 'twice', { dedupe: 'order-2' });
  out.at = await enqueue(conn, 'default', Buffer.from([0xff, 0x00]),
                         { runAt: new Date(Date.UTC(2030, 0, 1, 12, 0, 0, 250)) });
  const g = graph();
  const a = g.add('default', 'parent');
  g.add('default', 'child', { after: [a] });
  out.graph = await g.enqueue(conn);
  await conn.commit();
  // A callback connection: its .promise() is used.
  const cb = mysqlCallback.createConnection(opts);
  out.callback = await enqueue(cb, 'default', 'from a callback connection');
  cb.end();
} else if (what === 'refused') {
  let queries = 0;
  const counting = { query: (...args) => { queries++; return conn.query(...args); } };
  const errors = [];
  for (const o of [{ priority: 11 }, { delay: -1 }, { group: '' }, { nope: 1 },
                   { runAt: '2030-01-01' }, { traceparent: 'xyz' }, { maxAttempts: 0 },
                   { runAt: new Date(), delay: 1 }, { after: [0] }]) {
    try {
      await enqueue(counting, 'default', 'x', o);
      errors.push(null);
    } catch (e) {
      errors.push(`${e.name}: ${e.message}`);
    }
  }
  try {
    await enqueue(mysql.createPool(opts), 'default', 'x');
    errors.push(null);
  } catch (e) {
    errors.push(`${e.name}: ${e.message}`);
  }
  out.errors = errors;
  out.queries = queries;
}
await conn.end();
console.log(JSON.stringify(out));
process.exit(0);
'''


def it_enqueues_in_the_applications_transaction(t):
    proj, node = project()
    db = t.database()
    app = write(proj, 'app.mjs', APP)

    def run(what):
        r = subprocess.run([node, app, db.server.socket, db.name, what], capture_output=True,
                           text=True, timeout=60, cwd=proj)
        check_eq(r.returncode, 0, f'the application ({what}): {r.stderr[-2000:]}')
        return json.loads(r.stdout)

    out = run('rollback')
    check_eq(db.scalar(f"SELECT COUNT(*) FROM work_items WHERE id = {out['rolled_back']}"), '0',
             'a row enqueued in a rolled-back transaction is not there')
    check_eq(db.scalar('SELECT GROUP_CONCAT(id) FROM orders'), '2', 'the order committed')
    row = db.row(out['committed'], 'priority, content_type, payload')
    check_eq(list(row), ['-5', 'application/json', '{"order":2}'], 'the committed row')
    check_eq(out['deduped'], out['again'], "a dedupe key held: the holder's id")
    check_eq(list(db.row(out['at'], 'HEX(payload), UNIX_TIMESTAMP(run_at)')),
             ['FF00', '1893499200.250000'], 'bytes, and runAt (2030-01-01 12:00:00.250 UTC)')
    check(out['callback'] > 0, f"a callback connection's enqueue: {out}")
    parent, child = out['graph']
    check_eq(db.row(child, 'waiting_for')[0], '1', 'the child waits for its parent')
    check_eq(db.scalar(f'SELECT COUNT(*) FROM work_deps WHERE parent_id = {parent} AND '
                       f"child_id = {child} AND on_dead = 'cancel'"), '1', 'its edge')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    wait_for(db.states, 20, 'every row but the one for 2030 done',
             until=lambda s: s['done'] == 5)
    order = db.sql(f'SELECT id FROM work_items WHERE id IN ({parent}, {child}) '
                   'ORDER BY finished_at, id')
    check_eq([int(r[0]) for r in order], [parent, child], 'the parent ran first')
    before = db.scalar('SELECT COUNT(*) FROM work_items')
    out = run('refused')
    errors = out['errors']
    check(all(errors), f'each bad option refused: {errors}')
    for i, want in enumerate(['priority', 'delay', 'group', 'no such option: nope', 'runAt: a Date',
                              'traceparent', 'maxAttempts', 'runAt and delay', 'after',
                              'a pool']):
        check(want in errors[i], f'refusal {i} names {want!r}: {errors[i]!r}')
    check_eq(out['queries'], 0, 'before any SQL')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), before, 'no row added by them')
    check_eq(c.stop(), 0, 'claimd exit code')


EXAMPLE = os.path.join(SRC, '..', 'deploy', 'examples', 'app.mjs')
ORDER = r'''
import mysql from 'mysql2/promise';
import { orderPaid } from './app.mjs';
const [sock, database] = process.argv.slice(2);
const conn = await mysql.createConnection({ socketPath: sock, user: 'root', database });
await orderPaid(conn, 7, 'a@example.com');
await conn.end();
'''


def it_runs_the_example_app(t):
    # src/deploy/examples/app.mjs as the README shows it, in a project that installed the
    # package: its orderPaid() from the application, its handle() under claimd.
    proj, node = project()
    db = t.database()
    shutil.copy(EXAMPLE, os.path.join(proj, 'app.mjs'))
    order = write(proj, 'order.mjs', ORDER)
    db.execute("CREATE TABLE orders (id INT PRIMARY KEY, state VARCHAR(16) NOT NULL); "
               "INSERT INTO orders VALUES (7, 'new')")
    r = subprocess.run([node, order, db.server.socket, db.name], capture_output=True,
                       text=True, timeout=60, cwd=proj)
    check_eq(r.returncode, 0, f'orderPaid: {r.stderr[-2000:]}')
    check_eq(db.scalar('SELECT state FROM orders WHERE id = 7'), 'paid', 'the order paid')
    db.insert_item(json.dumps({'id': 8, 'to': 'b@example.com', 'gift': True}),
                   queue="'mail'", content_type="'application/json'")
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--pipe-ready', '--queue', 'mail',
                 '--handler', f'pipe:{node} {os.path.join(proj, "app.mjs")}')
    c.wait_ready()
    wait_for(lambda: [x[0] for x in db.sql("SELECT state FROM work_items WHERE queue = 'mail' "
                                           "ORDER BY id")], 20, 'both mails done',
             until=lambda s: s == ['done', 'done'])
    results = [json.loads(x[0]) for x in db.sql("SELECT result FROM work_items WHERE queue = "
                                                 "'mail' ORDER BY id")]
    check_eq(results, [{'mailed': 'a@example.com'}, {'mailed': 'b@example.com'}], 'the results')
    check_eq(db.sql("SELECT payload, priority FROM work_items WHERE queue = 'wrap'"),
             [('{"order":8}', '-1')], 'the gift, and only it, wrapped: a follow-up job')
    check_eq(c.stop(), 0, 'claimd exit code')


CLIENT = r"""
import { Client, HTTPError } from 'claimd';

const [url, token] = process.argv.slice(2);
const c = new Client(url, { token });
const out = {};
out.json = await c.add('default', { n: 1 }, { priority: -2, dedupe: 'k1', dedupeFor: '1s',
                                               retryBase: '1500ms' });
out.dup = await c.add('default', { n: 2 }, { dedupe: 'k1' });
out.text = await c.add('default', 'hello', { delay: 0, maxAttempts: 3 });
out.bytes = await c.add('default', Buffer.from([0xff, 0x00]), { contentType: 'x/y' });
out.done = (await c.job(out.text, { wait: '20s' })).state;
out.batch = await c.addBatch('default', [{ ref: 'a', payload: 'x' },
                                         { after: ['a'], payload: 'y' }], { batch: true });
out.queues = await c.queues();
try {
  await c.add('default', 'x', { priority: 99 });
} catch (e) {
  out.refused = [e instanceof HTTPError, e.status, e.message];
}
try {
  await c.call('addJob', { params: { queue: 'default', nope: 1 } });
} catch (e) {
  out.unknown = `${e.name}: ${e.message}`;
}
try {
  await new Client(url, { token: 'wrong' }).queues();
} catch (e) {
  out.unauthorized = e instanceof HTTPError && e.status;
}
console.log(JSON.stringify(out));
"""


def it_speaks_the_http_api_as_openapi_json_describes_it(t):
    proj, node = project()
    # The client's table of operations is claimd's openapi.json, operation by operation.
    r = subprocess.run([node, '--input-type=module', '-e',
                        "import { OPERATIONS } from 'claimd'; console.log(JSON.stringify("
                        "Object.fromEntries(Object.entries(OPERATIONS).map(([k, [m, p, q]]) => "
                        "[k, [m, p, [...q].sort()]]))))"],
                       capture_output=True, text=True, timeout=60, cwd=proj)
    check_eq(r.returncode, 0, f'OPERATIONS from the project: {r.stderr[-2000:]}')
    theirs = json.loads(r.stdout)
    with open(os.path.join(SRC, '..', 'console', 'openapi.json')) as f:
        spec = json.load(f)
    ours = {}
    for path, item in spec['paths'].items():
        for method, op in item.items():
            if method in ('get', 'post', 'put', 'delete', 'patch'):
                ours[op['operationId']] = [method.upper(), path, sorted(
                    p['name'] for p in op.get('parameters', []) if p['in'] == 'query')]
    check_eq(theirs, ours, "the client's operations are openapi.json's")
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0')
    c.wait_ready()
    client = write(proj, 'client.mjs', CLIENT)
    r = subprocess.run([node, client, c.http_url(), c.http_token()], capture_output=True,
                       text=True, timeout=90, cwd=proj)
    check_eq(r.returncode, 0, f'the client: {r.stderr[-2000:]}')
    out = json.loads(r.stdout)
    check_eq(out['done'], 'done', 'a job added and waited for')
    check_eq(out['dup'], out['json'], "a dedupe key held: the holder's id")
    check_eq(list(db.row(out['json'], 'priority, content_type, dedupe_for_s, retry_base_ms')),
             ['-2', 'application/json', '1', '1500'],
             'its options (priority, dedupeFor, retryBase) and type in the row')
    check_eq(list(db.row(out['text'], 'content_type, max_attempts, payload')),
             ['text/plain; charset=utf-8', '3', 'hello'], 'text, and maxAttempts')
    check_eq(list(db.row(out['bytes'], 'content_type, HEX(payload)')), ['x/y', 'FF00'],
             'bytes, and contentType')
    check(out['batch'].get('batch') and len(out['batch']['jobs']) == 2,
          f"a batch: {out['batch']}")
    check(isinstance(out['queues'], list), f"the queues: {out['queues']}")
    check(out['refused'][:2] == [True, 400] and 'priority' in out['refused'][2],
          f"a refusal is an HTTPError naming what: {out['refused']}")
    check_eq(out['unknown'], 'TypeError: addJob takes no nope', 'an unknown parameter')
    check_eq(out['unauthorized'], 401, 'a wrong token')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
