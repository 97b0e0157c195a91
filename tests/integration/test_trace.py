#!/usr/bin/env python3
"""Trace context: a W3C traceparent given with an add (the HTTP POST's traceparent header, a
line of a batch, claimctl add --traceparent) is kept in the row, handed to every handler kind
(exec: TRACEPARENT in the environment, pipe: the request's "traceparent", so:
job->traceparent) and named in claimd's log lines about the row; one that is not a W3C
traceparent is ignored over HTTP (as the specification says) and refused by claimctl."""

import json

import harness
from harness import check, check_eq, wait_for

TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
TRACE_ID = TP[3:35]


def _done(db, ids):
    for i in ids:
        wait_for(lambda: db.row(i, 'state')[0], 20, f'row {i} finished',
                 until=lambda s: s in ('done', 'dead'))


def _result(db, i):
    r = db.row(i, 'result')[0]
    return json.loads(r) if r else None


def it_reaches_every_handler_kind_and_the_log(t):
    db = t.database()
    script = t.script('printf \'{"traceparent":"%s"}\' "${TRACEPARENT:-}"\n'
                      '[ "$(cat)" = fail ] && exit 3\nexit 0\n')
    _, pipe = t.pipe_echo('trace')
    _, so = t.plugin('ok')
    kinds = {'exec': f'exec:{script}', 'pipe': pipe, 'so': so}
    for kind, spec in kinds.items():
        db.execute('DELETE FROM work_items')
        args = ['--exec-result'] if kind == 'exec' else []
        c = t.claimd(db, '--workers', '1', '--handler', spec, '--http', '127.0.0.1:0', *args,
                     name=f'claimd-{kind}')
        c.wait_ready()
        st, one = c.api('POST', '/v1/queues/default/jobs', b'trace', headers={'traceparent': TP})
        check_eq(st, 202, f'{kind}: the add: {one}')
        st, bad = c.api('POST', '/v1/queues/default/jobs', b'trace',
                        headers={'traceparent': '00-' + '0' * 32 + '-00f067aa0ba902b7-01'})
        check_eq(st, 202, f'{kind}: an add with a traceparent that is not one')
        line = json.dumps({'payload': 'trace'}).encode() + b'\n' + \
            json.dumps({'payload': 'trace', 'traceparent': TP.replace('-01', '-00')}).encode()
        st, batch = c.api('POST', '/v1/queues/default/jobs:batch', line + b'\n',
                          headers={'traceparent': TP})
        check_eq(st, 202, f'{kind}: the batch: {batch}')
        ids = [one['id'], bad['id']] + [j['id'] for j in batch['jobs']]
        _done(db, ids)
        got = [(_result(db, i) or {}).get('traceparent') or None for i in ids]
        check_eq(got, [TP, None, TP, TP.replace('-01', '-00')],
                 f'{kind}: the traceparent each run saw')
        st, job = c.api('GET', f"/v1/jobs/{one['id']}")
        check_eq((st, job['traceparent']), (200, TP), f'{kind}: GET /v1/jobs/ID')
        c.stop()
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items WHERE traceparent IS NULL'), '1',
             'rows without one: the one whose header was not a traceparent')


def it_names_the_trace_in_log_lines_and_claimctl_checks_it(t):
    db = t.database()
    _, so = t.plugin('ok')
    c = t.claimd(db, '--workers', '1', '--handler', so, '--log-items')
    c.wait_ready()
    r = c.ctl('add', '--traceparent', TP, '--max-attempts', '1', 'fail')
    check_eq(r.returncode, 0, f'claimctl add --traceparent: {r.stderr.strip()}')
    i = int(r.stdout.strip())
    _done(db, [i])
    lines = [l for l in c.log().splitlines() if f'item id={i} ' in l]
    check(any('failed' in l and f'trace={TRACE_ID}' in l for l in lines),
          f'the failure logged with its trace id: {lines}')
    check(any('outcome=dead' in l and f'trace={TRACE_ID}' in l for l in lines),
          f'the outcome logged with its trace id: {lines}')
    r = c.ctl('add', '--traceparent', 'ff-' + TP[3:], 'x')
    check(r.returncode != 0 and 'not a W3C traceparent' in r.stderr,
          f'a bad traceparent refused: {r.stderr.strip()}')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
