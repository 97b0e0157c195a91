"""Section idle: the database load of an idle claimd. claimd with 2, then 16 workers on an
empty queue at its defaults (a 60 s window after 65 s, past the first maintenance pass), and
2 with --wake poll (--poll-interval 100ms, a 10 s window after 2 s): the server's Questions
counter over the window, minus the bench's own statements (measured by two back-to-back
readings): statements/s. With --baseline, the baseline build's 2 workers the same way, right
after this build's."""

import time

from .common import claimd_processes, log, md_table, memory_mib, print_table
from .claimd import Claimd
from . import stats

NAME = 'idle'
SUMMARY = 'statements/s of an idle claimd (2, 16 workers, the --baseline build, --wake poll)'


def questions_overhead(b):
    """Questions counted for one reading by the bench itself (read twice back to back)."""
    a = b.db.sql.status('Questions')
    return b.db.sql.status('Questions') - a


def memory(pid):
    """VmRSS and Pss of claimd's supervisor, fork server and workers."""
    procs = claimd_processes(pid)
    return {'supervisor': memory_mib(pid),
            'fork_server': [memory_mib(p) for p in procs['fork_server']],
            'workers': [memory_mib(p) for p in procs['workers']]}


def idle_run(b, workers, wake='auto', binary=None, want_memory=False, window=True,
             label='this build'):
    """claimd idle on an empty queue; its statements/s over a window (none: window=False),
    and with want_memory its processes' memory once settled."""
    c = Claimd(b, 'idle-w%d-%s%s' % (workers, wake, '-baseline' if binary else ''),
               '--handler', 'noop', '--workers', str(workers), '--wake', wake, binary=binary,
               dsn=b.baseline.dsn if binary and b.baseline else None)
    mem = None
    try:
        c.wait_idle(workers)
        if wake == 'auto':
            c.wait_pushed()
        # Woken by the binary log, past the first maintenance pass (a minute after the
        # start; later ones are skipped every other time while nothing changes): the
        # steady state.
        time.sleep(b.sizes['idle_settle_s'] + (63 if wake == 'auto' and window and
                                               not b.a.quick else 0))
        if want_memory:
            mem = memory(c.p.pid)
        if not window:
            c.stop()
            return None, mem
        overhead = questions_overhead(b)
        t0, q0 = time.monotonic(), b.db.sql.status('Questions')
        # Woken by the binary log, a supervisor's few statements come seconds apart: a
        # longer window.
        time.sleep(b.sizes['idle_window_s'] * (6 if wake == 'auto' else 1))
        q1, t1 = b.db.sql.status('Questions'), time.monotonic()
    except BaseException:
        c.kill()
        raise
    c.stop()
    qps = stats.rate(q1 - q0 - overhead, t1 - t0)
    log('idle, %s, %d workers, --wake %s: %.2f statements/s (%d in %.1f s, minus %d of the '
        'bench)' % (label, workers, wake, qps, q1 - q0, t1 - t0, overhead))
    return {'workers': workers, 'wake': wake, 'build': label, 'queries': q1 - q0 - overhead,
            'seconds': t1 - t0, 'bench_overhead': overhead, 'queries_per_s': qps}, mem


def run(b):
    log('== idle database load')
    b.db.empty()
    runs = []
    r, mem = idle_run(b, 2, want_memory='rss' in b.a.sections)
    b.idle_memory = mem   # section rss takes it from here
    runs.append(r)
    if b.baseline:
        runs.append(idle_run(b, 2, binary=b.baseline.claimd, label='the --baseline build')[0])
    runs.append(idle_run(b, 16)[0])
    runs.append(idle_run(b, 2, 'poll')[0])
    print_table('idle database load (statements/s): claimd at its defaults (woken by the binary '
                'log) and with --wake poll (--poll-interval 100ms)',
                ('build', 'workers', 'wake', 'statements/s', 'window s'),
                [(r['build'], str(r['workers']), r['wake'], '%.2f' % r['queries_per_s'],
                  '%.1f' % r['seconds']) for r in runs])
    return {'idle': runs}


def record(b, res):
    mine = [r for r in res['idle'] if r['build'] == 'this build']
    base = [r for r in res['idle'] if r['build'] != 'this build']
    for r in mine:
        key = ('idle.qps_poll' if r['wake'] == 'poll' else 'idle.qps_%dw' % r['workers'])
        b.metric(key, r['queries_per_s'])
    if base:
        b.metric('idle.qps_2w_minus_baseline', mine[0]['queries_per_s'] - base[0]['queries_per_s'])
        b.info('idle statements/s, 2 workers, the --baseline build', '%.2f'
               % base[0]['queries_per_s'])
    else:
        b.unmeasured('idle.qps_2w_minus_baseline', b.baseline_error or 'no --baseline given')


def markdown(res):
    return '## Idle database load\n\n' + md_table(
        ('build', 'workers', 'wake', 'statements/s', 'statements in window', 'window s'),
        [(r['build'], r['workers'], r['wake'], '%.2f' % r['queries_per_s'], r['queries'],
          '%.1f' % r['seconds']) for r in res['idle']]) + '\n\n'
