#!/usr/bin/env python3
"""Dependencies (work_deps): a row waits for its parents, inserted with plain SQL in the rows'
transaction, and starts only after every parent ended, released by the last parent's finish;
a dead parent cancels its children down the edges (or counts as done where the edge says
on_dead = 'run'); cycles, self-waits, missing rows and rows that cannot wait are refused.
Under two supervisors running many items at once, no row starts before its parents end."""

import random

import harness
from harness import check, check_eq, runs_of, check_runs_apart, wait_for


def _two(t, db, h, *args):
    sups = [t.claimd(db, '--workers', '2', '--handler', h.spec, *args, name=f'claimd{i}')
            for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    return sups


def _insert(db, rows, edges, run_at='DEFAULT'):
    """rows: payloads; edges: (parent index, child index[, on_dead]). One transaction: the
    rows, then their edges, named by the ids the INSERT gave (VALUES, not an INSERT ...
    SELECT from work_items). Returns the ids."""
    before = int(db.scalar('SELECT COALESCE(MAX(id), 0) FROM work_items'))
    values = ', '.join(f"('{p}', {run_at})" for p in rows)
    sql = ['START TRANSACTION', f'INSERT INTO work_items (payload, run_at) VALUES {values}',
           'SET @base = LAST_INSERT_ID() - 1']
    for e in edges:
        on_dead = e[2] if len(e) > 2 else 'cancel'
        sql.append(f'SET @p = @base + {e[0] + 1}, @c = @base + {e[1] + 1}')
        sql.append(f"INSERT INTO work_deps (parent_id, child_id, on_dead) "
                   f"VALUES (@p, @c, '{on_dead}')")
    sql.append('COMMIT')
    db.execute('; '.join(sql))
    ids = [int(r[0]) for r in db.sql(f'SELECT id FROM work_items WHERE id > {before} '
                                     'ORDER BY id')]
    check_eq(len(ids), len(rows), 'rows inserted')
    check_eq(ids, list(range(ids[0], ids[0] + len(rows))), 'consecutive ids')
    return ids


def it_runs_a_child_only_after_all_its_parents_end(t):
    db = t.database()
    h = t.log_handler('case "$payload" in slow) sleep 0.6;; *) sleep 0.1;; esac')
    # extract-a (slow) and extract-b -> load; load -> report
    ids = _insert(db, ['slow', 'quick', 'load', 'report'], [(0, 2), (1, 2), (2, 3)])
    check_eq(db.sql(f'SELECT waiting_for, visible_at IS NULL FROM work_items WHERE id IN '
                    f'({ids[2]}, {ids[3]}) ORDER BY id'), [('2', '1'), ('1', '1')],
             'the children wait, out of the claim index')
    sups = _two(t, db, h)
    wait_for(db.states, 20, 'every row done', until=lambda s: s['done'] == 4)
    runs = runs_of(h)
    end = {i: runs[i][0][1] for i in ids}
    start = {i: runs[i][0][0] for i in ids}
    check(start[ids[2]] >= max(end[ids[0]], end[ids[1]]),
          f'load started before both extracts ended: {start} {end}')
    check(start[ids[3]] >= end[ids[2]], 'report started before load ended')
    check_eq(db.sql(f'SELECT waiting_for FROM work_items WHERE id IN ({ids[2]}, {ids[3]})'),
             [('0',), ('0',)], 'nothing left to wait for')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_cancels_down_the_edges_when_a_parent_dies(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = fail ] && rc=3')
    # fail -> b -> c (cancel edges); fail -> d (on_dead run); e waits for fail and ok (cancel)
    ids = _insert(db, ['fail', 'b', 'c', 'd', 'ok', 'e'],
                  [(0, 1), (1, 2), (0, 3, 'run'), (0, 5), (4, 5)])
    db.execute(f'UPDATE work_items SET max_attempts = 1 WHERE id = {ids[0]}')
    sups = _two(t, db, h)
    wait_for(db.states, 20, 'the rows finished', until=lambda s: s['ready'] + s['claimed'] == 0)
    rows = {int(i): (st, err) for i, st, err in db.sql(
        'SELECT id, state, COALESCE(last_error, \'\') FROM work_items ORDER BY id')}
    check_eq(rows[ids[0]][0], 'dead', 'the failing parent')
    for k in (1, 2, 5):
        check_eq(rows[ids[k]], ('dead', f'cancelled: row {ids[0]}, which it waited for, is dead'),
                 f'row {k}: cancelled, naming the dead row')
    check_eq(rows[ids[3]][0], 'done', 'the child whose edge says run: ran')
    check_eq(rows[ids[4]][0], 'done', 'an unrelated parent')
    started = {e.id for e in h.starts()}
    check_eq(started & {ids[1], ids[2], ids[5]}, set(), 'cancelled rows that ran')
    # A ready parent deleted (claimctl cancel): its children are cancelled with it.
    more = _insert(db, ['later', 'after-later'], [(0, 1)], run_at='NOW(6) + INTERVAL 1 HOUR')
    r = sups[0].ctl('cancel', str(more[0]))
    check_eq((r.returncode, r.stdout.strip()), (0, '1'), f'claimctl cancel {r.stderr}')
    check_eq(db.sql(f'SELECT state FROM work_items WHERE id = {more[1]}'), [('dead',)],
             "the deleted parent's child")
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_refuses_what_cannot_wait(t):
    db = t.database()
    ids = db.insert_items(5)
    db.execute(f"UPDATE work_items SET state = 'done', visible_at = NULL WHERE id = {ids[3]}")
    db.execute(f"UPDATE work_items SET state = 'claimed' WHERE id = {ids[4]}")
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({ids[0]}, {ids[1]})')
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({ids[1]}, {ids[2]})')
    for parent, child, why in ((ids[0], ids[0], 'cannot wait for itself'),
                               (ids[2], ids[0], 'a cycle'),
                               (ids[0], 999999, 'no row 999999'),
                               (ids[0], ids[3], 'only a ready row can wait'),
                               (ids[4], ids[2], f'row {ids[4]} is running')):
        try:
            db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({parent}, {child})')
        except RuntimeError as e:   # the SQL's error (harness.Server.sql)
            check(why in str(e), f'{parent} -> {child}: {e}')
        else:
            harness.fail(f'{parent} -> {child} taken (want: {why})')
    # A parent done already counts as done: the child does not wait for it.
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({ids[3]}, {ids[0]})')
    check_eq(db.sql(f'SELECT waiting_for, visible_at IS NULL FROM work_items WHERE id = {ids[0]}'),
             [('0', '0')], 'waiting for a done row')
    check_eq(db.sql(f'SELECT id, has_dependents FROM work_items ORDER BY id'),
             [(str(ids[0]), '1'), (str(ids[1]), '1'), (str(ids[2]), '0'), (str(ids[3]), '0'),
              (str(ids[4]), '0')], 'the rows marked as waited for')


def it_never_starts_a_row_before_its_parents_under_load(t):
    db = t.database()
    h = t.log_handler('sleep 0.0$((RANDOM % 5))')
    rng = random.Random(7)
    n = 160
    edges = []
    for c in range(40, n):   # each later row waits for 1..3 earlier ones
        for p in rng.sample(range(0, c), rng.randint(1, 3)):
            edges.append((p, c))
    ids = _insert(db, [f'r{i}' for i in range(n)], edges)
    sups = _two(t, db, h, '--concurrency', '4')
    wait_for(db.states, 90, 'every row done', until=lambda s: s['done'] == n)
    runs = runs_of(h)
    check_runs_apart(runs)
    bad = []
    for p, c in edges:
        rp, rc = runs.get(ids[p], []), runs.get(ids[c], [])
        if len(rp) != 1 or len(rc) != 1 or rc[0][0] < rp[0][1]:
            bad.append((p, c, rp, rc))
    check_eq(bad[:5], [], 'edges whose child started before its parent ended (or ran twice)')
    check_eq(int(db.scalar('SELECT COUNT(*) FROM work_items WHERE waiting_for > 0')), 0,
             'rows still waiting')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_prunes_edges_with_the_done_rows(t):
    db = t.database()
    h = t.log_handler()
    _insert(db, ['a', 'b', 'c'], [(0, 1), (1, 2), (0, 2)])
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--keep-done', '1s',
                 '--maintenance-interval', '1s')
    wait_for(lambda: int(db.scalar('SELECT COUNT(*) FROM work_items')), 30,
             'the done rows pruned', until=lambda n: n == 0)
    check_eq(int(db.scalar('SELECT COUNT(*) FROM work_deps')), 0, 'edges left')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_releases_a_row_whose_count_off_was_missed_and_no_row_early(t):
    """A parent ended without counting itself off its children (here: its state written
    with plain SQL, past claimd): the maintenance check finds the child waiting for more
    parents than hold it back, logs it and releases it. It leaves alone a child whose parent
    has not finished, and one whose parent is dead on a 'cancel' edge."""
    db = t.database()
    h = t.log_handler('true')
    # 0 -> 1 (done parent), 2 -> 3 (parent due in 2037), 4 -> 5 (dead, cancel),
    # 6 -> 7 (dead, on_dead run), 8 -> 9 and 8 -> 10 (done parent, two children)
    ids = _insert(db, ['p', 'c', 'later', 'c', 'p', 'c', 'p', 'c', 'p', 'c', 'c'],
                  [(0, 1), (2, 3), (4, 5), (6, 7, 'run'), (8, 9), (8, 10)])
    db.execute(f"UPDATE work_items SET run_at = '2037-01-01', visible_at = '2037-01-01' "
               f"WHERE id = {ids[2]}")
    db.execute("UPDATE work_items SET state = 'done', claim_token = claim_token + 1, "
               f"finished_at = NOW(6), visible_at = NULL WHERE id IN ({ids[0]}, {ids[8]})")
    db.execute("UPDATE work_items SET state = 'dead', claim_token = claim_token + 1, "
               f"finished_at = NOW(6), visible_at = NULL WHERE id IN ({ids[4]}, {ids[6]})")
    released = [ids[1], ids[7], ids[9], ids[10]]
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--maintenance-interval', '1s')
    wait_for(lambda: db.sql(f'SELECT COUNT(*) FROM work_items WHERE state = \'done\' AND '
                            f'id IN ({",".join(map(str, released))})')[0][0], 15,
             'the children of finished parents done', until=lambda n: n == str(len(released)))
    wait_for(c.log, 5, 'the warning', until=lambda text: 'maintenance: 4 rows that waited '
             'for parents that had finished (a missed count-off) counted again' in text)
    check_eq(db.sql(f'SELECT id, state, waiting_for, visible_at IS NULL FROM work_items '
                    f'WHERE id IN ({ids[3]}, {ids[5]}) ORDER BY id'),
             [(str(ids[3]), 'ready', '1', '1'), (str(ids[5]), 'ready', '1', '1')],
             'the children still held back')
    check_eq(sorted(i for i in runs_of(h)), sorted(released), 'the rows that ran')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
