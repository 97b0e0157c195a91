#!/usr/bin/env python3
"""When the supervisor dies (SIGKILL), its workers and their handlers die with it; the rows
they held come back after their lease and a new supervisor runs them to done."""

import signal
import time

import harness
from harness import check, check_eq, proc_stat, wait_for


def _identity(pid):
    """(pid, start ticks) of a live process, so a recycled pid is not mistaken for it."""
    st = proc_stat(pid)
    check(st is not None and st['state'] not in ('Z', 'X'), f'process {pid} is not running')
    return (pid, st['start'])


def _alive(ident):
    """True while the process is there and not a zombie. A zombie has exited: once its parent
    is gone it is init's to reap, so "gone" and "zombie" both count as dead."""
    pid, start = ident
    st = proc_stat(pid)
    return st is not None and st['start'] == start and st['state'] not in ('Z', 'X')


def it_workers_and_handlers_die_with_the_supervisor(t):
    db = t.database()
    ids = db.insert_items(2)
    # First attempt: log the pid of a sleeping child and wait for it; later attempts: succeed.
    h = t.log_handler('if [ "$CLAIMD_ATTEMPT" = 1 ]; then spawn_logged sleep 60; fi')
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, '--lease', '2s')

    st = c.wait_status(lambda s: len(s['workers']) == 2 and
                       all(w['state'] == 'busy' and w['item'] for w in s['workers']),
                       15, 'both workers busy with an item')
    check_eq(sorted(w['item'] for w in st['workers']), ids, 'items the two workers are busy with')
    wait_for(lambda: h.events('child'), 5, 'both handlers sleeping', until=lambda e: len(e) == 2)
    workers = {w['pid']: _identity(w['pid']) for w in st['workers']}
    handlers = {pid: _identity(pid) for pid in h.pids()}
    check_eq(len(handlers), 4, f'handler pids logged (2 handlers + 2 sleeping children): {h.events()}')
    for pid, ident in handlers.items():
        check(proc_stat(pid)['pgrp'] != c.pid, f'handler process {pid} is in claimd\'s process group')

    c.send(signal.SIGKILL)
    t_kill = time.monotonic()
    check_eq(c.wait_exit(5), -signal.SIGKILL, 'supervisor exit status')

    def survivors():
        # The logged pids, and anything else still running in claimd's session (it was started
        # as a session leader; workers, handlers and whatever they start stay in that session).
        known = [p for p, ident in list(workers.items()) + list(handlers.items()) if _alive(ident)]
        return sorted(set(known) | set(c.group_processes()))
    try:
        wait_for(survivors, 2.0, 'workers and handlers to die', until=lambda p: not p)
    except harness.WaitTimeout:
        left = survivors()
        harness.fail(f'{time.monotonic() - t_kill:.1f}s after the supervisor was SIGKILLed these still run: '
                     f'{harness.describe_pids(left)} (workers {sorted(workers)}, handler processes '
                     f'{sorted(handlers)})')

    # Nobody renews the leases any more: their expiry is final. The rows stay claimed until then.
    rows = db.sql('SELECT id, state, attempts, visible_at FROM work_items ORDER BY id')
    check_eq([(r[0], r[1], r[2]) for r in rows], [(str(i), 'claimed', '1') for i in ids],
             'rows (id, state, attempts) after the pool died')
    expiry = {int(r[0]): r[3] for r in rows}

    c2 = t.claimd(db, '--workers', '2', '--handler', h.spec, '--lease', '2s')
    wait_for(db.states, 15, 'both rows done by the new supervisor', until=lambda s: s['done'] == 2)
    for i in ids:
        runs = [e.attempt for e in h.starts(i)]
        check_eq(runs, [1, 2], f'attempts row {i} was started with')
        state, attempts, after_lease = db.row(i, f"state, attempts, claimed_at >= '{expiry[i]}'")
        check_eq((state, attempts), ('done', '2'), f'row {i} (state, attempts)')
        check_eq(after_lease, '1', f'row {i} claimed again no earlier than its lease expiry {expiry[i]}')
    check_eq(c2.stop(), 0, 'new supervisor exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
