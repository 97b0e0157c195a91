#!/usr/bin/env python3
"""The HTTP API (--http): enqueue and read jobs, retry and cancel them, queues and their
pause, /healthz, the token, and bad requests answered with a 4xx and nothing written. Also the
claimctl verbs that share its commands (job, cancel, queues)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, wait_for

TOKEN = 'test-token-0123456789abcdef'


def _http_claimd(t, db, *args, token=False, workers=2, handler='noop', name=None):
    """claimd serving HTTP on a port of its choice; c.url, and c.token: the token of a file
    (token=True) or the one claimd made."""
    extra = []
    if token:
        path = os.path.join(t.tmpdir, 'token')
        harness.write_secret(path, TOKEN + '\n')
        extra = ['--http-token-file', path]
    c = t.claimd(db, '--workers', str(workers), '--handler', handler, '--http', '127.0.0.1:0',
                 *extra, *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                 f'{c.name}: the http listening line')
    c.url = m.group(1)
    c.token = TOKEN if token else c.http_token()
    return c


MINE = object()   # _req's token: the claimd's own


def _req(c, method, path, body=None, token=MINE, headers=None):
    """(status, headers, parsed JSON body or text); token=None sends none."""
    h = dict(headers or {})
    token = c.token if token is MINE else token
    if token:
        h['Authorization'] = f'Bearer {token}'
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(c.url + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            status, hdrs, raw = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, raw = e.code, e.headers, e.read()
    text = raw.decode('utf-8', 'replace')
    if (hdrs.get('Content-Type') or '').startswith('application/json'):
        return status, hdrs, json.loads(text)
    return status, hdrs, text


def _head(c):
    """The Host and Authorization header lines a raw request needs."""
    return f'Host: {c.url[len("http://"):]}\r\nAuthorization: Bearer {c.token}\r\n'.encode()


def _raw(c, data, timeout=10):
    """Send bytes on a new connection (as much as the server takes) and return its reply."""
    s = socket.create_connection(('127.0.0.1', int(c.url.rsplit(':', 1)[1])), timeout=timeout)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    reply = b''
    try:
        while len(reply) < 65536:
            got = s.recv(4096)
            if not got:
                break
            reply += got
            if b'\r\n\r\n' in reply and reply.endswith(b'\n') and b'}' in reply:
                break
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return reply


def _count(db):
    return int(db.scalar('SELECT COUNT(*) FROM work_items'))


def it_enqueues_over_http_and_reports_the_job(t):
    db = t.database()
    c = _http_claimd(t, db)
    c.wait_ready()
    status, hdrs, body = _req(c, 'POST', '/v1/queues/mail/jobs?priority=-2&max_attempts=7',
                              '{"to":"a@b"}', headers={'Content-Type': 'application/json'})
    check_eq(status, 202, 'POST jobs status')
    job = body['id']
    check_eq(hdrs['X-Job-Id'], str(job), 'X-Job-Id')
    check_eq(hdrs['Location'], f'/v1/jobs/{job}', 'Location')
    check_eq(db.row(job, 'queue, payload, priority, max_attempts'),
             ('mail', '{"to":"a@b"}', '-2', '7'), 'the row written')
    # The supervisor serves the default queue only: the row waits, ready.
    status, _, j = _req(c, 'GET', f'/v1/jobs/{job}')
    check_eq(status, 200, 'GET job status')
    check_eq((j['id'], j['queue'], j['state'], j['attempts'], j['max_attempts'], j['priority'],
              j['payload'], j['payload_bytes'], j['payload_truncated']),
             (job, 'mail', 'ready', 0, 7, -2, '{"to":"a@b"}', 12, False), 'GET job body')
    # One on the default queue runs, and shows as done.
    status, _, body = _req(c, 'POST', '/v1/queues/default/jobs', 'x' * 3000)
    check_eq(status, 202, 'POST default status')
    done = wait_for(lambda: _req(c, 'GET', f'/v1/jobs/{body["id"]}')[2], 10, 'job done',
                    until=lambda j: j['state'] == 'done')
    check(done['finished_at'] and done['claimed_by'], f'a done job has times: {done!r}')
    check_eq((done['payload_bytes'], done['payload_truncated'], len(done['payload'])),
             (3000, True, 1024), 'a long payload is previewed')
    # A dedupe key held: 200, the holder's id, nothing added.
    s1, _, b1 = _req(c, 'POST', '/v1/queues/mail/jobs?dedupe=order-7', 'a')
    s2, h2, b2 = _req(c, 'POST', '/v1/queues/mail/jobs?dedupe=order-7', 'b')
    check_eq((s1, s2, b2), (202, 200, {'id': b1['id'], 'duplicate': True}), 'dedupe')
    check_eq(h2['X-Job-Id'], str(b1['id']), 'dedupe X-Job-Id')
    # Delayed, recurring, grouped, with a timeout.
    s, _, b = _req(c, 'POST', '/v1/queues/mail/jobs?delay=1h&group=g1&timeout=30s', 'later')
    check_eq(s, 202, 'delayed add')
    check_eq(db.row(b['id'], 'group_key, timeout_s, run_at > NOW(6) + INTERVAL 59 MINUTE'),
             ('g1', '30', '1'), 'delayed row')
    s, _, b = _req(c, 'POST', '/v1/queues/mail/jobs?period=5m', 'tick')
    check_eq((s, db.row(b['id'], 'period_s')), (202, ('300',)), 'recurring row')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_adds_a_batch_of_jobs_in_one_request(t):
    db = t.database()
    # 200 clients at once from one address, below.
    c = _http_claimd(t, db, '--http-max-connections-per-ip', '256', workers=1)
    c.wait_ready()
    held = _req(c, 'POST', '/v1/queues/mail/jobs?dedupe=k1', 'first')[2]['id']
    lines = [
        {'payload': {'to': 'a@b'}, 'priority': -1, 'group': 'user-7'},
        {'payload': 'plain text', 'delay': '1h', 'max_attempts': 3},
        {'payload': 'again', 'dedupe': 'k1'},
        {},
    ]
    body = '\n'.join(json.dumps(x) for x in lines) + '\n\n'
    status, _, b = _req(c, 'POST', '/v1/queues/mail/jobs:batch', body,
                        headers={'Content-Type': 'application/x-ndjson'})
    check_eq(status, 202, f'batch status ({b!r})')
    jobs = b['jobs']
    check_eq(len(jobs), 4, 'one answer per line')
    check_eq(jobs[2], {'id': held, 'duplicate': True}, 'the duplicate line')
    ids = [j['id'] for j in jobs]
    check_eq(db.row(ids[0], 'payload, priority, group_key'), ('{"to":"a@b"}', '-1', 'user-7'),
             'line 1')
    check_eq(db.row(ids[1], 'payload, max_attempts, run_at > NOW(6) + INTERVAL 59 MINUTE'),
             ('plain text', '3', '1'), 'line 2')
    check_eq(db.row(ids[3], 'payload'), ('',), 'line 4: no payload')
    before = _count(db)
    for bad, words in [('{"payload": 1}\n{"priority": 99}\n', 'line 2: add: priority'),
                       ('{"payload": 1}\nnot json\n', 'line 2: not JSON'),
                       ('{"colour": "red"}', "line 1: unknown key 'colour'"),
                       ('[1]', 'line 1: not a JSON object'),
                       ('\n\n', 'no jobs')]:
        status, _, b = _req(c, 'POST', '/v1/queues/mail/jobs:batch', bad)
        check_eq(status, 400, f'batch {bad!r}')
        check(words in b['error'], f'batch {bad!r}: error {b["error"]!r} lacks {words!r}')
    status, _, b = _req(c, 'POST', '/v1/queues/mail/jobs:batch', '{}\n' * 1001)
    check_eq(status, 413, 'a batch of 1001 lines')
    check_eq(_count(db), before, 'rows after the bad batches')
    # Many clients at once: every add answered, every row written once, and adds that came
    # together share a transaction. To have them come together whatever the machine's speed,
    # a client holds the table locked while they arrive, then lets go.
    import concurrent.futures
    import threading
    commits = lambda: int(db.sql("SHOW GLOBAL STATUS LIKE 'Com_commit'")[0][1])
    holder = subprocess.Popen([harness._client_bin(), '--no-defaults', '--protocol=socket', '-S',
                               db.server.socket, '-uroot', db.name], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    t.defer(holder.kill)
    holder.stdin.write('LOCK TABLES work_items WRITE;\n')
    holder.stdin.flush()
    wait_for(lambda: db.sql(f"SHOW OPEN TABLES FROM `{db.name}` WHERE `Table` = 'work_items' "
                            "AND In_use > 0"), 10, 'the table locked')
    c0 = commits()
    got = []
    with concurrent.futures.ThreadPoolExecutor(200) as pool:
        runner = threading.Thread(target=lambda: got.extend(pool.map(
            lambda i: _req(c, 'POST', '/v1/queues/load/jobs', f'n{i}'), range(200))))
        runner.start()
        # Until claimd's insert waits for the lock and the last requests have come in.
        wait_for(lambda: db.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
                                "STATE LIKE 'Waiting for table%'")[0][0], 10,
                 'an insert waiting for the lock', until=lambda n: int(n) >= 1)
        time.sleep(1.0)
        holder.stdin.write('UNLOCK TABLES;\n')
        holder.stdin.close()
        runner.join(60)
    c1 = commits()
    t.note(f'200 concurrent adds: {c1 - c0} commits on the server')
    check(c1 - c0 < 20, f'200 concurrent adds took {c1 - c0} commits')
    check_eq(sorted({g[0] for g in got}), [202], 'statuses of 200 concurrent adds')
    check_eq(len({g[2]['id'] for g in got}), 200, 'distinct ids')
    check_eq(int(db.scalar("SELECT COUNT(*) FROM work_items WHERE queue = 'load'")), 200,
             'rows of the concurrent adds')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_waits_for_a_job_another_supervisor_runs(t):
    db = t.database()
    # This one serves HTTP and a queue nobody uses; the other runs the default queue's rows.
    a = _http_claimd(t, db, '--queue', 'elsewhere', workers=1, name='api')
    h = t.log_handler('sleep 1')
    b = t.claimd(db, '--workers', '1', '--handler', f'exec:{h.path}', name='runner')
    a.wait_ready()
    b.wait_ready()
    job = _req(a, 'POST', '/v1/queues/default/jobs', 'slow')[2]['id']
    t0 = time.monotonic()
    status, _, j = _req(a, 'GET', f'/v1/jobs/{job}?wait=20s')
    took = time.monotonic() - t0
    check_eq((status, j['state']), (200, 'done'), 'the answer to ?wait')
    check(0.5 < took < 10, f'?wait answered after {took:.2f}s (the handler takes 1 s)')
    check(j['claimed_by'] and j['finished_at'], f'the row: {j!r}')
    # A row nobody runs: the wait ends with the row as it is.
    idle = _req(a, 'POST', '/v1/queues/nobody/jobs', 'x')[2]['id']
    t0 = time.monotonic()
    status, _, j = _req(a, 'GET', f'/v1/jobs/{idle}?wait=1s')
    took = time.monotonic() - t0
    check_eq((status, j['state']), (200, 'ready'), 'an unfinished row after its wait')
    check(0.9 < took < 5, f'a 1 s wait took {took:.2f}s')
    for bad in ('soon', '1h', ''):
        status, _, e = _req(a, 'GET', f'/v1/jobs/{idle}?wait={bad}')
        check_eq(status, 400, f'wait={bad!r}')
        check('wait' in e['error'], f'wait={bad!r}: {e!r}')
    check_eq(_req(a, 'GET', '/v1/queues?wait=1s')[0], 400, 'wait on another route')
    # Stopping answers a waiting request: 503, claimd is stopping.
    import threading
    got = []
    th = threading.Thread(target=lambda: got.append(_req(a, 'GET', f'/v1/jobs/{idle}?wait=60s')))
    th.start()
    time.sleep(0.5)
    check_eq(a.stop(), 0, 'api claimd exit code')
    th.join(10)
    check(got and got[0][0] == 503 and 'stopping' in got[0][2]['error'],
          f'a wait cut by the stop: {got!r}')
    check_eq(b.stop(), 0, 'runner claimd exit code')


def _metrics(c):
    status, hdrs, text = _req(c, 'GET', '/metrics')
    check_eq(status, 200, '/metrics status')
    check(hdrs['Content-Type'].startswith('text/plain; version=0.0.4'), f'type {hdrs["Content-Type"]!r}')
    values = {}
    for line in text.splitlines():
        if line and not line.startswith('#'):
            name, value = line.rsplit(' ', 1)
            values[name] = float(value)
    return text, values


def it_serves_prometheus_metrics(t):
    promtool = shutil.which('promtool')
    if not promtool:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('promtool is not installed (Debian: prometheus)')
        raise harness.Skip('promtool is not installed (Debian: prometheus)')
    db = t.database()
    c = _http_claimd(t, db)
    c.wait_ready()
    for i in range(5):
        check_eq(_req(c, 'POST', '/v1/queues/default/jobs', f'm{i}')[0], 202, 'add')
    _req(c, 'POST', '/v1/queues/odd%22queue%5Cname/jobs', 'x')
    db.insert_item('d', queue="'mail'", state="'dead'")
    _req(c, 'GET', '/v1/jobs/999999')
    wait_for(db.states, 10, 'five rows done', until=lambda s: s['done'] == 5)
    # The queues are read at most every 5 s, and a scrape does not wait for the reading.
    text, values = wait_for(lambda: _metrics(c), 15, 'the queues in /metrics',
                            until=lambda tv: tv[1].get('claimd_queue_jobs{queue="default",state="done"}') == 5)
    r = subprocess.run([promtool, 'check', 'metrics'], input=text, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    check_eq((r.returncode, r.stdout.strip()), (0, ''), 'promtool check metrics')
    check_eq(values['claimd_workers{state="idle"}'] + values['claimd_workers{state="busy"}'], 2,
             'workers up')
    check_eq(values['claimd_jobs_finished_total{queue="default",outcome="done"}'], 5, 'jobs done')
    for h in ('duration', 'wait'):
        check_eq(values[f'claimd_job_{h}_seconds_count{{queue="default"}}'], 5, f'{h} observed')
        check_eq(values[f'claimd_job_{h}_seconds_bucket{{queue="default",le="+Inf"}}'], 5,
                 f'{h} +Inf bucket')
    check(values['claimd_claims_total'] >= 1 and
          values['claimd_claim_duration_seconds_count'] == values['claimd_claims_total'],
          'claims counted and timed')
    check_eq(values['claimd_queue_jobs{queue="mail",state="dead"}'], 1, 'dead rows of mail')
    check_eq(values['claimd_queue_jobs{queue="odd\\"queue\\\\name",state="ready"}'], 1,
             'an escaped queue name')
    check_eq(values['claimd_database_up'], 1, 'database up')
    # Each job's FINISHED at least, from the workers; their wake-ups and permits to them.
    msgs = {d: values[f'claimd_worker_messages_total{{direction="{d}"}}']
            for d in ('to_worker', 'from_worker')}
    check(msgs['from_worker'] >= 5 and msgs['to_worker'] >= 1, f'messages counted: {msgs}')
    # A lone job, the workers idle: its messages, both ways.
    wait_for(lambda: c.status(), 10, 'workers idle', until=lambda st: st and all(
        w['state'] == 'idle' for w in st['workers']))
    before = _metrics(c)[1]
    check_eq(_req(c, 'POST', '/v1/queues/default/jobs', 'lone')[0], 202, 'add')
    wait_for(db.states, 10, 'the lone row done', until=lambda s: s['done'] == 6)
    after = wait_for(lambda: _metrics(c)[1], 10, 'the lone job counted', until=lambda v: v[
        'claimd_jobs_finished_total{queue="default",outcome="done"}'] == 6)
    lone = {d: after[f'claimd_worker_messages_total{{direction="{d}"}}'] -
            before[f'claimd_worker_messages_total{{direction="{d}"}}']
            for d in ('to_worker', 'from_worker')}
    t.note(f'messages of a lone job: {lone}')
    check(lone['to_worker'] >= 1 and lone['from_worker'] >= 1, f'a lone job\'s messages: {lone}')
    # Lone rows one after another, by SQL (woken by the binary log alone): a claim takes
    # each, and the next claim writes its outcome (finding nothing); the short claim wakes
    # no second worker to find nothing too (it did: 3 claims a row).
    before = after
    for i in range(5):
        db.insert_item(f'lone{i}')
        wait_for(db.states, 10, 'the lone row done', until=lambda s: s['done'] == 7 + i)
    after = wait_for(lambda: _metrics(c)[1], 10, 'the lone jobs counted', until=lambda v: v[
        'claimd_jobs_finished_total{queue="default",outcome="done"}'] == 11)
    claims = after['claimd_claims_total'] - before['claimd_claims_total']
    t.note(f'claims of 5 lone jobs: {claims:.0f}')
    check(claims <= 12, f'5 lone rows took {claims:.0f} claims (2 each, a few more at most)')
    check(values['claimd_http_requests_total{route="jobs.add",code="202"}'] >= 5, 'adds counted')
    check_eq(values['claimd_http_requests_total{route="job",code="404"}'], 1, 'the 404 counted')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_shows_every_supervisor_and_marks_a_lost_one(t):
    db = t.database()
    a = _http_claimd(t, db, workers=1, name='a')
    b = t.claimd(db, '--workers', '2', '--handler', 'noop', '--queue', 'other', name='b')
    a.wait_ready()
    b.wait_ready()
    svs = wait_for(lambda: _req(a, 'GET', '/v1/supervisors')[2], 10, 'two supervisors',
                   until=lambda v: isinstance(v, list) and len(v) == 2)
    by_pid = {sv['pid']: sv for sv in svs}
    check_eq(sorted(by_pid), sorted([a.pid, b.pid]), 'supervisor pids')
    check_eq((by_pid[a.pid]['http'], by_pid[b.pid]['http']), (a.url[len('http://'):], None),
             'http addresses')
    check_eq((by_pid[b.pid]['queues'], by_pid[b.pid]['lost']), ('other', False), 'b as seen by a')
    check_eq(len(by_pid[b.pid]['status']['workers']), 2, "b's workers")
    r = a.ctl('supervisors')
    check(r.returncode == 0 and r.stdout.count(' live') == 2, f'claimctl supervisors: {r.stdout!r}')
    # status --all: every supervisor and a line per worker of it
    r = a.ctl('status', '--all')
    check(r.returncode == 0 and r.stdout.count(': live,') == 2 and
          f'pid {b.pid}: live' in r.stdout and r.stdout.count(' noop') == 0,
          f'claimctl status --all: {r.stdout!r}')
    workers = [ln for ln in r.stdout.splitlines() if re.match(r'^  \d+ ', ln)]
    check_eq(len(workers), 3, f'worker lines of status --all: {r.stdout!r}')
    r = a.ctl('status', '--all', '--json')
    check(r.returncode == 0, f'status --all --json: {r.stderr}')
    got = json.loads(r.stdout.split('\n', 1)[1] if r.stdout.startswith('ok') else r.stdout)
    check_eq(sorted(len(sv['status']['workers']) for sv in got['supervisors']), [1, 2],
             'status --all --json')
    b.send(signal.SIGKILL)
    svs = wait_for(lambda: _req(a, 'GET', '/v1/supervisors')[2], 30, 'b lost',
                   until=lambda v: any(sv['pid'] == b.pid and sv['lost'] for sv in v))
    check(any(sv['pid'] == a.pid and not sv['lost'] for sv in svs), f'a is live: {svs!r}')
    r = a.ctl('status', '--all')
    check(f'pid {b.pid}: LOST' in r.stdout, f'status --all marks b lost: {r.stdout!r}')
    check_eq(a.stop(), 0, 'a exit code')
    check_eq([int(x[0]) for x in db.sql('SELECT pid FROM supervisors')], [b.pid],
             'rows after a clean stop of a (b, killed, stays until it is a day old)')


def it_answers_bad_requests_with_a_4xx_and_writes_nothing(t):
    db = t.database()
    c = _http_claimd(t, db, workers=1)
    c.wait_ready()
    before = _count(db)
    cases = [
        ('POST', '/v1/queues/mail/jobs?priority=99', 'x', 400, 'priority'),
        ('POST', '/v1/queues/mail/jobs?colour=red', 'x', 400, "unknown parameter 'colour'"),
        ('POST', '/v1/queues/mail/jobs?delay=soon', 'x', 400, 'not a duration'),
        ('POST', '/v1/queues/mail/jobs?max_attempts=0', 'x', 400, 'max_attempts'),
        ('POST', '/v1/queues/mail/jobs?run_at=tomorrow', 'x', 400, 'run_at'),
        ('POST', '/v1/queues/mail/jobs?run_at=2026-01-01%2010:00', 'x', 400, 'run_at'),
        # a day February does not have: refused before it reaches the database
        ('POST', '/v1/queues/mail/jobs?run_at=2026-02-30%2010:00:00', 'x', 400,
         "run_at '2026-02-30 10:00:00' is not a date of the calendar"),
        ('POST', '/v1/queues/mail/jobs:batch', '{"run_at": "2026-02-30 10:00:00"}', 400,
         'run_at'),
        ('POST', '/v1/queues/' + 'q' * 65 + '/jobs', 'x', 400, 'queue'),
        ('POST', '/v1/queues/mail/jobs?priority=1&priority=2', 'x', 400, 'twice'),
        ('GET', '/v1/queues/mail/jobs', None, 405, 'method'),
        ('GET', '/v1/jobs/abc', None, 400, 'id'),
        ('GET', '/v1/jobs/999999', None, 404, 'no row 999999'),
        ('DELETE', '/v1/jobs/999999', None, 404, 'no row'),
        ('GET', '/v2/anything', None, 404, 'no such route'),
        ('GET', '/v1/jobs/1/', None, 404, 'no such route'),
        ('PUT', '/v1/jobs/1', 'x', 405, 'method'),
    ]
    allow = {'/v1/queues/mail/jobs': 'POST', '/v1/jobs/1': 'GET, HEAD, DELETE'}
    for method, path, body, want, words in cases:
        status, hdrs, b = _req(c, method, path, body)
        check_eq(status, want, f'{method} {path[:60]}')
        check(isinstance(b, dict) and isinstance(b.get('error'), str),
              f'{method} {path[:60]}: body {b!r}, want {{"error": ...}}')
        if words:
            check(words in b['error'], f'{method} {path[:60]}: error {b["error"]!r} lacks {words!r}')
        if status == 405:
            check_eq(hdrs.get('Allow'), allow[path], f'{method} {path}: Allow')
    # A body over 1 MiB: 413 before the body is read when Content-Length says so, at its end
    # when it comes in chunks.
    reply = _raw(c, b'POST /v1/queues/mail/jobs HTTP/1.1\r\n' + _head(c) +
                 b'Content-Length: 1048577\r\n\r\n')
    check(reply.startswith(b'HTTP/1.1 413'), f'oversized Content-Length: {reply[:80]!r}')
    chunk = b'x' * 65536
    reply = _raw(c, b'POST /v1/queues/mail/jobs HTTP/1.1\r\n' + _head(c) +
                 b'Transfer-Encoding: chunked\r\n\r\n' +
                 b''.join(b'%x\r\n%s\r\n' % (len(chunk), chunk) for _ in range(20)) + b'0\r\n\r\n')
    check(reply.startswith(b'HTTP/1.1 413'), f'chunked oversized body: {reply[:80]!r}')
    # Garbage on the socket: an error status, the server goes on.
    reply = _raw(c, b'\x00\x01garbage\r\n\r\n', timeout=2)
    check(reply == b'' or reply.startswith(b'HTTP/1.1 4'), f'garbage request: {reply[:80]!r}')
    check_eq(_count(db), before, 'rows after the bad requests')
    check_eq(_req(c, 'GET', '/healthz')[0], 200, 'healthz after the bad requests')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_retries_cancels_and_pauses(t):
    db = t.database()
    c = _http_claimd(t, db, workers=1)
    c.wait_ready()
    dead = db.insert_item('d', queue="'mail'", state="'dead'", attempts=5)
    ready = db.insert_item('r', queue="'mail'")
    claimed = db.insert_item('c', queue="'mail'", state="'claimed'", claim_time='NOW(6)')
    status, _, b = _req(c, 'POST', f'/v1/jobs/{dead}/retry')
    check_eq((status, b), (200, {'retried': 1}), 'retry')
    check_eq(db.row(dead, 'state, attempts'), ('ready', '0'), 'retried row')
    # A row that is not dead: 409 and its state; no such row: 404.
    status, _, b = _req(c, 'POST', f'/v1/jobs/{dead}/retry')
    check_eq((status, b), (409, {'error': f'row {dead} is ready: only a dead row can be retried'}),
             'retry of a ready row')
    status, _, b = _req(c, 'POST', '/v1/jobs/999999/retry')
    check_eq((status, b), (404, {'error': 'no row 999999'}), 'retry of no row')
    r = c.ctl('retry', str(claimed))
    check_eq((r.returncode, r.stderr.strip().endswith(
        f'row {claimed} is claimed: only a dead row can be retried')), (1, True),
        f'claimctl retry of a claimed row: {r.stderr!r}')
    status, _, b = _req(c, 'DELETE', f'/v1/jobs/{ready}')
    check_eq((status, b), (200, {'id': ready, 'deleted': True}), 'cancel a ready row')
    check_eq(int(db.scalar(f'SELECT COUNT(*) FROM work_items WHERE id = {ready}')), 0, 'row gone')
    # A claimed row is not deleted: its cancel is asked for (test_cancel runs one).
    status, _, b = _req(c, 'DELETE', f'/v1/jobs/{claimed}')
    check_eq((status, b.get('state'), b.get('cancelling')), (202, 'claimed', True),
             f'cancel a claimed row: {b!r}')
    check_eq(db.row(claimed, 'state, cancel_requested_at IS NOT NULL, cancel_reason LIKE '
                    "'cancelled%'"), ('claimed', '1', '1'), 'the claimed row is cancelling')
    status, _, b = _req(c, 'POST', '/v1/queues/mail/pause')
    check_eq((status, b), (200, {'queue': 'mail', 'paused': True}), 'pause')
    check_eq(db.scalar("SELECT paused FROM queues WHERE name = 'mail'"), '1', 'paused in the table')
    status, _, qs = _req(c, 'GET', '/v1/queues')
    mail = [q for q in qs if q['name'] == 'mail']
    check(status == 200 and mail, f'GET /v1/queues: {status} {qs!r}')
    check_eq((mail[0]['paused'], mail[0]['ready'], mail[0]['claimed']), (True, 1, 1),
             'the mail queue')
    check(mail[0]['oldest_ready_s'] >= 0, f'oldest_ready_s: {mail[0]!r}')
    status, _, b = _req(c, 'POST', '/v1/queues/mail/resume')
    check_eq((status, b['paused']), (200, False), 'resume')
    # The same commands through claimctl.
    r = c.ctl('job', str(dead), '--json')
    check_eq((r.returncode, json.loads(r.stdout)['state']), (0, 'ready'), 'claimctl job --json')
    r = c.ctl('job', str(dead))
    check(r.returncode == 0 and re.search(r'^state\s+ready$', r.stdout, re.M), f'claimctl job: {r.stdout!r}')
    r = c.ctl('cancel', str(dead))
    check_eq((r.returncode, r.stdout), (0, '1\n'), 'claimctl cancel')
    r = c.ctl('cancel', str(dead))
    check(r.returncode != 0 and f'no row {dead}' in r.stderr, f'claimctl cancel again: {r.stderr!r}')
    r = c.ctl('queues')
    check(r.returncode == 0 and re.search(r'^mail\s+0\s+1\s', r.stdout, re.M), f'claimctl queues: {r.stdout!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_needs_the_token_but_for_healthz(t):
    db = t.database()
    c = _http_claimd(t, db, workers=1, token=True)
    c.wait_ready()
    check_eq(_req(c, 'GET', '/v1/queues', token=None)[0], 401, 'no token')
    status, hdrs, b = _req(c, 'POST', '/v1/queues/q/jobs', 'x', token='wrong-token-0123456789')
    check_eq((status, hdrs.get('WWW-Authenticate')), (401, 'Bearer'), 'a wrong token')
    check_eq(_count(db), 0, 'nothing added without the token')
    check_eq(_req(c, 'POST', '/v1/queues/q/jobs', 'x', token=TOKEN)[0], 202, 'the token')
    check_eq(_req(c, 'GET', '/healthz', token=None)[0], 200, 'healthz needs no token')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_an_open_address_over_plain_http_and_a_bad_token_file(t):
    db = t.database()
    c = t.claimd(db, '--handler', 'noop', '--http', '0.0.0.0:0')
    check_eq(c.wait_exit(10), 2, 'exit code for 0.0.0.0 over plain HTTP')
    check('not a loopback address' in c.log(), f'message: {c.log_tail(3)!r}')
    short = os.path.join(t.tmpdir, 'short')
    harness.write_secret(short, 'abc\n')
    c = t.claimd(db, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-token-file', short)
    check_eq(c.wait_exit(10), 2, 'exit code for a short token')
    check('16' in c.log(), f'message: {c.log_tail(3)!r}')
    c = t.claimd(db, '--handler', 'noop', '--http', 'localhost:99999')
    check_eq(c.wait_exit(10), 2, 'exit code for a bad port')
    check('--http' in c.log(), f'message: {c.log_tail(3)!r}')


def it_healthz_says_why_it_is_unhealthy(t):
    db = t.database()
    # A database nobody listens on: the workers cannot connect, and the idle poll fails.
    dsn = f'mysql://root@localhost/{db.name}?socket={t.tmpdir}/no-such.sock'
    c = _http_claimd(t, None, '--dsn', dsn, workers=1)
    # Until the first statement fails, the reason is the pool not at strength; it must then
    # name the database, and the status is never 200 meanwhile.
    seen = []

    def ask():
        r = _req(c, 'GET', '/healthz')
        seen.append(r[:1] + r[2:])
        return r
    wait_for(ask, 15, 'healthz naming the database', until=lambda r: 'database' in r[2])
    check(all(s == 503 for s, _ in seen), f'healthz answers: {seen!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
