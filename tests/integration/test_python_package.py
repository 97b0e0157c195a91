#!/usr/bin/env python3
"""The Python package (src/python), installed as a user installs it (a fresh virtualenv of
Debian's python3, pip install --no-build-isolation), run by the real claimd as a pipe:
handler, and enqueueing through PyMySQL in the application's own transaction: results,
failures with their traceback in the log and not in the row, retry later, a timeout's cancel,
a stray print, JSON payloads, a plain function on threads, rollback and commit, a graph, and
options refused before any SQL."""

import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import harness
from harness import check, check_eq, wait_for

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'src', 'python')
DEBIAN_PYTHON = '/usr/bin/python3'
_venv = {}


def venv():
    """A virtualenv (made once per run) with the package installed; its python."""
    if 'python' in _venv:
        return _venv['python']
    r = subprocess.run([DEBIAN_PYTHON, '-c', 'import venv, ensurepip, setuptools, pymysql'],
                       capture_output=True, text=True)
    if r.returncode != 0:
        msg = ('Debian python3 with python3-venv, python3-setuptools, python3-pip and '
               f'python3-pymysql is needed (tools/setup-debian --test): {r.stderr.strip()}')
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail(msg)
        raise harness.Skip(msg)
    dest = tempfile.mkdtemp(prefix='claimd-venv-')
    atexit.register(shutil.rmtree, dest, True)
    r = subprocess.run([DEBIAN_PYTHON, '-m', 'venv', '--system-site-packages', dest],
                       capture_output=True, text=True, timeout=120)
    check_eq(r.returncode, 0, f'python3 -m venv: {r.stderr[-2000:]}')
    # A copy of the source: pip builds in the tree it is given, and the checkout stays clean.
    src = os.path.join(dest, 'src')
    shutil.copytree(SRC, src)
    py = os.path.join(dest, 'bin', 'python3')
    r = subprocess.run([py, '-m', 'pip', 'install', '--no-build-isolation', '--no-index',
                        '--quiet', src], capture_output=True, text=True, timeout=300)
    check_eq(r.returncode, 0, f'pip install: {r.stdout[-2000:]} {r.stderr[-2000:]}')
    r = subprocess.run([py, '-c', 'import claimd, sys; print(claimd.__version__, '
                        'claimd.__file__)'], capture_output=True, text=True, cwd=dest)
    check(r.returncode == 0 and dest in r.stdout, f'claimd imported from the venv: {r.stdout} '
          f'{r.stderr}')
    with open(os.path.join(SRC, '..', '..', 'meson.build')) as f:
        version = re.search(r"version : '([^']+)'", f.read()).group(1)
    check_eq(r.stdout.split()[0], version, "the package's version is claimd's (meson.build)")
    _venv['python'] = py
    return py


ASYNC_HANDLER = r'''
import asyncio, os, sys
import claimd

MARK = sys.argv[1]

async def handle(job):
    print('a stray print from item', job.id, '\x1b[2J')   # to the log, not the protocol
    p = job.payload
    kind = p.get('kind') if isinstance(p, dict) else p
    if kind == 'fail':
        raise RuntimeError('boom %d' % job.id)
    if kind == 'later':
        mark = os.path.join(MARK, 'later-%d' % job.id)
        if not os.path.exists(mark):
            open(mark, 'w').close()
            raise claimd.RetryLater(0.3)
    if kind == 'sleep':
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            open(os.path.join(MARK, 'cancelled-%d-%s' % (job.id, job.cancelled)), 'w').close()
            raise
    job.progress({'half': True})
    return {'echo': p, 'attempt': job.attempt, 'type': job.content_type,
            'deadline': job.deadline is not None, 'left': job.time_left() > 0}

claimd.run(handle)
'''


def _result(db, item):
    r = db.row(item, 'state, attempts, result, last_error')
    return r[0], int(r[1]), (json.loads(r[2]) if r[2] not in (None, 'NULL') else None), r[3]


def it_runs_an_async_handler_with_results_failures_retries_and_cancels(t):
    py = venv()
    db = t.database()
    mark = os.path.join(t.tmpdir, 'marks')
    os.mkdir(mark)
    handler = t.script(ASYNC_HANDLER, lang='python', name='handler.py')
    c = t.claimd(db, '--workers', '1', '--concurrency', '8', '--pipe-ready', '--handler',
                 f'pipe:{py} {handler} {mark}', '--retry-base', '100ms')
    c.wait_ready()
    text = db.insert_item('hello')
    js = db.insert_item('{"kind":"ok","n":[1,2]}', content_type="'application/json'")
    fail = db.insert_item('fail', max_attempts=1)
    later = db.insert_item('later', max_attempts=1)
    sleep = db.insert_item('sleep', max_attempts=1, timeout_s=1)
    wait_for(db.states, 30, 'every row finished',
             until=lambda s: s['ready'] == 0 and s['claimed'] == 0)
    state, _, res, _ = _result(db, text)
    check_eq((state, res['echo'], res['type'], res['deadline'], res['left']),
             ('done', 'hello', None, True, True), 'a text payload: done, echoed')
    state, _, res, _ = _result(db, js)
    check_eq((state, res['echo'], res['type']),
             ('done', {'kind': 'ok', 'n': [1, 2]}, 'application/json'),
             'a JSON payload comes decoded')
    state, attempts, _, err = _result(db, fail)
    check_eq((state, attempts, err), ('dead', 1, f'RuntimeError: boom {fail}'),
             "an exception fails the attempt with its message")
    state, attempts, res, _ = _result(db, later)
    check_eq((state, attempts, res and res['echo']), ('done', 1, 'later'),
             'RetryLater: run again, no attempt counted (max_attempts 1)')
    state, _, _, err = _result(db, sleep)
    check(state == 'dead' and 'time' in (err or ''), f'the sleeping item timed out: {state} {err}')
    check(os.path.exists(os.path.join(mark, f'cancelled-{sleep}-timeout')),
          f'the timeout reached the handler as a CancelledError: {os.listdir(mark)}')
    log = c.log()
    check('Traceback' in log and f'boom {fail}' in log, 'the traceback is in the log')
    check(f'a stray print from item {text} ?[2J' in log and '\x1b' not in log,
          'a stray print went to the log, its control characters shown as ?')
    check('Traceback' not in (err or ''), 'and not in the row')
    check_eq(c.stop(), 0, 'claimd exit code')


SYNC_HANDLER = r'''
import threading, time

def handle(job):
    time.sleep(0.3)                        # a blocking call: on a thread of its own
    return {'upper': job.payload.upper(), 'thread': threading.current_thread().name}
'''


def it_runs_a_plain_function_on_threads_with_python_m_claimd(t):
    py = venv()
    db = t.database()
    t.script(SYNC_HANDLER, lang='python', name='app_jobs.py')
    # python3 -m claimd MODULE:FUNCTION, from the directory that holds the module.
    wrapper = t.script(f'cd {t.tmpdir} && exec {py} -m claimd app_jobs:handle\n', name='run.sh')
    c = t.claimd(db, '--workers', '1', '--concurrency', '8', '--pipe-ready', '--handler',
                 f'pipe:{wrapper}')
    c.wait_ready()
    ids = db.insert_items(8, payload="CONCAT('item-', seq)")
    started = time.monotonic()
    wait_for(db.states, 30, 'eight rows done', until=lambda s: s['done'] == 8)
    took = time.monotonic() - started
    results = [_result(db, i)[2] for i in ids]
    check_eq([r['upper'] for r in results], [f'ITEM-{k}' for k in range(1, 9)], 'results')
    check(len({r['thread'] for r in results}) >= 2, f'on several threads: {results}')
    check(took < 8 * 0.3, f'eight items of 0.3 s at once, not one after the other: {took:.2f} s')
    check_eq(c.stop(), 0, 'claimd exit code')
    bad = t.claimd(db, '--workers', '1', '--pipe-ready', '--handler',
                   f'pipe:{py} -m claimd no_such_module:handle', name='bad')
    wait_for(lambda: 'cannot load no_such_module:handle' in bad.log(), 15,
             'a handler that cannot load says why in the log')


APP = r'''
import json, sys
import pymysql
import claimd

sock, dbname, what = sys.argv[1:4]
conn = pymysql.connect(unix_socket=sock, user='root', database=dbname, autocommit=False)
out = {}
if what == 'rollback':
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS orders (id INT PRIMARY KEY)")
    conn.commit()
    with conn.cursor() as cur:
        cur.execute("INSERT INTO orders VALUES (1)")
    out['rolled_back'] = claimd.enqueue(conn, 'default', 'never', delay=0)
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("INSERT INTO orders VALUES (2)")
    out['committed'] = claimd.enqueue(conn, 'default', {'order': 2}, priority=-5)
    out['again'] = claimd.enqueue(conn, 'default', 'once', dedupe='order-2')
    out['deduped'] = claimd.enqueue(conn, 'default', 'twice', dedupe='order-2')
    g = claimd.graph()
    a = g.add('default', 'parent')
    g.add('default', 'child', after=[a])
    out['graph'] = g.enqueue(conn)
    conn.commit()
elif what == 'refused':
    errors = []
    for kwargs in ({'priority': 11}, {'delay': -1}, {'group': ''}, {'nope': 1},
                   {'run_at': __import__('datetime').datetime(2030, 1, 1)},
                   {'traceparent': 'xyz'}, {'max_attempts': 0}):
        try:
            claimd.enqueue(conn, 'default', 'x', **kwargs)
            errors.append(None)
        except (ValueError, TypeError) as e:
            errors.append(str(e))
    out['errors'] = errors
    conn.commit()
print(json.dumps(out))
'''


def it_enqueues_in_the_applications_transaction(t):
    py = venv()
    db = t.database()
    app = t.script(APP, lang='python', name='app.py')

    def run(what):
        r = subprocess.run([py, app, db.server.socket, db.name, what], capture_output=True,
                           text=True, timeout=60)
        check_eq(r.returncode, 0, f'the application ({what}): {r.stderr[-2000:]}')
        return json.loads(r.stdout)

    out = run('rollback')
    check_eq(db.scalar(f"SELECT COUNT(*) FROM work_items WHERE id = {out['rolled_back']}"), '0',
             'a row enqueued in a rolled-back transaction is not there')
    check_eq(db.scalar('SELECT GROUP_CONCAT(id) FROM orders'), '2', 'the order committed')
    row = db.row(out['committed'], 'priority, content_type, payload')
    check_eq(list(row), ['-5', 'application/json', '{"order":2}'], 'the committed row')
    check_eq(out['deduped'], out['again'], 'a dedupe key held: the holder\'s id')
    parent, child = out['graph']
    check_eq(db.row(child, 'waiting_for')[0], '1', 'the child waits for its parent')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    wait_for(db.states, 20, 'every row done', until=lambda s: s['done'] == 4)
    order = db.sql(f'SELECT id FROM work_items WHERE id IN ({parent}, {child}) '
                   'ORDER BY finished_at, id')
    check_eq([int(r[0]) for r in order], [parent, child], 'the parent ran first')
    before = db.scalar('SELECT COUNT(*) FROM work_items')
    errors = run('refused')['errors']
    check(all(errors), f'each bad option refused: {errors}')
    check('priority' in errors[0] and 'delay' in errors[1] and 'no such option' in errors[3]
          and 'aware' in errors[4] and 'traceparent' in errors[5], f'and named: {errors}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), before, 'no row added by them')
    check_eq(c.stop(), 0, 'claimd exit code')


CLIENT = r'''
import json, sys
import claimd

url, token = sys.argv[1:3]
c = claimd.Client(url, token)
out = {}
out['text'] = c.add('default', 'hello', delay='0s', retry_base='1s')
out['json'] = c.add('default', {'n': 1}, priority=-2, dedupe='k1', dedupe_for='1s')
out['dup'] = c.add('default', {'n': 1}, dedupe='k1')
out['done'] = c.job(out['text'], wait='20s')['state']
out['batch'] = c.add_batch('default', [{'ref': 'a', 'payload': 'x'},
                                       {'after': ['a'], 'payload': 'y'}], batch=True)
out['queues'] = c.queues()
try:
    c.add('default', 'x', priority=99)
except claimd.HTTPError as e:
    out['refused'] = [e.status, e.message]
try:
    c.call('addJob', queue='default', nope=1)
except ValueError as e:
    out['unknown'] = str(e)
try:
    claimd.Client(url, 'wrong').queues()
except claimd.HTTPError as e:
    out['unauthorized'] = e.status
print(json.dumps(out))
'''


def it_speaks_the_http_api_as_openapi_json_describes_it(t):
    py = venv()
    # The client's table of operations is claimd's openapi.json, operation by operation.
    r = subprocess.run([py, '-c', 'import json, claimd.http as h; print(json.dumps('
                        '{k: [v[0], v[1], sorted(v[2])] for k, v in h.OPERATIONS.items()}))'],
                       capture_output=True, text=True, timeout=60)
    check_eq(r.returncode, 0, f'claimd.http: {r.stderr}')
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
    client = t.script(CLIENT, lang='python', name='client.py')
    r = subprocess.run([py, client, c.http_url(), c.http_token()], capture_output=True,
                       text=True, timeout=90)
    check_eq(r.returncode, 0, f'the client: {r.stderr[-2000:]}')
    out = json.loads(r.stdout)
    check_eq(out['done'], 'done', 'a job added and waited for')
    check_eq(out['dup'], out['json'], 'a dedupe key held: the holder\'s id')
    check_eq(list(db.row(out['json'], 'priority, content_type, dedupe_for_s')),
             ['-2', 'application/json', '1'], 'its options and type in the row')
    check_eq(db.row(out['text'], 'retry_base_ms')[0], '1000', 'retry_base in the row')
    check(out['batch'].get('batch') and len(out['batch']['jobs']) == 2, f"a batch: {out['batch']}")
    check(isinstance(out['queues'], list), f"the queues: {out['queues']}")
    check(out['refused'][0] == 400 and 'priority' in out['refused'][1],
          f"a refusal is an HTTPError naming what: {out['refused']}")
    check('takes no nope' in out['unknown'], f"an unknown parameter: {out['unknown']}")
    check_eq(out['unauthorized'], 401, 'a wrong token')


EXAMPLES = os.path.join(SRC, '..', 'deploy', 'examples')
ORDER = r'''
import sys, pymysql
sys.path.insert(0, sys.argv[1])
import app
conn = pymysql.connect(unix_socket=sys.argv[2], user='root', database=sys.argv[3],
                       autocommit=False)
app.order_paid(conn, 7, 'a@example.com')
'''


def it_runs_the_example_app(t):
    # src/deploy/examples/app.py as the README shows it: its order_paid() from the
    # application, its handle() under claimd.
    py = venv()
    db = t.database()
    db.execute("CREATE TABLE orders (id INT PRIMARY KEY, state VARCHAR(16) NOT NULL); "
               "INSERT INTO orders VALUES (7, 'new')")
    r = subprocess.run([py, t.script(ORDER, lang='python', name='order.py'), EXAMPLES,
                        db.server.socket, db.name], capture_output=True, text=True, timeout=60)
    check_eq(r.returncode, 0, f'order_paid: {r.stderr[-2000:]}')
    check_eq(db.scalar('SELECT state FROM orders WHERE id = 7'), 'paid', 'the order paid')
    gift = db.insert_item(json.dumps({'id': 8, 'to': 'b@example.com', 'gift': True}),
                          queue="'mail'", content_type="'application/json'")
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--pipe-ready', '--queue', 'mail',
                 '--handler', f'pipe:{py} {os.path.join(EXAMPLES, "app.py")}')
    c.wait_ready()
    wait_for(lambda: db.sql("SELECT state, result FROM work_items WHERE queue = 'mail' "
                            "ORDER BY id"), 20, 'both mails done',
             until=lambda rows: [x[0] for x in rows] == ['done', 'done'])
    results = [json.loads(x[0]) for x in db.sql("SELECT result FROM work_items WHERE queue = "
                                                 "'mail' ORDER BY id")]
    check_eq(results, [{'mailed': 'a@example.com'}, {'mailed': 'b@example.com'}], 'the results')
    check_eq(db.sql("SELECT payload, priority FROM work_items WHERE queue = 'wrap'"),
             [('{"order":8}', '-1')], 'the gift, and only it, wrapped: a follow-up job')
    check(gift > 0, 'the gift row')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
