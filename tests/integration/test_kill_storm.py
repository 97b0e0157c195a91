#!/usr/bin/env python3
"""Kill storms: a worker SIGKILLed after it finished items was killed at work, not crash-looping,
and is replaced at once however short its life; a drain through a SIGKILL every 100 ms of a
random worker that finished rows since it started runs every row to done, none dead, none left
behind, with no back-off; and with real handlers running many items at once per worker (so:,
pipe:), the items a killed worker ran go back without their attempt counted, none runs twice
at once, none is lost."""

import os
import random
import re
import signal
import time

import harness
from harness import check, check_eq, kill_quietly, wait_for, worker_in_slot


def _new_worker(c, slot, old, what):
    def up(st):
        w = worker_in_slot(st, slot) or {}
        return w.get('pid') not in (None, 0, old) and w.get('state') in ('idle', 'busy')
    return worker_in_slot(c.wait_status(up, 10, what), slot)


def it_replaces_at_once_a_worker_killed_after_it_finished_items(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    w = c.wait_ready(workers=1)['workers'][0]
    delays = []
    for i in range(5):
        db.insert_items(20)
        # Its FINISHED has reached the supervisor: the worker has done useful work. (A
        # slot's done counts every worker it had.)
        w = c.wait_status(lambda s: worker_in_slot(s, 0)['done'] >= 20 * (i + 1), 10,
                          f'worker {w["pid"]} to finish 20 rows (round {i + 1})')['workers'][0]
        t_kill = time.monotonic()
        os.kill(w['pid'], signal.SIGKILL)
        w = _new_worker(c, 0, w['pid'], f'a new worker in slot 0 after kill {i + 1}')
        delays.append(time.monotonic() - t_kill)
    shown = ', '.join(f'{d * 1000:.0f} ms' for d in delays)
    t.note(f'kill -> a new worker ready, 5 kills after useful work: {shown}')
    # Backed off, the third restart alone would wait >= 500 ms more than the first.
    check(max(delays) < 1.5, f'a worker killed after useful work was backed off: {shown}')
    check(not re.search(r'keeps dying', c.log()), 'a worker killed at work was taken for a crash loop')
    check_eq(db.states(), {'ready': 0, 'claimed': 0, 'done': 100, 'dead': 0}, 'rows by state')
    check_eq(c.stop(), 0, 'claimd exit code')


def _storm(t, db, c, n, every=0.1, timeout=120):
    """SIGKILL a random worker that finished rows since it was first seen, every `every`
    seconds, until no row is ready or claimed; then wait for all n done. Returns the kills."""
    rnd = random.Random(13)
    kills, first_done = 0, {}
    # Asked from the start (slow to start under a sanitizer on a busy machine).
    wait_for(lambda: os.path.exists(c.control), 30, f'{c.name}: its control socket')
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = db.states()
        if s['ready'] == 0 and s['claimed'] == 0:
            break
        # Only a worker that finished rows since it was first seen: one killed before it
        # did anything may rightly count towards a crash loop.
        ws = [w for w in c.status()['workers'] if w.get('pid')]
        for w in ws:
            first_done.setdefault(w['pid'], w['done'])
        worked = [w['pid'] for w in ws if w['done'] > first_done[w['pid']]]
        if worked:
            kill_quietly(rnd.choice(worked))
            kills += 1
        time.sleep(every)
    seen = len(first_done)
    t.note(f'{n} rows through {kills} worker SIGKILLs ({seen} workers seen)')
    check(kills >= 5, f'only {kills} kills before the drain ended: the storm tested nothing')
    wait_for(db.states, 60, f'all {n} rows done after the storm',
             until=lambda s: s['done'] == n)
    check_eq(db.states(), {'ready': 0, 'claimed': 0, 'done': n, 'dead': 0}, 'rows by state')
    return kills


def it_drains_through_a_worker_sigkill_every_100_ms_losing_nothing(t):
    db = t.database()
    n = 60000
    db.insert_items(n)
    c = t.claimd(db, '--workers', '2', '--handler', 'noop')
    _storm(t, db, c, n)
    check(not re.search(r'keeps dying', c.log()),
          'workers killed at work were backed off as a crash loop')
    c.wait_ready(workers=2)
    check_eq(c.stop(), 0, 'claimd exit code')


def it_so_items_8_at_once_through_a_kill_storm_go_back_unblamed(t):
    db = t.database()
    n = 4000
    db.insert_items(n, payload="'sleep:10'")
    h, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '2', '--concurrency', '8', '--handler', spec)
    kills = _storm(t, db, c, n, every=0.15)
    runs = harness.runs_of(h)
    check_eq(len(runs), n, 'rows that ran')
    harness.check_runs_apart(runs)
    again = sum(len(r) > 1 for r in runs.values())
    t.note(f'{again} rows ran more than once (cut short by {kills} kills, or finished and not '
           f'yet written)')
    check(again > 0, 'no row was cut short: the kills missed the items in flight')
    # A kill is not the items' fault: the attempts they were killed in are given back.
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1', 'most attempts of a row')
    c.wait_ready(workers=2)
    check_eq(c.stop(), 0, 'claimd exit code')


def it_pipe_items_8_at_once_through_a_kill_storm_go_back_unblamed(t):
    db = t.database()
    n = 3000
    db.insert_items(n, payload="'sleep:10'")
    h, spec = t.pipe_sleeper()
    c = t.claimd(db, '--workers', '2', '--concurrency', '8', '--handler', spec)
    c.wait_ready(workers=2)
    kills = _storm(t, db, c, n, every=0.25)
    runs = harness.runs_of(h)
    check_eq(len(runs), n, 'rows that ran')
    harness.check_runs_apart(runs)
    again = sum(len(r) > 1 for r in runs.values())
    t.note(f'{again} rows ran more than once (cut short by {kills} kills, or finished and not '
           f'yet written)')
    check(again > 0, 'no row was cut short: the kills missed the items in flight')
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1', 'most attempts of a row')
    c.wait_ready(workers=2)
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
