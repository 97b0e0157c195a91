"""claimd as the bench runs it: the process, its handlers, and what this build accepts."""

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

from .common import ROOT, BenchError, log

# The handlers the bench runs, by kind: (claimd --handler SPEC, what it is). so: is
# tools/bench_plugin.so, pipe: the shipped concurrent examples.
EXAMPLES = os.path.join(ROOT, 'src', 'deploy', 'examples')


def handler_spec(bench, kind, sleep_ms=0):
    """The --handler of a kind: noop, so, pipe-node, pipe-python, pipe-python-pkg and
    pipe-node-pkg (the packages' runtimes), exec. sleep_ms > 0: each
    item waits that long without CPU (the plugin's argument; the pipe: examples and exec:
    read it from their payload or command line)."""
    if kind == 'noop':
        return 'noop'
    if kind == 'so':
        so = bench.bin('bench_plugin')
        return 'so:%s%s' % (so, ' sleep_ms=%d' % sleep_ms if sleep_ms else '')
    if kind == 'pipe-node':
        return 'pipe:%s %s' % (bench.node or 'node', os.path.join(EXAMPLES, 'pipe-async.mjs'))
    if kind == 'pipe-python':
        return 'pipe:%s %s' % (bench.python, os.path.join(EXAMPLES, 'pipe-async.py'))
    if kind == 'pipe-node-pkg':     # the package from the checkout (no dependency of its own)
        return 'pipe:%s %s' % (bench.node or 'node', os.path.join(ROOT, 'tools',
                                                                  'bench-pkg-handler.mjs'))
    if kind == 'pipe-python-pkg':   # the package from the checkout, as installed it would be
        return 'pipe:/usr/bin/env PYTHONPATH=%s %s %s' % (
            os.path.join(ROOT, 'src', 'python'), bench.python,
            os.path.join(ROOT, 'tools', 'bench-pkg-handler.py'))
    if kind == 'exec':
        return ('exec:/bin/sleep %g' % (sleep_ms / 1000)) if sleep_ms else 'exec:/bin/true'
    raise BenchError('no such handler kind: %s' % kind)


def handler_args(bench, kind, sleep_ms=0):
    """claimd's flags for a kind: --handler SPEC, and for pipe: --pipe-ready (the shipped
    co-processes write the ready line, so a worker claims nothing while its interpreter
    starts, as a user of them would run it)."""
    return ['--handler', handler_spec(bench, kind, sleep_ms)] + (
        ['--pipe-ready'] if kind.startswith('pipe') else [])


def accepts(binary, *flags):
    """None if this claimd accepts the flags (it exits 2 on an option it does not know, before
    --version), else why not."""
    r = subprocess.run([binary, *flags, '--version'], capture_output=True, text=True,
                       timeout=30)
    if r.returncode == 0:
        return None
    return 'claimd refuses %s (exit %d: %s)' % (' '.join(flags), r.returncode,
                                                (r.stderr.strip().splitlines() or [''])[-1])


class Claimd:
    """The real claimd binary (this build's, or binary: the --baseline build's) against the
    bench's server, its log in OUT/claimd-NAME.log."""

    def __init__(self, bench, name, *args, binary=None, dsn=None):
        self.bench = bench
        self.control = os.path.join(bench.out, 'claimd.sock')
        self.logpath = os.path.join(bench.out, 'claimd-%s.log' % name)
        self.log = open(self.logpath, 'w')
        self.ctl = bench.bin('claimctl')
        # the bench may run as root (CI does): its handlers are its own
        root = ['--allow-root'] if os.geteuid() == 0 else []
        self.p = subprocess.Popen(
            [binary or bench.bin('claimd'), '--dsn', dsn or bench.db.dsn, '--control',
             self.control, *root, *args],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

    def status(self):
        r = subprocess.run([self.ctl, '--control', self.control, 'status',
                            '--json'], capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def wait_idle(self, nworkers, timeout=30):
        """Until every worker reports idle (polls claimctl status)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.p.poll() is not None:
                raise BenchError('claimd exited (status %s), see %s' % (self.p.returncode,
                                                                        self.logpath))
            st = self.status()
            if st and len(st['workers']) == nworkers and all(
                    w['state'] == 'idle' for w in st['workers']):
                return st
            if time.monotonic() > deadline:
                raise BenchError('claimd workers not idle after %d s: %s' % (timeout, st))
            time.sleep(0.05)

    def wait_pushed(self, timeout=30):
        """Until it is woken by the binary log (claimctl status: wake)."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if st and st.get('wake') == 'binlog':
                return
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise BenchError('claimd is not woken by the binary log: %s, see %s'
                                 % (st and st.get('wake'), self.logpath))
            time.sleep(0.05)

    def http_url(self):
        """Where it serves HTTP (from its log line), once it says so."""
        for _ in range(100):
            with open(self.logpath) as f:
                m = re.search(r'http: listening on (http://[0-9.:]+)/', f.read())
            if m:
                return m.group(1)
            time.sleep(0.05)
        raise BenchError('claimd did not say where it listens, see %s' % self.logpath)

    def http_token(self):
        """The token claimd made for its HTTP face (beside its control socket), once it has."""
        path = os.path.splitext(self.control)[0] + '.http-token'
        for _ in range(100):
            try:
                with open(path) as f:
                    token = f.read().strip()
                if token:
                    return token
            except OSError:
                pass
            time.sleep(0.05)
        raise BenchError('claimd wrote no HTTP token in %s' % path)

    def messages(self):
        """Messages between its supervisor and workers so far, both ways together, from
        /metrics (claimd started with --http); None if this claimd does not count them."""
        req = urllib.request.Request(self.http_url() + '/metrics',
                                     headers={'Authorization': 'Bearer ' + self.http_token()})
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
        got = re.findall(r'^claimd_worker_messages_total\{direction="\w+"\} (\d+)$', text, re.M)
        return sum(int(v) for v in got) if got else None

    def stop(self, timeout=60):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log('claimd did not stop in %d s; killing it' % timeout)
                self.p.kill()
                self.p.wait()
        self.log.close()
        if self.p.returncode != 0:
            raise BenchError('claimd exited with status %s, see %s' % (self.p.returncode,
                                                                         self.logpath))

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
