#!/usr/bin/env python3
"""Claim order across supervisors: priorities (smaller first, then due time, then id) and
FIFO groups (one item of a group at a time, in insertion order; groups in parallel), each
with two supervisors sharing one database, checked from the database and from the
handler's own log."""

import collections
import os
import sys

import harness
from harness import check, check_eq, wait_for

PIPE_ECHO = os.path.join(os.environ.get('CLAIMD_SOURCE_ROOT', '.'), 'tests', 'pipe_echo.py')


def _pipe(t, name):
    h = harness.Handler(None, os.path.join(t.tmpdir, name + '.log'))
    t._handlers.append(h)
    return h, f'pipe:{sys.executable} {PIPE_ECHO} {h.log_path}'


def _two(t, db, spec, *args):
    sups = [t.claimd(db, *args, '--handler', spec, name=f'claimd{i}') for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    return sups


def _ctl(c, *args):
    r = c.ctl(*args)
    check_eq(r.returncode, 0, f'claimctl {" ".join(args)} exit code ({r.stderr.strip()})')
    return r.stdout.strip()


def _stop(sups):
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_smaller_priority_runs_first_on_two_supervisors(t):
    db = t.database()
    # Paused while loading, so that every row is due when the first claim looks. Priorities
    # -3..3 in shuffled order, due times spread over the last minute.
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1)")
    db.insert_items(350, priority='CAST((seq * 37) % 7 AS SIGNED) - 3',
                    run_at='NOW(6) - INTERVAL ((seq * 13) % 60) SECOND')
    order = {int(i): (int(p), r, int(i)) for i, p, r in
             db.sql('SELECT id, priority, run_at FROM work_items')}
    h, spec = _pipe(t, 'priority')
    sups = _two(t, db, spec, '--workers', '1', '--batch', '1')
    _ctl(sups[0], 'resume', 'default')
    wait_for(db.states, 60, 'all rows done', until=lambda s: s['done'] == 350)
    _stop(sups)
    starts = sorted(h.starts(), key=lambda e: e.time)
    check_eq(sorted(e.id for e in starts), sorted(order), 'rows that ran, once each')
    # Each worker takes the first row left: its own starts are in claim order.
    for pid in {e.pid for e in starts}:
        mine = [order[e.id] for e in starts if e.pid == pid]
        bad = [(a, b) for a, b in zip(mine, mine[1:]) if b < a]
        check(not bad, f'worker {pid} started rows out of order: {bad[:3]}')
    # Across both: a row may start before one that sorts earlier only while the two
    # workers' claims overlap.
    seen = [order[e.id] for e in starts]
    worst = max(sum(1 for b in seen[k + 1:] if b[0] < a[0]) for k, a in enumerate(seen))
    t.note(f'rows of a smaller priority started after a row, at most: {worst}')
    check(worst <= 2, f'up to {worst} rows of a smaller priority started after a row')


def it_claimctl_add_takes_a_priority(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    _ctl(c, 'pause', 'default')
    low = int(_ctl(c, 'add', '--priority', '5', 'low'))
    high = int(_ctl(c, 'add', '--priority', '-5', 'high'))
    check_eq(db.row(low, 'priority'), ('5',), 'priority of the row added with --priority 5')
    check_eq(db.row(high, 'priority'), ('-5',), 'priority of the row added with --priority -5')
    _ctl(c, 'resume', 'default')
    wait_for(db.states, 10, 'both rows done', until=lambda s: s['done'] == 2)
    first = db.sql(f'SELECT id FROM work_items ORDER BY claimed_at, id LIMIT 1')[0][0]
    check_eq(int(first), high, 'row claimed first')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
