#!/usr/bin/env python3
"""A handler running past --timeout is killed and the run counts as a failed attempt."""

import re

import harness
from harness import check, check_eq, describe_pids, pid_running, wait_for


def _gone(t, pids, within, what):
    try:
        wait_for(lambda: [p for p in pids if pid_running(p)], within, what, until=lambda p: not p)
    except harness.WaitTimeout:
        harness.fail(f'{what}: still running after {within:g}s: '
                     f'{describe_pids([p for p in pids if pid_running(p)])}')


def it_handler_past_timeout_is_killed_and_counts_as_failure(t):
    db = t.database()
    item = db.insert_item('sleepy', max_attempts=2)
    h = t.log_handler('exec sleep 60')   # the logged pid is the sleep itself
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--timeout', '1s', '--retry-base', '100ms')

    first = wait_for(lambda: h.starts(item), 10, 'first run')[0]
    _gone(t, [first.pid], 1.0 + 2.0 + 2.0, f'first handler (pid {first.pid}) killed after the 1 s timeout')

    wait_for(lambda: db.row(item, 'state'), 15, f'row {item} dead', until=lambda r: r == ('dead',))
    state, attempts, last_error = db.row(item)
    check_eq((state, attempts), ('dead', '2'), 'state, attempts after two timeouts')
    check(last_error and re.search(r'time', last_error, re.I),
          f'last_error {last_error!r} does not mention the timeout')
    starts = h.starts(item)
    check_eq(len(starts), 2, 'runs')
    check(starts[1].time - starts[0].time >= 0.95, f'second run began {starts[1].time - starts[0].time:.2f}s '
          'after the first, before the 1 s timeout could have hit')
    check_eq(h.ends(), [], 'runs that ended on their own')
    _gone(t, [e.pid for e in starts], 5.0, 'timed-out handlers')
    st = c.wait_status(lambda s: s['workers'][0]['failed'] == 2, 5, 'status: 2 failures')
    check_eq(st['workers'][0]['restarts'], 0, 'worker restarts (a handler timeout is not a worker crash)')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_timeout_kills_a_handler_that_ignores_sigterm(t):
    db = t.database()
    item = db.insert_item('stubborn', max_attempts=1)
    h = t.log_handler('trap "" TERM; exec sleep 60')  # the ignored SIGTERM stays ignored across exec
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--timeout', '1s', '--kill-grace', '500ms')
    first = wait_for(lambda: h.starts(item), 10, 'the run')[0]
    _gone(t, [first.pid], 1.0 + 0.5 + 2.0, 'handler ignoring SIGTERM, after timeout 1s + kill-grace 500ms')
    wait_for(lambda: db.row(item, 'state, attempts'), 5, f'row {item} dead', until=lambda r: r == ('dead', '1'))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_timeout_kills_the_handlers_children_too(t):
    db = t.database()
    item = db.insert_item('forks', max_attempts=1)
    h = t.log_handler('spawn_logged sleep 60')   # bash waits for a child sleep
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--timeout', '1s')
    child = wait_for(lambda: h.events('child', item), 10, 'the child to start')[0]
    parent = h.starts(item)[0]
    wait_for(lambda: db.row(item, 'state'), 10, f'row {item} dead', until=lambda r: r == ('dead',))
    _gone(t, [parent.pid, child.pid], 3.0, 'handler and the child it started, after the timeout')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
