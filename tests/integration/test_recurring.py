#!/usr/bin/env python3
"""Recurring rows (period_s), delayed rows (run_at) and a row's own time limit (timeout_s),
with two supervisors sharing one database."""

import collections

import harness
from harness import check, check_eq, wait_for

def _two(t, db, spec, *args):
    return [t.claimd(db, '--workers', '2', '--handler', spec, *args, name=f'claimd{i}')
            for i in (1, 2)]


def it_recurring_rows_cycle_fairly_over_500_items_on_two_supervisors(t):
    """Recurring rows of period 0 are claimed least recently finished first: over three
    rounds of 500 rows, the rows' counts of runs differ by at most 2. A worker held up by a
    loaded machine keeps its rows from cycling meanwhile, so each run takes 8 ms (4 workers:
    about a second a round) and a stall costs less than a round; with instant runs a round
    took 0.15 s and CI's load once gave a spread of 3."""
    db = t.database()
    ids = db.insert_items(500, payload="'sleep:8'", period_s=0)
    h, spec = t.pipe_sleeper('recurring')
    sups = _two(t, db, spec, '--batch', '16')
    wait_for(lambda: len(h.starts()), 60, '1,500 runs', until=lambda n: n >= 1500)
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    runs = collections.Counter(e.id for e in h.starts())
    check_eq(set(runs), set(ids), 'rows that ran')
    low, high = min(runs.values()), max(runs.values())
    check(high - low <= 2, f'runs per row range from {low} to {high}: not cycled fairly '
          f'(rows per count: {sorted(collections.Counter(runs.values()).items())})')
    check_eq(db.states()['done'], 0, 'recurring rows marked done')
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items WHERE state = "ready"'), '0',
             'attempts of ready recurring rows (reset after each success)')
    check_eq(len({e.pid for e in h.starts()}), 4, 'co-processes that ran items (2 per supervisor)')


def it_recurring_row_waits_its_period_between_runs(t):
    db = t.database()
    ids = db.insert_items(3, period_s=1)
    h, spec = t.pipe_echo('period')
    sups = _two(t, db, spec, '--poll-interval', '50ms')
    wait_for(lambda: min(len(h.starts(i)) for i in ids), 15, '3 runs of each row',
             until=lambda n: n >= 3)
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    for i in ids:
        times = [e.time for e in h.starts(i)]
        gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
        check(all(g >= 0.99 for g in gaps), f'row {i} ran again before its 1 s period: {gaps}')
        check(all(g <= 1.6 for g in gaps), f'row {i} waited far longer than its period: {gaps}')


def it_delayed_rows_do_not_start_early(t):
    db = t.database()
    soon = db.insert_items(5, run_at='NOW(6) + INTERVAL 1500000 MICROSECOND')
    later = db.insert_items(5, run_at='NOW(6) + INTERVAL 3 SECOND')
    now = db.insert_items(5)
    h, spec = t.pipe_echo('delayed')
    sups = _two(t, db, spec, '--poll-interval', '50ms')
    wait_for(db.states, 15, 'all rows done', until=lambda s: s['done'] == 15)
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    rows = db.sql('SELECT id, TIMESTAMPDIFF(MICROSECOND, run_at, claimed_at) FROM work_items')
    late = {int(i): int(us) / 1e6 for i, us in rows}
    for i in soon + later + now:
        check(late[i] >= 0, f'row {i} claimed {-late[i]:.3f} s before its run_at')
        # The rows due at once were added before claimd started: their wait holds its
        # start, each worker's first co-process and the fifth row's wait for a first end
        # (CI's loaded runs: up to 1.25 s); the delayed ones come due to a running pool.
        limit = 5.0 if i in now else 1.0
        check(late[i] < limit, f'row {i} claimed {late[i]:.3f} s after its run_at')
    check_eq(collections.Counter(e.id for e in h.starts()), collections.Counter(soon + later + now),
             'runs per row')


def it_row_timeout_overrides_the_default(t):
    db = t.database()
    quick = db.insert_item('sleepy', timeout_s=1, max_attempts=1)
    h = t.log_handler('echo "deadline $CLAIMD_ITEM_ID $CLAIMD_DEADLINE_MS" >> "$log"; exec sleep 60')
    sups = _two(t, db, h.spec, '--timeout', '300s')
    wait_for(lambda: db.row(quick, 'state'), 10, f'row {quick} dead after its own 1 s limit',
             until=lambda r: r == ('dead',))
    elapsed = float(db.scalar(f'SELECT TIMESTAMPDIFF(MICROSECOND, claimed_at, finished_at) / 1e6 '
                              f'FROM work_items WHERE id = {quick}'))
    check(0.9 <= elapsed <= 4.5, f'row {quick} ran {elapsed:.2f} s, want about 1 s (+ kill grace)')
    _, _, last_error = db.row(quick)
    check(last_error and 'time' in last_error.lower(), f'last_error {last_error!r}')
    with open(h.log_path) as f:
        told = [line.split() for line in f if line.startswith('deadline ')]
    check(told and 0 < int(told[0][2]) <= 1000, f'deadline the handler was told: {told}')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
