"""Section keyed: what a row's key (group_key) costs. The same no-op rows drained by 2 workers
at claimd's defaults, without keys, each under a key of its own, and spread over 100 keys run
one at a time (FIFO groups) and five at a time (queues.key_concurrency = 5), the four in turn
in each round: each keyed rate as a share of the keyless one in the same round, and the
targets hold for the worst round."""

from .common import fmt_count, fmt_int, log, print_table
from . import stats

NAME = 'keyed'
SUMMARY = 'noop jobs/s of rows with keys (one each; 100 keys, N = 1 and 5) against no key'

KEYS = 100
# (name, keys for load_ready, the queue's key_concurrency)
CASES = (('no key', None, 1), ('a key each', 0, 1),
         ('%d keys, N = 1' % KEYS, KEYS, 1), ('%d keys, N = 5' % KEYS, KEYS, 5))


def set_key_concurrency(b, n):
    b.db.sql.query("INSERT INTO queues (name, key_concurrency) VALUES ('default', %d) "
                   "ON DUPLICATE KEY UPDATE key_concurrency = %d" % (n, n))


def run(b):
    n, rounds = b.sizes['keyed_rows'], b.sizes['keyed_rounds']
    log('== keyed: %s no-op rows, 2 workers at claimd\'s defaults: no key, a key each, %d '
        'keys run one and five at a time; %d round(s)' % (fmt_count(n), KEYS, rounds))
    runs = {name: [] for name, _, _ in CASES}
    try:
        for rnd in range(rounds):
            for name, keys, conc in CASES:
                set_key_concurrency(b, conc)
                r = b.drain('keyed: ' + name, ['--handler', 'noop', '--workers', '2'], n,
                            keys=keys, rep=rnd)
                runs[name].append(r)
                log('round %d %-16s %7.0f jobs/s' % (rnd + 1, name, r['jobs_per_s']))
    finally:
        set_key_concurrency(b, 1)
        b.db.empty()
    base = runs[CASES[0][0]]
    ratios = {name: stats.paired_ratios(runs[name], base) for name, _, _ in CASES[1:]}
    print_table('keyed: %s no-op rows, 2 workers, by round' % fmt_count(n),
                ('rows', 'jobs/s', 'vs no key', 'server CPU µs/job'),
                [('%s %d' % (name, i + 1), fmt_int(r['jobs_per_s']),
                  '%.2f' % ratios[name][i] if name in ratios and i < len(ratios[name]) else '1',
                  '%.0f' % (r.get('mariadbd_us_per_job') or 0))
                 for name, _, _ in CASES for i, r in enumerate(runs[name])])
    return {'rows': n, 'keys': KEYS, 'runs': runs, 'ratios': ratios}


def record(b, res):
    for key, (name, _, _) in zip(('distinct_vs_none', 'n1_vs_none', 'n5_vs_none'), CASES[1:]):
        got = res['ratios'][name]
        if got:
            b.metric('keyed.' + key, min(got))
            b.info('%s / no key, per round' % name, ', '.join('%.2f' % v for v in got))
        else:
            b.unmeasured('keyed.' + key, 'no round measured both')
