#!/usr/bin/env python3
"""Claim order across supervisors: priorities (smaller first, then due time, then id) and
FIFO groups (one item of a group at a time, in insertion order; groups in parallel), each
with two supervisors sharing one database, checked from the database and from the
handler's own log."""

import collections
import threading
import time

import harness
from harness import check, check_eq, wait_for

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
    h, spec = t.pipe_echo('priority')
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
    r = c.ctl('add', '--priority', '11', 'x')
    check(r.returncode != 0 and 'priority' in r.stderr, f'claimctl add --priority 11: {r}')
    try:
        db.execute("INSERT INTO work_items (payload, priority) VALUES ('x', -11)")
    except RuntimeError as e:
        check('priority_range' in str(e), f'insert of priority -11 refused for another reason: {e}')
    else:
        check(False, 'a row with priority -11 was inserted')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def _group_runs(h):
    """{group: [(seq, id, start, end)] in start order} from the pipe handler's log."""
    ends = {(e.id, e.attempt): e.time for e in h.ends()}
    runs = collections.defaultdict(list)
    for e in h.starts():
        queue, group, seq = e.rest.split(' ')[:3]
        if group != '-':
            runs[group].append((int(seq), e.id, e.time, ends.get((e.id, e.attempt))))
    for g in runs.values():
        g.sort(key=lambda r: r[2])
    return runs


def _check_serial(runs, what):
    for g, rs in runs.items():
        overlap = [(a[1], b[1]) for a, b in zip(rs, rs[1:]) if a[3] is None or b[2] < a[3]]
        check(not overlap, f'{what}: group {g}: rows ran at the same time: {overlap[:3]}')


def it_group_rows_run_one_at_a_time_in_order_with_8_workers(t):
    db = t.database()
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1)")
    # 20 groups of 15 rows, interleaved in id order; 40 rows without a group.
    db.insert_items(300, payload="'nap'", group_key="CONCAT('g', seq % 20)")
    db.insert_items(40, payload="'nap'")
    h, spec = t.pipe_echo('groups')
    sups = _two(t, db, spec, '--workers', '4', '--batch', '4')
    _ctl(sups[0], 'resume', 'default')
    wait_for(db.states, 90, 'all rows done', until=lambda s: s['done'] == 340)
    _stop(sups)
    runs = _group_runs(h)
    check_eq(sorted(runs), sorted(f'g{i}' for i in range(20)), 'groups that ran')
    for g, rs in runs.items():
        check_eq([r[0] for r in rs], list(range(1, 16)), f'group {g}: sequence numbers in start order')
        check_eq([r[1] for r in rs], sorted(r[1] for r in rs), f'group {g}: ids in start order')
    _check_serial(runs, '8 workers')
    # Different groups ran side by side: the most rows running at one moment.
    edges = sorted([(e.time, 1) for e in h.starts()] + [(e.time, -1) for e in h.ends()])
    running = most = 0
    for _, d in edges:
        running += d
        most = max(most, running)
    t.note(f'most rows running at once: {most} of 8 workers')
    check(most >= 4, f'at most {most} rows ran at once: groups did not run in parallel')
    check_eq(len({e.pid for e in h.starts()}), 8, 'co-processes that ran rows')


def it_rows_inserted_while_their_group_runs_keep_order_and_never_overlap(t):
    # Inserts race the finish of their group's running row: each insert takes the group's
    # lock and sees the running row either still live (it waits) or gone (it runs).
    db = t.database()
    h, spec = t.pipe_echo('race')
    sups = _two(t, db, spec, '--workers', '4', '--poll-interval', '20ms')

    def inserter(k):
        for n in range(40):
            db.execute(f"INSERT INTO work_items (payload, group_key) VALUES ('nap', 'g{(k + n) % 3}')")

    threads = [threading.Thread(target=inserter, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wait_for(db.states, 60, 'all rows done', until=lambda s: s['done'] == 160)
    _stop(sups)
    runs = _group_runs(h)
    for g, rs in runs.items():
        check_eq([r[1] for r in rs], sorted(r[1] for r in rs), f'group {g}: ids in start order')
        check_eq([r[0] for r in rs], list(range(1, len(rs) + 1)), f'group {g}: sequence numbers')
    check_eq(sum(len(rs) for rs in runs.values()), 160, 'runs')
    _check_serial(runs, 'inserts during runs')


def it_failing_row_holds_back_only_its_own_group(t):
    db = t.database()
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1)")
    bad = db.insert_item('fail', group_key="'a'", max_attempts=3)
    after = db.insert_items(3, payload="'nap'", group_key="'a'")
    other = db.insert_items(5, payload="'nap'", group_key="'b'")
    h, spec = t.pipe_echo('hold')
    sups = _two(t, db, spec, '--workers', '2', '--retry-base', '300ms')
    _ctl(sups[0], 'resume', 'default')
    wait_for(db.states, 30, 'all rows finished', until=lambda s: s['done'] + s['dead'] == 9)
    _stop(sups)
    check_eq(db.row(bad, 'state, attempts'), ('dead', '3'), 'the failing row')
    starts = {e.id: e.time for e in h.starts()}
    fails = sorted(e.time for e in h.starts(bad))
    check_eq(len(fails), 3, 'runs of the failing row')
    check(all(starts[i] > fails[-1] for i in after),
          'a row of group a started before the failing row ahead of it went dead')
    check(max(starts[i] for i in other) < fails[-1],
          'group b waited for group a\'s failing row')
    _check_serial(_group_runs(h), 'retries')


def it_claimctl_add_group_and_the_handler_sees_key_and_sequence(t):
    db = t.database()
    h, spec = t.pipe_echo('addgroup')
    c = t.claimd(db, '--workers', '2', '--handler', spec)
    c.wait_ready()
    ids = [int(_ctl(c, 'add', '--group', 'order-42', 'nap')) for _ in range(3)]
    wait_for(db.states, 10, 'rows done', until=lambda s: s['done'] == 3)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    got = [(e.id, e.rest.split(' ')[1], e.rest.split(' ')[2]) for e in
           sorted(h.starts(), key=lambda e: e.time)]
    check_eq(got, [(ids[0], 'order-42', '1'), (ids[1], 'order-42', '2'),
                   (ids[2], 'order-42', '3')], '(id, group, seq) the handler saw, in start order')


def it_group_goes_on_after_its_running_row_is_deleted_by_hand(t):
    db = t.database()
    first = db.insert_item('sleep', group_key="'x'")
    rest = db.insert_items(2, payload="'nap'", group_key="'x'")
    h, spec = t.pipe_echo('heal')
    c = t.claimd(db, '--workers', '2', '--handler', spec, '--maintenance-interval', '1s',
                 '--grace', '200ms', '--kill-grace', '100ms')
    wait_for(lambda: h.starts(first), 10, 'the first row running')
    check_eq(db.sql(f'SELECT COUNT(*) FROM work_items WHERE visible_at IS NULL AND state = "ready"'),
             [('2',)], 'rows parked behind it')
    db.execute(f'DELETE FROM work_items WHERE id = {first}')
    wait_for(db.states, 15, 'the rest of the group done', until=lambda s: s['done'] == 2)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    order = [e.id for e in sorted(h.starts(), key=lambda e: e.time) if e.id != first]
    check_eq(order, rest, 'rows run after the deletion, in order')


def it_group_goes_on_past_waiting_rows_cancelled_or_deleted(t):
    # A finished row's next one is found by its number (group_seq + 1); where that row is
    # gone (cancelled or deleted while it waited), the oldest live row of the group runs.
    # The same behind the last row added, and behind a row whose successor came only after
    # it started.
    db = t.database()
    head = db.insert_item('nap500', group_key="'k'")
    cancelled, deleted, third = db.insert_items(3, payload="'nap'", group_key="'k'")
    lone = db.insert_item('nap500', group_key="'l'")
    h, spec = t.pipe_echo('gaps')
    c = t.claimd(db, '--workers', '2', '--handler', spec)
    wait_for(lambda: h.starts(head) and h.starts(lone), 10, 'the heads of both groups running')
    _ctl(c, 'cancel', str(cancelled))
    db.execute(f'DELETE FROM work_items WHERE id = {deleted}')
    late = db.insert_item('nap', group_key="'l'")   # added while its group's only row runs
    wait_for(db.states, 15, 'both groups done',
             until=lambda s: s['done'] == 4 and s['ready'] == 0 and s['claimed'] == 0)
    gone = db.sql(f'SELECT state FROM work_items WHERE id = {cancelled}')
    check(gone in ([], [('dead',)]), f'the row cancelled while it waited: {gone}')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    order = [e.id for e in sorted(h.starts(), key=lambda e: e.time)]
    check_eq([i for i in order if i in (head, third)], [head, third], 'group k, in order')
    check_eq([i for i in order if i in (lone, late)], [lone, late], 'group l, in order')
    for a, b in ((head, third), (lone, late)):
        check_eq(db.scalar(f'SELECT (SELECT claimed_at FROM work_items WHERE id = {b}) >= '
                           f'(SELECT finished_at FROM work_items WHERE id = {a})'), '1',
                 f'row {b} claimed after row {a} finished')


def it_group_goes_on_when_its_row_crashes_its_worker_on_the_last_attempt(t):
    # The supervisor releases a crashed worker's rows, counting the attempt of the one it ran;
    # on its last attempt that row goes dead, and its group's next row starts in the same
    # transaction.
    t.allow_sanitizer_report('AddressSanitizer: SEGV', 'AddressSanitizer:DEADLYSIGNAL')
    db = t.database()
    head = db.insert_item('crash:300', group_key="'k'", max_attempts=1)
    rest = db.insert_items(2, payload="'nap'", group_key="'k'")
    h, spec = t.plugin('crash')
    c = t.claimd(db, '--workers', '2', '--handler', spec)
    wait_for(db.states, 15, 'the rest of the group done', until=lambda s: s['done'] == 2)
    state, _, err = db.row(head)
    check_eq(state, 'dead', 'the row whose worker crashed (last attempt)')
    check('crashed' in (err or ''), f'its last_error: {err!r}')
    order = [e.id for e in sorted(h.starts(), key=lambda e: e.time) if e.id != head]
    check_eq(order, rest, 'rows of the group run after it, in order')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_group_row_of_a_killed_worker_goes_back_first_in_its_group(t):
    # A worker killed from outside is not the row's fault: it goes back with its attempt given
    # back, keeps its group's turn, runs again, and then the rest of the group in order.
    db = t.database()
    head = db.insert_item('sleep:1500', group_key="'k'", max_attempts=1)
    rest = db.insert_items(2, payload="'nap'", group_key="'k'")
    h, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '2', '--handler', spec)
    st = c.wait_status(lambda s: harness.worker_with_item(s, head), 10, f'row {head} running')
    harness.kill_quietly(harness.worker_with_item(st, head)['pid'])
    wait_for(db.states, 20, 'the whole group done', until=lambda s: s['done'] == 3)
    check_eq(db.row(head, 'state, attempts'), ('done', '1'), f'row {head} (state, attempts)')
    order = [e.id for e in sorted(h.starts(), key=lambda e: e.time)]
    check_eq(order, [head, head] + rest, 'runs of the group, in order')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_retried_dead_row_waits_behind_its_groups_running_row(t):
    db = t.database()
    dead = db.insert_item('nap', group_key="'r'", state="'dead'")
    running = db.insert_item('sleep', group_key="'r'", timeout_s=2, max_attempts=1)
    h, spec = t.pipe_echo('retrydead')
    c = t.claimd(db, '--workers', '2', '--handler', spec, '--grace', '200ms',
                 '--kill-grace', '100ms')
    wait_for(lambda: h.starts(running), 10, 'the group\'s row running')
    check_eq(_ctl(c, 'retry', str(dead)), '1', 'claimctl retry output')
    check_eq(db.row(dead, 'state, visible_at IS NULL'), ('ready', '1'), 'retried row, parked')
    time.sleep(0.5)
    check(not h.starts(dead), 'the retried row started while its group\'s row was running')
    # The running row times out on its only attempt (dead): the group goes on.
    wait_for(lambda: db.sql(f'SELECT id, state FROM work_items WHERE id IN ({dead}, {running})'
                            f' ORDER BY id'), 10, 'the retried row done, the one ahead dead',
             until=lambda rows: rows == [(str(dead), 'done'), (str(running), 'dead')])
    # By the database clock, it was claimed only once the row ahead of it had finished (its
    # one attempt timed out: it never logs an end, so the handler log cannot tell).
    times = db.sql(f'SELECT id, claimed_at, finished_at FROM work_items WHERE id IN ({dead}, '
                   f'{running}) ORDER BY id')
    check_eq(db.scalar(f'SELECT (SELECT claimed_at FROM work_items WHERE id = {dead}) >= '
                       f'(SELECT finished_at FROM work_items WHERE id = {running})'), '1',
             f'the retried row claimed after the row ahead of it finished (id, claimed_at, '
             f'finished_at: {times})')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
