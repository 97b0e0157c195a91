"""Section throughput: the machinery. N fresh rows per run drained by claimd --handler noop
(the handler that does nothing, so what is left is the claim, the IPC and the bookkeeping)
with W workers at its defaults, beside the bare-SQL probe (tools/claim_probe) from W
processes; with 2 workers also at fixed --batch 64 and 256 and with --wake poll; with
--baseline, the baseline build's noop with 1 and 8 workers in the same rounds."""

from .common import fmt_int, log, md_table, print_table
from . import stats

NAME = 'throughput'
SUMMARY = 'the machinery: noop with 1-8 workers beside the bare-SQL probe; fixed batches; --wake poll'


def spread(runs):
    s = stats.spread([x['jobs_per_s'] for x in runs])
    return ' [%s-%s]' % (fmt_int(s[0]), fmt_int(s[1])) if s and len(runs) > 1 else ''


def run(b):
    n, bt, pb, reps = b.sizes['rows'], b.a.batch, b.a.probe_batch, b.sizes['repeat']
    label = 'claimd --batch %d' % bt if bt else 'claimd at its defaults (--batch auto)'
    fixed = [] if bt or 2 not in b.a.workers else [64, 256]
    base = [w for w in (1, 8) if w in b.a.workers] if b.baseline else []
    log('== throughput (the machinery): %d no-op rows per run, %s, probe batch %d, %d run(s) '
        'each%s%s' % (n, label, pb, reps, '; 2 workers also at --batch %s' % ' and '.join(
            map(str, fixed)) if fixed else '',
            '; the baseline build with %s workers' % ' and '.join(map(str, base)) if base else ''))
    # Rounds: each goes over every worker count, so the machine's drift over the section
    # (it is shared) falls on all of them alike, not on whichever ran last.
    runs_w = {w: {'claimd': [], 'probe': []} for w in b.a.workers}
    for fb in fixed:
        runs_w[2]['batch%d' % fb] = []
    if fixed:
        runs_w[2]['poll'] = []
    for w in base:
        runs_w[w]['baseline'] = []
    for rep in range(reps):
        order = []
        for w in b.a.workers:
            order += [(w, 'claimd', bt), (w, 'probe', pb)]
            if w == 2:
                order += [(w, 'batch%d' % fb, fb) for fb in fixed]
                order += [(w, 'poll', bt)] if fixed else []
        # claimd with 2 and with 8 workers last, back to back, in turns first (their ratio
        # is reported per round: runs far apart differ by the drift between them)
        pair = [x for x in order if x[1] == 'claimd' and x[0] in (2, 8)]
        if len(pair) == 2:
            order = [x for x in order if x not in pair] + (pair if rep % 2 == 0 else pair[::-1])
        for w in base:   # the baseline build beside this one's, in turns first
            i = order.index((w, 'claimd', bt))
            order.insert(i + (1 if rep % 2 == 0 else 0), (w, 'baseline', bt))
        for w, kind, kb in order:
            if kind == 'probe':
                r = b.probe_run(w, kb, n, rep)
            else:
                extra = (['--batch', str(kb)] if kb else []) + (
                    ['--wake', 'poll'] if kind == 'poll' else [])
                r = b.noop_run('throughput-w%d-%s' % (w, kind), w, n, rep, extra,
                               binary=b.baseline.claimd if kind == 'baseline' else None,
                               messages=(w, kind) == (2, 'claimd'))
            runs_w[w][kind].append(r)
            log('round %d workers=%d %-9s %6.0f jobs/s (%.2f s); mariadbd %.0f us/job, '
                '%.0f page reads/job; other processes %.0f%% CPU'
                % (rep + 1, w, kind, r['jobs_per_s'], r['seconds'], r['mariadbd_us_per_job'],
                   r['page_reads_per_job'], r['other_cpu_pct']))
    per_w = []
    for w in b.a.workers:
        runs = runs_w[w]
        cd, pr = stats.median_run(runs['claimd']), stats.median_run(runs['probe'])
        row = {'workers': w, 'claimd': cd, 'probe': pr,
               'ratio': stats.ratio(cd['jobs_per_s'], pr['jobs_per_s']), 'runs': runs}
        for kind in runs:
            if kind not in ('claimd', 'probe'):
                row[kind] = stats.median_run(runs[kind])
        per_w.append(row)
    b.db.empty()
    res = {'rows': n, 'batch': bt, 'probe_batch': pb, 'fixed': fixed, 'repeat': reps,
           'runs': per_w}

    rows = [(str(r['workers']), fmt_int(r['claimd']['jobs_per_s']) + spread(r['runs']['claimd']),
             fmt_int(r['probe']['jobs_per_s']) + spread(r['runs']['probe']), '%.2f' % r['ratio'],
             fmt_int(r['baseline']['jobs_per_s']) if 'baseline' in r else '-',
             '%.0f / %.0f' % (r['claimd']['mariadbd_us_per_job'], r['probe']['mariadbd_us_per_job']),
             '%.0f / %.0f' % (r['claimd']['client_us_per_job'], r['probe']['client_us_per_job']),
             '%.0f%%' % max(x['other_cpu_pct'] for k in ('claimd', 'probe') for x in r['runs'][k]))
            for r in per_w]
    print_table('throughput (the machinery): %d no-op rows, %s, probe batch %d, median of %d '
                'run(s) [min-max]; diagnostics claimd / probe' % (n, label, pb, reps),
                ('workers', 'noop jobs/s', 'probe rows/s', 'noop/probe', 'baseline noop',
                 'mariadbd us/job', 'client us/job', 'other CPU'), rows)
    if fixed:
        r2 = [r for r in per_w if r['workers'] == 2][0]
        print_table('throughput, 2 workers, the same rounds: noop at its defaults and at fixed '
                    'batches', ('claimd', 'jobs/s'),
                    [('defaults (auto)', fmt_int(r2['claimd']['jobs_per_s']) +
                      spread(r2['runs']['claimd']))] +
                    [('--batch %d' % fb, fmt_int(r2['batch%d' % fb]['jobs_per_s']) +
                      spread(r2['runs']['batch%d' % fb])) for fb in fixed] +
                    [('defaults, --wake poll', fmt_int(r2['poll']['jobs_per_s']) +
                      spread(r2['runs']['poll']))])
    return res


def record(b, res):
    by_w = {r['workers']: r for r in res['runs']}
    ratios = [r['ratio'] for r in res['runs'] if r['ratio'] is not None]
    if ratios:
        b.metric('throughput.probe_ratio_min', min(ratios))
        b.info('noop / probe at batch %d, %s workers' % (
            res['probe_batch'], ' / '.join(str(r['workers']) for r in res['runs'])),
            ' / '.join('%.2f' % r['ratio'] for r in res['runs']))
    if 2 in by_w:
        b.info('noop jobs/s, 2 workers, %s' % ('batch %d' % res['batch'] if res['batch']
                                               else 'defaults'),
               fmt_int(by_w[2]['claimd']['jobs_per_s']))
        per = [r.get('messages_per_job') for r in by_w[2]['runs']['claimd']]
        if any(v is not None for v in per):
            b.info('messages between supervisor and workers a job, noop, 2 workers (batches '
                   'in flight), per round', ', '.join('%.3f' % v if v is not None else '-'
                                                      for v in per))
    if res['fixed'] and 2 in by_w:
        best = max(res['fixed'], key=lambda fb: by_w[2]['batch%d' % fb]['jobs_per_s'])
        b.metric('throughput.defaults_vs_best_fixed', stats.ratio(
            by_w[2]['claimd']['jobs_per_s'], by_w[2]['batch%d' % best]['jobs_per_s']))
        b.metric('throughput.pushed_vs_poll', stats.ratio(by_w[2]['claimd']['jobs_per_s'],
                                                          by_w[2]['poll']['jobs_per_s']))
    elif res['batch']:
        for k in ('throughput.defaults_vs_best_fixed', 'throughput.pushed_vs_poll'):
            b.unmeasured(k, 'run with --batch %d, not at the defaults' % res['batch'])
    if 2 in by_w and 8 in by_w:
        pairs = stats.paired_ratios(by_w[8]['runs']['claimd'], by_w[2]['runs']['claimd'])
        b.info('noop jobs/s 8 workers / 2 workers, per round (run back to back; level on 2 '
               'cores by design)', ', '.join('%.2f' % x for x in pairs))
    for w in (1, 8):
        key = 'throughput.vs_baseline_%dw' % w
        if w not in by_w:
            b.unmeasured(key, 'not run with %d workers (--workers)' % w)
        elif 'baseline' in by_w[w]:
            b.metric(key, stats.ratio(by_w[w]['claimd']['jobs_per_s'],
                                      by_w[w]['baseline']['jobs_per_s']))
        else:
            b.unmeasured(key, b.baseline_error or 'no --baseline given')


def markdown(res):
    out = ('## The machinery: noop throughput (%d rows, claimd %s, probe batch %d, median of %d)'
           '\n\n' % (res['rows'], '--batch %d' % res['batch'] if res['batch'] else
                     'at its defaults', res['probe_batch'], res['repeat']))
    return out + md_table(
        ('workers', 'noop jobs/s', 'probe rows/s', 'noop/probe', 'baseline noop jobs/s',
         'mariadbd µs/job (noop / probe)', 'page reads/job (noop / probe)'),
        [(r['workers'], fmt_int(r['claimd']['jobs_per_s']) + spread(r['runs']['claimd']),
          fmt_int(r['probe']['jobs_per_s']) + spread(r['runs']['probe']), '%.2f' % r['ratio'],
          fmt_int(r['baseline']['jobs_per_s']) if r.get('baseline') else '-',
          '%.0f / %.0f' % (r['claimd']['mariadbd_us_per_job'], r['probe']['mariadbd_us_per_job']),
          '%.0f / %.0f' % (r['claimd']['page_reads_per_job'], r['probe']['page_reads_per_job']))
         for r in res['runs']]) + '\n\n'


def plot_data(res):
    """(workers, noop jobs/s, probe rows/s) for the chart."""
    return [(r['workers'], r['claimd']['jobs_per_s'], r['probe']['jobs_per_s'])
            for r in res['runs']]
