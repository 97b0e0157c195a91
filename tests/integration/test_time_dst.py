#!/usr/bin/env python3
"""Changes of daylight saving time on the database server: a private MariaDB whose default
time zone is Europe/Berlin (its tables loaded from Debian's tzdata) and whose clock, moved by
libfaketime, crosses the spring change (2026-03-29 02:00 -> 03:00) and then the autumn one
(2026-10-25 03:00 -> 02:00) while claimd works. Across each, with claimd's sessions in UTC and
the times TIMESTAMPs, nothing moves by an hour: a row running across the change with a lease
shorter than its run is not claimed again, a delayed row starts on time, a failed row's back-off
lasts as long as it should, and the lease of a row whose supervisor was killed ends when it
should. Also: migration 3 reads the old DATETIME values in the server's zone."""

import glob
import os
import signal
import subprocess
import time

import harness
from harness import CLAIMD_BIN, check, check_eq, wait_for

ZONE = 'Europe/Berlin'
# The changes, in UTC: Berlin's clocks go 02:00 -> 03:00 and 03:00 -> 02:00.
SPRING = 1774746000   # 2026-03-29 01:00:00 UTC
AUTUMN = 1792890000   # 2026-10-25 01:00:00 UTC
LEAD = 24             # the scenario starts this many seconds before the change

# "hold N": sleep N s on the first attempt only; "fail-once": fail the first attempt.
HANDLER = r'''
case "$payload" in
hold\ *) [ "$CLAIMD_ATTEMPT" != 1 ] || sleep "${payload#hold }" ;;
fail-once) [ "$CLAIMD_ATTEMPT" != 1 ] || rc=1 ;;
esac
'''


def _libfaketime():
    found = sorted(glob.glob('/usr/lib/*/faketime/libfaketimeMT.so.1'))
    if found:
        return found[0]
    if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
        harness.fail('libfaketime is not installed (tools/setup-debian installs it)')
    raise harness.Skip('libfaketime is not installed (apt-get install libfaketime)')


class FakeClock:
    """The server's clock: real time plus an offset, which the test sets in libfaketime's
    file (re-read every second)."""

    def __init__(self, t):
        self.path = os.path.join(t.tmpdir, 'faketime')
        self.offset = 0
        self.set(0)

    def set(self, offset):
        self.offset = int(offset)
        with open(self.path + '.new', 'w') as f:
            f.write(f'{self.offset:+d}\n')
        os.replace(self.path + '.new', self.path)

    def env(self):
        return (f'LD_PRELOAD={_libfaketime()} FAKETIME_TIMESTAMP_FILE={self.path} '
                'FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1 TZ=UTC')

    def move_to(self, server, at):
        """From now on the server's clock reads the unix time `at` (and goes on from there)."""
        self.set(at - time.time())
        wait_for(lambda: float(server.sql('SELECT UNIX_TIMESTAMP(NOW(6))')[0][0]), 10,
                 'the server to take the new time', until=lambda v: abs(v - time.time() - self.offset) < 1)

    def real(self, server_time):
        """The host's (real) time at which the server's clock reads server_time."""
        return server_time - self.offset


def _server(t, clock=None):
    env = {'CLAIMD_DB_TZ': ZONE}
    if clock:
        env['CLAIMD_DB_ENV'] = clock.env()
    server = t.private_server(env=env)
    check_eq(server.sql('SELECT @@global.time_zone')[0][0], ZONE, "the server's time zone")
    return server


def _sleep_until(real_t):
    dt = real_t - time.time()
    if dt > 0:
        time.sleep(dt)


def _across(t, server, clock, change, name):
    """One change of the server's clock, LEAD seconds from now, with claimd working."""
    db = t.database(server)
    h = t.log_handler(HANDLER, name=f'{name}_handler')
    # A: one worker and a 6 s lease (renewed every 2 s) for a row that runs across the change.
    # C: one worker and a 9 s lease (renewed every 3 s) for a row whose supervisor is killed.
    a = t.claimd(db, '--workers', '1', '--queue', 'a', '--lease', '6s', '--handler', h.spec,
                 name=f'{name}_a')
    c = t.claimd(db, '--workers', '1', '--queue', 'c', '--lease', '9s', '--handler', h.spec,
                 name=f'{name}_c')
    a.wait_ready()
    c.wait_ready()
    clock.move_to(server, change - LEAD)
    at = lambda s: clock.real(change + s)  # noqa: E731 - the real time of change + s
    check_eq(db.scalar("SELECT DATE_FORMAT(NOW(), '%H')"), '01' if change == SPRING else '02',
             'the hour by the server, before the change')
    across = db.insert_item(f'hold {int(at(6) - time.time())}', queue="'a'")
    orphan = db.insert_item('hold 60', queue="'c'")
    wait_for(lambda: h.starts(across) and h.starts(orphan), 10, 'A and C to start their rows')
    # B claims from every queue, polling every 100 ms: whatever may be claimed, it claims.
    b = t.claimd(db, '--workers', '3', '--queue', 'a', '--queue', 'b', '--queue', 'c',
                 '--wake', 'poll', '--poll-interval', '100ms', '--retry-base', '10s',
                 '--handler', h.spec, name=f'{name}_b')
    b.wait_ready()
    check(time.time() < at(-7), f'{name}: set up {time.time() - at(-7):.1f} s late')
    _sleep_until(at(-6))
    r = b.ctl('add', '--queue', 'b', '--delay', '12s', 'sleep 0')
    added = time.time()
    check_eq(r.returncode, 0, f'claimctl add --delay: {r.stderr}')
    delayed = int(r.stdout)
    _sleep_until(at(-5))
    failing = db.insert_item('fail-once', queue="'b'")
    _sleep_until(at(-4))
    c.send(signal.SIGKILL)
    killed = time.time()
    t.note(f'{name}: the change at real {at(0):.1f}; delayed row added at {added - at(0):+.1f} s, '
           f'C killed at {killed - at(0):+.1f} s')
    # Everything has happened 12 s after the change; with an hour's error, nothing has.
    try:
        wait_for(lambda: len(h.ends(across)) == 1 and h.starts(delayed) and
                 len(h.starts(failing)) == 2 and len(h.starts(orphan)) == 2,
                 at(14) - time.time() + 6, f'{name}: every row run as due')
    except harness.WaitTimeout as e:
        t.note(str(e))
    check_eq(db.scalar("SELECT DATE_FORMAT(NOW(), '%H')"), '03' if change == SPRING else '02',
             'the hour by the server, after the change')
    problems = []

    def want(ok, what):
        t.note(f'{name}: {what}')
        if not ok:
            problems.append(f'{name}: {what}')

    # The row running across the change ran once, by A: its renewed lease never looked expired.
    starts = h.starts(across)
    want(len(starts) == 1 and db.row(across, 'state, attempts') == ('done', '1'),
         'the row running across the change (lease 6 s) started at ' +
         ', '.join(f'{e.time - at(0):+.1f} s' for e in starts) + ' (want once)')
    # The delayed row: 12 s after it was added, not at the change nor an hour later.
    late = [e.time - added for e in h.starts(delayed)]
    want(len(late) == 1 and 11.5 <= late[0] <= 14.5, 'the row delayed 12 s started ' +
         (f'{late[0]:.2f} s after its add' if late else 'never'))
    # The back-off: 10 s +-25 % after the failure.
    ends, again = h.ends(failing), [e for e in h.starts(failing) if e.attempt == 2]
    waited = again[0].time - ends[0].time if ends and again else None
    want(waited is not None and 7.3 <= waited <= 15, 'the row backed off 10 s +-25 % ran again ' +
         (f'{waited:.2f} s after failing' if waited is not None else 'never'))
    # The killed supervisor's row: its lease (9 s from the last renewal, at most 3 s before
    # the kill) ends 6-9 s after the kill.
    taken = [e.time - killed for e in h.starts(orphan)[1:]]
    want(len(taken) == 1 and 5.7 <= taken[0] <= 11.5, "the killed supervisor's row (lease 9 s) "
         'was claimed again ' + (f'{taken[0]:.2f} s after the kill' if taken else 'never'))
    for x in (a, b):
        check_eq(x.stop(), 0, f'{x.name} stops')
    c.kill_all()
    return problems


def it_keeps_leases_delays_and_back_offs_across_both_changes(t):
    clock = FakeClock(t)
    server = _server(t, clock)
    problems = _across(t, server, clock, SPRING, 'spring')
    problems += _across(t, server, clock, AUTUMN, 'autumn')
    check(not problems, '; '.join(problems))


def it_migrates_times_written_in_the_servers_zone(t):
    server = _server(t)
    db = f't_migrate_zone_{os.getpid()}'
    server.sql(f'CREATE DATABASE `{db}`')
    for path in harness.MIGRATIONS[:2]:
        server.load(db, path)
    # As claimd before migration 3 wrote them: DATETIMEs in the server's zone (Berlin).
    server.sql("INSERT INTO work_items (id, payload, run_at, created_at) VALUES "
               "(1, 'summer', '2026-07-01 12:00:00', '2026-07-01 11:00:00'), "
               "(2, 'winter', '2026-01-15 12:00:00.5', '2026-01-15 11:00:00'), "
               "(3, 'skipped hour', '2026-03-29 02:30:00', '2026-03-29 01:30:00'), "
               "(4, 'repeated hour', '2026-10-25 02:30:00', '2026-10-25 01:30:00')", db=db)
    server.sql("INSERT INTO work_items (id, payload, run_at) VALUES (5, 'far', '2040-01-01')",
               db=db)
    dsn = server.dsn(db)
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 1 and '(ids 5)' in r.stderr and '2038-01-19' in r.stderr,
          f'a row past 2038 stops the migration: {r.returncode} {r.stderr!r}')
    check_eq(server.sql("SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
                        f"'{db}' AND COLUMN_NAME = 'run_at'")[0][0], 'datetime',
             'nothing changed')
    server.sql('DELETE FROM work_items WHERE id = 5', db=db)
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=120)
    check_eq((r.returncode, r.stdout.splitlines()[:1]), (0, ['applied migration 003_utc_times']),
             f'--migrate ({r.stderr})')
    want = [('1', '2026-07-01 10:00:00.000000', '2026-07-01 09:00:00.000000'),
            ('2', '2026-01-15 11:00:00.500000', '2026-01-15 10:00:00.000000'),
            ('3', '2026-03-29 01:00:00.000000', '2026-03-29 00:30:00.000000'),
            ('4', '2026-10-25 00:30:00.000000', '2026-10-24 23:30:00.000000')]
    got = server.sql("SET time_zone = '+00:00'; SELECT id, run_at, created_at FROM work_items "
                     'ORDER BY id', db=db)
    check_eq(got, want, 'the times in UTC')
    # Again: nothing moves.
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0 and 'nothing to do' in r.stdout, f'again: {r.stdout!r}')
    server.load(db, harness.MIGRATIONS[2])
    check_eq(server.sql("SET time_zone = '+00:00'; SELECT id, run_at, created_at FROM "
                        'work_items ORDER BY id', db=db), want, 'migration 3 loaded again')
    server.sql(f'DROP DATABASE `{db}`')


if __name__ == '__main__':
    harness.main()
