#!/usr/bin/env python3
"""Batches and graphs through the HTTP API (POST /v1/queues/Q/jobs:batch): a batch's callback
runs once, after every member finished (done or dead), and reads their counts; lines that name
each other run in order; a graph is written all or nothing (a cycle, an unknown ref: 400 and
no row); GET /v1/batches/ID, its event stream, claimctl batch and batches."""

import json
import urllib.request

import harness
from harness import check, check_eq, runs_of, wait_for


def _http(t, db, h, name):
    c = t.claimd(db, '--workers', '2', '--concurrency', '3', '--handler', h.spec, '--http',
                 '127.0.0.1:0', name=name)
    c.url, c.token = c.http_url(), c.http_token()
    return c


def _lines(*objs):
    return ''.join(json.dumps(o) + '\n' for o in objs).encode()


def it_runs_the_callback_once_after_every_member(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = fail ] && rc=3; sleep 0.0$((RANDOM % 3))')
    sups = [_http(t, db, h, f'claimd{i}') for i in (1, 2)]
    members = [{'payload': 'fail' if i % 7 == 3 else f'm{i}', 'max_attempts': 1}
               for i in range(30)]
    st, body = sups[0].api('POST', '/v1/queues/default/jobs:batch?batch=1&description=nightly',
                    _lines(*members, {'payload': 'callback', 'callback': True}))
    check_eq(st, 202, f'the batch: {body}')
    batch, ids = body['batch'], [j['id'] for j in body['jobs']]
    check_eq(len(ids), 31, 'ids, one a line')
    cb = ids[-1]
    wait_for(lambda: db.row(cb, 'state')[0], 30, 'the callback done', until=lambda s: s == 'done')
    runs = runs_of(h)
    check_eq(len(runs[cb]), 1, 'the callback ran once')
    last_member_end = max(r[1] for i in ids[:-1] for r in runs[i])
    check(runs[cb][0][0] >= last_member_end, 'the callback started before every member ended')
    st, b = sups[1].api('GET', f'/v1/batches/{batch}')
    fails = sum(1 for m in members if m['payload'] == 'fail')
    check_eq((st, b['size'], b['done'], b['dead'], b['ready'] + b['claimed'], b['finished'],
              b['callback_id'], b['callback_state'], b['description']),
             (200, 30, 30 - fails, fails, 0, True, cb, 'done', 'nightly'),
             'the batch as the other supervisor reads it')
    # What the callback's handler would read, with SQL.
    check_eq(db.sql(f'SELECT state, COUNT(*) FROM work_items WHERE batch_id = {batch} AND '
                    f'id <> {cb} GROUP BY state ORDER BY state'),
             [('done', str(30 - fails)), ('dead', str(fails))], 'the counts by SQL')
    r = sups[0].ctl('batch', str(batch))
    check(r.returncode == 0 and f'callback_id: {cb}' in r.stdout and 'finished: yes' in r.stdout,
          f'claimctl batch: {r.stdout!r} {r.stderr!r}')
    r = sups[0].ctl('batches', '--json')
    check_eq([b['id'] for b in json.loads(r.stdout)], [batch], 'claimctl batches')
    st, _ = sups[0].api('GET', '/v1/batches/999999')
    check_eq(st, 404, 'a batch that does not exist')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_runs_a_graph_in_order_and_writes_it_all_or_nothing(t):
    db = t.database()
    h = t.log_handler('sleep 0.1')
    c = _http(t, db, h, 'claimd')
    count = lambda: int(db.scalar('SELECT COUNT(*) FROM work_items'))  # noqa: E731
    for lines, why in (
            (_lines({'ref': 'a', 'after': ['b']}, {'ref': 'b', 'after': ['a']}), 'a cycle'),
            (_lines({'ref': 'a'}, {'after': ['nope']}), "no line has ref 'nope'"),
            (_lines({'ref': 'a'}, {'ref': 'a'}), "ref 'a' is another line's too"),
            (_lines({'callback': True}, {'callback': True}), 'one callback'),
            (_lines({'ref': 'a', 'dedupe': 'k'}), 'no dedupe key'),
            (_lines({'after': 'a'}), 'after must be')):
        st, body = c.api('POST', '/v1/queues/default/jobs:batch', lines)
        check(st == 400 and why in str(body), f'{why}: {st} {body}')
    check_eq(count(), 0, 'rows written by refused graphs')
    st, body = c.api('POST', '/v1/queues/default/jobs:batch', _lines(
        {'ref': 'load', 'payload': 'load', 'after': ['x', 'y']},
        {'ref': 'x', 'payload': 'x'}, {'ref': 'y', 'payload': 'y'},
        {'payload': 'report', 'after': ['load']}))
    check_eq((st, body['batch']), (202, None), f'a graph: {body}')
    ids = {j.get('ref', 'report'): j['id'] for j in body['jobs']}
    wait_for(db.states, 20, 'the graph done', until=lambda s: s['done'] == 4)
    runs = runs_of(h)
    check(runs[ids['load']][0][0] >= max(runs[ids['x']][0][1], runs[ids['y']][0][1]),
          'load before x and y ended')
    check(runs[ids['report']][0][0] >= runs[ids['load']][0][1], 'report before load ended')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_streams_a_batch_until_its_callback_ends(t):
    db = t.database()
    h = t.log_handler('sleep 0.2')
    c = _http(t, db, h, 'claimd')
    st, body = c.api('POST', '/v1/queues/default/jobs:batch?batch=1', _lines(
        *[{'payload': f'm{i}'} for i in range(8)], {'payload': 'cb', 'callback': True}))
    check_eq(st, 202, f'the batch {body}')
    req = urllib.request.Request(f"{c.url}/v1/batches/{body['batch']}/events",
                                 headers={'Authorization': f'Bearer {c.token}'})
    events = []
    with urllib.request.urlopen(req, timeout=30) as r:
        check_eq(r.headers.get('Content-Type'), 'text/event-stream', 'the stream type')
        for line in r:
            line = line.decode().rstrip('\n')
            if line.startswith('data: '):
                events.append(json.loads(line[6:]))
    check(len(events) >= 2, f'events while it ran: {len(events)}')
    check_eq((events[-1]['finished'], events[-1]['done'], events[-1]['callback_state']),
             (True, 8, 'done'), 'the last event: every member and the callback done')
    dones = [e['done'] for e in events]
    check_eq(dones, sorted(dones), 'the done count only grows')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
