#!/usr/bin/env python3
"""Bulk actions (claimctl bulk retry|discard|cancel, POST /v1/jobs/bulk) on the rows the
browser's filters pick: the count first and nothing done without a confirmation of it (a
confirm that is not the count: 409 with the count now); confirmed, exactly those rows are acted
on, 500 a transaction; retried rows then run, discarded rows are gone with their errors,
cancelled running rows end dead "cancelled"; bad requests are refused."""

import json
import re
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, wait_for


def _http(t, db, *args, name='claimd'):
    c = t.claimd(db, '--http', '127.0.0.1:0', *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                 f'{c.name}: the http listening line')
    c.url, c.token = m.group(1), c.http_token()
    return c


def _post(c, query):
    req = urllib.request.Request(f'{c.url}/v1/jobs/bulk?{query}', data=b'', method='POST',
                                 headers={'Authorization': f'Bearer {c.token}'})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')


def _states(db, where):
    return dict(db.sql(f'SELECT state, COUNT(*) FROM work_items WHERE {where} GROUP BY state'))


def it_retries_exactly_the_filtered_dead_rows_in_chunks_and_they_run(t):
    db = t.database()
    # 1,200 dead rows across two queues: qa has 700 "disk full" and 100 "timeout", qb 400
    # "disk full". The filter picks qa's "disk full" ones.
    db.insert_items(1200, queue="IF(seq <= 800, 'qa', 'qb')", state="'dead'", attempts=5,
                    finished_at='NOW(6)',
                    last_error="IF(seq <= 700 OR seq > 800, CONCAT('Disk full #', seq), "
                               "'timeout')")
    picked = 'queue = \'qa\' AND last_error LIKE \'%disk full%\''
    c = _http(t, db, '--workers', '2', '--queue', 'qa', '--queue', 'qb', '--handler', 'noop')
    # Paused: the retried rows wait, to be counted, then run.
    check_eq(c.ctl('pause', 'qa').returncode, 0, 'pause qa')
    r = c.ctl('bulk', 'retry', '--queue', 'qa', '--error', 'disk full')
    check_eq((r.returncode, r.stdout),
             (0, '700 rows to retry: nothing done without --yes (or confirm=700)\n'),
             f'claimctl bulk without --yes: the count only ({r.stderr})')
    st, body = _post(c, 'action=retry&queue=qa&error=disk%20full')
    check_eq((st, body), (200, {'action': 'retry', 'count': 700, 'confirmed': False}),
             'POST without confirm: the count only')
    check_eq(_states(db, 'TRUE'), {'dead': '1200'}, 'nothing done yet')
    st, body = _post(c, 'action=retry&queue=qa&error=disk%20full&confirm=699')
    check_eq((st, body.get('count')), (409, 700), f'a confirm that is not the count: {body}')
    check('nothing done' in body.get('error', ''), f'its error: {body}')
    check_eq(_states(db, 'TRUE'), {'dead': '1200'}, 'nothing done after the mismatch')
    st, body = _post(c, 'action=retry&queue=qa&error=disk%20full&confirm=700')
    check_eq((st, body['count'], body['confirmed'], body['acted']), (200, 700, True, 700),
             f'confirmed: {body}')
    check_eq(body['transactions'], 2, 'two chunks of at most 500 rows')
    check_eq(_states(db, picked), {'ready': '700'}, 'the picked rows ready')
    check_eq(db.scalar(f'SELECT COUNT(*) FROM work_items WHERE {picked} AND attempts = 0'), '700',
             'their attempts reset')
    check_eq(_states(db, f'NOT ({picked})'), {'dead': '500'}, 'the others untouched')
    check_eq(c.ctl('resume', 'qa').returncode, 0, 'resume qa')
    wait_for(lambda: _states(db, picked), 30, 'the retried rows done',
             until=lambda s: s == {'done': '700'})
    check_eq(_states(db, f'NOT ({picked})'), {'dead': '500'}, 'the others still dead')
    # claimctl --yes: the count, then the same filter confirmed; qb's 400 go back.
    r = c.ctl('bulk', 'retry', '--queue', 'qb', '--yes')
    check_eq((r.returncode, r.stdout), (0, '400 rows to retry\n400 rows retried (400 counted)\n'),
             f'claimctl bulk --yes ({r.stderr})')
    wait_for(lambda: _states(db, "queue = 'qb'"), 30, "qb's rows done",
             until=lambda s: s == {'done': '400'})
    check_eq(c.stop(), 0, 'claimd exit code')


def it_cancels_running_rows_and_discards_waiting_ones(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = long ] && sleep 60')
    running = db.insert_items(2, payload="'long'", queue="'work'")
    waiting = db.insert_items(3, payload="'long'", queue="'work'", run_at='NOW(6) + INTERVAL 1 HOUR')
    other = db.insert_item('long', queue="'other'", state="'dead'")
    c = _http(t, db, '--workers', '1', '--concurrency', '2', '--queue', 'work', '--handler',
              h.spec, '--kill-grace', '500ms')
    wait_for(lambda: len(h.starts()), 10, 'two runs', until=lambda n: n == 2)
    r = c.ctl('bulk', 'cancel', '--queue', 'work')
    check(r.returncode == 0 and r.stdout.startswith('5 rows to cancel'), f'the count: {r.stdout}')
    r = c.ctl('bulk', 'cancel', '--queue', 'work', '--state', 'claimed', '--confirm', '2',
              '--json')
    check_eq((r.returncode, json.loads(r.stdout or '{}').get('acted')), (0, 2),
             f'cancel the claimed rows ({r.stderr})')
    for item in running:
        wait_for(lambda: db.row(item, 'state')[0], 5, f'row {item} dead',
                 until=lambda s: s == 'dead')
        state, _, err = db.row(item)
        check(err.startswith('cancelled (claimctl bulk cancel'), f'row {item}: {err!r}')
    check_eq(_states(db, f'id IN ({",".join(map(str, waiting))})'), {'ready': '3'},
             'the waiting rows untouched by a filter on claimed')
    # discard: the ready and the dead rows of the queue go, with their attempt errors.
    check_eq(db.scalar('SELECT COUNT(*) FROM attempt_errors WHERE item_id IN '
                       f'({",".join(map(str, running))})'), '2', 'the cancelled runs recorded')
    st, body = _post(c, 'action=discard&queue=work&confirm=5')
    check_eq((st, body.get('acted')), (200, 5), f'discard: {body}')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE queue = 'work'"), '0',
             'the queue empty')
    check_eq(db.scalar('SELECT COUNT(*) FROM attempt_errors'), '0', 'their errors gone')
    check_eq(db.row(other, 'state')[0], 'dead', 'another queue untouched')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_discard_cancels_the_rows_that_waited_for_the_rows_it_deletes(t):
    db = t.database()
    parents = db.insert_items(3, payload="'parent'", queue="'work'", run_at='NOW(6) + INTERVAL 1 HOUR')
    child = db.insert_item('child', queue="'other'")
    runs = db.insert_item('runs anyway', queue="'other'")
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({parents[0]}, {child})')
    db.execute(f"INSERT INTO work_deps (parent_id, child_id, on_dead) VALUES ({parents[1]}, {runs}, 'run'), "
               f"({parents[2]}, {runs}, 'run')")
    check_eq(db.row(runs, 'waiting_for')[0], '2', 'the row waits for two parents')
    c = t.claimd(db, '--workers', '1', '--queue', 'elsewhere', '--handler', 'noop')
    c.wait_ready()
    r = c.ctl('bulk', 'discard', '--queue', 'work', '--yes')
    check_eq((r.returncode, r.stdout), (0, '3 rows to discard\n3 rows discarded (3 counted)\n'),
             f'discard ({r.stderr})')
    check_eq(db.row(child), ('dead', '0', f'cancelled: row {parents[0]}, which it waited for, is dead'),
             'the row that waited for a discarded row (on dead: cancel)')
    check_eq(db.row(runs, 'state, waiting_for, visible_at IS NOT NULL'), ('ready', '0', '1'),
             'the row that waited for two (on dead: run): counted off once each, released')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_bad_requests(t):
    db = t.database()
    c = _http(t, db, '--workers', '1', '--queue', 'elsewhere', '--handler', 'noop')
    for query, status, says in (
            ('action=frob', 400, "action 'frob'"), ('', 400, 'action is required'),
            ('action=retry&state=ready', 400, 'retry acts on dead rows'),
            ('action=discard&state=claimed', 400, 'discard acts on ready and dead rows'),
            ('action=retry&error=', 400, 'error must be'), ('action=retry&confirm=-1', 400,
                                                            'confirm must be'),
            ('action=retry&colour=red', 400, "unknown parameter 'colour'")):
        st, body = _post(c, query)
        check(st == status and says in body.get('error', ''), f'?{query}: {st} {body}')
    req = urllib.request.Request(f'{c.url}/v1/jobs/bulk', headers={'Authorization':
                                                                   f'Bearer {c.token}'})
    try:
        urllib.request.urlopen(req, timeout=10)
        harness.fail('GET /v1/jobs/bulk answered')
    except urllib.error.HTTPError as e:
        check_eq((e.code, e.headers.get('Allow')), (405, 'POST'), 'GET on the bulk route')
    for args, says in ((['bulk'], 'action is required'), (['bulk', 'frob'], "action 'frob'"),
                       (['bulk', 'retry', '--yes', '--confirm', '3'], 'not both')):
        r = c.ctl(*args)
        check(r.returncode == 2 and says in r.stderr, f'claimctl {args}: {r.returncode} '
              f'{r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
