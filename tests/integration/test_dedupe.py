#!/usr/bin/env python3
"""De-duplication: a row whose (queue, dedupe_key) another row holds (ready, claimed, or
finished within the window) is not added, by plain SQL (INSERT IGNORE) or by claimctl add,
with two supervisors sharing the database."""

import collections
import time

import harness
from harness import check, check_eq, wait_for

def _two(t, db, *args):
    h, spec = t.pipe_echo('dedupe')
    sups = [t.claimd(db, '--workers', '2', '--handler', spec, '--poll-interval', '50ms', *args,
                     name=f'claimd{i}') for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    return h, sups


def _insert_ignore(db, payload, key):
    db.execute(f"INSERT IGNORE INTO work_items (payload, dedupe_key) VALUES ('{payload}', '{key}')")


def it_insert_ignore_adds_nothing_while_the_key_is_held(t):
    db = t.database()
    h, sups = _two(t, db)
    db.execute("INSERT INTO work_items (payload, dedupe_key, run_at) "
               "VALUES ('first', 'order-7', NOW(6) + INTERVAL 1 SECOND)")
    _insert_ignore(db, 'while-ready', 'order-7')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items"), '1', 'rows after a duplicate while ready')
    wait_for(db.states, 10, 'the row done', until=lambda s: s['done'] == 1)
    _insert_ignore(db, 'after-done', 'order-7')
    _insert_ignore(db, 'other-key', 'order-8')
    wait_for(db.states, 10, 'the other row done', until=lambda s: s['done'] == 2)
    rows = db.sql('SELECT payload FROM work_items ORDER BY id')
    check_eq([r[0] for r in rows], ['first', 'other-key'], 'rows added')
    check_eq(collections.Counter(bytes.fromhex(e.rest.split()[-1]).decode() for e in h.starts()),
             collections.Counter(['first', 'other-key']), 'runs')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_claimctl_add_dedupe_prints_the_existing_id_on_either_supervisor(t):
    db = t.database()
    h, sups = _two(t, db)
    ids = []
    for c in sups + sups:
        r = c.ctl('add', '--dedupe', 'signup-42', '--delay', '500ms', 'welcome mail')
        check_eq(r.returncode, 0, f'claimctl add exit code ({r.stderr.strip()})')
        ids.append(int(r.stdout.strip()))
    check_eq(len(set(ids)), 1, f'ids printed for the same key: {ids}')
    wait_for(db.states, 10, 'the row done', until=lambda s: s['done'] == 1)
    r = sups[1].ctl('add', '--dedupe', 'signup-42', 'welcome mail again')
    check_eq(int(r.stdout.strip()), ids[0], 'id printed for the key of a row finished just now')
    time.sleep(0.3)
    check_eq(len(h.starts()), 1, 'runs of the de-duplicated item')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), '1', 'rows')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_a_key_is_free_again_after_the_window(t):
    db = t.database()
    h, sups = _two(t, db, '--dedupe-window', '1s', '--maintenance-interval', '2s')
    first = int(sups[0].ctl('add', '--dedupe', 'nightly', 'run 1').stdout)
    wait_for(db.states, 10, 'first run done', until=lambda s: s['done'] == 1)
    until = float(db.scalar(f'SELECT TIMESTAMPDIFF(MICROSECOND, finished_at, dedupe_until) / 1e6 '
                            f'FROM work_items WHERE id = {first}'))
    check(0.99 <= until <= 1.01, f'dedupe_until - finished_at = {until} s, want the 1 s window')
    time.sleep(1.2)
    second = int(sups[1].ctl('add', '--dedupe', 'nightly', 'run 2').stdout)
    check(second != first, f'claimctl add after the window gave the old id {first}')
    wait_for(db.states, 10, 'second run done', until=lambda s: s['done'] == 2)
    # Plain SQL relies on the supervisors' maintenance pass (every 2 s here).
    wait_for(lambda: db.scalar(f'SELECT dedupe_key IS NULL FROM work_items WHERE id = {second}'),
             15, 'the second row\'s key forgotten by maintenance', until=lambda v: v == '1')
    _insert_ignore(db, 'run 3', 'nightly')
    wait_for(db.states, 10, 'third run done', until=lambda s: s['done'] == 3)
    check_eq(len(h.starts()), 3, 'runs')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
