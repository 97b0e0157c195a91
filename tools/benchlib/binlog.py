"""Section binlog: the server's cost of its binary log. The same no-op drain (2 workers,
--wake poll, so that only the log differs) on the server restarted without it, with it as
tools/db writes it (row image MINIMAL) and with row image FULL, alternating; and claimd at
its defaults (following the log) beside each."""

from .common import fmt_count, fmt_int, log, print_table
from . import stats

NAME = 'binlog'
SUMMARY = 'the binary log\'s cost: no log, MINIMAL and FULL row images'


def run(b):
    """The server's cost of writing the binary log: the same no-op drain (2 workers,
    polling, so that only the log differs) on the server restarted without it, with it
    as tools/db writes it (row image MINIMAL) and with row image FULL, alternating; then
    claimd at its defaults (following the log) beside each."""
    n, rounds = b.sizes['rows'], 1 if b.a.quick else 2
    log('== binlog: the binary log: %s no-op rows, 2 workers, the server without and with its '
        'binary log, %d round(s)' % (fmt_count(n), rounds))
    # 'on': tools/db's log (MINIMAL); 'full': binlog_row_image=FULL
    runs = {'off': [], 'on': [], 'on_pushed': [], 'full': [], 'full_pushed': []}
    try:
        for rnd in range(rounds):
            for mode in ('off', 'on', 'full'):
                b.db.restart(binlog=mode != 'off',
                                row_image='FULL' if mode == 'full' else 'MINIMAL')
                kinds = [(mode, ['--wake', 'poll'])] + (
                    [(mode + '_pushed', [])] if mode != 'off' else [])
                for kind, extra in kinds:
                    r = b.noop_run('binlog-%s' % kind, 2, n, rnd, extra)
                    runs[kind].append(r)
                    log('round %d %-11s %6.0f jobs/s; mariadbd %.0f us/job; binary log '
                        '%.0f B/job' % (rnd + 1, kind, r['jobs_per_s'],
                                        r['mariadbd_us_per_job'], r['binlog_bytes_per_job']))
    finally:
        b.db.restart(binlog=True)
    b.db.empty()
    med = {k: stats.median_run(v) for k, v in runs.items()}

    def ratio(a, b, what='jobs_per_s'):
        return stats.ratio(med[a][what], med[b][what])
    res = {'rows': n, 'runs': runs,
           'ratio': ratio('on', 'off'), 'cpu_ratio': ratio('on', 'off', 'mariadbd_us_per_job'),
           'pushed_ratio': ratio('on_pushed', 'on'),
           'full_ratio': ratio('full', 'off'),
           'full_cpu_ratio': ratio('full', 'off', 'mariadbd_us_per_job'),
           'full_pushed_ratio': ratio('full_pushed', 'full'),
           'bytes_per_job': med['on']['binlog_bytes_per_job'],
           'full_bytes_per_job': med['full']['binlog_bytes_per_job']}
    labels = {'off': ('no binary log', '--wake poll'),
              'on': ('binary log, MINIMAL', '--wake poll'),
              'on_pushed': ('binary log, MINIMAL', 'defaults (pushed)'),
              'full': ('binary log, FULL', '--wake poll'),
              'full_pushed': ('binary log, FULL', 'defaults (pushed)')}
    print_table('binlog: the binary log, %s no-op rows, 2 workers' % fmt_count(n),
                ('server', 'claimd', 'jobs/s', 'mariadbd µs/job', 'log bytes/job'),
                [labels[k] + (fmt_int(med[k]['jobs_per_s']) + ' [%s]' % ', '.join(
                    fmt_int(x['jobs_per_s']) for x in runs[k]),
                    '%.0f' % med[k]['mariadbd_us_per_job'],
                    '%.0f' % med[k]['binlog_bytes_per_job']) for k in labels])
    return res



def record(b, res):
    b.metric('binlog.pushed_vs_poll', res['pushed_ratio'])
    b.info('noop jobs/s with the binary log / without (both polling); server CPU per job',
           '%.2f; %.2fx' % (res['ratio'], res['cpu_ratio']))
    b.info('the same with binlog_row_image=FULL; pushed / polling; its bytes per job against '
           'MINIMAL\'s', '%.2f; %.2fx; %.2f; %.0f against %.0f' % (
               res['full_ratio'], res['full_cpu_ratio'], res['full_pushed_ratio'],
               res['full_bytes_per_job'], res['bytes_per_job']))
