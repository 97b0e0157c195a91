#!/usr/bin/env python3
"""The schema's versions: claimd refuses a database whose schema is older than it needs and
says what to run; claimd --migrate applies what is missing, in order, keeping the rows (also
on a database made before migrations existed); claimd --doctor reports the set-up and the
privileges claimd's user lacks; a server that is not MariaDB 10.6 or later is named as
unsupported."""

import os
import subprocess

import harness
from harness import CLAIMD_BIN, check, check_eq, wait_for
from test_cli import run_claimd

# The migrations, by name ("001_base"), in order: what --migrate applies to an empty database.
NAMES = [os.path.splitext(os.path.basename(p))[0] for p in harness.MIGRATIONS]


def _empty_db(t, name):
    server = harness.shared_server()
    db = f't_{name}_{os.getpid()}'
    server.sql(f'DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`')
    t.defer(server.sql, f'DROP DATABASE IF EXISTS `{db}`')
    return server, db, server.dsn(db)


def _migrate(t, dsn):
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout, r.stderr


def it_refuses_an_old_schema_and_migrates_it(t):
    server, db, dsn = _empty_db(t, 'migrate')
    rc, _, err, left = run_claimd(t, ['--dsn', dsn, '--handler', 'noop'])
    check(rc == 2 and 'schema is version 0' in err and 'claimd --migrate' in err,
          f'an empty database: {rc} {err!r}')
    check_eq(left, [], 'processes left')
    rc, out, err = _migrate(t, dsn)
    check_eq((rc, out.splitlines()), (0, [f'applied migration {m}' for m in NAMES]),
             f'claimd --migrate ({err})')
    rc, out, _ = _migrate(t, dsn)
    check(rc == 0 and 'nothing to do' in out, f'again: {out!r}')
    c = t.claimd(None, '--workers', '1', '--handler', 'noop', dsn=dsn)
    c.wait_ready()
    check_eq(c.stop(), 0, 'claimd runs on the migrated schema')


def it_migrates_an_older_database_keeping_its_rows(t):
    server, db, dsn = _empty_db(t, 'older')
    server.load(db, harness.MIGRATIONS[0])
    server.sql("INSERT INTO work_items (payload) VALUES ('kept 1'), ('kept 2')", db=db)
    rc, _, err, _ = run_claimd(t, ['--dsn', dsn, '--handler', 'noop'])
    check(rc == 2 and f'version 1, this claimd needs version {len(NAMES)}' in err,
          f'at version 1: {err!r}')
    rc, out, err = _migrate(t, dsn)
    check_eq((rc, out.splitlines()), (0, [f'applied migration {m}' for m in NAMES[1:]]),
             f'--migrate ({err})')
    check_eq(server.sql('SELECT payload, result FROM work_items ORDER BY id', db=db),
             [('kept 1', None), ('kept 2', None)], 'the rows, with the new column')
    # A database from before migrations: the tables, but no claimd_schema.
    server.sql('DROP TABLE claimd_schema', db=db)
    rc, _, err, _ = run_claimd(t, ['--dsn', dsn, '--handler', 'noop'])
    check(rc == 2 and 'version 0' in err, f'before migrations: {err!r}')
    rc, out, err = _migrate(t, dsn)
    check_eq(rc, 0, f'--migrate from before migrations ({err})')
    check_eq(server.sql('SELECT COUNT(*) FROM work_items', db=db), [('2',)], 'rows kept')
    check_eq(server.sql('SELECT version FROM claimd_schema ORDER BY version', db=db),
             [(str(i + 1),) for i in range(len(NAMES))], 'the versions recorded')


def it_keeps_who_claimed_a_row_and_when_through_migration_12(t):
    """Migration 12 moves claimed_by and claimed_at into columns every row is born with at
    their size (claim_worker, claim_time) and makes them generated: the values read the
    same, NULL where never claimed (in any session time zone), and a claim writes its worker
    padded to the row's width, so that the row keeps its size."""
    server, db, dsn = _empty_db(t, 'claim12')
    for path in harness.MIGRATIONS[:11]:
        server.load(db, path)
    long_name = 'h' * 40 + '/w3:1234567'
    server.sql("SET time_zone = '+00:00'; INSERT INTO work_items (payload, state, attempts, "
               "claimed_by, claimed_at, visible_at) VALUES "
               "('short', 'claimed', 1, 'vm/w0:123', '2026-01-02 03:04:05.678901', NULL), "
               f"('long', 'done', 1, '{long_name}', '2026-01-02 03:04:06', NULL), "
               "('never', 'ready', 0, NULL, NULL, NOW(6))", db=db)
    rc, out, err = _migrate(t, dsn)
    check_eq((rc, out.splitlines()), (0, [f'applied migration {m}' for m in NAMES[11:]]),
             f'--migrate from version 11 ({err})')
    read = ("SELECT payload, IFNULL(claimed_by, '-'), IFNULL(claimed_at, '-'), "
            "CHAR_LENGTH(claim_worker) FROM work_items ORDER BY id")
    want = [('short', 'vm/w0:123', '2026-01-02 03:04:05.678901', '32'),
            ('long', long_name, '2026-01-02 03:04:06.000000', str(len(long_name))),
            ('never', '-', '-', '32')]
    check_eq(server.sql("SET time_zone = '+00:00'; " + read, db=db), want, 'after migration 12')
    check_eq(server.sql("SET time_zone = '-07:00'; SELECT COUNT(*) FROM work_items "
                        "WHERE claimed_at IS NULL OR claimed_by IS NULL", db=db), [('1',)],
             'rows never claimed, read in another time zone')
    ncols, hidden = server.sql("SELECT COUNT(*), SUM(EXTRA LIKE '%INVISIBLE%') FROM "
                               "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                               "AND TABLE_NAME = 'work_items'", db=db)[0]
    check_eq((hidden, len(server.sql('SELECT * FROM work_items LIMIT 1', db=db)[0])),
             ('2', int(ncols) - 2), 'invisible columns; the columns SELECT * shows')
    rc, out, err = _migrate(t, dsn)
    check(rc == 0 and 'nothing to do' in out, f'again: {out!r}')
    server.load(db, harness.MIGRATIONS[11])   # by hand, a second time: idempotent
    check_eq(server.sql("SET time_zone = '+00:00'; " + read, db=db), want, 'loaded again')
    c = t.claimd(None, '--workers', '1', '--handler', 'noop', dsn=dsn)
    wait_for(lambda: server.sql("SELECT state FROM work_items WHERE payload = 'never'",
                                db=db)[0][0], 10, 'the ready row done', until=lambda s: s == 'done')
    check_eq(c.stop(), 0, 'claimd exit code')
    by, width, recent = server.sql(
        "SELECT claimed_by, CHAR_LENGTH(claim_worker), claimed_at > NOW(6) - INTERVAL 1 MINUTE "
        "FROM work_items WHERE payload = 'never'", db=db)[0]
    check('/w0:' in by and by == by.rstrip(), f'claimed_by of the claimed row: {by!r}')
    check_eq((width, recent), ('32', '1'), 'claim_worker kept its width; claimed_at is now')


def it_doctor_reports_the_set_up_and_missing_privileges(t):
    db = t.database()
    r = subprocess.run([CLAIMD_BIN, '--doctor', '--dsn', db.dsn,
                        '--control', os.path.join(t.tmpdir, 'none.sock')],
                       capture_output=True, text=True, timeout=60)
    check_eq(r.returncode, 0, f'doctor on a good set-up: {r.stdout}')
    for want in ('ok   connected to the database', f'ok   the schema is version {len(NAMES)}',
                 'ok   every privilege claimd uses', 'isolation level of claimd',
                 'frees its rows after 10 s (idle_transaction_timeout)',
                 'binary log:', 'clock: the server is', 'no claimd answers on the control'):
        check(want in r.stdout, f'doctor says {want!r}: {r.stdout}')
    # A user that may only read.
    user = f'ro_{os.getpid()}'
    db.server.sql(f"CREATE USER IF NOT EXISTS {user}@localhost IDENTIFIED BY 'ro-pass';"
                  f"GRANT SELECT ON `{db.name}`.* TO {user}@localhost")
    t.defer(db.server.sql, f'DROP USER IF EXISTS {user}@localhost')
    sock = db.dsn.split('socket=', 1)[1]
    r = subprocess.run([CLAIMD_BIN, '--doctor', '--dsn',
                        f'mysql://{user}@localhost/{db.name}?socket={sock}',
                        '--control', os.path.join(t.tmpdir, 'none.sock')],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, CLAIMD_DB_PASSWORD='ro-pass'))
    check(r.returncode == 1 and 'FAIL privileges missing: INSERT on work_items' in r.stdout,
          f'doctor with a read-only user: {r.stdout}')


def it_works_with_the_grants_the_readme_lists(t):
    server, db, _ = _empty_db(t, 'grants')
    readme = open(os.path.join(harness.SOURCE_ROOT, 'README.md')).read()
    grants = [line.split(';')[0] for line in readme.splitlines() if line.startswith('GRANT ')]
    check_eq(len(grants), 3, 'the README lists the two users\' grants, and the optional one')
    users = {}
    for line in grants:
        name = line.split("TO '", 1)[1].split("'", 1)[0]
        user = f'{name}_{os.getpid()}'
        privs, on = line.split(' ON ', 1)[0], line.split(' ON ', 1)[1].split(' TO ', 1)[0]
        on = on.replace('mydb.*', f'`{db}`.*')
        server.sql(f"CREATE USER IF NOT EXISTS {user}@localhost IDENTIFIED BY 'pw';"
                   f"{privs} ON {on} TO {user}@localhost")
        t.defer(server.sql, f'DROP USER IF EXISTS {user}@localhost')
        sock = server.dsn(db).split('socket=', 1)[1]
        users[name] = f'mysql://{user}@localhost/{db}?socket={sock}'
    env = dict(os.environ, CLAIMD_DB_PASSWORD='pw')
    r = subprocess.run([CLAIMD_BIN, '--migrate', '--dsn', users['admin']], capture_output=True,
                       text=True, timeout=60, env=env)
    check_eq(r.returncode, 0, f'--migrate as the README admin: {r.stderr}')
    r = subprocess.run([CLAIMD_BIN, '--doctor', '--dsn', users['claimd'], '--control',
                        os.path.join(t.tmpdir, 'none.sock')], capture_output=True, text=True,
                       timeout=60, env=env)
    check(r.returncode == 0 and 'ok   every privilege' in r.stdout,
          f'--doctor as the README claimd user: {r.stdout}')
    # With the optional grant, that user's claimd is woken by the binary log.
    c = t.claimd(None, '--workers', '1', '--handler', 'noop', dsn=users['claimd'], env=env)
    c.wait_ready(workers=1)
    wait_for(lambda: c.status().get('wake'), 15, 'woken by the binary log',
             until=lambda w: w == 'binlog')
    check_eq(c.stop(), 0, 'claimd as the README claimd user')


def it_names_a_server_it_does_not_support(t):
    """A server that says it is MySQL 8.0.36, then MariaDB 10.5 (a MariaDB started with
    version=...): --migrate and --doctor stop at once with exit 2 and say what the server is and
    what claimd supports; so does claimd at start. Nothing is created."""
    server = t.private_server(env={'CLAIMD_DB_EXTRA': 'version=8.0.36'})
    for version, says in (('8.0.36', "the server is not MariaDB (version '8.0.36'"),
                          ('10.5.99-MariaDB', 'the server is MariaDB 10.5.99-MariaDB, older than '
                                              '10.6')):
        if version != '8.0.36':
            r = subprocess.run([harness.TOOLS_DB, 'restart', server.dir], capture_output=True,
                               text=True, timeout=120,
                               env=dict(os.environ, CLAIMD_DB_EXTRA=f'version={version}'))
            check_eq(r.returncode, 0, f'restart as {version}: {r.stderr}')
        check_eq(server.sql('SELECT VERSION()')[0][0], version, "the server's version")
        server.sql('DROP DATABASE IF EXISTS fresh; CREATE DATABASE fresh')
        dsn = server.dsn('fresh')
        rc, out, err = _migrate(t, dsn)
        check(rc == 2 and says in err and 'claimd supports MariaDB 10.6 or later' in err,
              f'--migrate on {version}: {rc} {err!r}')
        check_eq(server.sql("SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                            "TABLE_SCHEMA = 'fresh'"), [('0',)], 'tables made')
        r = subprocess.run([CLAIMD_BIN, '--doctor', '--dsn', dsn, '--control',
                            os.path.join(t.tmpdir, 'none.sock')], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 2 and f'FAIL unsupported server: {says}' in r.stdout and
              'schema' not in r.stdout, f'--doctor on {version}: {r.returncode} {r.stdout!r}')
        rc, _, err, left = run_claimd(t, ['--dsn', dsn, '--handler', 'noop'])
        check(rc == 2 and says in err, f'claimd on {version}: {rc} {err!r}')
        check_eq(left, [], 'processes left')


if __name__ == '__main__':
    harness.main()
