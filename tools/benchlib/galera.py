"""Section galera: the no-op drain (2 workers, claimd's defaults) on the single server and on
a 3-node Galera cluster on this machine (tools/galera), the DSN listing the three nodes
(claimd writes to the first), alternating: jobs/s of each."""

import os

from .common import fmt_count, fmt_int, log, print_table
from .db import GaleraDb
from . import stats

NAME = 'galera'
SUMMARY = 'noop jobs/s on a 3-node Galera cluster against one server'


def run(b):
    """The same no-op drain at claimd's defaults on the single server and on a 3-node
    Galera cluster on this machine, alternating."""
    n, rounds = b.sizes['rows'], 1 if b.a.quick else 2
    log('== galera: %s no-op rows, 2 workers, the single server and a 3-node cluster, '
        '%d round(s)' % (fmt_count(n), rounds))
    single = b.db
    cluster = GaleraDb(os.path.join(b.out, 'galera'), '128M', False)
    runs = {'single': [], 'galera': []}
    try:
        cluster.start(b.out)
        for rnd in range(rounds):
            for kind, db in (('single', single), ('galera', cluster)):
                b.db = db
                r = b.noop_run('galera-%s' % kind, 2, n, rnd)
                runs[kind].append(r)
                log('round %d %-7s %6.0f jobs/s' % (rnd + 1, kind, r['jobs_per_s']))
    finally:
        b.db = single
        cluster.stop()
    med = {k: stats.median_run(v) for k, v in runs.items()}
    res = {'rows': n, 'runs': runs,
           'ratio': stats.ratio(med['galera']['jobs_per_s'], med['single']['jobs_per_s'])}
    print_table('galera: Galera, %s no-op rows, 2 workers, claimd\'s defaults' % fmt_count(n),
                ('database', 'jobs/s', 'runs'),
                [(label, fmt_int(med[k]['jobs_per_s']),
                  ', '.join(fmt_int(x['jobs_per_s']) for x in runs[k]))
                 for k, label in (('single', 'one server'),
                                  ('galera', '3-node Galera (writes to one node)'))])
    return res



def record(b, res):
    b.info('noop jobs/s on a 3-node Galera cluster / one server', '%.2f' % res['ratio'])
