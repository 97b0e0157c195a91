"""Section handlers, the headline: CPU-trivial (no-op) jobs through claimd's real handlers
beside the peers, in rounds within one run, each round running every side once (in the
reverse order every other round) so that the machine's drift falls on all alike; ratios are
taken within the run. claimd runs 2 workers at its defaults: so: (tools/bench_plugin.so,
returning at once), pipe: with the shipped Node and Python asyncio co-processes (with
--pipe-ready, as they are documented to run), exec:
/bin/true, noop (the machinery, one line), the --baseline build's noop, so: and pipe: Node
(the same plugin and co-process: their protocols are the baseline's too), and pipe: Node with
--concurrency 10 where this claimd accepts it. The peers: BullMQ 2 x concurrency 10, pg-boss
2 x batch 10, graphile-worker 2 x concurrency 10. Every row has an empty payload, for which
the pipe: co-processes, which echo a payload back as the result, store none: no other side
stores one (the peers' handlers return nothing), and writing it costs the server ~15% of the
pipe: rate."""

from .common import BenchError, fmt_int, log, md_table, print_table
from .claimd import accepts, handler_args
from . import peers as peers_mod
from . import stats

NAME = 'handlers'
SUMMARY = 'the headline: no-op jobs through so:, pipe: (Node, Python asyncio), exec: and noop beside BullMQ, pg-boss, graphile-worker'
WORKERS = 2
PEER_CONCURRENCY = 10
# side -> (label, handler kind or peer, extra claimd flags)
CLAIMD_SIDES = (
    ('so', 'claimd so: (bench_plugin, returns at once), 2 workers, defaults', 'so', []),
    ('pipe_node', 'claimd pipe: Node co-process (pipe-async.mjs), 2 workers, defaults '
     '(+ --pipe-ready)', 'pipe-node', []),
    ('pipe_python', 'claimd pipe: Python asyncio co-process (pipe-async.py), 2 workers, '
     'defaults (+ --pipe-ready)', 'pipe-python', []),
    ('pipe_python_pkg', 'claimd pipe: the Python package (claimd.run), 2 workers, defaults '
     '(+ --pipe-ready)', 'pipe-python-pkg', []),
    ('pipe_node_pkg', 'claimd pipe: the Node.js package (run), 2 workers, defaults '
     '(+ --pipe-ready)', 'pipe-node-pkg', []),
    ('exec', 'claimd exec:/bin/true, 2 workers, defaults', 'exec', []),
    ('noop', 'claimd noop (the machinery), 2 workers, defaults', 'noop', []),
    ('baseline', 'the --baseline build: noop, 2 workers, defaults', 'noop', []),
    ('baseline_so', 'the --baseline build: so: (bench_plugin), 2 workers, defaults', 'so', []),
    ('baseline_pipe_node', 'the --baseline build: pipe: Node co-process, 2 workers, defaults '
     '(+ --pipe-ready)', 'pipe-node', []),
    ('pipe_node_c10', 'claimd pipe: Node co-process, 2 workers x --concurrency 10',
     'pipe-node', ['--concurrency', str(PEER_CONCURRENCY)]),
)
PEER_SIDES = ('bullmq', 'bullmq_aof', 'pgboss', 'graphile')


def sides(b, peers):
    """The sides this run can have, and why the others cannot."""
    have, why = [], {}
    conc = accepts(b.bin('claimd'), '--concurrency', str(PEER_CONCURRENCY))
    for key, label, kind, extra in CLAIMD_SIDES:
        if b.a.sides is not None and key not in b.a.sides:
            why[key] = 'not among --sides'
        elif key.startswith('baseline') and not b.baseline:
            why[key] = b.baseline_error or 'no --baseline given'
        elif kind in ('pipe-node', 'pipe-node-pkg') and not b.node:
            why[key] = 'node is not installed'
        elif extra and conc:
            why[key] = conc
        else:
            have.append(key)
    for p in PEER_SIDES:
        if b.a.sides is not None and p not in b.a.sides:
            why[p] = 'not among --sides'
        elif p in peers.why:
            why[p] = peers.why[p]
        else:
            have.append(p)
    return have, why


def label_of(b, peers, key):
    for k, label, _, _ in CLAIMD_SIDES:
        if k == key:
            return label
    return peers.label(key, PEER_CONCURRENCY)


def run_side(b, peers, key, rnd):
    n = b.sizes['exec_rows'] if key == 'exec' else b.sizes['handler_rows']
    if key in PEER_SIDES:
        return peers.run(key, n, PEER_CONCURRENCY, 0)
    kind, extra = next((k, e) for s, _, k, e in CLAIMD_SIDES if s == key)
    args = [*handler_args(b, kind), '--workers', str(WORKERS), *extra]
    # An empty payload: no result stored (the module's comment says why)
    return b.drain('handlers-%s' % key, args, n, payload='', rep=rnd,
                   binary=b.baseline.claimd if key.startswith('baseline') else None)


def run(b):
    peers = peers_mod.get(b)
    rounds = b.sizes['handler_rounds']
    have, why = sides(b, peers)
    log('== handlers (the headline): %s CPU-trivial jobs per run (exec: %s), %d round(s): %s'
        % (fmt_int(b.sizes['handler_rows']), fmt_int(b.sizes['exec_rows']), rounds,
           ', '.join(have)))
    for k, w in why.items():
        log('handlers: %s not run: %s' % (k, w))
    runs = {k: [] for k in have}
    for rnd in range(rounds):
        order = have if rnd % 2 == 0 else have[::-1]
        for key in order:
            if key in why:   # failed in an earlier round
                continue
            try:
                r = run_side(b, peers, key, rnd)
            except BenchError as e:
                why[key] = 'failed: %s' % e
                log('round %d %s failed: %s' % (rnd + 1, key, e))
                continue
            runs[key].append(r)
            log('round %d %-13s %7s jobs/s' % (rnd + 1, key, fmt_int(r['jobs_per_s'])))
    b.db.empty()
    med = {k: stats.median_run(v) for k, v in runs.items() if v and k not in why}
    res = {'rows': b.sizes['handler_rows'], 'exec_rows': b.sizes['exec_rows'], 'rounds': rounds,
           'runs': runs, 'not_run': why, 'versions': peers.versions,
           'postgresql': peers.pg_version,
           'labels': {k: label_of(b, peers, k) for k in list(runs) + list(why)},
           'jobs_per_s': {k: m['jobs_per_s'] for k, m in med.items()}}

    print_table('handlers: CPU-trivial jobs, median of %d round(s) [each round]' % rounds,
                ('side', 'jobs/s', 'rounds'), table_rows(res))
    return res


RATIOS = (('handlers.so_vs_baseline_noop', 'so', 'baseline'),
          ('handlers.so_vs_bullmq', 'so', 'bullmq'),
          ('handlers.so_vs_pgboss', 'so', 'pgboss'),
          ('handlers.pipe_node_vs_bullmq', 'pipe_node_c10', 'bullmq'),
          ('handlers.pipe_python_pkg_vs_pipe_python', 'pipe_python_pkg', 'pipe_python'),
          ('handlers.pipe_node_pkg_vs_pipe_node', 'pipe_node_pkg', 'pipe_node'))


def record(b, res):
    jps, why = res['jobs_per_s'], res['not_run']
    for key, a, c in RATIOS:
        if a in jps and c in jps:
            # Judged on the worst round, not the medians: a target holds in every round.
            per = stats.paired_ratios(res['runs'][a], res['runs'][c])
            b.metric(key, min(per) if per else stats.ratio(jps[a], jps[c]))
            b.info('%s / %s, each round' % (a.replace('_', ' '), c),
                   ', '.join('%.2f' % x for x in per))
        else:
            b.unmeasured(key, '; '.join('%s: %s' % (s, why.get(s, 'no figure'))
                                        for s in (a, c) if s not in jps))
    # BullMQ on a Redis that keeps its data (appendonly, fsync once a second), as information
    for a in ('so', 'pipe_node_c10'):
        if a in jps and 'bullmq_aof' in jps:
            b.info('%s / BullMQ on a persistent Redis (appendfsync everysec), each round'
                   % a.replace('_', ' '), ', '.join(
                       '%.2f' % x for x in stats.paired_ratios(res['runs'][a],
                                                               res['runs']['bullmq_aof'])))
    if 'pipe_node' in jps and 'bullmq' in jps:
        b.info('pipe: Node at defaults (one item at a time per worker) / BullMQ 2 x 10',
               '%.2f' % stats.ratio(jps['pipe_node'], jps['bullmq']))
    for a, c in (('so', 'baseline_so'), ('pipe_node', 'baseline_pipe_node')):
        if a in jps and c in jps:
            b.info('%s / the --baseline build\'s, each round' % a.replace('_', ' '),
                   ', '.join('%.2f' % x for x in stats.paired_ratios(res['runs'][a],
                                                                        res['runs'][c])))
    for k in ('pipe_python', 'pipe_python_pkg', 'exec', 'noop', 'pipe_node', 'pipe_node_pkg',
              'graphile', 'bullmq', 'bullmq_aof'):
        if k in jps:
            b.info('%s (CPU-trivial)' % res['labels'][k], fmt_int(jps[k]) + ' jobs/s')


def table_rows(res):
    rows = []
    for k, label in res['labels'].items():
        if k in res['jobs_per_s']:
            rows.append((label, fmt_int(res['jobs_per_s'][k]),
                         ', '.join(fmt_int(r['jobs_per_s']) for r in res['runs'][k])))
        else:
            rows.append((label, 'not run', res['not_run'].get(k, '')))
    return rows


def markdown(res):
    return ('## The headline: real handlers and the peers, CPU-trivial jobs (%s per run, exec: '
            '%s; median of %d rounds)\n\n' % (fmt_int(res['rows']), fmt_int(res['exec_rows']),
                                              res['rounds']) +
            md_table(('side', 'jobs/s', 'rounds'), table_rows(res)) + '\n\n')
