#!/usr/bin/env python3
"""Schedules (cron with time zones): a row per tick, once, with two supervisors racing for
every tick; missed ticks by each catch_up policy; expressions and zones refused with why, from
claimctl and from plain SQL; claimctl and the HTTP API to add, list, pause, resume, replace and
delete them."""

import datetime
import json
import os
import re
import shutil
import time
import urllib.request
from zoneinfo import ZoneInfo

import harness
from harness import check, check_eq, wait_for


def _two(t, db, *args):
    # Schedules written with plain SQL are read at each maintenance pass.
    sups = [t.claimd(db, '--workers', '1', '--handler', 'noop', '--maintenance-interval', '2s',
                     *args, name=f'claimd{i}')
            for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    return sups


def _rows_of(db, payload):
    """run_at (UTC, as 'YYYY-MM-DD HH:MM:SS') of the rows a schedule with this payload added."""
    return [r[0] for r in db.sql(
        "SELECT DATE_FORMAT(run_at, '%Y-%m-%d %H:%i:%s') FROM work_items "
        f"WHERE payload = '{payload}' ORDER BY run_at, id")]


def _schedule(db, name):
    rows = db.sql("SELECT cron, time_zone, COALESCE(DATE_FORMAT(next_tick_at, "
                  "'%Y-%m-%d %H:%i:%s'), ''), ticks, COALESCE(error, ''), "
                  f"COALESCE(last_item_id, 0) FROM schedules WHERE name = '{name}'")
    check_eq(len(rows), 1, f'schedule {name} rows')
    cron, zone, nxt, ticks, error, last = rows[0]
    return {'cron': cron, 'zone': zone, 'next': nxt, 'ticks': int(ticks), 'error': error,
            'last_item_id': int(last)}


def it_adds_the_row_of_a_tick_once_with_two_supervisors(t):
    db = t.database()
    sups = _two(t, db)
    r = sups[0].ctl('schedule', 'every-minute', '--cron', '* * * * *', '--queue', 'ticks',
                    'tick')
    check_eq((r.returncode, r.stdout.strip()), (0, 'schedule every-minute added'),
             'claimctl schedule')
    # The next tick is the next minute, read by a supervisor within a second.
    s = wait_for(lambda: _schedule(db, 'every-minute'), 5, 'next_tick_at set',
                 until=lambda s: s['next'])
    nxt = datetime.datetime.strptime(s['next'], '%Y-%m-%d %H:%M:%S')
    check_eq((nxt.second, nxt.microsecond), (0, 0), 'the next tick is on a minute')
    # The tick passes: its row, on the minute, added once (many ticks raced by three
    # supervisors: it_never_adds_a_tick_twice_when_supervisors_race).
    wait_for(lambda: _rows_of(db, 'tick'), 70, 'the row of the tick', until=lambda r: len(r) >= 1)
    time.sleep(1.5)
    rows = _rows_of(db, 'tick')
    check_eq(rows[:1], [s['next']], "the tick's row, on the minute")
    check_eq(len(rows), len(set(rows)), 'rows added twice for a tick')
    s2 = _schedule(db, 'every-minute')
    check(s2['next'] > s['next'], f"the next tick moved on: {s2['next']}")
    check_eq(int(db.scalar("SELECT COUNT(DISTINCT queue) FROM work_items WHERE payload = "
                           "'tick' AND queue = 'ticks'")), 1, 'the rows are in the queue ticks')
    after = _schedule(db, 'every-minute')
    check_eq(after['ticks'], len(rows), 'the schedule counts its ticks')
    check(after['last_item_id'] == int(db.scalar("SELECT MAX(id) FROM work_items WHERE "
                                                   "payload = 'tick'")), 'last_item_id')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_gives_missed_ticks_what_catch_up_says(t):
    db = t.database()
    # Yearly schedules last run at the start of 2020: the ticks of 2021 .. this year missed.
    year = datetime.datetime.now(datetime.timezone.utc).year
    for policy in ('one', 'all', 'none'):
        db.execute("INSERT INTO schedules (name, cron, catch_up, payload, next_tick_at) VALUES "
                   f"('{policy}', '0 0 1 1 *', '{policy}', '{policy}', '2020-01-01 00:00:00')")
    # A tick a few seconds ago is not missed, even for 'none'.
    db.execute("INSERT INTO schedules (name, cron, catch_up, payload, next_tick_at) VALUES "
               "('recent', '* * * * *', 'none', 'recent', "
               "FROM_UNIXTIME(UNIX_TIMESTAMP() DIV 60 * 60))")
    sups = _two(t, db)
    wait_for(lambda: _schedule(db, 'all')['ticks'], 10, 'the catch-up', until=lambda n: n > 0)
    wait_for(lambda: _schedule(db, 'one')['ticks'], 10, 'the catch-up', until=lambda n: n > 0)
    time.sleep(1.0)
    every = [f'{y}-01-01 00:00:00' for y in range(2020, year + 1)]
    check_eq(_rows_of(db, 'all'), every, "catch_up all: a row a missed tick")
    check_eq(_rows_of(db, 'one'), [every[-1]], "catch_up one: one row, the last tick's")
    check_eq(_rows_of(db, 'none'), [], "catch_up none: no row for ticks missed long ago")
    check_eq(len(_rows_of(db, 'recent')), 1, "catch_up none: a tick a moment ago still runs")
    for name in ('one', 'all', 'none'):
        check_eq(_schedule(db, name)['next'], f'{year + 1}-01-01 00:00:00',
                 f'{name}: the next tick')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_never_adds_a_tick_twice_when_supervisors_race(t):
    db = t.database()
    # 40 schedules, each 30 minutes behind with catch_up all: 31 or so rows each, added by
    # whichever of three supervisors locks the schedule first.
    db.execute("INSERT INTO schedules (name, cron, catch_up, payload, next_tick_at) "
               "SELECT CONCAT('s', seq), '* * * * *', 'all', CONCAT('s', seq), "
               "FROM_UNIXTIME(UNIX_TIMESTAMP() DIV 60 * 60 - 1800) FROM seq_1_to_40")
    start = int(db.scalar("SELECT UNIX_TIMESTAMP() DIV 60 * 60 - 1800"))
    sups = [t.claimd(db, '--workers', '1', '--handler', 'noop', name=f'claimd{i}')
            for i in (1, 2, 3)]
    for c in sups:
        c.wait_ready()
    wait_for(lambda: int(db.scalar("SELECT COUNT(*) FROM schedules WHERE ticks >= 31")), 30,
             'every schedule caught up', until=lambda n: n == 40)
    time.sleep(1.0)
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    bad = []
    for i in range(1, 41):
        rows = _rows_of(db, f's{i}')
        stamps = [int(datetime.datetime.strptime(r, '%Y-%m-%d %H:%M:%S').replace(
            tzinfo=datetime.timezone.utc).timestamp()) for r in rows]
        want = list(range(start, start + 60 * len(stamps), 60))
        if stamps != want or _schedule(db, f's{i}')['ticks'] != len(rows):
            bad.append((i, rows[:3], len(rows)))
    check_eq(bad, [], 'schedules whose ticks were not each added exactly once, in order')
    logs = ''.join(c.log() for c in sups)
    check('row' in logs and 'added for' in logs, 'the supervisors log the rows they added')


def it_refuses_what_it_cannot_run_and_says_why(t):
    db = t.database()
    sups = _two(t, db)
    c = sups[0]
    r = c.ctl('schedule', 'bad', '--cron', '61 * * * *', 'x')
    check(r.returncode != 0 and "minute field '61'" in r.stderr,
          f'a bad minute refused with why: {r.returncode} {r.stderr!r}')
    r = c.ctl('schedule', 'bad', '--cron', '0 3 * * *', '--tz', 'Mars/Olympus_Mons', 'x')
    check(r.returncode != 0 and "no time zone 'Mars/Olympus_Mons'" in r.stderr,
          f'an unknown zone refused with why: {r.stderr!r}')
    r = c.ctl('schedule', 'bad', '--cron', '0 0 30 2 *', 'x')
    check(r.returncode != 0 and 'never fires' in r.stderr, f'February 30th: {r.stderr!r}')
    r = c.ctl('schedule', 'bad', '--cron', '0 3 * * *', '--catch-up', 'some', 'x')
    check(r.returncode != 0 and 'catch_up' in r.stderr, f'a bad catch-up: {r.stderr!r}')
    check_eq(int(db.scalar('SELECT COUNT(*) FROM schedules')), 0, 'schedules written')
    # Plain SQL cannot be checked before it is written: the supervisors say why in the row.
    db.execute("INSERT INTO schedules (name, cron, time_zone) VALUES "
               "('sql-bad', '0 25 * * *', 'UTC'), ('sql-zone', '0 3 * * *', 'Nowhere/City')")
    wait_for(lambda: _schedule(db, 'sql-bad')['error'], 15, 'the error of a bad expression')
    wait_for(lambda: _schedule(db, 'sql-zone')['error'], 15, 'the error of a bad zone')
    check("hour field '25'" in _schedule(db, 'sql-bad')['error'], 'why, in the row')
    r = c.ctl('schedules')
    check(r.returncode == 0 and 'sql-bad' in r.stdout and "hour field '25'" in r.stdout,
          f'claimctl schedules shows why: {r.stdout!r}')
    # Fixing the expression clears the error and the schedule runs.
    db.execute("UPDATE schedules SET cron = '0 23 * * *' WHERE name = 'sql-bad'")
    s = wait_for(lambda: _schedule(db, 'sql-bad'), 15, 'the fixed schedule read',
                 until=lambda s: s['next'] and not s['error'])
    check(s['next'].endswith('23:00:00'), f'its next tick: {s["next"]}')
    for c in sups:
        check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_retries_a_zone_it_cannot_read_for_now(t):
    db = t.database()
    # A zone directory of the test's own: Test/Zone is a symbolic link to itself, which
    # open() refuses with ELOOP. That is not "no such zone" nor "not a zone file": the
    # schedule waits, not refused, and runs once the file reads.
    tzdir = os.path.join(t.tmpdir, 'zoneinfo')
    os.makedirs(os.path.join(tzdir, 'Test'))
    zone = os.path.join(tzdir, 'Test', 'Zone')
    os.symlink('Zone', zone)
    db.execute("INSERT INTO schedules (name, cron, time_zone, payload, next_tick_at) VALUES "
               "('blocked', '* * * * *', 'Test/Zone', 'blocked', NOW() - INTERVAL 10 MINUTE), "
               "('utc', '* * * * *', 'UTC', 'utc', NOW() - INTERVAL 10 MINUTE)")
    c = t.claimd(db, '--workers', '1', '--handler', 'noop',
                 env=dict(os.environ, TZDIR=tzdir))
    c.wait_ready()
    # The schedule of another zone is not held up by the one that waits.
    wait_for(lambda: _schedule(db, 'utc')['ticks'], 10, 'the UTC schedule fires',
             until=lambda n: n > 0)
    time.sleep(2.5)   # a few retries, each failing
    s = _schedule(db, 'blocked')
    check_eq((s['error'], s['ticks']), ('', 0), 'the schedule waits, with no error set')
    log = c.log()
    check('Test/Zone' in log and 'symbolic links' in log and 'trying again' in log,
          f'the log says which zone, why, and that it tries again: {c.log_tail(5)!r}')
    # The zone reads again: the schedule runs (its missed ticks as catch_up one says).
    os.unlink(zone)
    shutil.copy('/usr/share/zoneinfo/Europe/Berlin', zone)
    s = wait_for(lambda: _schedule(db, 'blocked'), 30, 'the schedule fires once the zone reads',
                 until=lambda s: s['ticks'] > 0)
    check_eq((s['error'], len(_rows_of(db, 'blocked'))), ('', 1),
             'one row for the missed ticks, no error')
    check(s['next'] > datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M:%S'),
          f"its next tick is ahead: {s['next']}")
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_is_managed_over_http_and_claimctl(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0')
    cron = urllib.request.quote('30 2 * * *')
    st, body = c.api('PUT', f'/v1/schedules/nightly?cron={cron}&tz=Europe/Berlin'
                    '&queue=reports&max_attempts=3', b'{"report":"daily"}')
    check_eq(st, 201, f'PUT a new schedule: {body}')
    check_eq((body['name'], body['cron'], body['time_zone'], body['queue'], body['max_attempts'],
              body['payload'], body['catch_up'], body['paused']),
             ('nightly', '30 2 * * *', 'Europe/Berlin', 'reports', 3, '{"report":"daily"}',
              'one', False), 'the schedule as the PUT answers it')
    # Its next tick: the next 02:30 on Berlin's clock, in UTC.
    berlin = ZoneInfo('Europe/Berlin')
    now = datetime.datetime.now(berlin)
    want = now.replace(hour=2, minute=30, second=0, microsecond=0)
    if want <= now:
        want = (now + datetime.timedelta(days=1)).replace(hour=2, minute=30, second=0,
                                                          microsecond=0)
    want_utc = want.astimezone(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S')
    body = wait_for(lambda: c.api('GET', '/v1/schedules/nightly')[1], 10,
                    'next_tick_at', until=lambda b: b.get('next_tick_at'))
    check(body['next_tick_at'].startswith(want_utc), f"next tick {body['next_tick_at']}, want "
          f"{want_utc}Z (02:30 in Berlin)")
    st, body = c.api('PUT', f'/v1/schedules/nightly?cron={cron}&tz=UTC', b'x')
    check_eq((st, body['time_zone']), (200, 'UTC'), 'PUT again replaces')
    st, body = c.api('POST', '/v1/schedules/nightly/pause')
    check_eq((st, body), (200, {'schedule': 'nightly', 'paused': True}), 'pause over HTTP')
    r = c.ctl('schedules', '--json')
    lst = json.loads(r.stdout)
    check_eq([(s['name'], s['paused']) for s in lst], [('nightly', True)], 'claimctl schedules')
    r = c.ctl('resume', '--schedule', 'nightly')
    check_eq((r.returncode, r.stdout.strip()), (0, 'schedule nightly resumed'),
             'claimctl resume --schedule')
    st, body = c.api('GET', '/v1/schedules')
    check_eq((st, [s['paused'] for s in body]), (200, [False]), 'GET /v1/schedules')
    st, body = c.api('PUT', '/v1/schedules/x?cron=nope', b'')
    check_eq(st, 400, f'a bad expression over HTTP: {body}')
    # A page at a time, by name, with a next link (and claimctl --after).
    for name in ('p-a', 'p-b', 'p-c', 'p-d'):
        check_eq(c.ctl('schedule', name, '--cron', '@daily', 'x').returncode, 0, f'schedule {name}')
    pages, path = [], '/v1/schedules?limit=2'
    while path and len(pages) < 5:
        got = {}
        st, body = c.api('GET', path, answer_headers=got)
        check_eq(st, 200, f'GET {path}: {body}')
        pages.append([s['name'] for s in body])
        m = re.match(r'<([^>]+)>; rel="next"$', got.get('Link', ''))
        path = m.group(1) if m else None
    check_eq(pages, [['nightly', 'p-a'], ['p-b', 'p-c'], ['p-d']], 'the pages, by their Link')
    r = c.ctl('schedules', '--after', 'p-a', '--limit', '2', '--json')
    check_eq([s['name'] for s in json.loads(r.stdout)], ['p-b', 'p-c'], 'claimctl schedules --after')
    for name in ('p-a', 'p-b', 'p-c', 'p-d'):
        c.ctl('unschedule', name)
    st, _ = c.api('DELETE', '/v1/schedules/nightly')
    check_eq(st, 200, 'DELETE')
    st, _ = c.api('GET', '/v1/schedules/nightly')
    check_eq(st, 404, 'GET after DELETE')
    r = c.ctl('unschedule', 'nightly')
    check(r.returncode != 0 and 'no schedule' in r.stderr, 'unschedule of none')
    r = c.ctl('pause', '--schedule', 'nope')
    check(r.returncode != 0 and "no schedule 'nope'" in r.stderr, 'pause of none')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
