#!/usr/bin/env python3
"""Pausing a queue stops new starts on every supervisor within a second; running items
finish; resuming starts them again. Through claimctl and through plain SQL."""

import time

import harness
from harness import check, check_eq, wait_for


def _two(t, db, h, *args):
    sups = [t.claimd(db, '--workers', '2', '--handler', h.spec, *args, name=f'claimd{i}')
            for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    return sups


def _check_paused(t, db, h, paused_at, what):
    time.sleep(2.0)
    late = [e for e in h.starts() if e.time > paused_at + 1.0]
    check_eq(late, [], f'{what}: runs started more than 1 s after the pause')
    running = {e.id for e in h.starts() if e.time <= paused_at + 1.0} - {e.id for e in h.ends()}
    check_eq(running, set(), f'{what}: items started before the pause that did not finish')
    check(db.states()['ready'] > 0, f'{what}: rows left ready')


def it_pause_stops_starts_on_every_supervisor_and_resume_restarts_them(t):
    db = t.database()
    ids = db.insert_items(120)
    h = t.log_handler('sleep 0.2')
    # Prefetched batches too: a paused queue's held items must not start either.
    sups = _two(t, db, h, '--batch', '4')
    wait_for(lambda: len(h.ends()), 20, '10 items done', until=lambda n: n >= 10)
    r = sups[0].ctl('pause', 'default')
    paused_at = time.time()
    check_eq((r.returncode, r.stdout.strip()), (0, 'queue default paused'), 'claimctl pause')
    _check_paused(t, db, h, paused_at, 'claimctl pause')
    check_eq(db.states()['claimed'], 0, 'rows still claimed while paused (prefetched ones go back)')

    r = sups[1].ctl('resume', 'default')
    check_eq((r.returncode, r.stdout.strip()), (0, 'queue default resumed'), 'claimctl resume')
    wait_for(db.states, 60, 'all rows done', until=lambda s: s['done'] == len(ids))
    check_eq(sorted({e.id for e in h.ends()}), ids, 'rows that ran to the end')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_pause_by_sql_is_seen_by_supervisors_and_idle_polls(t):
    db = t.database()
    h = t.log_handler('sleep 0.1')
    sups = _two(t, db, h, '--poll-interval', '50ms')
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1) "
               "ON DUPLICATE KEY UPDATE paused = 1")
    paused_at = time.time()
    db.insert_items(20)
    _check_paused(t, db, h, paused_at, 'SQL pause')
    check_eq(len(h.starts()), 0, 'runs while paused')
    db.execute("UPDATE queues SET paused = 0 WHERE name = 'default'")
    wait_for(db.states, 20, 'all rows done after the SQL resume', until=lambda s: s['done'] == 20)
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
