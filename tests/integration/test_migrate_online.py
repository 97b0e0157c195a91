#!/usr/bin/env python3
"""Upgrading a busy table: claimd --migrate from the oldest released schema (OLD's: migrations
001 and 002) to this tree's, whatever migrations it has, on a million rows, while an
application inserts a row every 10 ms through its own session and the old claimd (OLD, built
from git as tools/bench --baseline builds it) drains the ready rows. It completes (after the
old claimd is stopped where migration 012 asks for it), no insert waits a second, every row is
there and runs, and the schema is the one a new database gets. Then the stops: a --migrate
killed (SIGKILL) in the middle of a long step, a statement it left running on the server,
a second --migrate beside a running one, a lock it waits for, and a SIGINT that ends the
statement on the server: each run after goes on to the end."""

import os
import signal
import subprocess
import sys
import threading
import time

import harness
from harness import CLAIMD_BIN, check, check_eq, wait_for

sys.path.insert(0, os.path.join(harness.SOURCE_ROOT, 'tools'))
from benchlib import baseline  # noqa: E402  (tools/ is not a package on the path)

OLD = '3a278d9'            # the release before last: its schema is the oldest --migrate upgrades
DONE_ROWS = 1_000_000
READY_ROWS = 50_000
INSERT_EVERY = 0.010
INSERT_WAIT_MAX = 1.0      # what an insert may wait, at most, while the schema changes


def _old(t):
    """OLD's claimd and schema, built once per build directory (tools/benchlib/baseline.py)."""
    out = os.path.join(os.path.dirname(os.path.abspath(CLAIMD_BIN)), 'test-migrate-old')
    t0 = time.monotonic()
    try:
        old = baseline.build(out, OLD)
    except baseline.BenchError as e:
        harness.fail(f'building claimd {OLD} (a full clone is needed): {e}')
    t.note(f'claimd {OLD} built (or found built) in {time.monotonic() - t0:.0f} s')
    return old


def _old_database(t, old, name):
    server = harness.shared_server()
    db = f't_{name}_{os.getpid()}'
    server.sql(f'DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`')
    t.defer(server.sql, f'DROP DATABASE IF EXISTS `{db}`')
    for f in sorted(os.listdir(old.migrations)):
        server.load(db, os.path.join(old.migrations, f))
    check_eq(server.sql('SELECT MAX(version) FROM claimd_schema', db=db), [('2',)],
             f'the schema of {OLD}')
    return server, db


def _fill(t, server, db, done, ready):
    """done rows finished an hour ago (claimed by a worker, with all their times) and ready
    ones, by INSERT ... SELECT from a sequence. The insert trigger (which leaves a done row's
    visible_at NULL) is set aside meanwhile: it costs half the time, per row."""
    t0 = time.monotonic()
    trigger = server.sql('SHOW CREATE TRIGGER work_items_bi', db=db)[0][2]
    server.sql('DROP TRIGGER work_items_bi', db=db)
    server.sql("INSERT INTO work_items (payload, state, attempts, claim_token, claimed_by, "
               "claimed_at, finished_at, run_at, created_at) SELECT CONCAT('done-', seq), "
               "'done', 1, 1, CONCAT('oldhost/w', seq % 4, ':', 1000 + seq % 4), "
               "NOW(6) - INTERVAL 3600 - seq / 1000 SECOND, NOW(6) - INTERVAL 3599 - seq / 1000 "
               "SECOND, NOW(6) - INTERVAL 3601 - seq / 1000 SECOND, NOW(6) - INTERVAL 3601 - "
               f"seq / 1000 SECOND FROM seq_1_to_{done}", db=db, timeout=600)
    server.sql(f"INSERT INTO work_items (payload, visible_at) SELECT 'ready', NOW(6) "
               f"FROM seq_1_to_{ready}", db=db, timeout=600)
    server.sql(f'DELIMITER //\n{trigger}//\nDELIMITER ;', db=db)
    t.note(f'{done} done and {ready} ready rows loaded in {time.monotonic() - t0:.0f} s')


def _done_rows_digest(server, db):
    """What the done rows hold, in numbers that do not depend on a session's zone."""
    return server.sql("SELECT COUNT(*), SUM(UNIX_TIMESTAMP(run_at)), SUM(UNIX_TIMESTAMP("
                      "claimed_at)), SUM(UNIX_TIMESTAMP(finished_at)), SUM(UNIX_TIMESTAMP("
                      "created_at)), COUNT(DISTINCT claimed_by), SUM(visible_at IS NULL) "
                      "FROM work_items WHERE payload LIKE 'done-%'", db=db, timeout=120)


def schema_of(server, db):
    """The tables' columns, indexes, CHECK constraints and triggers, as information_schema has
    them: two databases with the same schema read the same (key order aside)."""
    q = f"TABLE_SCHEMA = '{db}'"
    return {
        'columns': server.sql('SELECT TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE, '
                              'IS_NULLABLE, COLUMN_DEFAULT, EXTRA, GENERATION_EXPRESSION, '
                              f'COLUMN_COMMENT FROM information_schema.COLUMNS WHERE {q} '
                              'ORDER BY 1, 2'),
        'indexes': server.sql('SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, '
                              f'NON_UNIQUE FROM information_schema.STATISTICS WHERE {q} '
                              'ORDER BY 1, 2, 3'),
        'checks': server.sql('SELECT TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE FROM '
                             'information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = '
                             f"'{db}' ORDER BY 1, 2"),
        'triggers': server.sql('SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, EVENT_MANIPULATION, '
                               'ACTION_TIMING, ACTION_ORDER, MD5(ACTION_STATEMENT), SQL_MODE FROM '
                               f"information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = '{db}' "
                               'ORDER BY 1'),
        'tables': server.sql('SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM '
                             f'information_schema.TABLES WHERE {q} ORDER BY 1'),
    }


def _check_schema_is_new(t, server, db):
    fresh = f't_fresh_{os.getpid()}'
    server.sql(f'DROP DATABASE IF EXISTS `{fresh}`; CREATE DATABASE `{fresh}`')
    t.defer(server.sql, f'DROP DATABASE IF EXISTS `{fresh}`')
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', server.dsn(fresh)], capture_output=True,
                       text=True, timeout=120)
    check_eq(r.returncode, 0, f'--migrate of an empty database: {r.stderr}')
    got, want = schema_of(server, db), schema_of(server, fresh)
    for part in want:
        check_eq(got[part], want[part], f'the upgraded schema\'s {part}, against a new one\'s')


class Inserter:
    """An application: a session of its own (the mariadb client), an INSERT every 10 ms (the
    next one as soon as the last is answered when that took longer), each timed from sending
    it to its answer."""

    def __init__(self, server, db):
        self.proc = subprocess.Popen(
            [harness._client_bin(), '--no-defaults', '--protocol=socket', '-S', server.socket,
             '-uroot', '--batch', '--skip-column-names', '--unbuffered', db],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            bufsize=1)
        self.waits, self.ids, self.error = [], {}, None
        self._stop = threading.Event()
        self._ask('SELECT 0, 0;')   # connected before the clock starts
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _ask(self, sql):
        self.proc.stdin.write(sql + '\n')
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def _run(self):
        n, due = 0, time.monotonic()
        try:
            while not self._stop.is_set():
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                n += 1
                t0 = time.monotonic()
                line = self._ask(f"INSERT INTO work_items (payload) VALUES ('app-{n}'); "
                                 f'SELECT {n}, LAST_INSERT_ID();')
                self.waits.append(time.monotonic() - t0)
                got = line.split()
                if len(got) != 2 or got[0] != str(n):
                    self.error = f'insert {n}: answered {line!r}: {self.proc.stderr.read()}'
                    return
                self.ids[n] = int(got[1])
                due = max(due + INSERT_EVERY, time.monotonic())
        except (OSError, ValueError) as e:
            self.error = f'insert {n}: {e}'

    def count(self):
        return len(self.ids)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=30)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=30)

    def stats(self):
        w = sorted(self.waits)
        pick = (lambda q: w[min(len(w) - 1, int(q * len(w)))] * 1000) if w else (lambda q: 0)
        return {'n': len(w), 'p50': pick(0.5), 'p99': pick(0.99), 'max': pick(1.0)}


class Migrate:
    """claimd --migrate in the background, its stderr read line by line as it comes."""

    def __init__(self, dsn, name='migrate'):
        self.name = name
        self.proc = subprocess.Popen([CLAIMD_BIN, '--migrate', '--dsn', dsn], text=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.started = time.monotonic()
        self.lines, self.out = [], ''
        self._err = threading.Thread(target=self._read, daemon=True)
        self._err.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip('\n'))

    def saw(self, text):
        return any(text in line for line in self.lines)

    def wait_line(self, text, timeout):
        return wait_for(lambda: self.saw(text) or self.proc.poll() is not None, timeout,
                        f'{self.name}: a line with {text!r}') and self.saw(text)

    def wait(self, timeout):
        """Its exit status (stdout, a few lines, in self.out; stderr's lines are the reader's)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            harness.fail(f'{self.name} still running after {timeout} s: {self.tail()}')
        self.out = self.proc.stdout.read()
        self._err.join(timeout=10)
        self.took = time.monotonic() - self.started
        return self.proc.returncode

    def tail(self, n=12):
        return '\n'.join(self.lines[-n:])


def _statements_left(server, db, marker='_m3'):
    """Statements of a migration still running on the server (of any session)."""
    return server.sql("SELECT ID, TIME, LEFT(INFO, 80) FROM information_schema.PROCESSLIST "
                      f"WHERE DB = '{db}' AND COMMAND = 'Query' AND INFO LIKE '%{marker}%' "
                      "AND INFO NOT LIKE '%PROCESSLIST%'")


def it_upgrades_a_busy_table_online(t):
    old = _old(t)
    server, db = _old_database(t, old, 'online')
    dsn = server.dsn(db)
    _fill(t, server, db, DONE_ROWS, READY_ROWS)
    before = _done_rows_digest(server, db)
    # The old claimd drains the ready rows at about 1000 a second (a start per ms: the queue's
    # rate limit), so that it still claims and finishes rows while the schema changes.
    server.sql("INSERT INTO queues (name, min_interval_ms) VALUES ('default', 1)", db=db)
    app = Inserter(server, db)
    t.defer(app.stop)
    oldd = t.claimd(None, '--workers', '2', '--handler', 'noop', dsn=dsn, binary=old.claimd,
                    name='claimd-old')
    wait_for(lambda: int(server.sql("SELECT COUNT(*) FROM work_items WHERE payload = 'ready' "
                                    "AND state = 'done'", db=db)[0][0]), 30,
             f'claimd {OLD} drains', until=lambda n: n >= 500)

    m = Migrate(dsn)
    rc = m.wait(600)
    t.note(f'--migrate with claimd {OLD} running: exit {rc} after {m.took:.1f} s; '
           f'{app.count()} rows inserted meanwhile')
    for line in m.lines:
        t.note('  ' + line)
    drained = int(server.sql("SELECT COUNT(*) FROM work_items WHERE payload = 'ready' AND "
                             "state = 'done'", db=db)[0][0])
    check(rc == 3 and 'claimd migration 12: claimd still runs on this database' in m.tail() and
          f'pid {oldd.pid}' in m.tail(), f'--migrate stops before 012 while claimd {OLD} runs, '
          f'naming it: exit {rc}: {m.tail()}')
    check('applied migration 011_job_browser' in m.out and '012' not in m.out,
          f'applied up to 011: {m.out}')
    check(oldd.running(), f'claimd {OLD} still runs: {oldd.log_tail()}')

    # What an operator does then: stop the old claimd, --migrate again, start the new one.
    t0 = time.monotonic()
    check_eq(oldd.stop(timeout=60), 0, f'claimd {OLD} stops')
    m2 = Migrate(dsn, 'migrate again')
    rc = m2.wait(120)
    check(rc == 0 and 'applied migration 012_claim_in_place' in m2.out,
          f'--migrate after the old claimd stopped: exit {rc}: {m2.out} {m2.tail()}')
    server.sql("UPDATE queues SET min_interval_ms = 0 WHERE name = 'default'", db=db)
    newd = t.claimd(None, '--workers', '2', '--handler', 'noop', dsn=dsn, name='claimd-new')
    newd.wait_ready(workers=2, timeout=30)
    t.note(f'no claimd for {time.monotonic() - t0:.1f} s (the second --migrate: '
           f'{m2.took:.1f} s); claimd {OLD} ran {drained} of the {READY_ROWS} ready rows')
    wait_for(lambda: int(server.sql("SELECT COUNT(*) FROM work_items WHERE payload LIKE "
                                    "'app-%' AND state = 'done'", db=db)[0][0]), 60,
             'the new claimd runs the application\'s rows', until=lambda n: n >= 100)
    app.stop()
    check(app.error is None, f'the application: {app.error}')
    wait_for(lambda: server.sql("SELECT COUNT(*) FROM work_items WHERE state <> 'done'",
                                db=db)[0][0], 120, 'every row done', until=lambda n: n == '0')
    check_eq(newd.stop(), 0, 'the new claimd stops')

    st = app.stats()
    t.note(f'{st["n"]} inserts, one every {INSERT_EVERY * 1000:.0f} ms: waited p50 '
           f'{st["p50"]:.1f} ms, p99 {st["p99"]:.1f} ms, max {st["max"]:.1f} ms')
    check(st['n'] > 1000, f'inserts made: {st["n"]}')
    check(st['max'] < INSERT_WAIT_MAX * 1000, f'an insert waited {st["max"]:.0f} ms')
    rows = {int(i): (p, st) for i, p, st in server.sql(
        "SELECT id, payload, state FROM work_items WHERE payload LIKE 'app-%'", db=db)}
    want = {i: (f'app-{n}', 'done') for n, i in app.ids.items()}
    check(rows == want, f'the application\'s {len(want)} rows, there and done: '
          f'{len(set(want) - set(rows))} missing, {len(set(rows) - set(want))} more, '
          f'{sum(1 for i in want if i in rows and rows[i] != want[i])} otherwise')
    check_eq(server.sql("SELECT COUNT(*), SUM(state = 'done') FROM work_items WHERE payload = "
                        "'ready'", db=db), [(str(READY_ROWS),) * 2], 'the ready rows, done')
    twice = server.sql("SELECT COUNT(*) FROM work_items WHERE payload NOT LIKE 'done-%' AND "
                       'attempts > 1', db=db)[0][0]
    check_eq(twice, '0', 'rows run more than once')
    check_eq(_done_rows_digest(server, db), before, 'the done rows, their times and claimers')
    errors = [line for line in oldd.log().splitlines() if 'error' in line.lower()]
    check_eq(errors, [], f'errors in the log of claimd {OLD}')
    _check_schema_is_new(t, server, db)


def _client(server, db, sql):
    """A session of its own (the mariadb client) running sql, in the background."""
    return subprocess.Popen([harness._client_bin(), '--no-defaults', '--protocol=socket', '-S',
                             server.socket, '-uroot', '--batch', db], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)


def _session_running(server, db, text):
    rows = server.sql("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = "
                      f"'{db}' AND INFO LIKE '{text}%'")
    return rows[0][0] if rows else None


def it_goes_on_after_a_kill_a_leftover_and_a_stop(t):
    old = _old(t)
    server, db = _old_database(t, old, 'stops')
    dsn = server.dsn(db)
    _fill(t, server, db, 300_000, 1000)
    before = _done_rows_digest(server, db)
    last = int(server.sql('SELECT MAX(id) FROM work_items', db=db)[0][0])

    # A --migrate killed in the middle of migration 3's long step, the copy of the times.
    m1 = Migrate(dsn, 'migrate 1')
    check(m1.wait_line('003_utc_times line', 120) and m1.wait_line('rows (', 120),
          f'the copy\'s progress: {m1.tail()}')
    m1.proc.kill()
    check_eq(m1.wait(30), -signal.SIGKILL, 'migrate 1 killed')
    copied, rows = map(int, server.sql('SELECT SUM(created_at_m3 <> FROM_UNIXTIME(1)), COUNT(*) '
                                       'FROM work_items', db=db)[0])
    t.note(f'killed after {m1.took:.1f} s, {copied} of {rows} rows copied')
    check(0 < copied < rows, f'killed in the middle of the copy: {copied} of {rows} rows')

    # What a migrating process that died leaves on the server: its session, holding the
    # migration lock, in a statement the server goes on with (here a long sleep). Made once
    # the server has ended migrate 1's own session (it goes on with its statement a while
    # after the kill, the lock held), so that the left-over session is the lock's holder.
    wait_for(lambda: server.sql("SELECT IS_FREE_LOCK(CONCAT('claimd.migrate.', "
                                "MD5(DATABASE())))", db=db)[0][0], 60,
             'the migration lock free after migrate 1', until=lambda v: v == '1')
    left = _client(server, db, '')
    left.stdin.write("SELECT GET_LOCK(CONCAT('claimd.migrate.', MD5(DATABASE())), 0), "
                     'SLEEP(600);\n')
    left.stdin.flush()
    t.defer(left.kill)
    left_id = wait_for(lambda: _session_running(server, db, 'SELECT GET_LOCK'), 10,
                       'the left-over session')

    m2 = Migrate(dsn, 'migrate 2')
    check(m2.wait_line(f'ended session {left_id}, which a claimd --migrate that is gone left '
                       'running', 60), f'the left-over statement ended: {m2.tail()}')
    check_eq(left.wait(30), 1, 'the left-over session\'s client, cut off')
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 1 and 'another claimd --migrate runs on this database' in r.stderr,
          f'a second --migrate beside it: {r.returncode} {r.stderr!r}')
    # An application's transaction takes the last row, which the copy comes to last, once the
    # copy runs (before, it would hold up the schema changes that come first).
    wait_for(lambda: _statements_left(server, db, 'created_at_m3 = FROM_UNIXTIME(1)'), 60,
             'the copy running again')
    holder = _client(server, db, '')
    holder.stdin.write(f'START TRANSACTION; SELECT id FROM work_items WHERE id = {last} '
                       'FOR UPDATE; SELECT SLEEP(600);\n')
    holder.stdin.flush()
    t.defer(holder.kill)
    holder_id = wait_for(lambda: _session_running(server, db, 'SELECT SLEEP(600)'), 10,
                         'the transaction holding a row')
    check(m2.wait_line('Lock wait timeout exceeded', 60) and
          m2.saw(f'the oldest open transaction: session {holder_id}'),
          f'the lock it waits for, and who holds it: {m2.tail()}')
    # Stopped while its statement waits (again, for up to 5 s): the statement ends at once, on
    # the server too.
    wait_for(lambda: server.sql("SELECT TIME_MS FROM information_schema.PROCESSLIST WHERE "
                                f"DB = '{db}' AND INFO LIKE '%created_at_m3%' AND "
                                "INFO NOT LIKE '%PROCESSLIST%'"), 30,
             'the copy waiting for the row again',
             until=lambda rows: rows and float(rows[0][0]) < 1000)
    t0 = time.monotonic()
    m2.proc.send_signal(signal.SIGINT)
    rc = m2.wait(30)
    took = time.monotonic() - t0
    left_over = _statements_left(server, db)
    t.note(f'SIGINT: exit {rc} {took:.2f} s after it; {m2.tail(2)}')
    check(rc == 1 and 'stopped in migration 003_utc_times' in m2.tail(),
          f'migrate 2 stopped: {rc} {m2.tail()}')
    check(took < 2.5, f'migrate 2 took {took:.1f} s to stop (its statement was waiting for a '
          'lock: it was not ended)')
    check_eq(left_over, [], 'statements of the migration still running on the server')
    holder.kill()
    holder.wait(10)

    m3 = Migrate(dsn, 'migrate 3')
    rc = m3.wait(300)
    check(rc == 0 and 'applied migration 003_utc_times' in m3.out and
          'applied migration 012_claim_in_place' in m3.out, f'migrate 3: {rc} {m3.out} {m3.tail()}')
    t.note(f'migrate 3, to the end: {m3.took:.1f} s')
    check_eq(_done_rows_digest(server, db), before, 'the done rows, their times and claimers')
    _check_schema_is_new(t, server, db)


if __name__ == '__main__':
    harness.main()
