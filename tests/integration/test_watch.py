#!/usr/bin/env python3
"""Requests waiting for rows (GET /v1/jobs/ID?wait=DUR, /v1/jobs/ID/events) are one watch
list: one statement per tick reads every row waited for, and only the waits whose row
changed are answered (their row read then). With the binary log the tick comes when it
tells of a change (claimd's own quiet completions too), else once a second; without it,
every 100 ms. Each waiter gets its own row; the statements the server counts while many
wait stay few."""

import json
import threading
import time
import urllib.request
from datetime import datetime, timezone

import harness
from harness import check, check_eq, wait_for

WAITERS = 50


def _selects(db):
    """The server's SELECT count (every connection: claimd's, while the test sends none)."""
    rows = db.sql("SHOW GLOBAL STATUS LIKE 'Com_select'")
    return int(rows[0][1])


def _claimd(t, db, *args, workers=1, name=None):
    c = t.claimd(db, '--workers', str(workers), '--handler', 'noop', '--http', '127.0.0.1:0',
                 '--http-max-connections-per-ip', '256',
                 *args, name=name)
    c.http_url()
    c.wait_ready()
    return c


def _waiters(c, ids, path='/v1/jobs/{}?wait=60s'):
    """A thread per id waiting for it; answers[id] = (status, JSON, time.time() answered)."""
    answers = {}
    url, token = c.http_url(), c.http_token()

    def wait(i):
        req = urllib.request.Request(url + path.format(i),
                                     headers={'Authorization': f'Bearer {token}'})
        try:
            with urllib.request.urlopen(req, timeout=90) as r:
                answers[i] = (r.status, json.loads(r.read()), time.time())
        except urllib.error.HTTPError as e:
            answers[i] = (e.code, json.loads(e.read()), time.time())

    threads = [threading.Thread(target=wait, args=(i,), daemon=True) for i in ids]
    for th in threads:
        th.start()
    return answers, threads


def _idle_selects(t, db, seconds, what):
    """SELECTs the server ran over a window of seconds in which no row changes."""
    s0 = _selects(db)
    time.sleep(seconds)   # the window measured, not a wait for something
    n = _selects(db) - s0
    t.note(f'{what}: {n} SELECTs in {seconds} s')
    return n


def _settle(db, most):
    """Until the server runs at most `most` SELECTs in half a second: the waits' first reads
    (a job page: a few statements each) are over."""
    def settled():
        before = _selects(db)
        time.sleep(0.5)   # a window in which a read would show
        return _selects(db) - before <= most
    wait_for(settled, 15, 'the waits\' first reads over')


def _when(rfc3339):
    return datetime.strptime(rfc3339, '%Y-%m-%dT%H:%M:%S.%fZ').replace(
        tzinfo=timezone.utc).timestamp()


def it_answers_fifty_waiters_each_with_its_own_row(t):
    db = t.database()
    c = _claimd(t, db, '--queue', 'elsewhere')
    ids = db.insert_items(WAITERS, queue="'waited'")
    s0 = _selects(db)
    answers, threads = _waiters(c, ids)
    # Each wait reads its row (its job page: a few statements) once as it starts; then the
    # reads settle.
    wait_for(lambda: _selects(db) - s0, 15, f'{WAITERS} waits started',
             until=lambda n: n >= WAITERS)
    _settle(db, 2)
    # Before: a statement per wait every 100 ms, 1000 in 2 s.
    n = _idle_selects(t, db, 2, f'{WAITERS} waits, nothing changes (binary log)')
    check(n < 25, f'{WAITERS} waits cost {n} SELECTs in 2 s')
    check_eq(answers, {}, 'answers before any row finished')
    # The rows finish one by one, in another order, as plain SQL (another host) would.
    order = ids[1::2] + ids[0::2]
    want = {}
    for k, i in enumerate(order):
        want[i] = 'dead' if k % 3 == 0 else 'done'
        db.execute(f"UPDATE work_items SET state = '{want[i]}', finished_at = NOW(6), "
                   f"last_error = 'row {i}' WHERE id = {i}")
    for th in threads:
        th.join(20)
    check_eq(sorted(answers), sorted(ids), 'the waits answered')
    for i in ids:
        status, j, at = answers[i]
        check_eq((status, j['id'], j['state'], j.get('last_error')), (200, i, want[i], f'row {i}'),
                 f'the answer to the wait for {i}')
    lat = sorted(at - _when(j['finished_at']) for _, j, at in answers.values())
    t.note(f'from a row finished to its answer: median {lat[len(lat) // 2] * 1000:.0f} ms, '
           f'most {lat[-1] * 1000:.0f} ms')
    check(lat[len(lat) // 2] < 0.4, f'the median answer came {lat[len(lat) // 2]:.2f} s after')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_answers_rows_another_supervisor_finishes_from_the_binary_log(t):
    """claimd's own completions are quiet (they wake no idle worker) but end a wait."""
    db = t.database()
    c = _claimd(t, db, '--queue', 'elsewhere', name='api')
    # Due one after another from 2 s on: the runner finishes each at its own time.
    ids = db.insert_items(20, queue="'waited'",
                          run_at='NOW(6) + INTERVAL (2000 + seq * 60) * 1000 MICROSECOND')
    answers, threads = _waiters(c, ids)
    streams = {}

    def stream(i):
        req = urllib.request.Request(c.http_url() + f'/v1/jobs/{i}/events',
                                     headers={'Authorization': f'Bearer {c.http_token()}'})
        with urllib.request.urlopen(req, timeout=30) as r:
            streams[i] = [json.loads(line[6:]) for line in r.read().decode().splitlines()
                          if line.startswith('data: {')]

    sth = [threading.Thread(target=stream, args=(i,), daemon=True) for i in ids[:5]]
    for th in sth:
        th.start()
    runner = t.claimd(db, '--workers', '2', '--queue', 'waited', '--handler', 'noop',
                      name='runner')
    for th in threads + sth:
        th.join(30)
    check_eq(sorted(answers), sorted(ids), 'the waits answered')
    for i in ids:
        status, j, _ = answers[i]
        check_eq((status, j['id'], j['state']), (200, i, 'done'), f'the wait for {i}')
    for i in ids[:5]:
        check(streams.get(i) and streams[i][-1]['id'] == i and streams[i][-1]['state'] == 'done',
              f'the event stream of {i}: {streams.get(i)!r}')
    lat = sorted(at - _when(j['finished_at']) for _, j, at in answers.values())
    t.note(f'quiet completions to answers: median {lat[len(lat) // 2] * 1000:.0f} ms, '
           f'most {lat[-1] * 1000:.0f} ms')
    # Without the binary log's word the slow tick (1 s) would make it some 500 ms.
    check(lat[len(lat) // 2] < 0.3, f'the median answer came {lat[len(lat) // 2]:.2f} s after')
    check_eq(runner.stop(), 0, 'runner exit code')
    check_eq(c.stop(), 0, 'api exit code')


def it_reads_every_wait_in_one_statement_a_tick_without_the_binary_log(t):
    db = t.database()
    c = _claimd(t, db, '--queue', 'elsewhere', '--wake', 'poll')
    ids = db.insert_items(WAITERS, queue="'waited'")
    s0 = _selects(db)
    answers, threads = _waiters(c, ids)
    wait_for(lambda: _selects(db) - s0, 15, f'{WAITERS} waits started',
             until=lambda n: n >= WAITERS)
    _settle(db, 12)
    # One read every 100 ms for all of them (and claimd's own poll): before, 1000 in 2 s.
    n = _idle_selects(t, db, 2, f'{WAITERS} waits, --wake poll')
    check(n < 100, f'{WAITERS} waits cost {n} SELECTs in 2 s')
    db.execute(f"UPDATE work_items SET state = 'done', finished_at = NOW(6) "
               f"WHERE id IN ({','.join(map(str, ids[:10]))})")
    for th in threads[:10]:
        th.join(10)
    check_eq(sorted(answers), sorted(ids[:10]), 'the waits whose rows finished')
    check_eq(c.stop(), 0, 'claimd exit code')
    for th in threads:
        th.join(10)
    check(all(answers[i][0] == 503 for i in ids[10:]), 'the others: 503 at the stop')


if __name__ == '__main__':
    harness.main()
