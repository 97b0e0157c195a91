#!/usr/bin/env python3
"""A worker that stops answering pings is marked unresponsive, killed, replaced, and its row
runs again."""

import os
import signal
import time

import harness
from harness import check, check_eq, pid_running, proc_stat, wait_for, worker_in_slot, worker_with_item


def it_stopped_worker_is_unresponsive_then_killed_replaced_and_its_row_reruns(t):
    db = t.database()
    slow = db.insert_item('slow')
    others = db.insert_items(3)
    marker = os.path.join(t.tmpdir, 'slow-ran')
    h = t.log_handler(
        f'if [ "$payload" = slow ] && [ ! -e {marker} ]; then touch {marker}; spawn_logged sleep 60; fi')
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, '--hang-timeout', '2s', '--heartbeat', '200ms')

    st = c.wait_status(lambda s: (worker_with_item(s, slow) or {}).get('state') == 'busy',
                       15, f'a worker busy with row {slow}')
    w = worker_with_item(st, slow)
    slot, pid = w['slot'], w['pid']
    wait_for(lambda: h.events('child', slow), 5, f'the handler of row {slow} to start its sleep')

    def unstop():
        # If the test failed before claimd killed it: wake and kill it (only if it is still
        # claimd's, i.e. in claimd's session).
        stat = proc_stat(pid)
        if stat and stat['session'] == c.pid:
            harness.kill_quietly(pid, signal.SIGCONT)
            harness.kill_quietly(pid, signal.SIGKILL)
    t.defer(unstop)
    t_stop = time.monotonic()
    os.kill(pid, signal.SIGSTOP)

    seen = []

    def slot_state():
        s = c.status()
        x = worker_in_slot(s, slot)
        if x and (not seen or seen[-1] != (x['pid'], x['state'])):
            seen.append((x['pid'], x['state']))
        return x

    try:
        new = wait_for(slot_state, 15, f'slot {slot} to get a new worker',
                       until=lambda x: x and x['pid'] not in (None, pid))
    except harness.WaitTimeout as e:
        harness.fail(f'{e}; (pid, state) of slot {slot} seen since SIGSTOP: {seen}')
    replaced_after = time.monotonic() - t_stop
    t.note(f'slot {slot} after SIGSTOP of {pid}: {seen}; replaced after {replaced_after:.1f}s')
    check((pid, 'unresponsive') in seen,
          f'status never showed worker {pid} unresponsive (saw {seen})')
    check(replaced_after <= 8.0,
          f'stopped worker replaced only {replaced_after:.1f}s after SIGSTOP '
          f'(--hang-timeout 2s, --heartbeat 200ms, kill-grace 2s)')
    wait_for(lambda: not pid_running(pid), 5, f'stopped worker {pid} to be gone')
    check_eq(new['restarts'], w['restarts'] + 1, f'restarts of slot {slot} ({new})')

    starts = wait_for(lambda: h.starts(slow), 10, f'row {slow} to run again', until=lambda s: len(s) >= 2)
    check(starts[1].pid != starts[0].pid, 'the re-run is a new handler process')
    wait_for(db.states, 15, 'all rows done', until=lambda s: s['done'] == 1 + len(others))
    check_eq(sorted(e.id for e in h.ends()), sorted([slow] + others), 'rows whose handler completed')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
