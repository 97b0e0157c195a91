#!/usr/bin/env python3
"""A worker killed with SIGKILL is replaced in its slot and the row it held runs again; one killed
while it starts handlers takes neither its supervisor nor its siblings with it."""

import os
import signal
import time

import harness
from harness import check, check_eq, pid_running, wait_for, worker_in_slot, worker_with_item


def _slow_once_handler(t):
    """Sleeps (in a logged child) on the first run of the row with payload 'slow' only;
    every other run returns at once."""
    marker = os.path.join(t.tmpdir, 'slow-ran')
    return t.log_handler(
        f'if [ "$payload" = slow ] && [ ! -e {marker} ]; then touch {marker}; spawn_logged sleep 60; fi')


def _kill_busy_worker(c, h, slow):
    """Wait until a worker is busy with row `slow`, SIGKILL it; return (worker, kill time)."""
    st = c.wait_status(lambda s: (worker_with_item(s, slow) or {}).get('state') == 'busy',
                       15, f'a worker busy with row {slow}')
    w = worker_with_item(st, slow)
    wait_for(lambda: h.events('child', slow), 5, f'the handler of row {slow} to start its sleep')
    t_kill = time.time()
    os.kill(w['pid'], signal.SIGKILL)
    return w, t_kill


def it_kill9_busy_worker_is_replaced_and_its_row_reruns(t):
    db = t.database()
    slow = db.insert_item('slow')
    others = db.insert_items(5)
    h = _slow_once_handler(t)
    c = t.claimd(db, '--workers', '2', '--handler', h.spec)

    w, t_kill = _kill_busy_worker(c, h, slow)

    st = c.wait_status(lambda s: worker_in_slot(s, w['slot'])['pid'] not in (None, w['pid']),
                       10, f'a new worker pid in slot {w["slot"]}')
    new = worker_in_slot(st, w['slot'])
    check_eq(new['restarts'], w['restarts'] + 1, f'restarts of slot {w["slot"]} ({new})')
    check(pid_running(new['pid']), f'new worker {new} is not running')
    wait_for(lambda: not pid_running(w['pid']), 5, f'killed worker {w["pid"]} to be gone (reaped)')

    starts = wait_for(lambda: h.starts(slow), 10, f'row {slow} to start again',
                      until=lambda s: len(s) >= 2)
    delay = starts[1].time - t_kill
    check(delay <= 2.0, f'row {slow} started again {delay:.2f}s after its worker was killed (want <= 2 s)')

    wait_for(db.states, 15, 'all rows done', until=lambda s: s['done'] == 1 + len(others))
    check_eq(len(h.starts(slow)), 2, f'runs of row {slow}')
    check_eq(sorted(e.id for e in h.ends()), sorted([slow] + others), 'rows whose handler completed')
    c.wait_ready(workers=2)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_kill9_busy_worker_does_not_leave_its_handler_running(t):
    """The killed worker's handler must not run on next to the re-run of its row."""
    db = t.database()
    slow = db.insert_item('slow')
    h = _slow_once_handler(t)
    c = t.claimd(db, '--workers', '2', '--handler', h.spec)

    w, t_kill = _kill_busy_worker(c, h, slow)
    orphans = [h.starts(slow)[0].pid, h.events('child', slow)[0].pid]
    try:
        wait_for(lambda: [p for p in orphans if pid_running(p)], 5,
                 'the killed worker\'s handler processes to be gone', until=lambda p: not p)
    except harness.WaitTimeout:
        harness.fail(f'5 s after worker {w["pid"]} was SIGKILLed its handler is still running: '
                     f'{harness.describe_pids([p for p in orphans if pid_running(p)])}; '
                     f'row {slow} started {len(h.starts(slow))} times meanwhile')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def _cmdline(pid):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
    except OSError:
        return ''


def it_a_worker_killed_while_it_starts_handlers_takes_no_one_else_down(t):
    """Workers SIGKILLed again and again while they start exec: handlers as fast as they can
    (each run is /bin/true): a handler's guard orphaned before it had a process group of its
    own was still in its worker's group, the supervisor's, and killed that whole group. The
    supervisor must live through it, and its workers go on."""
    db = t.database()
    db.insert_items(100000)   # more than the storm gets through: the workers never idle
    c = t.claimd(db, '--workers', '2', '--concurrency', '8', '--handler', 'exec:/bin/true')
    c.wait_ready(workers=2)
    seen = {}

    def workers():
        # Read from /proc, not asked of the supervisor (slow while it reaps and spawns).
        return [p for p in harness.pids_where(lambda st: st['session'] == c.pid and
                                               st['pgrp'] == c.pid)
                if p != c.pid and _cmdline(p).startswith('claimd: worker')]
    kills = 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        check(c.running(), f'the supervisor died after {kills} worker kills: {c.log_tail(3)}')
        now = time.monotonic()
        for pid in workers():
            # Once it has run for a while (it is at work: killing a worker before it did
            # anything looks like a crash loop, rightly backed off).
            if now - seen.setdefault(pid, now) >= 0.15:
                harness.kill_quietly(pid)
                kills += 1
        time.sleep(0.01)
    t.note(f'{kills} workers killed while starting handlers')
    check(kills >= 30, f'only {kills} kills: the storm tested little')
    done = int(db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'done'"))
    c.wait_ready(workers=2, timeout=30)
    wait_for(lambda: int(db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'done'")), 30,
             'rows still done after the storm', until=lambda d: d > done + 100)
    check(c.running(), f'the supervisor died: {c.log_tail(3)}')
    check_eq(c.stop(), 0, 'claimd exit code')

if __name__ == '__main__':
    harness.main()
