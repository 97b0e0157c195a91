#!/usr/bin/env python3
"""Workers come from a fork server the supervisor starts; they are the supervisor's children.
A dead fork server is replaced when a worker must start, and the supervisor reaps what a dead
worker's handler leaves behind."""

import os
import signal
import time

import harness
from harness import check, check_eq, proc_stat, wait_for, worker_in_slot


def _children(pid, comm=None):
    """Pids whose parent is pid (zombies included), optionally only those named comm."""
    out = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            st = proc_stat(int(name))
            if st and st['ppid'] == pid and (comm is None or st['comm'] == comm):
                out.append(int(name))
    return sorted(out)


def _cmdline(pid):
    with open(f'/proc/{pid}/cmdline', 'rb') as f:
        return f.read().rstrip(b'\0').decode()


def _fork_server(c):
    servers = wait_for(lambda: _children(c.pid, 'claimd-fork'), 5, 'the fork server',
                       until=lambda p: len(p) == 1)
    return servers[0]


def it_workers_are_children_of_the_supervisor_not_of_the_fork_server(t):
    db = t.database()
    c = t.claimd(db, '--workers', '3', '--handler', 'noop')
    st = c.wait_ready(workers=3)
    fork = _fork_server(c)
    check_eq(st['fork_server_pid'], fork, 'fork_server_pid in claimctl status --json')
    check('; fork server %d\n' % fork in c.ctl('status').stdout, 'the fork server in claimctl status')
    for w in st['workers']:
        ps = proc_stat(w['pid'])
        check_eq((ps['ppid'], ps['comm']), (c.pid, 'claimd'), f'parent and name of worker {w}')
        check_eq(_cmdline(w['pid']), f'claimd: worker {w["slot"]} of supervisor {c.pid}',
                 'what ps shows for a worker')
    check_eq(_cmdline(fork), f'claimd: fork server of supervisor {c.pid}',
             'what ps shows for the fork server')
    check_eq(_children(fork), [], 'children the fork server keeps')
    ids = db.insert_items(50)
    wait_for(db.states, 15, 'all rows done', until=lambda s: s.get('done') == len(ids))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    check_eq(c.group_processes(), [], 'processes left in claimd\'s session after it stopped')


def it_a_killed_fork_server_is_replaced_when_a_worker_must_start(t):
    db = t.database()
    c = t.claimd(db, '--workers', '2', '--handler', 'noop')
    st = c.wait_ready(workers=2)
    fork = _fork_server(c)
    os.kill(fork, signal.SIGKILL)
    wait_for(lambda: proc_stat(fork), 5, f'the killed fork server {fork} to be reaped',
             until=lambda s: s is None)
    check('fork server pid=%d exited (killed by signal 9' % fork in c.log(),
          f'the supervisor logs the fork server\'s death: {c.log_tail(5)}')
    check_eq(c.status()['fork_server_pid'], None, 'fork_server_pid in status once it is gone')

    # The workers it started go on serving.
    ids = db.insert_items(20)
    wait_for(db.states, 15, 'rows done without a fork server', until=lambda s: s.get('done') == 20)

    # A worker that must be replaced gets a new fork server.
    old = worker_in_slot(st, 0)
    os.kill(old['pid'], signal.SIGKILL)
    st = c.wait_status(lambda s: worker_in_slot(s, 0)['pid'] not in (None, old['pid'])
                       and worker_in_slot(s, 0)['state'] in ('idle', 'busy'),
                       10, 'a new worker in slot 0')
    new = worker_in_slot(st, 0)
    check_eq(proc_stat(new['pid'])['ppid'], c.pid, f'parent of the new worker {new}')
    check(_fork_server(c) != fork, 'a new fork server runs')
    check_eq(c.status()['fork_server_pid'], _fork_server(c), 'fork_server_pid in status')
    ids += db.insert_items(20)
    wait_for(db.states, 15, 'all rows done', until=lambda s: s.get('done') == len(ids))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    check_eq(c.group_processes(), [], 'processes left in claimd\'s session after it stopped')


def it_a_hung_fork_server_is_killed_and_replaced(t):
    """A fork server that does not answer within 5 s is killed; the worker it was asked for
    comes from a new one on the next try, 3 s later; meanwhile the supervisor answers."""
    db = t.database()
    c = t.claimd(db, '--workers', '2', '--handler', 'noop')
    st = c.wait_ready(workers=2)
    fork = _fork_server(c)
    os.kill(fork, signal.SIGSTOP)
    old = worker_in_slot(st, 1)
    os.kill(old['pid'], signal.SIGKILL)
    # Asking it does not block the loop: while it does not answer, the supervisor does
    # (claimctl status within a second) and shows the slot waiting for its process.
    st = c.wait_status(lambda s: worker_in_slot(s, 1)['state'] == 'forking', 4,
                       'slot 1 waiting for the fork server')
    t0 = time.monotonic()
    c.status()
    check(time.monotonic() - t0 < 1, f'claimctl status took {time.monotonic() - t0:.1f} s '
          'while the fork server hangs')
    check(proc_stat(fork) is not None, 'the fork server is still waited for (5 s)')
    wait_for(lambda: proc_stat(fork), 10, f'the stopped fork server {fork} to be killed and reaped',
             until=lambda s: s is None)
    check('cannot start worker slot=1: Connection timed out' in c.log(),
          f'the supervisor says why the worker did not start: {c.log_tail(5)}')
    t_failed = time.monotonic()
    st = c.wait_status(lambda s: worker_in_slot(s, 1)['pid'] not in (None, old['pid'])
                       and worker_in_slot(s, 1)['state'] in ('idle', 'busy'),
                       15, 'a new worker in slot 1')
    waited = time.monotonic() - t_failed
    check(2.5 <= waited <= 6, f'the next try came {waited:.1f} s after the failure (want 3 s)')
    check(_fork_server(c) != fork, 'a new fork server runs')
    ids = db.insert_items(20)
    wait_for(db.states, 15, 'all rows done', until=lambda s: s.get('done') == len(ids))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_reaps_the_orphans_of_a_killed_worker(t):
    """The handler's processes of a SIGKILLed worker become the supervisor's children (it is a
    subreaper, for the workers' sake): it must wait for them, or they stay zombies."""
    db = t.database()
    slow = db.insert_item('slow')
    # Its first run sleeps (the worker killed meanwhile gives its attempt back: the rerun is
    # attempt 1 again, and must not sleep).
    marker = os.path.join(t.tmpdir, 'slept')
    h = t.log_handler(f'if [ ! -e {marker} ]; then touch {marker}; spawn_logged sleep 60; fi')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--verbose')
    st = c.wait_status(lambda s: worker_in_slot(s, 0).get('item') == slow, 15,
                       f'the worker busy with row {slow}')
    wait_for(lambda: h.events('child', slow), 5, 'the handler to start its sleep')
    orphans = h.pids()
    os.kill(worker_in_slot(st, 0)['pid'], signal.SIGKILL)
    wait_for(lambda: [p for p in orphans if proc_stat(p)], 5,
             f'the handler\'s processes {orphans} to be gone and reaped', until=lambda p: not p)
    check_eq([p for p in _children(c.pid) if proc_stat(p)['state'] == 'Z'], [],
             'zombie children of the supervisor')
    check('an orphan of a worker' in c.log(), 'the supervisor logs reaping an orphan (the guard '
          f'of the killed worker\'s handler): {c.log_tail(8)}')
    wait_for(db.states, 15, 'the row done on its second run', until=lambda s: s.get('done') == 1)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
