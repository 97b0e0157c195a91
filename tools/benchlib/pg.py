"""A private PostgreSQL 15 cluster for the peers that run on PostgreSQL (pg-boss,
graphile-worker): Debian's binaries from /usr/lib/postgresql/15/bin, initdb into
OUT/pg/data, a unix socket in OUT/pg and no TCP port, durable as the bench's MariaDB is
(fsync and synchronous_commit on, the defaults). PostgreSQL refuses to run as root: as root
the cluster belongs to the system user postgres (or nobody)."""

import os
import pwd
import shutil
import subprocess

from .common import BenchError, log

PG_BIN = '/usr/lib/postgresql/15/bin'
PORT = 5432


class Postgres:
    def __init__(self, path):
        self.path = path
        self.data = os.path.join(path, 'data')
        self.started = False
        self.as_user = []

    def missing(self):
        """Why there can be no cluster here, or None."""
        for b in ('initdb', 'pg_ctl', 'postgres'):
            if not os.access(os.path.join(PG_BIN, b), os.X_OK):
                return '%s/%s not found (apt-get install postgresql-15)' % (PG_BIN, b)
        if not shutil.which('psql'):
            return 'psql not found (apt-get install postgresql-client-15)'
        return None

    def run(self, *cmd, **kw):
        return subprocess.run([*self.as_user, *cmd], capture_output=True, text=True, **kw)

    def start(self):
        why = self.missing()
        if why:
            raise BenchError(why)
        os.makedirs(self.path, exist_ok=True)
        if os.geteuid() == 0:
            for name in ('postgres', 'nobody'):
                try:
                    u = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.as_user = ['runuser', '-u', name, '--']
                os.chown(self.path, u.pw_uid, u.pw_gid)
                break
            else:
                raise BenchError('running as root and no user postgres or nobody to run '
                                 'PostgreSQL as')
        if not os.path.exists(os.path.join(self.data, 'PG_VERSION')):
            log('peers: initdb of a private PostgreSQL cluster in %s' % self.data)
            r = self.run(os.path.join(PG_BIN, 'initdb'), '-D', self.data, '-U', 'bench',
                         '--auth=trust', '-E', 'UTF8', timeout=300)
            if r.returncode != 0:
                raise BenchError('initdb failed: ' + (r.stdout + r.stderr)[-1000:])
        opts = ("-k %s -p %d -c listen_addresses='' -c fsync=on -c synchronous_commit=on "
                "-c max_connections=200 -c shared_buffers=256MB" % (self.path, PORT))
        r = self.run(os.path.join(PG_BIN, 'pg_ctl'), '-D', self.data, '-l',
                     os.path.join(self.path, 'postgres.log'), '-w', '-t', '60', '-o', opts,
                     'start', timeout=120)
        if r.returncode != 0:
            raise BenchError('pg_ctl start failed: %s (see %s/postgres.log)'
                             % ((r.stdout + r.stderr).strip()[-500:], self.path))
        self.started = True
        v = self.psql('postgres', 'SHOW server_version').strip()
        log('peers: PostgreSQL %s on %s' % (v, self.path))
        return v

    def psql(self, db, sql):
        r = subprocess.run(['psql', '-X', '-q', '-A', '-t', '-h', self.path, '-p', str(PORT),
                            '-U', 'bench', '-d', db, '-v', 'ON_ERROR_STOP=1', '-c', sql],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise BenchError('psql failed: %s\n  in: %s' % (r.stderr.strip(), sql))
        return r.stdout

    def fresh(self, db):
        """An empty database db (dropped first if it exists); its URL."""
        self.psql('postgres', 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % db)
        self.psql('postgres', 'CREATE DATABASE %s' % db)
        return 'postgresql://bench@localhost:%d/%s?host=%s' % (PORT, db, self.path)

    def stop(self):
        if self.started:
            self.run(os.path.join(PG_BIN, 'pg_ctl'), '-D', self.data, '-m', 'fast', '-w',
                     'stop', timeout=120)
            self.started = False
