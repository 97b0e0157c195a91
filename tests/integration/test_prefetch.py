#!/usr/bin/env python3
"""--batch auto, the default: a worker claims many rows while its items take microseconds and
one when they take long, and no row waits in one worker's hands while a sibling is idle:
4 workers run 8 items of 1 s in about 2 s, not 8, even right after thousands of quick items
taught them to claim by the hundred (the rest of a batch goes back when an item outlasts it)."""

import harness
from harness import check, check_eq, wait_for

# A pipe: co-process: "slow" sleeps 1 s, anything else answers at once.
COPROCESS = '''
import json, sys, time
for line in sys.stdin:
    item = json.loads(line)
    if item['payload'] == 'slow':
        time.sleep(1)
    sys.stdout.write(json.dumps({'id': item['id'], 'ok': True}) + '\\n')
    sys.stdout.flush()
'''


def _span(db, where):
    """Seconds from the first claim to the last finish of the rows where."""
    return float(db.scalar('SELECT TIMESTAMPDIFF(MICROSECOND, MIN(claimed_at), MAX(finished_at)) '
                           f'/ 1e6 FROM work_items WHERE {where}'))


def _all_done(db, where, n, timeout):
    wait_for(lambda: int(db.scalar(f"SELECT COUNT(*) FROM work_items WHERE {where} AND "
                                   "state = 'done'")), timeout, f'{n} rows done',
             until=lambda k: k == n)


def it_runs_slow_items_side_by_side_from_the_start(t):
    db = t.database()
    h = t.script(COPROCESS, lang='python')
    c = t.claimd(db, '--workers', '4', '--handler', f'pipe:{h}')
    c.wait_ready(workers=4)
    db.insert_items(8, payload="'slow'")
    _all_done(db, "payload = 'slow'", 8, 30)
    span = _span(db, "payload = 'slow'")
    t.note(f'8 items of 1 s on 4 workers: {span:.2f} s')
    check(span < 3.5, f'8 items of 1 s on 4 workers took {span:.2f} s (hoarded?)')
    check_eq(db.sql("SELECT COUNT(DISTINCT claimed_by) FROM work_items WHERE payload = 'slow'"),
             [('4',)], 'every worker ran some')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_gives_back_a_batch_when_an_item_outlasts_it(t):
    db = t.database()
    h = t.script(COPROCESS, lang='python')
    c = t.claimd(db, '--workers', '4', '--handler', f'pipe:{h}')
    c.wait_ready(workers=4)
    # Thousands of quick items: the workers learn to claim many at once.
    db.insert_items(6000, payload="'quick'")
    _all_done(db, "payload = 'quick'", 6000, 60)
    # ...then 8 slow ones in one insert: one claim could take them all.
    db.insert_items(8, payload="'slow'")
    _all_done(db, "payload = 'slow'", 8, 30)
    span = _span(db, "payload = 'slow'")
    t.note(f'8 items of 1 s after 6000 quick ones: {span:.2f} s')
    check(span < 3.5, f'8 items of 1 s on 4 workers took {span:.2f} s after quick ones (hoarded?)')
    check_eq(db.sql("SELECT MAX(attempts) FROM work_items"), [('1',)],
             'a row given back keeps its attempt')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_claims_many_rows_at_once_for_quick_items(t):
    db = t.database()
    c = t.claimd(db, '--workers', '2', '--handler', 'noop')
    c.wait_ready(workers=2)
    commits = lambda: int(db.server.sql("SHOW GLOBAL STATUS LIKE 'Com_commit'")[0][1])
    before = commits()
    db.insert_items(20000)
    _all_done(db, '1', 20000, 60)
    per_claim = 20000 / max(commits() - before, 1)
    t.note(f'20000 no-op items: {per_claim:.0f} rows per commit')
    check(per_claim > 50, f'{per_claim:.1f} rows per commit: the batch did not grow')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
