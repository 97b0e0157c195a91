#!/usr/bin/env python3
"""A queue's own retry back-off (queues.retry_base_ms, retry_max_ms, retry_jitter_pct; claimctl
backoff, POST /v1/queues/NAME/backoff): a failed row of each queue waits by its queue's base,
doubling, capped by its max, exactly with jitter 0; a queue without settings takes --retry-base
+-25 %; a change through another supervisor applies to the rows claimed after it; bad values
are refused with a message and change nothing."""

import json
import re
import time
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, wait_for

SLACK_MS = 150   # the claim to the failure: a so: plugin fails at once, the outcome is written


def _waits(db, ids, until_dead):
    """Poll the rows until those in until_dead are dead: {(id, attempts): wait_ms}, the wait
    each failure set (visible_at - claimed_at, by the database's clock), read while the row
    waits to run again."""
    seen = {}

    def probe():
        for i, state, attempts, wait in db.sql(
                'SELECT id, state, attempts, TIMESTAMPDIFF(MICROSECOND, claimed_at, visible_at) '
                f'/ 1000 FROM work_items WHERE id IN ({",".join(map(str, ids))})'):
            if state == 'ready' and wait is not None and int(attempts) > 0:
                seen[(int(i), int(attempts))] = float(wait)
        return db.sql('SELECT COUNT(*) FROM work_items WHERE state = "dead" AND id IN '
                      f'({",".join(map(str, until_dead))})')[0][0] == str(len(until_dead))

    wait_for(probe, 20, f'rows {until_dead} dead', interval=0.02)
    return seen


def _check_wait(seen, key, lo, hi, what):
    check(key in seen, f'{what}: the wait after attempt {key[1]} of row {key[0]} was not seen '
          f'({seen})')
    check(lo <= seen[key] <= hi, f'{what}: waited {seen[key]:.0f} ms after attempt {key[1]}, '
          f'want {lo:.0f}..{hi:.0f} ms')


def it_spaces_each_queues_retries_by_its_own_backoff(t):
    db = t.database()
    _, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '2', '--handler', spec, '--retry-base', '5s',
                 '--queue', 'fast', '--queue', 'slow', '--queue', 'plain',
                 '--poll-interval', '20ms')
    c.wait_ready(workers=2)
    r = c.ctl('backoff', 'fast', '--base', '250ms', '--max', '600ms', '--jitter', '0')
    check_eq((r.returncode, r.stdout), (0, 'queue fast retry_base_ms 250 retry_max_ms 600 '
                                           'retry_jitter_pct 0\n'), f'claimctl backoff ({r.stderr})')
    r = c.ctl('backoff', 'slow', '--base', '700ms', '--jitter', '0')
    check_eq((r.returncode, r.stdout), (0, 'queue slow retry_base_ms 700 retry_max_ms - '
                                           'retry_jitter_pct 0\n'), f'claimctl backoff ({r.stderr})')
    # One statement: the first waits are over before a second could be made.
    fast, slow, plain = db.insert_items(3, payload="'fail'", queue="ELT(seq, 'fast', 'slow', 'plain')",
                                        max_attempts='ELT(seq, 4, 3, 2)')
    seen = _waits(db, [fast, slow, plain], [fast, slow])
    t.note(f'waits: {seen}')
    # fast: 250, 500, then 1000 capped to 600; slow: 700, 1400 (its max: claimd's 1 h).
    for attempt, want in ((1, 250), (2, 500), (3, 600)):
        _check_wait(seen, (fast, attempt), want, want + SLACK_MS, 'queue fast')
    for attempt, want in ((1, 700), (2, 1400)):
        _check_wait(seen, (slow, attempt), want, want + SLACK_MS, 'queue slow')
    # No settings: --retry-base 5s +-25 %.
    _check_wait(seen, (plain, 1), 3750, 6250 + SLACK_MS, 'queue plain (no settings)')
    check_eq(db.row(fast, 'state, attempts')[:2], ('dead', '4'), 'the fast row at the end')
    r = c.ctl('queues')
    lines = r.stdout.splitlines()
    cols = lines[0].split() if lines else []
    rows = {ln.split()[0]: '/'.join(ln.split()[cols.index(k)] for k in
                                    ('RETRY_BASE_MS', 'RETRY_MAX_MS', 'JITTER_PCT'))
            for ln in lines[1:]} if 'JITTER_PCT' in cols else {}
    check_eq((rows.get('fast'), rows.get('slow'), rows.get('plain')),
             ('250/600/0', '700/-/0', '-/-/-'), f'claimctl queues: {r.stdout}')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def _post(c, path):
    req = urllib.request.Request(c.url + path, data=b'', method='POST',
                                 headers={'Authorization': f'Bearer {c.token}'})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _http_claimd(t, db, *args, name):
    c = t.claimd(db, '--http', '127.0.0.1:0', *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                 f'{name}: the http listening line')
    c.url = m.group(1)
    c.token = c.http_token()
    return c


def it_applies_a_change_made_through_another_supervisor(t):
    """Supervisor b (which does not serve the queue) sets it over HTTP and then with
    claimctl; supervisor a's next claims use each setting at once."""
    db = t.database()
    _, spec = t.plugin('ok')
    a = t.claimd(db, '--workers', '1', '--handler', spec, '--queue', 'q',
                 '--poll-interval', '20ms', name='a')
    b = _http_claimd(t, db, '--workers', '1', '--handler', 'noop', '--queue', 'other', name='b')
    a.wait_ready(workers=1)
    status, body = _post(b, '/v1/queues/q/backoff?base=300ms&jitter=0')
    check_eq((status, body), (200, {'queue': 'q', 'retry_base_ms': 300, 'retry_max_ms': None,
                                    'retry_jitter_pct': 0}), 'POST /v1/queues/q/backoff')
    one = db.insert_item('fail', queue="'q'", max_attempts=2)
    seen = _waits(db, [one], [one])
    _check_wait(seen, (one, 1), 300, 300 + SLACK_MS, 'set over HTTP on b')

    r = b.ctl('backoff', 'q', '--base', '1.2s')
    check_eq(r.returncode, 0, f'claimctl backoff on b: {r.stderr}')
    changed = time.monotonic()
    two = db.insert_item('fail', queue="'q'", max_attempts=2)
    seen = _waits(db, [two], [two])
    _check_wait(seen, (two, 1), 1200, 1200 + SLACK_MS, 'set with claimctl on b')
    check(time.monotonic() - changed < 5, 'the change took effect on a within seconds')

    status, body = _post(b, '/v1/queues/q/backoff?reset=1')
    check_eq((status, body), (200, {'queue': 'q', 'retry_base_ms': None, 'retry_max_ms': None,
                                    'retry_jitter_pct': None}), 'reset over HTTP')
    status, body = _post(b, '/v1/queues/q/backoff?base=2s')
    check_eq(status, 200, f'POST base=2s: {body}')
    req = urllib.request.Request(b.url + '/v1/queues', headers={'Authorization': f'Bearer {b.token}'})
    with urllib.request.urlopen(req, timeout=20) as r:
        qs = {q['name']: q for q in json.loads(r.read())}
    check_eq((qs['q']['retry_base_ms'], qs['q']['retry_max_ms'], qs['q']['retry_jitter_pct']),
             (2000, None, None), 'GET /v1/queues shows the settings')
    for c in (a, b):
        check_eq(c.stop(), 0, f'{c.name} exit code after SIGTERM')


def it_refuses_bad_backoff_values(t):
    db = t.database()
    c = _http_claimd(t, db, '--workers', '1', '--handler', 'noop', name='c')
    r = c.ctl('backoff', 'q', '--base', '2s', '--max', '10s', '--jitter', '10')
    check_eq(r.returncode, 0, f'good values: {r.stderr}')
    settings = lambda: db.sql('SELECT retry_base_ms, retry_max_ms, retry_jitter_pct FROM queues '
                              "WHERE name = 'q'")
    kept = [('2000', '10000', '10')]
    check_eq(settings(), kept, 'the settings')
    bad = [
        (('--base', '-1s'), "'-1s' is not a duration"),
        (('--jitter', '101'), '--jitter must be a whole number from 0 to 100'),
        (('--jitter', '0.5'), '--jitter must be a whole number from 0 to 100'),
        (('--base', '0'), '--base must be a whole number from 1 to 604800000'),
        (('--max', '200h'), '--max must be a whole number from 1 to 604800000'),
        (('--base', '1m', '--max', '1s'), 'the maximum (1000 ms) is below the base (60000 ms)'),
        (('--max', '1s'), "retry_max_range: queue 'q': the maximum would be below the base"),
        (('--base', '11s'), "retry_max_range: queue 'q': the maximum would be below the base"),
        (('--reset', '--jitter', '1'), 'or --reset alone'),
        ((), 'backoff takes --base DUR, --max DUR and/or --jitter PCT, or --reset alone'),
    ]
    for args, says in bad:
        r = c.ctl('backoff', 'q', *args)
        check(r.returncode != 0 and says in r.stderr,
              f'claimctl backoff q {" ".join(args)}: exit {r.returncode}, {r.stderr!r}, want {says!r}')
    for name, says in (('a\tb', 'NAME has a control character'),
                       ('x' * 65, 'must be 1 to 64 bytes')):
        r = c.ctl('backoff', name, '--base', '1s')
        check(r.returncode != 0 and says in r.stderr, f'queue {name!r}: {r.stderr!r}')
    status, body = _post(c, '/v1/queues/q/backoff?jitter=150')
    check(status == 400 and 'jitter must be a whole number from 0 to 100' in body.get('error', ''),
          f'HTTP jitter=150: {status} {body}')
    check_eq(settings(), kept, 'the settings after the refusals')
    # SQL is held to the same ranges by the table's constraints.
    for sql in ("UPDATE queues SET retry_jitter_pct = 101 WHERE name = 'q'",
                "UPDATE queues SET retry_max_ms = 1000 WHERE name = 'q'"):
        try:
            db.execute(sql)
        except RuntimeError as e:
            check('CONSTRAINT' in str(e), f'{sql}: {e}')
        else:
            harness.fail(f'{sql}: accepted')
    check_eq(settings(), kept, 'the settings after refused SQL')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
