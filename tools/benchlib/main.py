"""tools/bench's command line and the order the sections run in."""

import argparse
import os
import subprocess

from .common import ROOT, BenchError, log
from .bench import Bench
from . import baseline as baseline_mod
from . import report, targets
from . import (handlers, iobound, throughput, keyed, latency, idle, rss, claimtime, http,
               dashboard, killstorm, binlog, galera, peers)

# The order they run in: the headline first.
MODULES = (handlers, iobound, throughput, keyed, latency, idle, rss, claimtime, http,
           dashboard, killstorm, binlog, galera, peers)
SECTIONS = tuple(m.NAME for m in MODULES)
ALIASES = {'peer': 'peers'}   # the section's name before there were three peers


def sections_help():
    lines = ['sections (--only), in the order they run:']
    for m in MODULES:
        lines.append('  %-11s %s' % (m.NAME, m.SUMMARY))
    lines.append('(tools/bench itself says more; tools/BENCHMARK.md has the targets)')
    return '\n'.join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='tools/bench', formatter_class=argparse.RawDescriptionHelpFormatter,
        description="claimd's benchmark: claimd's real handlers against BullMQ, pg-boss and "
        'graphile-worker, the machinery, latency, idle load, memory and more, against a '
        'private MariaDB; a summary against the targets (a target not measured is a MISS), '
        'bench-out/report.md, results.json and bench.png.',
        epilog=sections_help())
    p.add_argument('--quick', action='store_true', help='every size ~10x smaller (smoke run)')
    p.add_argument('--only', metavar='SECTIONS',
                   help='comma-separated sections to run: ' + ', '.join(SECTIONS))
    p.add_argument('--skip-claimtime', action='store_true',
                   help='skip section claimtime (claim time with 6M rows: the slow one)')
    p.add_argument('--baseline', metavar='REV',
                   help='also run claimd as built from this git revision (into '
                   'bench-out/baseline), alternating with this build: the targets against it '
                   'are MISS without it')
    p.add_argument('--batch', type=int,
                   help='claimd --batch in the throughput runs (default: none, claimd at its '
                   'defaults, with 2 workers also at 64 and 256)')
    p.add_argument('--probe-batch', type=int, default=500,
                   help='rows per claim of the bare-SQL probe (500)')
    p.add_argument('--rows', type=int,
                   help='rows per throughput run (200000; --quick 20000) and per CPU-trivial '
                   'handlers run (100000; --quick 10000)')
    p.add_argument('--repeat', type=int,
                   help='rounds of throughput and handlers, medians reported (3; --quick 1)')
    p.add_argument('--sides', metavar='SIDES',
                   help='comma-separated sides of section handlers to run (default: all; '
                   'e.g. so,pipe_node,baseline_so,baseline_pipe_node for an A/B of the real '
                   'handlers); the targets of the sides left out are MISS')
    p.add_argument('--workers', default='1,2,4,8', help='worker counts for throughput (1,2,4,8)')
    p.add_argument('--build-dir', default=os.environ.get('CLAIMD_BUILD_DIR', 'build'),
                   help='meson build dir, relative to the source root ($CLAIMD_BUILD_DIR or build)')
    p.add_argument('--no-install', action='store_true',
                   help="do not install what is missing from Debian's packages "
                        '(tools/setup-debian --bench)')
    p.add_argument('--no-build', action='store_true',
                   help='use the binaries already in the build dir (and bench-out/baseline) as '
                   'they are')
    p.add_argument('--out', default=os.path.join(ROOT, 'bench-out'),
                   help='where the report goes (bench-out/)')
    p.add_argument('--db-dir', help='tools/db directory of the private server (OUT/db)')
    p.add_argument('--buffer-pool', default=os.environ.get('CLAIMD_DB_BUFFER_POOL', '2G'),
                   help='innodb_buffer_pool_size of the server ($CLAIMD_DB_BUFFER_POOL or 2G)')
    p.add_argument('--keep-db', action='store_true', help='leave the server running at the end')
    a = p.parse_args(argv)
    names = [ALIASES.get(s.strip(), s.strip()) for s in a.only.split(',')] if a.only else SECTIONS
    a.sections = set(names)
    bad = a.sections - set(SECTIONS)
    if bad:
        p.error('unknown section(s): %s (choose from %s)' % (', '.join(sorted(bad)),
                                                             ', '.join(SECTIONS)))
    if a.skip_claimtime:
        a.sections.discard('claimtime')
    try:
        a.workers = [int(w) for w in a.workers.split(',')]
    except ValueError:
        p.error('--workers takes a comma-separated list of numbers')
    if a.batch is not None and not 1 <= a.batch <= 256:
        p.error('--batch must be 1..256')
    if not 1 <= a.probe_batch <= 1024:
        p.error('--probe-batch must be 1..1024')
    a.sides = set(s.strip() for s in a.sides.split(',')) if a.sides else None
    known = {k for k, _, _, _ in handlers.CLAIMD_SIDES} | set(handlers.PEER_SIDES)
    if a.sides and a.sides - known:
        p.error('unknown side(s): %s (choose from %s)' % (', '.join(sorted(a.sides - known)),
                                                          ', '.join(sorted(known))))
    a.db_dir = a.db_dir or os.path.join(a.out, 'db')
    if len(os.path.join(os.path.abspath(a.db_dir), 'mysqld.sock')) > 100:
        p.error('--db-dir path too long for a unix socket; pick a shorter one')
    return a


def run(b):
    """Every selected section in order; one that fails is reported (its targets MISS with
    the error) and the others still run. Returns the number of sections that failed."""
    os.makedirs(b.out, exist_ok=True)
    if b.a.no_build:
        b.check_built()
    else:
        b.build_binaries()
    if b.a.baseline:
        try:
            b.baseline = baseline_mod.build(b.out, b.a.baseline, b.a.no_build)
        except BenchError as e:
            b.baseline_error = str(e)
            log('baseline: %s; the targets against it are MISS' % e)
    b.ran, failed = set(), 0
    b.db.start(b.out)
    if b.baseline:
        try:
            b.baseline.dsn = b.db.make_database(b.baseline.DATABASE, b.baseline.migrations)
        except BenchError as e:
            b.baseline, b.baseline_error = None, 'its schema: %s' % e
            log('baseline: %s; the targets against it are MISS' % b.baseline_error)
    try:
        b.results['machine'] = b.machine()
        for mod in MODULES:
            if mod.NAME not in b.a.sections:
                continue
            b.ran.add(mod.NAME)
            try:
                res = mod.run(b)
            except BenchError as e:
                failed += 1
                log('section %s failed: %s' % (mod.NAME, e))
                res = {'error': str(e)}
                for t in targets.TARGETS:
                    if targets.section_of(t.key) == mod.NAME:
                        b.unmeasured(t.key, 'section %s failed: %s' % (mod.NAME, str(e)[:200]))
            else:
                if hasattr(mod, 'record'):
                    mod.record(b, res)
            b.results['sections'][mod.NAME] = res
    finally:
        if b.peers:
            b.peers.stop()
        b.db.stop()
    report.write(b, MODULES)
    return failed


def install():
    """What the bench runs beside claimd, from Debian's packages when they are missing
    (tools/setup-debian --bench: as root, or through sudo). A failure is not fatal: a peer that
    cannot be had is skipped with the reason, its targets MISS."""
    r = subprocess.run([os.path.join(ROOT, 'tools', 'setup-debian'), '--bench'],
                       capture_output=True, text=True)
    for line in (r.stdout + r.stderr).strip().splitlines():
        log(line)


def main(argv):
    a = parse_args(argv)
    if not a.no_install:
        install()
    b = Bench(a)
    try:
        failed = run(b)
    except BenchError as e:
        log('error: %s' % e)
        return 1
    except KeyboardInterrupt:
        log('interrupted')
        return 130
    return 1 if failed else 0
