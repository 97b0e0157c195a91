"""The peers claimd is measured against, and section peers (each peer alone, CPU-trivial and
I/O-bound, to show they install and run). BullMQ on a private redis-server without
persistence (Debian's), and on a second one that appends every write to its file and flushes
it once a second (appendonly yes, appendfsync everysec: what production runs); pg-boss and graphile-worker on a private PostgreSQL 15 (pg.py). The
npm packages, at pinned versions, go into OUT/peer (never into the repository); each peer is
driven by its tools/bench-peer-NAME.mjs in Node.js processes of its own. A peer that cannot
be had (no node, npm, redis-server or PostgreSQL, or npm failing) is skipped with the reason,
which the targets that need it report as their MISS."""

import json
import os
import shutil
import subprocess
import time

from .common import TOOLS, BenchError, fmt_int, log, md_table, print_table
from .pg import Postgres
from . import stats

NAME = 'peers'
SUMMARY = 'each peer alone, both workloads: that they install and run (no targets)'
# npm packages at the versions the figures are for.
PINS = {'bullmq': '6.7.0', 'ioredis': '5.11.1', 'pg-boss': '12.38.0',
        'graphile-worker': '0.18.0', 'pg': '8.23.1'}
PEERS = {
    'bullmq': {'package': 'bullmq', 'server': 'redis', 'title': 'BullMQ',
               'setting': '%d processes x concurrency %d', 'store': 'Redis, no persistence'},
    # The same on a Redis that keeps its data as production runs it: every write appended to
    # its file, the file flushed to disk once a second.
    'bullmq_aof': {'package': 'bullmq', 'server': 'redis_aof', 'script': 'bullmq',
                   'title': 'BullMQ', 'setting': '%d processes x concurrency %d',
                   'store': 'Redis, appendonly yes, appendfsync everysec'},
    'pgboss': {'package': 'pg-boss', 'server': 'postgres', 'title': 'pg-boss',
               'setting': '%d processes x batch %d', 'store': 'PostgreSQL 15, durable'},
    'graphile': {'package': 'graphile-worker', 'server': 'postgres', 'title': 'graphile-worker',
                 'setting': '%d processes x concurrency %d', 'store': 'PostgreSQL 15, durable'},
}
PROCS = 2


class Peers:
    def __init__(self, b):
        self.b = b
        self.dir = os.path.join(b.out, 'peer')
        self.mods = os.path.join(self.dir, 'node_modules')
        self.why = {}        # peer -> why it cannot run
        self.versions = {}
        self.redis = {}      # server -> its redis-server process
        self.redis_sock = {'redis': os.path.join(self.dir, 'redis.sock'),
                           'redis_aof': os.path.join(self.dir, 'redis-aof.sock')}
        self.pg = None
        self.pg_version = None
        self.ready = False

    def setup(self):
        """Installs the packages and starts the servers, once; what cannot be had is recorded
        in self.why."""
        if self.ready:
            return
        self.ready = True
        os.makedirs(self.dir, exist_ok=True)
        missing = [x for x in ('node', 'npm') if not shutil.which(x)]
        if missing:
            for p in PEERS:
                self.why[p] = 'not installed: %s (apt-get install nodejs npm)' % ', '.join(missing)
            return
        why = self.install()
        if why:
            for p in PEERS:
                self.why[p] = why
            return
        for p, spec in PEERS.items():
            with open(os.path.join(self.mods, spec['package'], 'package.json')) as f:
                self.versions[p] = json.load(f)['version']
        for p, spec in PEERS.items():
            if spec['server'].startswith('redis') and p not in self.why:
                why = self.start_redis(spec['server'])
                if why:
                    self.why[p] = why
        try:
            self.pg = Postgres(os.path.join(self.b.out, 'pg'))
            self.pg_version = self.pg.start()
        except (BenchError, OSError, subprocess.SubprocessError) as e:
            self.why['pgboss'] = self.why['graphile'] = 'PostgreSQL: %s' % e
        for p, w in self.why.items():
            log('peers: %s skipped: %s' % (p, w))

    def install(self):
        """npm install of the pinned packages into OUT/peer, unless they are there."""
        want = {'name': 'claimd-bench-peers', 'private': True, 'dependencies': PINS}
        pj = os.path.join(self.dir, 'package.json')
        have = None
        if os.path.exists(pj):
            with open(pj) as f:
                have = json.load(f)
        if have == want and all(os.path.isdir(os.path.join(self.mods, m)) for m in PINS):
            return None
        with open(pj, 'w') as f:
            json.dump(want, f)
        log('peers: npm install %s into %s' % (' '.join('%s@%s' % kv for kv in PINS.items()),
                                              self.dir))
        try:
            r = subprocess.run(['npm', 'install', '--no-audit', '--no-fund', '--prefix', self.dir],
                               capture_output=True, text=True, timeout=600, cwd=self.dir)
        except subprocess.TimeoutExpired:
            return 'npm install timed out after 600 s'
        if r.returncode != 0:
            return 'npm install failed: %s' % r.stderr.strip()[-300:]
        return None

    def start_redis(self, server):
        """A private redis-server for server ('redis': nothing kept; 'redis_aof': its append
        only file, flushed every second, in a directory of its own)."""
        if not shutil.which('redis-server') or not shutil.which('redis-cli'):
            return 'redis-server not installed (apt-get install redis-server)'
        sock, keep = self.redis_sock[server], server == 'redis_aof'
        where = os.path.join(self.dir, server)
        os.makedirs(where, exist_ok=True)
        if os.path.exists(sock):
            os.unlink(sock)
        proc = subprocess.Popen(
            ['redis-server', '--port', '0', '--unixsocket', sock, '--save', '',
             '--appendonly', 'yes' if keep else 'no', '--appendfsync', 'everysec',
             '--dir', where],
            stdout=open(os.path.join(where, 'redis.log'), 'w'), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.exists(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                return 'redis-server did not start (see %s/redis.log)' % where
            time.sleep(0.05)
        self.redis[server] = proc
        return None

    def stop(self):
        for proc in self.redis.values():
            proc.terminate()
            proc.wait(timeout=30)
        self.redis = {}
        if self.pg:
            self.pg.stop()

    def label(self, p, conc):
        spec = PEERS[p]
        return '%s %s, %s (%s)' % (spec['title'], self.versions.get(p, '?'),
                                   spec['setting'] % (PROCS, conc), spec['store'])

    def run(self, p, n, conc, sleep_ms=0):
        """n jobs (each waiting sleep_ms) loaded, then drained by PROCS worker processes of
        peer p at conc each: jobs/s from the earliest start to the latest completion."""
        script = os.path.join(TOOLS, 'bench-peer-%s.mjs' % PEERS[p].get('script', p))
        if PEERS[p]['server'].startswith('redis'):
            conn = self.redis_sock[PEERS[p]['server']]
            r = subprocess.run(['redis-cli', '-s', conn, 'FLUSHALL'],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise BenchError('redis-cli FLUSHALL failed: ' + r.stderr.strip())
        else:
            conn = self.pg.fresh('peer')
        r = subprocess.run(['node', script, self.mods, conn, 'load', str(n), str(sleep_ms)],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise BenchError('%s load failed: %s' % (p, r.stderr.strip()[-800:]))
        ws = [subprocess.Popen(['node', script, self.mods, conn, 'work', str(conc)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(PROCS)]
        outs, errs = [], []
        for w in ws:
            try:
                out, err = w.communicate(timeout=max(600, n // 100))
            except subprocess.TimeoutExpired:
                for x in ws:
                    x.kill()
                raise BenchError('%s workers did not finish %d jobs in time' % (p, n))
            if w.returncode != 0:
                raise BenchError('%s worker failed: %s' % (p, err.strip()[-800:]))
            outs.append(json.loads(out.strip().splitlines()[-1]))
            errs.append(err)
        done = sum(o['done'] for o in outs)
        if done != n:
            raise BenchError('%s completed %d of %d jobs' % (p, done, n))
        first = min(o['first_ms'] for o in outs if o['done']) / 1000
        last = max(o['last_ms'] for o in outs) / 1000
        return {'rows': n, 'seconds': last - first,
                'jobs_per_s': stats.span_rate(n, first, last),
                'per_process': [o['done'] for o in outs]}


def get(b):
    """The bench's peers, set up on first use."""
    if b.peers is None:
        b.peers = Peers(b)
        b.peers.setup()
    return b.peers


def run(b):
    """Each peer alone: the CPU-trivial and the I/O-bound workload once (no claimd: the
    sections handlers and iobound run them beside it)."""
    peers = get(b)
    n, io_n, ms = b.sizes['handler_rows'], b.sizes['io_rows'], b.sizes['io_sleep_ms']
    log('== peers: each peer alone, %d no-op jobs at concurrency 10 and %d jobs of %d ms at '
        'concurrency %d' % (n, io_n, ms, b.sizes['io_concurrency']))
    res = {'runs': [], 'versions': peers.versions, 'postgresql': peers.pg_version}
    for p in PEERS:
        for work, jobs, conc, sleep in (('no-op', n, 10, 0),
                                        ('%d ms' % ms, io_n, b.sizes['io_concurrency'], ms)):
            row = {'peer': p, 'workload': work, 'label': peers.label(p, conc)}
            if p in peers.why:
                row['skipped'] = peers.why[p]
            else:
                try:
                    row.update(peers.run(p, jobs, conc, sleep))
                    log('%s %s: %s jobs/s' % (row['label'], work, fmt_int(row['jobs_per_s'])))
                except BenchError as e:
                    row['skipped'] = str(e)
                    log('%s %s failed: %s' % (p, work, e))
            res['runs'].append(row)
    rows = [(r['label'], r['workload'], 'skipped: ' + r['skipped'] if 'skipped' in r else
             fmt_int(r['jobs_per_s'])) for r in res['runs']]
    print_table('peers, each alone', ('peer', 'jobs', 'jobs/s'), rows)
    for r in res['runs']:
        b.info('%s, %s jobs, alone' % (r['label'], r['workload']),
               'skipped: ' + r['skipped'] if 'skipped' in r else fmt_int(r['jobs_per_s']))
    return res


def markdown(res):
    return '## The peers, each alone\n\n' + md_table(
        ('peer', 'jobs', 'jobs/s'),
        [(r['label'], r['workload'], 'skipped: ' + r['skipped'] if 'skipped' in r else
          fmt_int(r['jobs_per_s'])) for r in res['runs']]) + '\n\n'
