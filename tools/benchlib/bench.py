"""The bench's context: its options and sizes, the binaries, the server, the figures each
section records (Bench.metric for a target's key, Bench.unmeasured for why one could not be
measured, Bench.info for a line of the summary without a target), and the one drain that
most sections time: n fresh rows emptied by claimd, its rate taken from the rows."""

import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time

from .common import ROOT, BenchError, log, proc_cpu
from .claimd import Claimd
from .db import Db
from .stats import ratio, run_costs



class Sampler:
    """Calls fn() every interval seconds on a thread while a run lasts; keeps (time, value)."""

    def __init__(self, fn, interval=0.2):
        self.fn, self.interval, self.samples = fn, interval, []
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.error = None

    def loop(self):
        while not self.stop_ev.is_set():
            try:
                v = self.fn()
            except Exception as e:  # a sample that failed is reported once, not fatal
                self.error = self.error or repr(e)
                v = None
            if v is not None:
                self.samples.append((time.monotonic(), v))
            self.stop_ev.wait(self.interval)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.t.join()


class Bench:
    def __init__(self, a):
        self.a = a
        self.out = os.path.abspath(a.out)
        self.build = a.build_dir if os.path.isabs(a.build_dir) else os.path.join(ROOT, a.build_dir)
        q = a.quick
        self.sizes = {
            'rows': a.rows or (20_000 if q else 200_000),
            # real handlers, CPU-trivial: per run of each kind (exec: forks a process per row)
            'handler_rows': a.rows or (10_000 if q else 100_000),
            'exec_rows': 1_000 if q else 10_000,
            'handler_rounds': a.repeat or (1 if q else 3),
            # I/O-bound: rows of 50 ms, --concurrency 50
            'io_rows': 1_000 if q else 4_000,
            'io_sleep_ms': 50,
            'io_concurrency': 50,
            'io_rounds': 1 if q else 2,
            'latency_rows': 30 if q else 300,
            'idle_settle_s': 2.0,
            'idle_window_s': 1.0 if q else 10.0,
            'claimtime_small': 1_000 if q else 10_000,
            'claimtime_ready': 100_000 if q else 1_000_000,
            'claimtime_done': 500_000 if q else 5_000_000,
            'claimtime_claims': 200 if q else 2000,
            'repeat': a.repeat or (1 if q else 3),
            'storm_rows': 10_000 if q else 100_000,
            'storm_rounds': 1 if q else 2,
            'keyed_rows': 10_000 if q else 100_000,
            'keyed_rounds': 1 if q else 2,
        }
        self.db = Db(os.path.abspath(a.db_dir), a.buffer_pool, a.keep_db)
        self.python = sys.executable or shutil.which('python3')
        self.node = shutil.which('node')
        self.baseline = None        # a baseline.Baseline once built
        self.baseline_error = None  # why there is none, with --baseline
        self.peers = None           # a peers.Peers, made by the first section that needs it
        self.idle_memory = None     # section idle's reading for section rss
        self.ran = set()            # the sections run so far
        self.metrics, self.reasons, self.infos = {}, {}, []
        self.results = {'sections': {}, 'sizes': self.sizes, 'batch': a.batch,
                        'workers': a.workers, 'quick': q, 'baseline_rev': a.baseline}

    # -- figures --

    def metric(self, key, value):
        """A figure a target is judged on (targets.TARGETS names the key)."""
        if value is None:
            self.unmeasured(key, 'no figure')
        else:
            self.metrics[key] = value
            self.reasons.pop(key, None)

    def unmeasured(self, key, reason):
        if key not in self.metrics:
            self.reasons.setdefault(key, reason)

    def info(self, label, value):
        """A line of the summary without a target."""
        self.infos.append((label, value))

    # -- binaries --

    def bin(self, name):
        return os.path.join(self.build, {'claim_probe': 'tools/claim_probe',
                                          'bench_plugin': 'tools/bench_plugin.so'}.get(name, name))

    def build_binaries(self):
        if not os.path.exists(os.path.join(self.build, 'build.ninja')):
            subprocess.run(['meson', 'setup', self.build], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
        r = subprocess.run(['ninja', '-C', self.build, 'claimd', 'claimctl',
                            'tools/claim_probe', 'tools/bench_plugin.so'], cwd=ROOT,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError('build failed:\n' + r.stdout[-3000:] + r.stderr[-2000:])

    def check_built(self):
        missing = [b for b in ('claimd', 'claimctl', 'claim_probe', 'bench_plugin')
                   if not os.path.exists(self.bin(b))]
        if missing:
            raise BenchError('--no-build: not built in %s: %s' % (self.build, ', '.join(missing)))

    # -- the machine --

    def machine(self):
        with open('/proc/cpuinfo') as f:
            cpu = next((l.split(':', 1)[1].strip() for l in f if l.startswith('model name')), None)
        with open('/proc/meminfo') as f:
            kb = next(int(l.split()[1]) for l in f if l.startswith('MemTotal:'))
            mem = '%.1f GiB' % (kb / 1024 / 1024)
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip() or 'unknown'
        dirty = subprocess.run(['git', 'status', '--porcelain', '--untracked-files=no'], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        v = self.db.sql.query('SELECT VERSION(), @@innodb_flush_log_at_trx_commit, '
                              '@@innodb_buffer_pool_size, @@tx_isolation')[0]
        return {
            'nproc': os.cpu_count(), 'cpu': cpu, 'memory': mem, 'kernel': platform.release(),
            'mariadb': v[0], 'innodb_flush_log_at_trx_commit': int(v[1]),
            'innodb_buffer_pool': '%d MiB' % (int(v[2]) // 2**20), 'isolation': v[3],
            'commit': commit + (' + uncommitted changes' if dirty else ''),
            'date': datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z'),
            'node': subprocess.run([self.node, '--version'], capture_output=True,
                                   text=True).stdout.strip() if self.node else None,
        }

    def counters(self):
        """CPU times (s) of the whole machine, our server, our finished children and us, and
        the server's buffer-pool page requests."""
        with open('/proc/stat') as f:
            t = [int(x) for x in f.readline().split()[1:]]
        tick = os.sysconf('SC_CLK_TCK')
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        return {
            'wall': time.monotonic(),
            'busy': (sum(t[:8]) - t[3] - t[4]) / tick,
            'mariadbd': proc_cpu(self.db.server_pid()),
            'children': ch.ru_utime + ch.ru_stime,
            'bench': me.ru_utime + me.ru_stime + proc_cpu(self.db.sql.p.pid),
            'page_reads': self.db.sql.status('Innodb_buffer_pool_read_requests'),
            'binlog_bytes': self.db.sql.status('Binlog_bytes_written'),
        }

    # -- the drain --

    def drain(self, name, args, n, payload=None, binary=None, dsn=None, sample=None,
              rep=0, timeout=None, keys=None, messages=False):
        """n fresh rows (each payload, if given) drained by claimd started with args: the rate
        from the rows (COUNT / (MAX(finished_at) - MIN(claimed_at)), database clock), CPU and
        buffer-pool counters over the run (keys: as Db.load_ready); with sample(claimd), its
        values every 0.2 s in res['samples']; with messages, claimd serves HTTP and
        res['messages_per_job'] is what went between its supervisor and workers a row. Raises BenchError if claimd exits or does not finish in time."""
        timeout = timeout or max(300, n // 500)
        base = self.baseline is not None and binary == self.baseline.claimd
        if base:   # the baseline on its own schema
            self.db.use(self.baseline.DATABASE)
            dsn = dsn or self.baseline.dsn
        try:
            self.db.empty()
            self.db.load_ready(n, payload=payload, keys=keys)
            before = self.counters()
            if messages:
                args = [*args, '--http', '127.0.0.1:0']
            c = Claimd(self, name, *args, binary=binary, dsn=dsn)
            sampler = Sampler(lambda: sample(c)) if sample else None
            try:
                if sampler:
                    with sampler:
                        self.db.wait_no_live_row(c.p, timeout, 'claimd (%s)' % name)
                else:
                    self.db.wait_no_live_row(c.p, timeout, 'claimd (%s)' % name)
            except BaseException:
                c.kill()
                raise
            sent = c.messages() if messages else None
            c.stop()
            after = self.counters()
            res = self.db.rate()
            res['messages_per_job'] = ratio(sent, res['rows'])
            if base:
                self.db.empty()
        finally:
            if base:
                self.db.use('claimd')
        if res['rows_claimed_twice']:
            log('warning: %d rows were claimed more than once' % res['rows_claimed_twice'])
        res.update(run_costs(before, after, res['rows'], os.cpu_count() or 1))
        res['repeat'] = rep
        if sampler:
            res['samples'] = [v for _, v in sampler.samples]
            if sampler.error:
                log('warning: sampling %s: %s' % (name, sampler.error))
        return res

    def probe_run(self, w, b, n, rep=0):
        """The bare-SQL probe (tools/claim_probe) over n fresh rows from w processes."""
        timeout = max(300, n // 500)
        self.db.empty()
        self.db.load_ready(n)
        before = self.counters()
        r = subprocess.run([self.bin('claim_probe'), self.db.dsn, str(w), str(b)],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise BenchError('claim_probe failed: ' + r.stderr.strip())

        own = json.loads(r.stdout)
        after = self.counters()
        res = self.db.rate()
        res.update(run_costs(before, after, res['rows'], os.cpu_count() or 1))
        res['repeat'] = rep
        res['probe_own_rows_per_s'] = own['rows_per_s']
        res['claims'] = own['claims']
        return res

    def noop_run(self, name, w, n, rep=0, extra=(), binary=None, messages=False):
        """claimd --handler noop (the machinery) with w workers over n fresh rows."""
        return self.drain(name, ['--handler', 'noop', '--workers', str(w), *extra], n,
                          binary=binary, rep=rep, messages=messages)
