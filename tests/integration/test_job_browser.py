#!/usr/bin/env python3
"""The job browser: claimctl jobs and GET /v1/jobs filtered by state, queue, id, group, dedupe
key and text in last_error return exactly the rows that match, newest first, and their cursor
(--before, the Link rel=next) walks all of them without repeats, also across spans of ids a
page does not reach; bad filters are refused by name. The job page (claimctl job, GET
/v1/jobs/ID) shows each failed attempt's error, the result, the progress, the rows it waits
for and that wait for it, and its batch."""

import json
import re
import urllib.error
import urllib.parse
import urllib.request

import harness
from harness import check, check_eq, wait_for

SPAN = 100000   # STORE_BROWSE_SPAN


def _http(t, db, *args, name='claimd'):
    c = t.claimd(db, '--workers', '1', '--http', '127.0.0.1:0', *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                 f'{c.name}: the http listening line')
    c.url, c.token = m.group(1), c.http_token()
    return c


def _get(c, path):
    """(status, Link header, parsed body)."""
    req = urllib.request.Request(c.url + path, headers={'Authorization': f'Bearer {c.token}'})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers.get('Link'), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None, json.loads(e.read() or b'{}')


def _rows(db):
    """Every row as the filters see it: (id, queue, state, group, dedupe, last_error)."""
    return [(int(i), q, s, g, d, e) for i, q, s, g, d, e in db.sql(
        'SELECT id, queue, state, group_key, dedupe_key, last_error FROM work_items')]


def _walk_http(c, query, limit):
    """Every page of GET /v1/jobs?query by its Link rel=next: the ids in order, and pages."""
    ids, pages, path = [], 0, f'/v1/jobs?{query}&limit={limit}'
    while path:
        st, link, body = _get(c, path)
        check_eq(st, 200, f'GET {path}: {body}')
        ids += [j['id'] for j in body]
        pages += 1
        check(pages < 200, f'{query}: the cursor does not end')
        m = re.match(r'<([^>]+)>; rel="next"', link or '')
        path = m.group(1) if m else None
    return ids, pages


def _walk_ctl(c, args, limit):
    """Every page of claimctl jobs ARGS --json, by --before the last id of a full page."""
    ids, before = [], None
    while True:
        r = c.ctl('jobs', *args, '--limit', str(limit), '--json',
                  *(['--before', str(before)] if before else []))
        check_eq(r.returncode, 0, f'claimctl jobs {args}: {r.stderr}')
        page = [j['id'] for j in json.loads(r.stdout)]
        ids += page
        if len(page) < limit:
            return ids
        before = page[-1]


def _fill(db):
    """Rows in every state, two queues, groups, dedupe keys and errors, some with LIKE's
    wildcards in them."""
    db.execute("INSERT INTO work_items (queue, payload, state, group_key, dedupe_key, last_error, "
               "finished_at) SELECT IF(seq % 3 = 0, 'qb', 'qa'), CONCAT('p', seq), "
               "ELT(1 + seq % 4, 'ready', 'claimed', 'done', 'dead'), "
               "IF(seq % 5 = 0, CONCAT('g', seq % 2), NULL), "
               "IF(seq % 7 = 0, CONCAT('k', seq), NULL), "
               "CASE WHEN seq % 11 = 0 THEN CONCAT('Disk FULL on sd', seq % 3) "
               "WHEN seq % 13 = 0 THEN 'quota 50%_used' WHEN seq % 17 = 0 THEN 'quota 50xxused' "
               "WHEN seq % 2 = 1 THEN CONCAT('timeout after ', seq, ' s') ELSE NULL END, "
               "IF(seq % 4 >= 2, NOW(6), NULL) FROM seq_1_to_400")


def it_filters_return_exactly_their_rows_newest_first_and_the_cursor_walks_them(t):
    db = t.database()
    _fill(db)
    # claimd serves another queue: the rows stay as they are.
    c = _http(t, db, '--queue', 'elsewhere', '--handler', 'noop')
    rows = _rows(db)
    k_row = next(r for r in rows if r[4])
    cases = [
        # (claimctl args, query, predicate)
        ([], 'state=dead', lambda r: r[2] == 'dead'),
        (['--state', 'ready', '--queue', 'qb'], 'state=ready&queue=qb',
         lambda r: r[2] == 'ready' and r[1] == 'qb'),
        (['--state', 'any'], 'state=any', lambda r: True),
        (['--group', 'g1'], 'group=g1', lambda r: r[3] == 'g1'),
        (['--group', 'g0', '--state', 'done'], 'group=g0&state=done',
         lambda r: r[3] == 'g0' and r[2] == 'done'),
        (['--dedupe', k_row[4]], f'dedupe={k_row[4]}', lambda r: r[4] == k_row[4]),
        (['--dedupe', k_row[4], '--queue', k_row[1]], f'dedupe={k_row[4]}&queue={k_row[1]}',
         lambda r: r[4] == k_row[4]),
        (['--id', str(rows[57][0])], f'id={rows[57][0]}', lambda r: r[0] == rows[57][0]),
        # Any case; '%' and '_' match themselves only.
        (['--error', 'disk full'], 'error=disk%20full', lambda r: 'disk full' in (r[5] or '').lower()),
        (['--error', '50%_'], 'error=50%25_', lambda r: '50%_' in (r[5] or '')),
        (['--error', 'timeout', '--queue', 'qa', '--state', 'dead'],
         'error=timeout&queue=qa&state=dead',
         lambda r: 'timeout' in (r[5] or '') and r[1] == 'qa' and r[2] == 'dead'),
    ]
    for args, query, pred in cases:
        want = sorted((r[0] for r in rows if pred(r)), reverse=True)
        check(want, f'{query}: the case picks some rows')
        got, pages = _walk_http(c, query, 7)
        check_eq(got, want, f'GET /v1/jobs?{query}, page by page')
        check(len(set(got)) == len(got), f'{query}: a row twice')
        check_eq(_walk_ctl(c, args, 7), want, f'claimctl jobs {" ".join(args)}, page by page')
    # The whole page's fields: the row as job has it, last_error cut short.
    st, _, body = _get(c, f'/v1/jobs?id={rows[10][0]}')
    check_eq((st, body[0]['id'], body[0]['queue'], body[0]['state']),
             (200, rows[10][0], rows[10][1], rows[10][2]), 'a row found by id')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_pages_cross_spans_of_ids_a_page_does_not_reach(t):
    # Rows far apart in id: a page reads at most SPAN ids and answers short, with the next
    # page where its span ended; walking them finds every row once.
    db = t.database()
    low = db.insert_items(5, payload="'low'", state="'dead'", last_error="'far apart'")
    db.execute(f'ALTER TABLE work_items AUTO_INCREMENT = {low[-1] + SPAN + 5000}')
    mid = db.insert_items(3, payload="'mid'", state="'dead'", last_error="'far apart'")
    db.execute(f'ALTER TABLE work_items AUTO_INCREMENT = {mid[-1] + 2 * SPAN + 10}')
    high = db.insert_items(4, payload="'high'", state="'dead'", last_error="'far apart'")
    c = _http(t, db, '--queue', 'elsewhere', '--handler', 'noop')
    ids, pages = _walk_http(c, 'error=far%20apart', 50)
    check_eq(ids, sorted(low + mid + high, reverse=True), 'every row, newest first')
    check(pages >= 3, f'pages: {pages} (spans of {SPAN} ids)')
    st, link, body = _get(c, '/v1/jobs?error=far%20apart&limit=50')
    check_eq([j['id'] for j in body], sorted(high, reverse=True), 'the first page: its span')
    check(link and 'before=' in link and 'error=far%20apart' in link and 'state=any' in link,
          f'a short page whose span ran out has a next link: {link}')
    r = c.ctl('jobs', '--error', 'far apart')
    check('next: --before ' in r.stdout, f'claimctl says where the next page starts: {r.stdout}')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_bad_filters(t):
    db = t.database()
    c = _http(t, db, '--queue', 'elsewhere', '--handler', 'noop')
    for query, says in (('state=bogus', "state 'bogus'"), ('error=', 'error must be'),
                        ('error=' + 'x' * 201, 'error must be'), ('id=abc', 'id must be'),
                        ('id=0', 'id must be'), ('group=' + 'g' * 256, 'group must be'),
                        ('limit=0', 'limit must be'), ('colour=red', "unknown parameter 'colour'"),
                        ('error=a%01b', 'control character')):
        st, _, body = _get(c, f'/v1/jobs?{query}')
        check(st == 400 and says in body.get('error', ''), f'?{query}: {st} {body}')
    for args, says in ((['--state', 'bogus'], "state 'bogus'"), (['--error', ''], 'must be'),
                       (['--id', 'x'], 'must be a whole number'), (['--colour', 'red'],
                                                                   "unknown option '--colour'")):
        r = c.ctl('jobs', *args)
        check(r.returncode == 2 and says in r.stderr, f'claimctl jobs {args}: {r.returncode} '
              f'{r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


def _lines(*objs):
    return ''.join(json.dumps(o) + '\n' for o in objs).encode()


def it_job_page_shows_attempt_errors_result_progress_dependencies_and_batch(t):
    db = t.database()
    h, spec = t.pipe_echo()
    c = _http(t, db, '--retry-base', '100ms', '--handler', spec)
    # A batch: 'fail' dies after two attempts, 'progress' reports progress and a result, the
    # third line waits for both (on_dead run: it runs anyway), the callback waits for all.
    st, body = c.api('POST', '/v1/queues/default/jobs:batch?batch=1&description=page', _lines(
        {'ref': 'f', 'payload': 'fail', 'max_attempts': 2},
        {'ref': 'n', 'payload': 'progress'},
        {'ref': 'w', 'payload': 'after', 'after': ['f', 'n'], 'on_dead': 'run'},
        {'payload': 'callback', 'callback': True}))
    check_eq(st, 202, f'the batch: {body}')
    batch = body['batch']
    fail, nested, after, cb = [j['id'] for j in body['jobs']]
    wait_for(lambda: db.row(cb, 'state')[0], 30, 'the callback done', until=lambda s: s == 'done')
    st, page = c.api('GET', f'/v1/jobs/{fail}')
    check_eq((st, page['state'], page['attempts']), (200, 'dead', 2), 'the failed row')
    errs = page['attempt_errors']
    check_eq([(e['attempt'], e['error']) for e in errs],
             [(1, 'pipe_echo: failing as asked'), (2, 'pipe_echo: failing as asked')],
             'each failed attempt and its error')
    check(errs[0]['failed_at'] < errs[1]['failed_at'], f'oldest first, with times: {errs}')
    check_eq([(x['id'], x['state'], x['on_dead']) for x in page['children']],
             [(after, 'done', 'run'), (cb, 'done', 'run')], 'the rows that waited for it')
    check_eq((page['batch']['id'], page['batch']['size'], page['batch']['dead'],
              page['batch']['done'], page['batch']['callback_id']),
             (batch, 3, 1, 2, cb), 'its batch')
    st, page = c.api('GET', f'/v1/jobs/{nested}')
    check_eq((page['state'], page['attempt_errors'], page['result']), ('done', [], 'finished'),
             'a row that ran once: no errors, its result')
    check(isinstance(page['progress'], dict) and page['progress'].get('n', 0) >= 1,
          f'its last progress: {page["progress"]}')
    st, page = c.api('GET', f'/v1/jobs/{after}')
    check_eq([(x['id'], x['state']) for x in page['parents']],
             [(fail, 'dead'), (nested, 'done')], 'the rows it waited for, and their states')
    check_eq((page['waiting_for'], [x['id'] for x in page['children']], page['batch']['id']),
             (0, [cb], batch), 'waits for none now, the callback waits for it, the same batch')
    # claimctl job: the same, as text.
    r = c.ctl('job', str(fail))
    check_eq(r.returncode, 0, f'claimctl job: {r.stderr}')
    lines = r.stdout.splitlines()
    check_eq(len([x for x in lines if re.match(r'attempt [12] +\S+Z pipe_echo: failing as asked$',
                                               x)]), 2, f'two attempt lines: {r.stdout}')
    check(any(x.startswith('waited by') and f'{after} done' in x for x in lines),
          f'the rows that wait for it: {r.stdout}')
    check(any(x.startswith('batch') and f'{batch}: 3 rows' in x for x in lines),
          f'its batch: {r.stdout}')
    r = c.ctl('job', str(nested))
    check(re.search(r'^result_text +"finished"$', r.stdout, re.M), f'the result: {r.stdout}')
    # The errors go with their row.
    check_eq(c.ctl('cancel', str(fail)).returncode, 0, 'the dead row deleted')
    check_eq(db.scalar(f'SELECT COUNT(*) FROM attempt_errors WHERE item_id = {fail}'), '0',
             "the deleted row's attempt errors")
    check_eq(c.stop(), 0, 'claimd exit code')


def it_keeps_the_newest_twenty_errors_of_a_row(t):
    db = t.database()
    item = db.insert_item('fail', max_attempts=25)
    db.execute("INSERT INTO queues (name, retry_base_ms, retry_max_ms, retry_jitter_pct) "
               "VALUES ('default', 1, 5, 0)")
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--retry-base', '1ms', '--handler', spec)
    wait_for(lambda: db.row(item, 'state')[0], 30, 'dead after 25 attempts',
             until=lambda s: s == 'dead')
    got = [int(a) for (a,) in db.sql(f'SELECT attempt FROM attempt_errors WHERE item_id = {item} '
                                     'ORDER BY failed_at')]
    check_eq(got, list(range(6, 26)), 'the attempts kept')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
