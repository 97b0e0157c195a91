#!/usr/bin/env python3
"""Graphs at their limits (claimd-workflows(7), COST): a dense graph through the API (1,000 lines,
each after the next 32) is accepted and runs in order; chains longer than the server's
max_recursive_iterations (1,000 levels) are checked and released right: a cycle that closes
one is refused, a dead head cancels every row down it, by a worker's failure or by an edge
from a dead row; an edge with over 1,000 rows above and below is refused as too large to
check, with a message that says what to do; edges inserted in order check in a step or two."""

import json
import time

import harness
from harness import check, check_eq, wait_for

DEEP = 1500


def _chain(db, n, **columns):
    """n rows (ids consecutive), each waiting for the one before, edges written parent first in
    one INSERT. Returns the ids."""
    ids = db.insert_items(n, **columns)
    check_eq(ids, list(range(ids[0], ids[0] + n)), 'consecutive ids')
    values = ','.join(f'({p}, {p + 1})' for p in ids[:-1])
    t0 = time.monotonic()
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES {values}')
    return ids, time.monotonic() - t0


def _refused(db, parent, child, why):
    try:
        db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({parent}, {child})')
    except RuntimeError as e:
        check(why in str(e), f'{parent} -> {child}: {e}')
        return
    harness.fail(f'the edge {parent} -> {child} was taken: {why} expected')


def it_accepts_a_dense_graph_at_once_and_runs_it_in_order(t):
    db = t.database()
    c = t.claimd(db, '--workers', '2', '--concurrency', '4', '--handler', 'noop', '--http',
                 '127.0.0.1:0')
    n, fan = 1000, 32
    lines = ''.join(json.dumps({'ref': f'r{i}', 'payload': f'p{i}',
                                'after': [f'r{j}' for j in range(i + 1, min(n, i + 1 + fan))]})
                    + '\n' for i in range(n)).encode()
    t0 = time.monotonic()
    st, body = c.api('POST', '/v1/queues/default/jobs:batch', lines, timeout=60)
    took = time.monotonic() - t0
    check_eq(st, 202, f'the graph: {str(body)[:300]}')
    t.note(f'{n} lines x {fan} edges ({int(db.scalar("SELECT COUNT(*) FROM work_deps"))} '
           f'edges) accepted in {took:.2f} s')
    ids = [j['id'] for j in body['jobs']]
    wait_for(db.states, 120, 'every row done', until=lambda s: s['done'] == n)
    # Each row claimed after each row it waits for finished (the database's clock).
    bad = db.sql('SELECT d.parent_id, d.child_id FROM work_deps d JOIN work_items p ON '
                 'p.id = d.parent_id JOIN work_items k ON k.id = d.child_id WHERE '
                 'k.claimed_at < p.finished_at LIMIT 5')
    check_eq(bad, [], 'edges whose child was claimed before its parent finished')
    check_eq(int(db.scalar(f'SELECT COUNT(*) FROM work_items WHERE id BETWEEN {ids[0]} AND '
                           f'{ids[-1]} AND attempts = 1')), n, 'rows that ran once')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_a_graph_with_a_cycle_before_writing_anything(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0')
    n = 1000   # a cycle through every line
    lines = ''.join(json.dumps({'ref': f'r{i}', 'after': [f'r{(i + 1) % n}']}) + '\n'
                    for i in range(n)).encode()
    st, body = c.api('POST', '/v1/queues/default/jobs:batch', lines, timeout=60)
    check(st == 400 and 'a cycle' in json.dumps(body), f'a cycle of {n} lines: {st} {body}')
    check_eq(int(db.scalar('SELECT COUNT(*) FROM work_items')), 0, 'rows written')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_a_line_that_waits_for_more_than_32_others(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0')
    refs = [{'ref': f'r{i}'} for i in range(33)]

    def post(after):
        lines = refs + [{'after': [f'r{i}' for i in range(after)]}]
        return c.api('POST', '/v1/queues/default/jobs:batch',
                     ''.join(json.dumps(o) + '\n' for o in lines).encode(), timeout=60)
    st, body = post(33)
    check(st == 400 and 'at most 32 refs' in json.dumps(body) and 'line 34' in json.dumps(body),
          f'33 parents: {st} {body}')
    check_eq(int(db.scalar('SELECT COUNT(*) FROM work_items')), 0, 'rows written')
    st, body = post(32)
    check_eq(st, 202, f'32 parents are within the limit: {body}')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_checks_a_chain_longer_than_the_recursion_limit(t):
    db = t.database()
    ids, took = _chain(db, DEEP)
    t.note(f'{DEEP - 1} edges of a chain, parent first, in {took:.2f} s')
    # Closing the chain into a cycle: refused (the parent is 1,499 levels below the child).
    _refused(db, ids[-1], ids[0], 'too many to check')
    # A new head above the chain: the parent side is empty at once, accepted.
    head = db.insert_items(1)[0]
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({head}, {ids[0]})')
    # A cycle found within the bound: the row right below waits for it already.
    _refused(db, ids[5], ids[2], 'a cycle')
    # Edges child side first (each parent with no parents yet) check in a step too.
    more = db.insert_items(DEEP)
    values = ','.join(f'({p}, {p + 1})' for p in reversed(more[:-1]))
    t0 = time.monotonic()
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES {values}')
    t.note(f'{DEEP - 1} edges of a chain, child first, in {time.monotonic() - t0:.2f} s')
    check_eq(int(db.scalar(f'SELECT MAX(waiting_for) FROM work_items WHERE id > {more[0]}')),
             1, 'each row of the second chain waits for one')


def it_refuses_an_edge_with_over_a_thousand_rows_on_both_sides(t):
    db = t.database()
    above, _ = _chain(db, 1200)
    below, _ = _chain(db, 1200)
    _refused(db, above[-1], below[0], 'too many to check for a cycle here')
    # Within the bound on one side it is checked and taken.
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({above[-1]}, {below[-300]})')


def it_cancels_a_chain_longer_than_the_recursion_limit_when_its_head_dies(t):
    db = t.database()
    ids, _ = _chain(db, DEEP)
    db.execute(f'UPDATE work_items SET max_attempts = 1, payload = \'fail\' WHERE id = {ids[0]}')
    h = t.log_handler('[ "$payload" = fail ] && rc=3')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec)
    wait_for(db.states, 60, 'the head dead and the chain cancelled',
             until=lambda s: s['dead'] == DEEP)
    check_eq(db.states(), {'ready': 0, 'claimed': 0, 'done': 0, 'dead': DEEP}, 'rows by state')
    check_eq(len(h.starts()), 1, 'rows that ran (the head alone)')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_cancels_a_long_chain_tied_to_a_dead_row_by_plain_sql(t):
    db = t.database()
    ids, _ = _chain(db, DEEP)
    dead = db.insert_items(1, state="'dead'", finished_at='NOW(6)')[0]
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({dead}, {ids[0]})')
    check_eq(db.states(), {'ready': 0, 'claimed': 0, 'done': 0, 'dead': DEEP + 1},
             'rows by state')
    check_eq(db.sql(f'SELECT last_error FROM work_items WHERE id = {ids[-1]}'),
             [(f'cancelled: row {dead}, which it waited for, is dead',)], 'the last row')


if __name__ == '__main__':
    harness.main()
