"""The bench's MariaDB: a private server started with tools/db (or a Galera cluster with
tools/galera), one persistent mariadb client to it, and the rows' arithmetic."""

import os
import shutil
import subprocess
import time

from .common import ROOT, BenchError, log
from . import stats

TOOLS_DB = os.path.join(ROOT, 'tools', 'db')
TOOLS_GALERA = os.path.join(ROOT, 'tools', 'galera')
QUEUE = 'default'
# A loose index scan (a few lookups per priority), as claimd's own poll.
LIVE_ROW_SQL = ("SELECT MIN(visible_at) FROM work_items FORCE INDEX (claim_prio_idx) "
                "WHERE queue >= '%s' AND queue <= '%s' AND visible_at IS NOT NULL "
                "GROUP BY queue, priority LIMIT 1" % (QUEUE, QUEUE))
END = '__bench_end__'
LOAD_CHUNK = 500_000
# The user claimd connects as where its connections are counted (the I/O-bound section).
COUNTED_USER = 'claimd_bench'


class Sql:
    """One persistent `mariadb` client: statements go to its stdin, each followed by a marker
    SELECT so that the end of every answer is known. Each query() is 2 statements for the
    server's Questions counter."""

    def __init__(self, sock, errpath):
        client = shutil.which('mariadb') or shutil.which('mysql')
        if not client:
            raise BenchError('the mariadb client is not installed')
        self.errpath = errpath
        self.err = open(errpath, 'w')
        self.p = subprocess.Popen(
            [client, '--no-defaults', '--protocol=socket', '-S', sock, '-uroot',
             '--batch', '--skip-column-names', '--unbuffered', 'claimd'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True, bufsize=1)

    def query(self, stmt):
        """Rows of the last result of stmt (tuples of str; NULL is 'NULL')."""
        self.p.stdin.write(stmt.rstrip().rstrip(';') + ";\nSELECT '%s';\n" % END)
        self.p.stdin.flush()
        rows = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                self.err.flush()
                with open(self.errpath) as f:
                    raise BenchError('SQL failed: %s\n  in: %.300s' % (f.read().strip(), stmt))
            line = line.rstrip('\n')
            if line == END:
                return rows
            rows.append(tuple(line.split('\t')))

    def value(self, stmt):
        rows = self.query(stmt)
        return rows[0][0] if rows and rows[0] else None

    def status(self, name):
        rows = self.query("SHOW GLOBAL STATUS LIKE '%s'" % name)
        if not rows:
            raise BenchError('the server has no status variable %s' % name)
        return int(rows[0][1])

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        self.err.close()


class Db:
    """A private server started with tools/db; stopped at the end only if we started it."""

    def __init__(self, path, buffer_pool, keep):
        self.path = path
        self.buffer_pool = buffer_pool
        self.keep = keep
        self.started = False
        self.sql = None

    def run_tool(self, *args, env=None):
        return subprocess.run([TOOLS_DB, *args], check=True, capture_output=True, text=True,
                              env=env).stdout.strip()

    def start(self, out, binlog=True, row_image='MINIMAL'):
        self.out = out
        pid, running = self.server_pid(), False
        if pid:
            try:
                os.kill(pid, 0)
                running = True
            except OSError:
                pass
        env = dict(os.environ, CLAIMD_DB_BUFFER_POOL=self.buffer_pool,
                   CLAIMD_DB_BINLOG='on' if binlog else 'off', CLAIMD_DB_ROW_IMAGE=row_image)
        log('%s MariaDB in %s%s' % ('reusing the' if running else 'starting a private', self.path,
                                    ('' if row_image == 'MINIMAL' else ', row image ' + row_image)
                                    if binlog else ' without a binary log'))
        try:
            self.sock = self.run_tool('start', self.path, env=env)
        except subprocess.CalledProcessError as e:
            raise BenchError('tools/db start failed (%d): %s' % (e.returncode, e.stderr.strip()))
        self.started = not running
        self.dsn = self.run_tool('dsn', self.path)
        self.sql = Sql(self.sock, os.path.join(out, 'sql-client.err'))

    def restart(self, binlog, row_image='MINIMAL'):
        """Stop the server and start it again, with or without its binary log."""
        if self.sql:
            self.sql.close()
            self.sql = None
        subprocess.run([TOOLS_DB, 'stop', self.path], check=False, capture_output=True)
        self.start(self.out, binlog, row_image)
        self.started = True

    def stop(self):
        if self.sql:
            self.sql.close()
            self.sql = None
        if self.started and self.keep:
            log('leaving the private MariaDB running: tools/db stop %s' % self.path)
        elif self.started:
            log('stopping the private MariaDB')
            subprocess.run([TOOLS_DB, 'stop', self.path], check=False)
            self.started = False

    def server_pid(self):
        try:
            with open(os.path.join(self.path, 'mysqld.pid')) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def load_ready(self, n, prefix='job', payload=None, keys=None):
        """n ready rows: payloads prefix-1..prefix-n, or each the same payload (text without
        a quote); keys: no group_key (None), a key each (0), or K keys in turn."""
        if payload is not None and "'" in payload:
            raise BenchError('load_ready: a payload with a quote: %r' % payload)
        done = 0
        while done < n:
            k = min(LOAD_CHUNK, n - done)
            what = "CONCAT('%s-', seq)" % prefix if payload is None else "'%s'" % payload
            if keys is None:
                self.sql.query("INSERT INTO work_items (payload) SELECT %s FROM seq_1_to_%d"
                               % (what, k))
            else:
                key = 'seq + %d' % done if keys == 0 else '(seq + %d) %% %d' % (done, keys)
                self.sql.query("INSERT INTO work_items (payload, group_key) SELECT %s, "
                               "CONCAT('k', %s) FROM seq_1_to_%d" % (what, key, k))
            done += k

    def empty(self):
        """No rows, and no FIFO groups' bookkeeping left from them."""
        self.sql.query('TRUNCATE TABLE work_items')
        self.sql.query('TRUNCATE TABLE work_groups')

    def make_database(self, name, migrations):
        """A database name (dropped first if there) with the schema of the migrations in the
        folder migrations; returns its DSN. The client stays in its database."""
        files = sorted(f for f in os.listdir(migrations) if f.endswith('.sql'))
        if not files:
            raise BenchError('no migrations in %s' % migrations)
        self.sql.query('DROP DATABASE IF EXISTS %s' % name)
        self.sql.query('CREATE DATABASE %s' % name)
        client = shutil.which('mariadb') or shutil.which('mysql')
        for f in files:
            with open(os.path.join(migrations, f)) as text:
                r = subprocess.run([client, '--no-defaults', '--protocol=socket', '-S', self.sock,
                                    '-uroot', name], stdin=text, capture_output=True, text=True)
            if r.returncode != 0:
                raise BenchError('%s into %s: %s' % (f, name, r.stderr.strip()[-500:]))
        return self.dsn.replace('/claimd?', '/%s?' % name)

    def use(self, name):
        """The client's statements (empty, load_ready, rate, ..) go to database name."""
        self.sql.query('USE %s' % name)

    def wait_no_live_row(self, proc, timeout, what):
        """Polls (every 50 ms) until no row is ready or claimed; proc must stay alive."""
        deadline = time.monotonic() + timeout
        while self.sql.query(LIVE_ROW_SQL):
            if proc is not None and proc.poll() is not None:
                raise BenchError('%s exited (status %s) before the queue was empty'
                                 % (what, proc.returncode))
            if time.monotonic() > deadline:
                raise BenchError('%s: queue not empty after %d s' % (what, timeout))
            time.sleep(0.05)

    def rate(self):
        """The run's rate from the rows: COUNT / (MAX(finished_at) - MIN(claimed_at))."""
        r = self.sql.query(
            "SELECT COUNT(*), SUM(state = 'done'), SUM(attempts > 1), "
            "TIMESTAMPDIFF(MICROSECOND, MIN(claimed_at), MAX(finished_at)) FROM work_items")[0]
        rows, done, again = int(r[0]), int(r[1] or 0), int(r[2] or 0)
        us = int(r[3]) if r[3] != 'NULL' else None
        if done != rows:
            raise BenchError('%d of %d rows are not done' % (rows - done, rows))
        secs = us / 1e6 if us is not None else None
        return {'rows': rows, 'rows_claimed_twice': again, 'seconds': secs,
                'jobs_per_s': stats.rate(rows, secs)}

    def counted_dsn(self):
        """The DSN of a user of claimd's own (COUNTED_USER, made here), so that the server's
        processlist tells its connections from the bench's."""
        pw = os.path.join(self.out, 'counted-user.password')
        with open(os.open(pw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
            f.write('bench-counted')
        os.chmod(pw, 0o600)   # claimd takes a password file of its owner's alone
        self.sql.query("CREATE USER IF NOT EXISTS '%s'@'localhost' IDENTIFIED BY "
                       "'bench-counted'" % COUNTED_USER)
        self.sql.query("GRANT ALL ON claimd.* TO '%s'@'localhost'" % COUNTED_USER)
        self.sql.query("GRANT REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO "
                       "'%s'@'localhost'" % COUNTED_USER)
        return (self.dsn.replace('mysql://root@', 'mysql://%s@' % COUNTED_USER, 1) +
                '&password_file=' + pw)

    counted_user = COUNTED_USER


class GaleraDb(Db):
    """A 3-node Galera cluster started with tools/galera (claimd writes to node 1, which the
    bench's SQL client and CPU readings use)."""

    def start(self, out, binlog=True, row_image='MINIMAL'):
        self.out = out
        log('starting a 3-node Galera cluster in %s' % self.path)
        r = subprocess.run([TOOLS_GALERA, 'start', self.path, '3'], capture_output=True,
                           text=True, env=dict(os.environ, CLAIMD_DB_BUFFER_POOL=self.buffer_pool))
        if r.returncode != 0:
            raise BenchError('tools/galera start failed (%d): %s' % (r.returncode,
                                                                     r.stderr.strip()[-2000:]))
        self.started = True
        self.sock = os.path.join(self.path, 'n1', 'mysqld.sock')
        self.sql = Sql(self.sock, os.path.join(out, 'sql-client-galera.err'))
        pw = os.path.join(self.path, 'password')
        with open(os.open(pw, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
            f.write('bench-galera')
        os.chmod(pw, 0o600)
        self.sql.query("CREATE USER IF NOT EXISTS 'bench'@'%' IDENTIFIED BY 'bench-galera'")
        self.sql.query("GRANT ALL ON claimd.* TO 'bench'@'%'")
        self.sql.query("GRANT REPLICATION SLAVE ON *.* TO 'bench'@'%'")
        self.dsn = 'mysql://bench@%s/claimd?password_file=%s' % (','.join(r.stdout.split()), pw)

    def server_pid(self):
        try:
            with open(os.path.join(self.path, 'n1', 'mysqld.pid')) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        if self.sql:
            self.sql.close()
            self.sql = None
        if self.started:
            log('stopping the Galera cluster')
            subprocess.run([TOOLS_GALERA, 'stop', self.path], check=False, capture_output=True)
            self.started = False
