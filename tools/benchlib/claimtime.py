"""Section claimtime: the single-row claim time (tools/claim_probe latency, batch 1, 2000
timed claims, each completing the previous) with (a) 10k ready rows and (b) 1M ready + 5M
done rows: the claim must not slow down as the table grows."""

import json
import os
import subprocess
import time

from .common import BenchError, fmt_count, log, md_table, print_table
from .db import LOAD_CHUNK
from . import stats

NAME = 'claimtime'
SUMMARY = 'single-row claim time, 10k rows against 1M ready + 5M done (the slow one)'


def claim_latency(b, label):
    """claim_probe latency, batch 1, with server counters per claim as a diagnostic."""
    k = b.sizes['claimtime_claims']
    names = ('Handler_read_next', 'Handler_read_key', 'Innodb_buffer_pool_read_requests')
    before = {s: b.db.sql.status(s) for s in names}
    cpu0 = b.counters()
    r = subprocess.run([b.bin('claim_probe'), 'latency', b.db.dsn, '1', str(k)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise BenchError('claim_probe latency failed: ' + r.stderr.strip())
    res = json.loads(r.stdout)
    total = res['claims'] + res['warmup'] + 1
    res['other_cpu_pct'] = stats.run_costs(cpu0, b.counters(), total, os.cpu_count() or 1)['other_cpu_pct']
    for s in names:
        res[s + '_per_claim'] = (b.db.sql.status(s) - before[s]) / total
    res['label'] = label
    log('%s: p50 %.0f us, mean %.0f us, p99 %.0f us' % (label, res['p50_us'],
                                                          res['mean_us'], res['p99_us']))
    return res


def run(b):
    s = b.sizes
    log('== claimtime: claim time against table size')
    b.db.empty()
    b.db.load_ready(s['claimtime_small'])
    small = claim_latency(b, '%s ready' % fmt_count(s['claimtime_small']))
    b.db.empty()
    t0 = time.monotonic()
    for done in range(0, s['claimtime_done'], LOAD_CHUNK):
        k = min(LOAD_CHUNK, s['claimtime_done'] - done)
        b.db.sql.query(
            "INSERT INTO work_items (payload, state, finished_at) SELECT 'd', 'done', "
            "NOW(6) - INTERVAL 1 DAY FROM seq_1_to_%d" % k)
        log('loaded %d/%d done rows (%.0f s)' % (done + k, s['claimtime_done'],
                                                  time.monotonic() - t0))
    for ready in range(0, s['claimtime_ready'], LOAD_CHUNK):
        k = min(LOAD_CHUNK, s['claimtime_ready'] - ready)
        b.db.load_ready(k)
        log('loaded %d/%d ready rows (%.0f s)' % (ready + k, s['claimtime_ready'],
                                                   time.monotonic() - t0))
    big = claim_latency(b, '%s ready + %s done' % (fmt_count(s['claimtime_ready']),
                                                     fmt_count(s['claimtime_done'])))
    b.db.empty()
    res = {'small': small, 'big': big, 'load_seconds': time.monotonic() - t0,
           'ratio_p50': stats.ratio(big['p50_us'], small['p50_us']),
           'ratio_mean': stats.ratio(big['mean_us'], small['mean_us'])}
    rows = [(r['label'], '%.0f' % r['p50_us'], '%.0f' % r['mean_us'], '%.0f' % r['p99_us'],
             '%.1f' % r['Handler_read_next_per_claim'],
             '%.1f' % r['Innodb_buffer_pool_read_requests_per_claim'])
            for r in (small, big)]
    rows.append(('ratio (b)/(a)', '%.2f' % res['ratio_p50'], '%.2f' % res['ratio_mean'],
                 '', '', ''))
    print_table('claimtime: single-row claim time (claim_probe latency, batch 1, %d claims)'
                % s['claimtime_claims'],
                ('table', 'p50 us', 'mean us', 'p99 us', 'Handler_read_next/claim',
                 'page reads/claim'), rows)
    return res



def record(b, res):
    b.metric('claimtime.ratio_p50', res['ratio_p50'])
    b.metric('claimtime.ratio_mean', res['ratio_mean'])
    for k in ('small', 'big'):
        b.info('claim time p50, %s' % res[k]['label'], '%.0f µs' % res[k]['p50_us'])


def markdown(res):
    return '## Claim time (batch 1)\n\n' + md_table(
        ('table', 'p50 µs', 'mean µs', 'p99 µs', 'Handler_read_next/claim'),
        [(r['label'], '%.0f' % r['p50_us'], '%.0f' % r['mean_us'], '%.0f' % r['p99_us'],
          '%.1f' % r['Handler_read_next_per_claim']) for r in (res['small'], res['big'])]) + '\n\n'


def plot_data(res):
    return [('claim: ' + res[k]['label'], res[k]['p50_us'] / 1000, res[k]['p99_us'] / 1000)
            for k in ('small', 'big')]
