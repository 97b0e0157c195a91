"""Section rss: VmRSS and Pss (smaps_rollup) of the supervisor, the fork server and each
worker of claimd with 2 idle workers at its defaults (taken during section idle's run when it
runs too, else from a run of its own)."""

from .common import fmt_mib, log, md_table, print_table
from .idle import idle_run

NAME = 'rss'
SUMMARY = 'VmRSS/Pss of the supervisor, fork server and workers, 2 idle workers'


def run(b):
    mem = b.idle_memory
    if not mem:
        log('== rss: memory of 2 idle workers')
        b.db.empty()
        mem = idle_run(b, 2, want_memory=True, window=False)[1]
    rows = [('supervisor', str(mem['supervisor']['pid']), fmt_mib(mem['supervisor']))]
    rows += [('fork server', str(m['pid']), fmt_mib(m)) for m in mem['fork_server']]
    rows += [('worker', str(m['pid']), fmt_mib(m)) for m in mem['workers']]
    print_table('rss: memory, 2 idle workers (MiB)', ('process', 'pid', 'RSS / Pss'), rows)
    return {'rss': mem}


def record(b, res):
    mem = res['rss']
    if mem['workers']:
        b.metric('rss.worker_mib', max(m['rss_mib'] for m in mem['workers']))
    else:
        b.unmeasured('rss.worker_mib', 'no worker process found')
    b.metric('rss.supervisor_mib', mem['supervisor']['rss_mib'])


def markdown(res):
    m = res['rss']
    return '## Memory, 2 idle workers\n\n' + md_table(
        ('process', 'VmRSS MiB', 'Pss MiB'),
        [('supervisor', '%.2f' % m['supervisor']['rss_mib'],
          '%.2f' % (m['supervisor']['pss_mib'] or 0))] +
        [('fork server', '%.2f' % f['rss_mib'], '%.2f' % (f['pss_mib'] or 0))
         for f in m.get('fork_server', [])] +
        [('worker', '%.2f' % w['rss_mib'], '%.2f' % (w['pss_mib'] or 0))
         for w in m['workers']]) + '\n\n'
