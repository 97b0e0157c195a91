#!/usr/bin/env python3
"""A failing handler is retried with growing back-off, then the row is dead with the tail of
the handler's stderr as last_error."""

import os
import re

import harness
from harness import check, check_eq, wait_for


def it_failing_row_backs_off_then_goes_dead_with_stderr_tail(t):
    db = t.database()
    item = db.insert_item('doomed', max_attempts=3)
    h = t.log_handler('echo "some noise on stderr" >&2\n'
                      'echo "boom: item $CLAIMD_ITEM_ID attempt $CLAIMD_ATTEMPT failed" >&2\n'
                      'rc=1')
    # back-off = base * 2^(attempt-1) +-25%: with base 500ms the gaps are 375-625 ms then
    # 750-1250 ms, so they grow whatever the jitter (a 200 ms base plus up to one poll interval
    # of claim latency could not guarantee that).
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, '--retry-base', '500ms', '--poll-interval', '50ms')

    wait_for(lambda: db.row(item, 'state'), 20, f'row {item} dead', until=lambda r: r == ('dead',))
    state, attempts, last_error = db.row(item)
    check_eq((state, attempts), ('dead', '3'), 'state, attempts')
    check(last_error and f'boom: item {item} attempt 3 failed' in last_error,
          f'last_error {last_error!r} lacks the last stderr line of attempt 3')

    st = c.wait_status(lambda s: s['counts'].get('default', {}).get('dead') == 1
                       and sum(w['failed'] for w in s['workers']) == 3, 10, 'status: 1 dead, 3 failed')
    check_eq(st['counts']['default'].get('ready', 0), 0, 'status ready count')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')

    starts = h.starts(item)
    check_eq([e.attempt for e in starts], [1, 2, 3], 'CLAIMD_ATTEMPT of each run (no run after dead)')
    gaps = [b.time - a.time for a, b in zip(starts, starts[1:])]
    t.note(f'gaps between attempts: {[round(g, 3) for g in gaps]}')
    check(gaps[0] >= 0.35, f'first back-off {gaps[0]:.3f}s, want >= 375 ms (500ms - 25%)')
    check(gaps[1] >= 0.7, f'second back-off {gaps[1]:.3f}s, want >= 750 ms (2 x 500ms - 25%)')
    check(gaps[1] > gaps[0], f'back-off did not grow: {gaps}')


def it_row_that_fails_once_succeeds_on_retry(t):
    db = t.database()
    item = db.insert_item('flaky', max_attempts=3)
    marker = os.path.join(t.tmpdir, 'failed-once')
    h = t.log_handler(f'if [ ! -e {marker} ]; then touch {marker}; echo "transient" >&2; rc=1; fi')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--retry-base', '100ms')
    wait_for(lambda: db.row(item, 'state'), 15, f'row {item} done', until=lambda r: r == ('done',))
    check_eq(db.row(item, 'state, attempts'), ('done', '2'), 'state, attempts')
    check_eq([e.attempt for e in h.starts(item)], [1, 2], 'CLAIMD_ATTEMPT of each run')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_logs_a_failure_with_multiline_stderr_as_one_line(t):
    db = t.database()
    item = db.insert_item('x', max_attempts=1)
    h = t.log_handler('printf "line one\\nline two\\n" >&2; rc=1')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec)
    wait_for(lambda: db.row(item, 'state'), 15, f'row {item} dead', until=lambda r: r == ('dead',))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    check('line one' in db.row(item)[2] and 'line two' in db.row(item)[2], f'last_error {db.row(item)[2]!r}')
    lines = c.log().splitlines()
    strays = [ln for ln in lines if not re.search(r'claimd\[[^]]+\] pid=\d+ ', ln)]
    check_eq(strays, [], 'log lines that are not claimd event lines (one line per event)')
    check(any('line two' in ln for ln in lines), 'the failure\'s stderr is not in the log')


def it_claimctl_retry_puts_dead_rows_back(t):
    db = t.database()
    one = db.insert_item('a', max_attempts=1)
    rest = [db.insert_item(p, max_attempts=1) for p in ('b', 'c')]
    other = db.insert_item('d', max_attempts=1, queue="'other'")
    broken = os.path.join(t.tmpdir, 'broken')
    open(broken, 'w').close()
    h = t.log_handler(f'if [ -e {broken} ]; then echo "broken" >&2; rc=1; fi')
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, '--poll-interval', '10s')
    wait_for(db.states, 15, '3 rows dead', until=lambda s: s['dead'] == 3)
    os.unlink(broken)

    r = c.ctl('retry', str(one))
    check_eq((r.returncode, r.stdout.strip()), (0, '1'), 'claimctl retry ID: exit code, rows')
    wait_for(lambda: db.row(one, 'state, attempts'), 5, f'row {one} done on its retry',
             until=lambda r: r == ('done', '1'))
    r = c.ctl('retry', str(one))
    check_eq((r.returncode, f'row {one} is done' in r.stderr), (1, True),
             f'claimctl retry of a row that is not dead: {r.stderr!r}')

    r = c.ctl('retry', '--queue', 'default', '--dead')
    check_eq((r.returncode, r.stdout.strip()), (0, '2'), 'claimctl retry --queue default --dead')
    for item in rest:
        wait_for(lambda: db.row(item, 'state'), 5, f'row {item} done', until=lambda r: r == ('done',))
    check_eq(db.row(other, 'state'), ('ready',), 'row of another queue, never served')
    r = c.ctl('retry', 'nope')
    check(r.returncode != 0 and 'retry' in r.stderr, f'claimctl retry nope: {r.returncode} {r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_counts_each_of_many_failures_at_once_once(t):
    """Items failing many at once (2 workers x --concurrency 10, a pipe: co-process failing
    every item) are written up to 8 to a transaction and reported to the supervisor together:
    every row ends dead after its 2 attempts with the handler's error, and the supervisor
    counts each failure once."""
    db = t.database()
    db.insert_items(60, payload="'fail'", max_attempts=2)
    h, spec = t.pipe_echo('failing')
    c = t.claimd(db, '--workers', '2', '--concurrency', '10', '--handler', spec,
                 '--retry-base', '10ms')
    wait_for(db.states, 30, 'the 60 rows dead', until=lambda s: s['dead'] == 60)
    check_eq(db.sql("SELECT attempts, last_error LIKE '%failing as asked%', COUNT(*) "
                    "FROM work_items GROUP BY 1, 2"), [('2', '1', '60')],
             'attempts, the error, rows')
    st = c.wait_status(lambda s: sum(w['failed'] for w in s['workers']) >= 120, 10,
                       'status: 120 failures')
    check_eq(sum(w['failed'] for w in st['workers']), 120, 'failures the supervisor counted')
    check_eq(len(h.starts()), 120, 'runs (2 of each row)')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
