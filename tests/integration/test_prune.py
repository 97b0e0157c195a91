#!/usr/bin/env python3
"""claimd deletes done rows that finished (and were created) longer than --keep-done ago (first
sweep one --maintenance-interval after it starts: 5 s here), and dead rows older than
--keep-dead when that is set (by default they stay); it never deletes recent finished rows or
live ones, and --keep-done 0 keeps everything."""

import os
import signal
import time

import harness
from harness import check, check_eq, wait_for


def _finished_rows(db):
    """Insert 3 done rows finished 2 h ago, 2 done rows finished now, 1 dead row finished 2 h
    ago; return (old_done, recent_done, dead) id lists."""
    ago = 'NOW(6) - INTERVAL 2 HOUR'
    old = db.insert_items(3, payload="CONCAT('old-', seq)", state="'done'", attempts=1,
                          created_at=ago, claim_time=ago, finished_at=ago)
    recent = db.insert_items(2, payload="CONCAT('recent-', seq)", state="'done'", attempts=1,
                             claim_time='NOW(6)', finished_at='NOW(6)')
    dead = db.insert_items(1, payload="'dead'", state="'dead'", attempts=5, created_at=ago,
                           claim_time=ago, finished_at=ago, last_error="'exit status 1'")
    return old, recent, dead


def _ids(db):
    return [int(r[0]) for r in db.sql('SELECT id FROM work_items ORDER BY id')]


def it_prunes_done_rows_after_keep_done(t):
    db = t.database()
    old, recent, dead = _finished_rows(db)
    c = t.claimd(db, '--workers', '2', '--handler', 'noop', '--keep-done', '1h', '--maintenance-interval', '5s')
    t0 = time.monotonic()
    c.wait_ready(workers=2)

    # Only the database is watched from here: the prune pass is due 5 s after the start.
    left = wait_for(lambda: _ids(db), 10.0 - (time.monotonic() - t0),
                    f'the 3 done rows finished 2 h ago ({old}) to be deleted',
                    until=lambda ids: not set(old) & set(ids))
    check_eq(left, sorted(recent + dead), 'rows left after the prune (recent done and dead ones)')
    check_eq(db.sql('SELECT state, COUNT(*) FROM work_items GROUP BY state ORDER BY state'),
             [('done', '2'), ('dead', '1')], 'rows left per state')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_sweeps_the_whole_id_range_in_spans(t):
    """The sweep reads the table by id, a span of 5,000 ids a statement, skipping gaps: old done
    rows far apart all go; a row created recently ends the sweep (its finished_at set by hand
    to hours ago does not make it old); the total is logged once per sweep."""
    db = t.database()
    ago = 'NOW(6) - INTERVAL 2 HOUR'
    done = dict(state="'done'", attempts=1, created_at=ago, claim_time=ago, finished_at=ago)
    old = []
    for base in (0, 20_000, 1_000_000):
        old += db.insert_items(3, id=f'{base} + seq', **done)
    dead = db.insert_items(1, id='1000500', state="'dead'", attempts=5, created_at=ago,
                           finished_at=ago)
    young = db.insert_items(1, id='1000600', state="'done'", attempts=1, finished_at=ago)
    check_eq(len(old), 9, 'old done rows inserted')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--keep-done', '1h',
                 '--maintenance-interval', '2s')
    left = wait_for(lambda: _ids(db), 10, f'the old done rows {old} to be deleted',
                    until=lambda ids: not set(old) & set(ids))
    check_eq(left, dead + young, 'rows left (dead; created a moment ago)')
    wait_for(lambda: [ln for ln in c.log().splitlines() if 'pruned' in ln], 5,
             'the sweep to log what it deleted')
    lines = [ln for ln in c.log().splitlines() if 'pruned' in ln]
    check_eq(len(lines), 1, f'log lines of the first sweep: {lines}')
    check('maintenance: 9 finished rows older than --keep-done (done) or --keep-dead (dead) '
          'pruned' in lines[0],
          f'the sweep logs its total: {lines}')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_one_supervisor_prunes_and_another_takes_over_when_it_stops(t):
    """Two supervisors on one database: the one holding the prune lock sweeps, the other's
    sweeps stop at the election; when the first stops (its connection, and the lock, gone)
    the other prunes."""
    db = t.database()
    ago = 'NOW(6) - INTERVAL 2 HOUR'
    done = dict(state="'done'", attempts=1, created_at=ago, claim_time=ago, finished_at=ago)
    first = db.insert_items(30, **done)
    args = ('--workers', '1', '--handler', 'noop', '--keep-done', '1h',
            '--maintenance-interval', '1s')
    a = t.claimd(db, *args, name='a')
    b = t.claimd(db, *args, name='b')
    wait_for(lambda: _ids(db), 10, f'the old done rows {first} deleted',
             until=lambda ids: not set(first) & set(ids))
    time.sleep(2.5)  # both have swept a few times since
    pruned = lambda c: [ln for ln in c.log().splitlines() if 'pruned' in ln]
    check_eq(sorted([len(pruned(a)) > 0, len(pruned(b)) > 0]), [False, True],
             f'supervisors that pruned: a {pruned(a)}, b {pruned(b)}')
    pruner, other = (a, b) if pruned(a) else (b, a)
    check_eq(pruner.stop(), 0, f'{pruner.name} exit code after SIGTERM')
    second = db.insert_items(20, **done)
    wait_for(lambda: _ids(db), 10, f'{other.name} to delete the old done rows {second}',
             until=lambda ids: not set(second) & set(ids))
    # (The rows are gone once its DELETE commits; its log line comes a moment later.)
    wait_for(lambda: pruned(other), 5, f'{other.name} to log its prune')
    check_eq(other.stop(), 0, f'{other.name} exit code after SIGTERM')


def it_forgets_fifo_groups_without_live_rows(t):
    db = t.database()
    # Group 'old': its rows finished long ago, last insert 2 h ago. Group 'live': a ready row
    # (paused queue, so it stays). Group 'new': finished, but inserted into a moment ago.
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1)")
    db.insert_items(2, state="'done'", group_key="'old'", finished_at='NOW(6) - INTERVAL 2 HOUR')
    db.insert_items(1, group_key="'live'")
    db.insert_items(1, state="'done'", group_key="'new'", finished_at='NOW(6)')
    db.execute("UPDATE work_groups SET updated_at = NOW(6) - INTERVAL 2 HOUR "
               "WHERE group_key IN ('old', 'live')")
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--keep-done', '1h',
                 '--maintenance-interval', '1s')
    groups = lambda: [r[0] for r in db.sql('SELECT group_key FROM work_groups ORDER BY group_key')]
    wait_for(groups, 10, "group 'old' forgotten", until=lambda g: 'old' not in g)
    check_eq(groups(), ['live', 'new'], 'groups kept (a live row; a recent insert)')
    new = db.insert_item('again', group_key="'old'", state="'done'")
    check_eq(db.row(new, 'group_seq'), ('1',), "sequence of the next row of a forgotten group")
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_keeps_everything_with_keep_done_0(t):
    db = t.database()
    old, recent, dead = _finished_rows(db)
    every = sorted(old + recent + dead)
    c = t.claimd(db, '--workers', '2', '--handler', 'noop', '--keep-done', '0', '--maintenance-interval', '2s')
    t0 = time.monotonic()
    c.wait_ready(workers=2)

    # Nothing may go for 7 s (past the first prune pass at 5 s): watch for the first deletion.
    while time.monotonic() - t0 < 7.0:
        check_eq(_ids(db), every, f'rows {time.monotonic() - t0:.1f}s after claimd started with --keep-done 0')
        time.sleep(0.25)
    check_eq(_ids(db), every, 'rows 7 s after claimd started with --keep-done 0')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_prunes_dead_rows_after_keep_dead_set_by_a_reload(t):
    """Dead rows stay by default (a year old, a sweep a second); a reload that sets --keep-dead
    1h has the sweep delete the dead rows older than that, with their edges, and nothing else;
    a second reload (5m) takes the next ones."""
    db = t.database()
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1)")  # ready rows stay
    year, hours = 'NOW(6) - INTERVAL 400 DAY', 'NOW(6) - INTERVAL 2 HOUR'
    ancient = db.insert_items(2, state="'dead'", attempts=5, created_at=year, finished_at=year)
    old = db.insert_items(1, state="'dead'", attempts=5, created_at=hours, finished_at=hours)
    done = db.insert_items(1, state="'done'", attempts=1, created_at=hours, finished_at=hours)
    recent = db.insert_items(1, state="'dead'", attempts=5, created_at=hours,
                             finished_at='NOW(6) - INTERVAL 10 MINUTE')
    ready = db.insert_items(1, created_at=hours)
    claimed = db.insert_items(1, state="'claimed'", attempts=1, created_at=hours,
                              claim_time='NOW(6)', visible_at='NOW(6) + INTERVAL 1 HOUR')
    # A row that waited for an old dead one: cancelled (dead now), its edge goes with its parent.
    child = db.insert_items(1, created_at=hours)
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({old[0]}, {child[0]})')
    check_eq(db.row(child[0], 'state')[0], 'dead', 'the child of a dead row (cancelled)')
    every = sorted(ancient + old + done + recent + ready + claimed + child)

    conf = os.path.join(t.tmpdir, 'claimd.conf')

    def write(extra):
        with open(conf, 'w') as f:
            f.write(f'dsn = {db.dsn}\nhandler = noop\nworkers = 1\nkeep-done = 0\n'
                    f'maintenance-interval = 1s\n{extra}')

    write('')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CLAIMD_')}
    c = t.claimd(None, '--config', conf, env=env)
    c.wait_ready(workers=1)
    time.sleep(2.5)  # two maintenance passes: nothing is due without a window
    check_eq(_ids(db), every, 'rows with the default --keep-dead (a year-old dead row stays)')

    write('keep-dead = 1h\n')
    c.send(signal.SIGHUP)
    gone = set(ancient + old)
    left = wait_for(lambda: _ids(db), 10, f'the dead rows {sorted(gone)} pruned after the reload',
                    until=lambda ids: not gone & set(ids))
    check_eq(left, sorted(set(every) - gone), 'rows left: done (keep-done 0), recent dead, live')
    check_eq(db.sql(f'SELECT COUNT(*) FROM work_deps WHERE parent_id = {old[0]}'), [('0',)],
             'edges of the pruned parent')
    check_eq(db.row(claimed[0], 'state')[0], 'claimed', 'the claimed row')
    check_eq(db.row(ready[0], 'state')[0], 'ready', 'the ready row')

    write('keep-dead = 5m\n')
    c.send(signal.SIGHUP)
    left = wait_for(lambda: _ids(db), 10, f'the dead row {recent} pruned after the second reload',
                    until=lambda ids: recent[0] not in ids)
    check_eq(left, sorted(done + ready + claimed + child), 'rows left after the second reload')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
