#!/usr/bin/env python3
"""SIGTERM drains: in-flight items finish within --grace, nothing new starts, claimd exits 0
and leaves no process behind; items cut off by the grace period go back to ready."""

import time

import harness
from harness import check, check_eq, describe_pids, pid_running, wait_for


def _all_busy(c, n):
    return c.wait_status(lambda s: len(s['workers']) == n and all(w['state'] == 'busy' for w in s['workers']),
                         15, f'{n} workers busy')


def _running(pids):
    return [p for p in pids if pid_running(p)]


def it_sigterm_lets_in_flight_items_finish_and_exits_0(t):
    db = t.database()
    ids = db.insert_items(10)
    h = t.log_handler('spawn_logged sleep 2')
    c = t.claimd(db, '--workers', '4', '--handler', h.spec, '--grace', '10s')
    st = _all_busy(c, 4)
    wait_for(h.starts, 5, 'four handler start lines', until=lambda s: len(s) == 4)
    worker_pids = [w['pid'] for w in st['workers']]

    t_term = time.time()
    rc = c.stop(timeout=10)
    took = time.time() - t_term
    check_eq(rc, 0, f'claimd exit code after SIGTERM (took {took:.1f}s)')

    starts, ends = h.starts(), h.ends()
    in_flight = sorted(e.id for e in starts)
    check_eq(len(in_flight), 4, f'rows started (in flight at SIGTERM, none after): {starts}')
    check_eq([e for e in starts if e.time > t_term], [], 'handlers started after SIGTERM')
    check_eq(sorted(e.id for e in ends if e.rest == 'rc=0'), in_flight, 'in-flight rows that ran to the end')
    for s in starts:
        e = [x for x in ends if x.id == s.id][0]
        check(e.time - s.time >= 1.9, f'row {s.id} handler ran only {e.time - s.time:.2f}s of 2 s')
    rows = dict((int(i), (st, a)) for i, st, a in db.sql('SELECT id, state, attempts FROM work_items'))
    check_eq({i: rows[i] for i in in_flight}, {i: ('done', '1') for i in in_flight}, 'in-flight rows')
    rest = [i for i in ids if i not in in_flight]
    check_eq({i: rows[i] for i in rest}, {i: ('ready', '0') for i in rest}, 'rows never started')

    check_eq(_running(worker_pids + h.pids()), [], 'worker and handler processes still running')
    check_eq(c.group_processes(), [], 'processes left in claimd\'s session')


def it_sigterm_past_grace_kills_handlers_and_gives_rows_back(t):
    db = t.database()
    ids = db.insert_items(4)
    h = t.log_handler('spawn_logged sleep 30')
    c = t.claimd(db, '--workers', '4', '--handler', h.spec, '--grace', '1s')
    st = _all_busy(c, 4)
    wait_for(lambda: h.events('child'), 5, 'four handlers sleeping', until=lambda s: len(s) == 4)
    worker_pids = [w['pid'] for w in st['workers']]
    check_eq(db.states()['claimed'], 4, 'rows claimed while their handlers run')

    t_term = time.monotonic()
    rc = c.stop(timeout=15)
    took = time.monotonic() - t_term
    check_eq(rc, 0, 'claimd exit code after SIGTERM')
    check(took <= 5.0, f'claimd took {took:.1f}s to exit with --grace 1s (kill-grace 2s)')

    try:
        wait_for(lambda: _running(worker_pids + h.pids()), 1.0, 'processes to go', until=lambda p: not p)
    except harness.WaitTimeout:
        harness.fail(f'after claimd exited these still run: {describe_pids(_running(worker_pids + h.pids()))}')
    check_eq(c.group_processes(), [], 'processes left in claimd\'s session')
    check_eq(h.ends(), [], 'handlers that ran to the end')

    rows = db.sql('SELECT id, state, attempts, visible_at <= NOW(6) FROM work_items ORDER BY id')
    check_eq(rows, [(str(i), 'ready', '0', '1') for i in ids],
             'rows (id, state, attempts, claimable now) after the grace ran out')

    # They really are claimable again: another claimd runs each once, as first attempt.
    h2 = t.log_handler('', name='quick')
    c2 = t.claimd(db, '--workers', '2', '--handler', h2.spec)
    wait_for(db.states, 15, 'all rows done by the second claimd', until=lambda s: s['done'] == 4)
    check_eq(sorted(e.id for e in h2.starts()), ids, 'rows the second claimd ran')
    check_eq(db.sql('SELECT DISTINCT attempts FROM work_items'), [('1',)], 'attempts after the re-run')
    check_eq(c2.stop(), 0, 'second claimd exit code')


if __name__ == '__main__':
    harness.main()
