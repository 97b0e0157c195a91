"""Section killstorm: 100k no-op rows drained by 2 workers at claimd's defaults, calm and with
a random worker SIGKILLed every 100 ms, alternating over 2 rounds: the stormy rate as a
share of the calm one, and every row done (none dead or left behind)."""

import os
import random
import signal
import threading

from .common import children_of, comm_of, fmt_count, fmt_int, log, print_table
from .claimd import Claimd
from . import stats

NAME = 'killstorm'
SUMMARY = 'noop jobs/s with a worker SIGKILLed every 100 ms against calm; no row lost'


def storm_run(b, mode, n, rnd):
    """n fresh no-op rows drained by claimd at its defaults (2 workers); with mode 'storm'
    a random worker gets SIGKILL every 100 ms throughout. The rate, the kills, and what
    became of every row."""
    b.db.empty()
    b.db.load_ready(n)
    c = Claimd(b, 'storm-%s' % mode, '--handler', 'noop', '--workers', '2')
    stop, kills = threading.Event(), [0]

    def killer():
        rng = random.Random(rnd)
        while not stop.wait(0.1):
            workers = [p for p in children_of(c.p.pid) if comm_of(p) == 'claimd']
            if workers:
                try:
                    os.kill(rng.choice(workers), signal.SIGKILL)
                    kills[0] += 1
                except ProcessLookupError:
                    pass
    t = threading.Thread(target=killer) if mode == 'storm' else None
    try:
        if t:
            t.start()
        b.db.wait_no_live_row(c.p, max(300, n // 100), 'claimd (%s)' % mode)
    except BaseException:
        stop.set()
        c.kill()
        raise
    finally:
        stop.set()
        if t:
            t.join()
    c.stop()
    r = b.db.sql.query(
        "SELECT COUNT(*), SUM(state = 'done'), SUM(state = 'dead'), MAX(attempts), "
        "TIMESTAMPDIFF(MICROSECOND, MIN(claimed_at), MAX(finished_at)) FROM work_items")[0]
    rows, done, dead, maxatt, us = (int(r[0]), int(r[1] or 0), int(r[2] or 0),
                                    int(r[3] or 0), int(r[4]))
    res = {'mode': mode, 'rows': rows, 'done': done, 'dead': dead, 'max_attempts': maxatt,
           'kills': kills[0], 'seconds': us / 1e6, 'jobs_per_s': stats.rate(rows, us / 1e6)}
    log('round %d %-5s %6.0f jobs/s (%.2f s), %d kills; %d of %d done, %d dead, '
        'attempts at most %d' % (rnd + 1, mode, res['jobs_per_s'], res['seconds'],
                                 res['kills'], done, rows, dead, maxatt))
    return res


def run(b):
    n, rounds = b.sizes['storm_rows'], b.sizes['storm_rounds']
    log('== killstorm: %s no-op rows, 2 workers at claimd\'s defaults, calm and with a '
        'worker SIGKILLed every 100 ms, %d round(s)' % (fmt_count(n), rounds))
    runs = {'calm': [], 'storm': []}
    for rnd in range(rounds):
        for mode in ('calm', 'storm'):
            runs[mode].append(storm_run(b, mode, n, rnd))
    b.db.empty()
    calm, storm = stats.median_run(runs['calm']), stats.median_run(runs['storm'])
    lost = sum(r['rows'] - r['done'] for r in runs['storm'])
    res = {'rows': n, 'runs': runs, 'ratio': stats.ratio(storm['jobs_per_s'], calm['jobs_per_s']),
           'kills': [r['kills'] for r in runs['storm']], 'not_done': lost}
    print_table('killstorm: kill storm, %s no-op rows, 2 workers' % fmt_count(n),
                ('run', 'jobs/s', 'kills', 'done', 'dead', 'max attempts'),
                [('%s %d' % (r['mode'], i + 1), fmt_int(r['jobs_per_s']), str(r['kills']),
                  '%d / %d' % (r['done'], r['rows']), str(r['dead']), str(r['max_attempts']))
                 for m in ('calm', 'storm') for i, r in enumerate(runs[m])])
    return res



def record(b, res):
    b.metric('killstorm.ratio', res['ratio'])
    b.metric('killstorm.not_done', res['not_done'])
