#!/usr/bin/env python3
"""Results and progress: what a handler of each kind returns is kept in the row and shown by
the HTTP API (GET /v1/jobs/{id}, its ?wait and its event stream), the payload's content type
reaches the handler, progress reports reach the row at most once a second, and results over
the limit fail clearly."""

import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, wait_for

PLUGIN_DIR = os.environ.get('CLAIMD_TEST_PLUGIN_DIR') or os.path.join(
    os.path.dirname(harness.CLAIMD_BIN), 'tests')


def _http_claimd(t, db, *args, name=None):
    c = t.claimd(db, '--http', '127.0.0.1:0', *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on http://([0-9.]+):(\d+)/', c.log()), 10,
                 f'{c.name}: the http listening line')
    c.host, c.port = m.group(1), int(m.group(2))
    c.url = f'http://{c.host}:{c.port}'
    c.auth = {'Authorization': f'Bearer {c.http_token()}'}
    return c


def _req(c, method, path, body=None, headers=None, timeout=30):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(c.url + path, data=data, method=method,
                                 headers=dict(headers or {}, **c.auth))
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')


def _add(c, queue, payload, content_type='application/x-test', **params):
    q = '&'.join(f'{k}={v}' for k, v in params.items())
    status, body = _req(c, 'POST', f'/v1/queues/{queue}/jobs' + (f'?{q}' if q else ''), payload,
                        {'Content-Type': content_type})
    check_eq(status, 202, f'add {payload!r}')
    return body['id']


def _wait_job(c, job_id):
    status, job = _req(c, 'GET', f'/v1/jobs/{job_id}?wait=30s', timeout=40)
    check_eq(status, 200, f'GET /v1/jobs/{job_id}')
    return job


def _plugin(name):
    path = os.path.join(PLUGIN_DIR, f'claimd_test_{name}.so')
    check(os.path.exists(path), f'plugin {path} not built')
    return path


def it_keeps_each_handler_kinds_result_and_hands_over_the_content_type(t):
    db = t.database()
    exec_handler = harness.write_script(t.tmpdir, 'exec-result.sh',
                                        'cat >/dev/null\nprintf "type=%s id=%s" '
                                        '"$CLAIMD_CONTENT_TYPE" "$CLAIMD_ITEM_ID"\n')
    plugin_log = os.path.join(t.tmpdir, 'plugin.log')
    kinds = [
        ('pipe', ['--handler', f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe.log")}']),
        ('exec', ['--handler', f'exec:{exec_handler}', '--exec-result']),
        ('so', ['--handler', f'so:{_plugin("ok")} {plugin_log}']),
    ]
    for kind, args in kinds:
        c = _http_claimd(t, db, '--workers', '1', '--queue', kind, *args, name=kind)
        job_id = _add(c, kind, 'result', content_type=f'application/x-{kind}')
        job = _wait_job(c, job_id)
        check_eq((job['state'], job['content_type']), ('done', f'application/x-{kind}'),
                 f'{kind}: state and the content type kept')
        if kind == 'exec':
            check_eq((job['result'], job['result_type']),
                     (f'type=application/x-exec id={job_id}', 'application/octet-stream'),
                     'exec: its stdout is the result')
        else:
            check_eq((job['result'], job['result_type']),
                     ({'id': job_id, 'type': f'application/x-{kind}'}, 'application/json'),
                     f'{kind}: the result, a JSON value')
        if kind == 'so':
            check_eq(job['progress'], {'step': 1}, 'so: the progress it reported')
        stored = db.sql(f'SELECT result, result_type FROM work_items WHERE id = {job_id}')[0]
        check(stored[0], f'{kind}: result column written')
        check_eq(c.stop(), 0, f'{kind}: claimd exit code')
    # A job without a result has none; plain SQL rows have no content type.
    c = _http_claimd(t, db, '--workers', '1', '--queue', 'pipe', '--handler',
                     f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe2.log")}', name='plain')
    sql_id = db.insert_item('plain', queue="'pipe'")
    job = _wait_job(c, sql_id)
    check_eq((job['state'], job['result'], job['content_type'], job['progress']),
             ('done', None, None, None), 'a row without result, type or progress')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_writes_progress_at_most_once_a_second_and_keeps_the_last(t):
    db = t.database()
    c = _http_claimd(t, db, '--workers', '1', '--handler',
                     f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe.log")}')
    job_id = _add(c, 'default', 'progress')
    seen, while_running = [], []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        state, progress = db.sql(f'SELECT state, progress FROM work_items WHERE id = {job_id}')[0]
        if progress and (not seen or seen[-1] != progress):
            seen.append(progress)
            if state == 'claimed':
                while_running.append(progress)
        if state == 'done':
            break
        time.sleep(0.01)
    job = _wait_job(c, job_id)
    check_eq((job['state'], job['result'], job['progress']), ('done', 'finished', {'n': 200}),
             'done, its result, and the last progress kept')
    # 200 reports in a moment, then 2.5 s of quiet: the row got the latest a second after the
    # first report (one write for all 200), while the item still ran.
    values = [json.loads(p)['n'] for p in seen]
    check(1 <= len(values) <= 3, f'progress values the row went through: {values}')
    check_eq(values[-1], 200, 'the last progress')
    check(while_running, 'no progress reached the row while the item ran')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_fails_a_result_over_the_limit_clearly(t):
    db = t.database()
    exec_handler = harness.write_script(t.tmpdir, 'big.sh',
                                        'cat >/dev/null\nhead -c 70000 /dev/zero | tr "\\0" x\n')
    plugin_log = os.path.join(t.tmpdir, 'plugin.log')
    for kind, args in [
        ('pipe', ['--handler', f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe.log")}']),
        ('exec', ['--handler', f'exec:{exec_handler}', '--exec-result']),
    ]:
        c = _http_claimd(t, db, '--workers', '1', '--queue', kind, *args, name=kind)
        job_id = _add(c, kind, 'bigresult', max_attempts=1)
        job = _wait_job(c, job_id)
        check_eq((job['state'], job['result']), ('dead', None), f'{kind}: failed, no result')
        check('over the' in job['last_error'] and '65536' in job['last_error'],
              f'{kind}: the error says why: {job["last_error"]!r}')
        check_eq(c.stop(), 0, f'{kind}: claimd exit code')
    # so: set_result refuses it (-EMSGSIZE) and the run completes without a result.
    c = _http_claimd(t, db, '--workers', '1', '--queue', 'so', '--handler',
                     f'so:{_plugin("ok")} {plugin_log}', name='so')
    job_id = _add(c, 'so', 'bigresult')
    job = _wait_job(c, job_id)
    check_eq((job['state'], job['result']), ('done', None), 'so: done without a result')
    with open(plugin_log) as f:
        check(re.search(rf'^set_result -90 {job_id} ', f.read(), re.M),
              'so: set_result said -EMSGSIZE (-90)')
    check_eq(c.stop(), 0, 'so: claimd exit code')


def it_loads_a_plugin_of_abi_version_1(t):
    db = t.database()
    ids = db.insert_items(3)
    plugin_log = os.path.join(t.tmpdir, 'v1.log')
    c = t.claimd(db, '--workers', '1', '--handler', f'so:{_plugin("v1")} {plugin_log}')
    wait_for(db.states, 15, 'the rows done', until=lambda s: s['done'] == 3)
    with open(plugin_log) as f:
        logged = sorted(int(line.split()[1]) for line in f if line.startswith('v1 '))
    check_eq(logged, sorted(ids), 'the v1 plugin ran every row once')
    check_eq(c.stop(), 0, 'claimd exit code')


def _events(c, path, timeout=30):
    """Read a Server-Sent Events stream to its end: [(event, data as JSON)]."""
    conn = http.client.HTTPConnection(c.host, c.port, timeout=timeout)
    conn.request('GET', path, headers=c.auth)
    r = conn.getresponse()
    check_eq(r.status, 200, f'GET {path}')
    check(r.getheader('Content-Type', '').startswith('text/event-stream'), 'an event stream')
    events, event, data = [], None, []
    for raw in r:
        line = raw.decode().rstrip('\r\n')
        if line == '':
            if event:
                events.append((event, json.loads('\n'.join(data))))
            event, data = None, []
        elif line.startswith('event: '):
            event = line[7:]
        elif line.startswith('data: '):
            data.append(line[6:])
    conn.close()
    return events


def it_streams_the_events_of_a_job_another_supervisor_runs(t):
    db = t.database()
    front = _http_claimd(t, db, '--workers', '1', '--queue', 'front', '--handler', 'noop',
                         name='front')
    back = t.claimd(db, '--workers', '1', '--queue', 'slow', '--handler',
                    f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe.log")}', name='back')
    job_id = _add(front, 'slow', 'progress')
    events = _events(front, f'/v1/jobs/{job_id}/events')
    states = [d['state'] for e, d in events if e == 'job']
    check(len(events) >= 3 and states[-1] == 'done', f'events until done: {states}')
    check('claimed' in states, f'the claimed state was streamed: {states}')
    progress = [d['progress'] for e, d in events if e == 'job' and d['progress']]
    check(progress and progress[-1] == {'n': 200}, f'progress was streamed: {progress}')
    last = events[-1][1]
    check_eq((last['result'], last['claimed_by'].split('/')[1].startswith('w')),
             ('finished', True), 'the last event has the result and who ran it')
    # Unknown job: 404, not a stream.
    check_eq(_req(front, 'GET', '/v1/jobs/999999/events')[0], 404, 'events of an unknown job')
    check_eq(front.stop(), 0, 'front exit code')
    check_eq(back.stop(), 0, 'back exit code')


if __name__ == '__main__':
    harness.main()
