#!/usr/bin/env python3
"""A worker that keeps dying soon after it starts is restarted with a growing delay."""

import datetime
import os
import re
import signal
import time

import harness
from harness import check, check_eq, wait_for, worker_in_slot

KILLS = 5


def _started_at(c, pid):
    """Wall-clock time (epoch s) of the log line `worker slot=0 pid=PID started`."""
    pat = re.compile(r'^(\S+)Z claimd\[sup\] pid=\d+ \w+: worker slot=0 pid=%d started$' % pid, re.M)
    m = wait_for(lambda: pat.search(c.log()), 5, f'the log line "worker slot=0 pid={pid} started"')
    ts = datetime.datetime.strptime(m.group(1), '%Y-%m-%dT%H:%M:%S.%f')
    return ts.replace(tzinfo=datetime.timezone.utc).timestamp()


def it_backs_off_a_worker_that_keeps_dying(t):
    db = t.database()
    h = t.log_handler('spawn_logged sleep 60')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec)
    pid = c.wait_ready(workers=1)['workers'][0]['pid']

    delays = []
    for i in range(KILLS):
        t_kill = time.time()
        os.kill(pid, signal.SIGKILL)
        st = c.wait_status(lambda s: worker_in_slot(s, 0)['pid'] not in (None, 0, pid), 40,
                           f'a new worker in slot 0 after kill {i + 1} of pid {pid}')
        pid = worker_in_slot(st, 0)['pid']
        delays.append(_started_at(c, pid) - t_kill)

    shown = ', '.join(f'{d * 1000:.0f} ms' for d in delays)
    t.note(f'delays from a kill to the next start: {shown}')
    check(delays[0] < 0.5, f'first restart took {delays[0] * 1000:.0f} ms, want immediate (< 500 ms); '
          f'delays kill -> next start: {shown}')
    check(delays[-1] >= 2 * delays[1], f'restart delays did not grow: last {delays[-1] * 1000:.0f} ms < '
          f'2 x second {delays[1] * 1000:.0f} ms; delays kill -> next start: {shown}')
    check(re.search(r'worker slot=0 keeps dying', c.log()),
          f'no "worker slot=0 keeps dying" in the log; delays: {shown}')
    st = c.wait_ready(workers=1)
    check_eq(worker_in_slot(st, 0)['restarts'], KILLS, 'restarts of slot 0 in status')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    check_eq(h.events(), [], 'handler runs (the queue was empty)')


if __name__ == '__main__':
    harness.main()
