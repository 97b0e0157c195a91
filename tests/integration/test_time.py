#!/usr/bin/env python3
"""Times in and out of claimd: a run_at given to claimctl add or the HTTP API is UTC unless it
names its offset (RFC 3339); one outside the TIMESTAMP's range (past 2038-01-19 03:14:07 UTC)
is refused with the range named, by claimd and by the insert trigger (also where sql_mode is
not strict); a job's times come back as RFC 3339 UTC with a Z; an application whose session is
in another zone gets the delay it wrote."""

import re

import harness
from harness import check, check_eq
from test_http import _http_claimd, _req

UTC = "SET time_zone = '+00:00'; "


def it_reads_run_at_in_utc_or_at_its_offset(t):
    db = t.database()
    c = _http_claimd(t, db, '--queue', 'later', workers=1)
    c.wait_ready()
    cases = [('2030-01-02 03:04:05', '2030-01-02 03:04:05.000000'),
             ('2030-01-02T03:04:05.25Z', '2030-01-02 03:04:05.250000'),
             ('2030-01-02T05:04:05+02:00', '2030-01-02 03:04:05.000000'),
             ('2030-01-01T22:34:05-04:30', '2030-01-02 03:04:05.000000'),
             ('2038-01-19T03:14:07Z', '2038-01-19 03:14:07.000000')]
    for given, want in cases:
        r = c.ctl('add', '--queue', 'later', '--run-at', given, 'x')
        check_eq(r.returncode, 0, f'claimctl add --run-at {given!r}: {r.stderr.strip()}')
        check_eq(db.sql(UTC + f'SELECT run_at FROM work_items WHERE id = {int(r.stdout)}'),
                 [(want,)], f'run_at of --run-at {given!r}, in UTC')
        q = given.replace(' ', '%20').replace('+', '%2B').replace(':', '%3A')
        st, _, body = _req(c, 'POST', f'/v1/queues/later/jobs?run_at={q}', 'y')
        check_eq(st, 202, f'POST run_at={given!r}: {body!r}')
        check_eq(db.sql(UTC + f'SELECT run_at FROM work_items WHERE id = {body["id"]}'),
                 [(want,)], f'run_at of HTTP run_at={given!r}, in UTC')
    # A job's times: RFC 3339, UTC, with a Z.
    st, _, job = _req(c, 'GET', f'/v1/jobs/{body["id"]}')
    check_eq(st, 200, 'GET the job')
    check_eq(job['run_at'], '2038-01-19T03:14:07.000000Z', 'run_at as the API shows it')
    check(re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z', job['created_at']),
          f'created_at: {job["created_at"]!r}')
    check_eq(job['claimed_at'], None, 'claimed_at of a row never claimed')
    r = c.ctl('job', str(body['id']), '--json')
    check_eq(r.returncode, 0, f'claimctl job: {r.stderr}')
    check('"run_at":"2038-01-19T03:14:07.000000Z"' in r.stdout.replace(' ', ''),
          f'claimctl job --json: {r.stdout!r}')
    n = db.scalar('SELECT COUNT(*) FROM work_items')
    # Past the range, before it, and not a time: refused (claimctl: a bad command line, exit
    # 2), nothing written.
    for given, words in [('2038-01-19T03:14:08Z', '2038-01-19T03:14:07Z'),
                         ('2040-06-01 00:00:00', 'outside'),
                         ('2038-01-19T05:14:08+02:00', 'outside'),
                         ('1969-12-31T23:59:59Z', 'outside'),
                         ('2030-02-30 00:00:00', 'not a date'),
                         ('2030-01-02 03:04:05+2', 'RFC 3339')]:
        r = c.ctl('add', '--queue', 'later', '--run-at', given, 'x')
        check(r.returncode == 2 and words in r.stderr and 'run_at' in r.stderr,
              f'claimctl add --run-at {given!r}: {r.returncode} {r.stderr!r}')
        q = given.replace(' ', '%20').replace('+', '%2B').replace(':', '%3A')
        st, _, body = _req(c, 'POST', f'/v1/queues/later/jobs?run_at={q}', 'y')
        check(st == 400 and words in body['error'], f'POST run_at={given!r}: {st} {body!r}')
    st, _, body = _req(c, 'POST', '/v1/queues/later/jobs:batch',
                       '{"payload": 1}\n{"payload": 2, "run_at": "2050-01-01T00:00:00Z"}\n')
    check(st == 400 and 'outside' in body['error'], f'a batch with a run_at past 2038: {st} {body!r}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), n, 'rows written by refused adds')
    check_eq(c.stop(), 0, 'claimd stops')


def it_refuses_a_run_at_out_of_range_in_sql(t):
    db = t.database()
    for mode in ('', 'STRICT_TRANS_TABLES'):
        try:
            db.execute(f"SET sql_mode = '{mode}'; "
                       "INSERT INTO work_items (payload, run_at) VALUES ('far', '2040-01-01')")
            harness.fail(f'sql_mode {mode!r}: a run_at in 2040 was inserted')
        except RuntimeError as e:
            check('out of range' in str(e) or 'Incorrect datetime' in str(e),
                  f'sql_mode {mode!r}: {e}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), '0', 'rows')


def it_gives_a_session_in_another_zone_its_delay(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    # An application in UTC+05:00 and one in UTC-08:00 write "in five minutes" by their clocks.
    for zone in ('+05:00', '-08:00'):
        db.execute(f"SET time_zone = '{zone}'; INSERT INTO work_items (payload, run_at) "
                   f"VALUES ('{zone}', NOW(6) + INTERVAL 5 MINUTE)")
    for zone, secs in db.sql("SELECT payload, TIMESTAMPDIFF(SECOND, NOW(6), run_at) FROM "
                             "work_items"):
        check(295 <= int(secs) <= 300, f'a row written in {zone} is due in {secs} s, want 300')
    check_eq(db.states()['ready'], 2, 'the rows wait')
    check_eq(c.stop(), 0, 'claimd stops')


if __name__ == '__main__':
    harness.main()
