"""Section iobound: I/O-bound jobs, 4,000 that each wait 50 ms without CPU, claimd with 2
workers x --concurrency 50 (so: tools/bench_plugin.so sleep_ms=50; pipe: the shipped Python
asyncio and Node co-processes with --pipe-ready, told by the payload {"sleep_ms":50}; exec:/bin/sleep 0.05 as
a line of information) beside BullMQ 2 x concurrency 50, pg-boss 2 x batch 50 and
graphile-worker 2 x concurrency 50, alternating in rounds. During claimd's runs, every
0.2 s: the VmRSS (and Pss) of claimd's own processes summed (supervisor, fork server,
workers; not the co-processes), and its connections in the server's processlist (claimd
connects as a user of its own here). Without --concurrency in this claimd, its sides are not
run (MISS, with the reason); so: at one item per worker is run on a twentieth of the rows, as
the figure the option is measured against. Each pipe: co-process is also run alone, two at once
(one a worker), each fed half the jobs by tools/pipe-feeder.mjs with no queue and no database:
the co-process's own ceiling for this job shape, which claimd's figure through it is divided
by (information: what the pipe's claimd side costs, apart from the co-process's)."""

import json
import os
import shlex
import subprocess
import threading

from .common import (ROOT, BenchError, claimd_processes, fmt_int, log, md_table, memory_mib,
                     print_table)
from .claimd import accepts, handler_args, handler_spec
from .db import Sql
from . import peers as peers_mod
from . import stats

NAME = 'iobound'
SUMMARY = '4,000 jobs of 50 ms at --concurrency 50 beside the peers at 2 x 50; claimd\'s RSS and connections'
WORKERS = 2
CLAIMD_SIDES = (
    ('so', 'claimd so: sleep_ms=50', 'so'),
    ('pipe_python', 'claimd pipe: Python asyncio (pipe-async.py, --pipe-ready)', 'pipe-python'),
    ('pipe_node', 'claimd pipe: Node (pipe-async.mjs, --pipe-ready)', 'pipe-node'),
    ('pipe_python_pkg', 'claimd pipe: the Python package (claimd.run, --pipe-ready)',
     'pipe-python-pkg'),
    ('pipe_node_pkg', 'claimd pipe: the Node.js package (run, --pipe-ready)', 'pipe-node-pkg'),
    ('exec', 'claimd exec:/bin/sleep 0.05', 'exec'),
)
PEER_SIDES = ('bullmq', 'bullmq_aof', 'pgboss', 'graphile')
# The pipe: co-processes alone (tools/pipe-feeder.mjs): 'alone_' + the claimd side's key
ALONE_SIDES = ('pipe_python', 'pipe_node', 'pipe_python_pkg', 'pipe_node_pkg')
FEEDER = os.path.join(ROOT, 'tools', 'pipe-feeder.mjs')


def kind_of(key):
    """The handler kind of a claimd side's key, or of the co-process an 'alone_' side runs."""
    key = key[len('alone_'):] if key.startswith('alone_') else key
    return 'so' if key == 'so_c1' else next(k for s, _, k in CLAIMD_SIDES if s == key)


def run_alone(b, kind, n, conc, payload):
    """The co-process of a pipe: kind alone, WORKERS at once, each fed n / WORKERS jobs at
    conc by the feeder: {'jobs_per_s': n over the slowest one's seconds}."""
    cmd = shlex.split(handler_spec(b, kind)[len('pipe:'):])
    each = n // WORKERS
    outs = [None] * WORKERS

    def one(i):
        outs[i] = subprocess.run([b.node, FEEDER, '--jobs', str(each), '--concurrency',
                                  str(conc), '--payload', payload, '--', *cmd],
                                 capture_output=True, text=True, timeout=600)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res = []
    for o in outs:
        if o is None or o.returncode != 0:
            raise BenchError('the feeder failed: %s' % (
                (o.stderr.strip().splitlines() or ['?'])[-1] if o else 'no result'))
        res.append(json.loads(o.stdout))
    if any(r['failed'] for r in res):
        raise BenchError('%d jobs failed' % sum(r['failed'] for r in res))
    return {'jobs_per_s': each * WORKERS / max(r['seconds'] for r in res)}


def sampler(b, sql):
    """What one sample of a claimd run reads: its processes' memory, its connections."""
    def sample(c):
        procs = claimd_processes(c.p.pid)
        mem = [memory_mib(p) for p in [procs['supervisor'], *procs['fork_server'],
                                         *procs['workers']]]
        return {'rss_mib': sum(m['rss_mib'] or 0 for m in mem),
                'pss_mib': sum(m['pss_mib'] or 0 for m in mem),
                'processes': len(mem), 'workers': len(procs['workers']),
                'connections': int(sql.value(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '%s'"
                    % b.db.counted_user))}
    return sample


def run(b):
    peers = peers_mod.get(b)
    n, ms, conc, rounds = (b.sizes['io_rows'], b.sizes['io_sleep_ms'], b.sizes['io_concurrency'],
                           b.sizes['io_rounds'])
    payload = '{"sleep_ms":%d}' % ms
    refused = accepts(b.bin('claimd'), '--concurrency', str(conc))
    labels, why = {}, {}
    for key, label, kind in CLAIMD_SIDES:
        labels[key] = '%s, %d workers x --concurrency %d' % (label, WORKERS, conc)
        if refused:
            why[key] = refused
        elif kind in ('pipe-node', 'pipe-node-pkg') and not b.node:
            why[key] = 'node is not installed'
    labels['so_c1'] = 'claimd so: sleep_ms=50, %d workers, one item each (no --concurrency)' % WORKERS
    for key in ALONE_SIDES:
        what = next(label for s, label, _ in CLAIMD_SIDES if s == key)
        labels['alone_' + key] = ('%s alone, %d at once, fed by tools/pipe-feeder.mjs (no queue,'
                                  ' no database)' % (what.replace('claimd pipe: ', 'co-process: ')
                                                     .replace(', --pipe-ready', ''), WORKERS))
        if not b.node:
            why['alone_' + key] = 'node is not installed (the feeder is a Node.js script)'
    for p in PEER_SIDES:
        labels[p] = peers.label(p, conc)
        if p in peers.why:
            why[p] = peers.why[p]
    order0 = [k for k in list(labels) if k not in why]
    log('== iobound: %d jobs of %d ms, claimd %d workers x --concurrency %d, the peers 2 x %d, '
        '%d round(s): %s' % (n, ms, WORKERS, conc, conc, rounds, ', '.join(order0)))
    for k, w in why.items():
        log('iobound: %s not run: %s' % (k, w))
    dsn = b.db.counted_dsn()
    sql = Sql(b.db.sock, os.path.join(b.out, 'sql-client-iobound.err'))
    runs = {k: [] for k in order0}
    try:
        for rnd in range(rounds):
            for key in (order0 if rnd % 2 == 0 else order0[::-1]):
                if key in why or (key == 'so_c1' and rnd > 0):
                    continue
                try:
                    if key in PEER_SIDES:
                        r = peers.run(key, n, conc, ms)
                    elif key.startswith('alone_'):
                        r = run_alone(b, kind_of(key), n, conc, payload)
                    else:
                        kind = kind_of(key)
                        args = [*handler_args(b, kind, ms), '--workers', str(WORKERS)]
                        if key != 'so_c1':
                            args += ['--concurrency', str(conc)]
                        r = b.drain('iobound-%s' % key, args, n // 20 if key == 'so_c1' else n,
                                    payload=payload, dsn=dsn, sample=sampler(b, sql), rep=rnd)
                        summarize(r)
                except BenchError as e:
                    why[key] = 'failed: %s' % e
                    log('round %d %s failed: %s' % (rnd + 1, key, e))
                    continue
                runs[key].append(r)
                log('round %d %-12s %7s jobs/s%s' % (
                    rnd + 1, key, fmt_int(r['jobs_per_s']),
                    '; claimd %.1f MiB RSS, %d connections at most' % (
                        r['rss_mib_max'], r['connections_max']) if 'rss_mib_max' in r else ''))
    finally:
        sql.close()
    b.db.empty()
    med = {k: stats.median_run(v) for k, v in runs.items() if v and k not in why}
    res = {'rows': n, 'sleep_ms': ms, 'concurrency': conc, 'rounds': rounds, 'runs': runs,
           'not_run': why, 'labels': labels,
           'jobs_per_s': {k: m['jobs_per_s'] for k, m in med.items()}}

    print_table('iobound: %d jobs of %d ms, median of %d round(s)' % (n, ms, rounds),
                ('side', 'jobs/s', 'rounds', 'claimd RSS MiB (Pss)', 'connections'),
                table_rows(res))
    return res


def summarize(r):
    """The largest of each sampled figure of a claimd run."""
    s = r.get('samples') or []
    for k in ('rss_mib', 'pss_mib', 'connections', 'workers'):
        r[k + '_max'] = max((x[k] for x in s), default=None)


def record(b, res):
    jps, why = res['jobs_per_s'], res['not_run']
    for key in ('so', 'pipe_python', 'pipe_node', 'pipe_python_pkg', 'pipe_node_pkg'):
        # Judged on the worst round, not the medians: a target holds in every round.
        if key in jps:
            b.metric('iobound.%s_jobs_per_s' % key,
                     min(r['jobs_per_s'] for r in res['runs'][key]))
        else:
            b.unmeasured('iobound.%s_jobs_per_s' % key, why.get(key, 'no figure'))
        if key in jps and 'bullmq' in jps:
            per = stats.paired_ratios(res['runs'][key], res['runs']['bullmq'])
            b.metric('iobound.%s_vs_bullmq' % key,
                     min(per) if per else stats.ratio(jps[key], jps['bullmq']))
        else:
            b.unmeasured('iobound.%s_vs_bullmq' % key, '; '.join(
                '%s: %s' % (s, why.get(s, 'no figure')) for s in (key, 'bullmq') if s not in jps))
    for key in ('so', 'pipe_python', 'pipe_node'):
        if key in jps and 'bullmq_aof' in jps:   # information: BullMQ on a persistent Redis
            b.info('%s / BullMQ on a persistent Redis (appendfsync everysec), I/O-bound, '
                   'each round' % key.replace('_', ' '), ', '.join(
                       '%.2f' % x for x in stats.paired_ratios(res['runs'][key],
                                                               res['runs']['bullmq_aof'])))
    # memory and connections over the runs at --concurrency (the three targets' sides)
    cruns = [r for k in ('so', 'pipe_python', 'pipe_node') if k not in why
             for r in res['runs'].get(k, [])]
    rss = [r['rss_mib_max'] for r in cruns if r.get('rss_mib_max') is not None]
    conns = [r['connections_max'] / WORKERS for r in cruns if r.get('connections_max') is not None]
    whys = [why[k] for k in ('so', 'pipe_python', 'pipe_node') if k in why]
    reason = (whys[0] if len(set(whys)) == 1 else '; '.join(whys)) if whys else 'no sample'
    b.metric('iobound.claimd_rss_mib', max(rss)) if rss else b.unmeasured(
        'iobound.claimd_rss_mib', reason)
    b.metric('iobound.connections_per_worker', max(conns)) if conns else b.unmeasured(
        'iobound.connections_per_worker', reason)
    for key in ALONE_SIDES:   # information: claimd's side of the pipe
        if key in jps and 'alone_' + key in jps:
            b.info('%s / its co-process alone (fed with no queue), I/O-bound, each round'
                   % key.replace('_', ' '), ', '.join(
                       '%.2f' % x for x in stats.paired_ratios(res['runs'][key],
                                                               res['runs']['alone_' + key])))
    for k in ('exec', 'so_c1', 'pgboss', 'graphile'):
        if k in jps:
            b.info('%s (I/O-bound)' % res['labels'][k], fmt_int(jps[k]) + ' jobs/s')


def table_rows(res):
    rows = []
    for k, label in res['labels'].items():
        if k in res['jobs_per_s']:
            rs = res['runs'][k]
            mem = [r for r in rs if r.get('rss_mib_max') is not None]
            rows.append((label, fmt_int(res['jobs_per_s'][k]),
                         ', '.join(fmt_int(r['jobs_per_s']) for r in rs),
                         '%.1f (%.1f)' % (max(r['rss_mib_max'] for r in mem),
                                          max(r['pss_mib_max'] for r in mem)) if mem else '-',
                         str(max(r['connections_max'] for r in mem)) if mem else '-'))
        else:
            rows.append((label, 'not run', res['not_run'].get(k, ''), '', ''))
    return rows


def markdown(res):
    return ('## I/O-bound: %s jobs of %d ms (median of %d rounds)\n\n'
            % (fmt_int(res['rows']), res['sleep_ms'], res['rounds']) +
            md_table(('side', 'jobs/s', 'rounds', "claimd's processes: RSS MiB (Pss), most",
                      'its connections, most'), table_rows(res)) + '\n\n')
