"""Section latency: enqueue -> start with idle workers (claimd --workers 2 at its defaults,
woken by the binary log, running the so: handler tools/bench_plugin.so): rows inserted one
every 30 ms (a) by plain SQL through a second client (the bench's mariadb), (b) by `claimctl
add`, (c) delayed rows (run_at 200-800 ms ahead: run_at -> start); and (a) again with
--wake poll; latency = claimed_at - created_at (database clock), p50/p99. Each claimd first
runs WARM_ROWS rows the same way, not counted: a worker's first claim knows nothing yet of
what its items cost (it takes one row, cannot tell whether more are due, and wakes the other
worker), which a claimd that runs pays once. Beside it, what one statement costs on this
machine through the same client."""

import random
import re
import subprocess
import time

from .common import BenchError, log, md_table, print_table
from .claimd import Claimd, handler_spec
from . import stats

NAME = 'latency'
SUMMARY = 'plain SQL INSERT (a row every 30 ms), claimctl add and delayed rows -> start, p50/p99'
GAP_S = 0.030
WARM_ROWS = 10


def paced(n, gap=GAP_S):
    """Yields 0..n-1, each at its time: one every gap seconds from now (not gap after the
    previous one's work)."""
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + (i + 1) * gap - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield i


def run(b):
    n = b.sizes['latency_rows']
    log('== latency: enqueue->start, %d rows each, one every %d ms, workers idle, so: handler, '
        'at claimd\'s defaults (woken by the binary log) and with --wake poll'
        % (n, GAP_S * 1000))
    b.db.empty()
    so = handler_spec(b, 'so')
    c = Claimd(b, 'latency', '--handler', so, '--workers', '2', '--http', '127.0.0.1:0')
    try:
        c.wait_idle(2)
        c.wait_pushed()
        warm_up(b, c)
        before = c.messages()
        res = {'sql': latency_sql(b, c, n)}
        after = c.messages()
        res['sql']['messages_per_job'] = stats.ratio(
            after - before, n) if before is not None and after is not None else None
        res.update({'claimctl_add': latency_add(b, c, n),
                    'delayed': latency_delayed(b, c, max(n // 3, 10))})
    except BaseException:
        c.kill()
        raise
    c.stop()
    b.db.empty()
    c = Claimd(b, 'latency-poll', '--handler', so, '--workers', '2', '--wake', 'poll')
    try:
        c.wait_idle(2)
        warm_up(b, c)
        res['sql_poll'] = latency_sql(b, c, n, 'lat-poll')
    except BaseException:
        c.kill()
        raise
    c.stop()
    res['round_trip'] = round_trips(b, max(n // 3, 10))
    rows = []
    for key, label in (('sql', 'plain SQL INSERT'), ('claimctl_add', 'claimctl add'),
                       ('delayed', 'a delayed row (run_at -> start)'),
                       ('sql_poll', 'plain SQL INSERT, --wake poll')):
        r = res[key]
        if r.get('skipped'):
            rows.append((label, '-', '-', '-', 'skipped: ' + r['skipped']))
        else:
            rows.append((label, str(r['n']), '%.2f' % r['p50_ms'], '%.2f' % r['p99_ms'],
                         'max %.2f' % r['max_ms']))
    print_table('latency: enqueue -> start (claimed_at - created_at), claimd --workers 2, so:',
                ('enqueued by', 'rows', 'p50 ms', 'p99 ms', ''), rows)
    rt = res['round_trip']
    print_table('latency: one statement through the bench\'s mariadb client, p50 ms',
                ('statement', 'p50 ms'),
                [('SELECT 1, back to back', '%.2f' % rt['warm_p50_ms']),
                 ('SELECT 1, after 30 ms of quiet', '%.2f' % rt['quiet_p50_ms']),
                 ('the INSERT of (a), one every 30 ms', '%.2f' % res['sql']['insert_p50_ms']),
                 ('(a): its start after the INSERT returned to the client',
                  '%.2f' % res['sql']['after_return_p50_ms'])])
    if res['sql'].get('messages_per_job') is not None:
        log('latency: (a) took %.1f messages a job between supervisor and workers'
            % res['sql']['messages_per_job'])
    return res


def latency_delayed(b, c, n):
    """Rows due 200-800 ms after their insert: how late after run_at they start."""
    rnd = random.Random(6)
    for i in range(n):
        time.sleep(rnd.uniform(0.020, 0.060))
        b.db.sql.query("INSERT INTO work_items (payload, run_at) VALUES ('lat-due-%d', "
                          "NOW(6) + INTERVAL %d MICROSECOND)"
                          % (i, rnd.randint(200_000, 800_000)))
    return latency_rows(b, c, "payload LIKE 'lat-due-%'", 'run_at')


def latency_rows(b, c, where, since='created_at'):
    b.db.wait_no_live_row(c.p, 60, 'claimd')
    ms = [int(r[0]) / 1000 for r in b.db.sql.query(
        'SELECT TIMESTAMPDIFF(MICROSECOND, %s, claimed_at) FROM work_items WHERE ' % since
        + where)]
    return {'n': len(ms), 'p50_ms': stats.percentile(ms, 50), 'p99_ms': stats.percentile(ms, 99),
            'mean_ms': stats.ratio(sum(ms), len(ms)), 'max_ms': max(ms, default=None)}


def warm_up(b, c):
    """WARM_ROWS rows as the timed ones come, each worker's first among them; waits for them
    to be done."""
    for i in paced(WARM_ROWS):
        b.db.sql.query("INSERT INTO work_items (payload) VALUES ('warm-%d')" % i)
    deadline = time.monotonic() + 30
    while b.db.sql.value("SELECT COUNT(*) FROM work_items WHERE payload LIKE 'warm-%' AND "
                         "state <> 'done'") != '0':
        if time.monotonic() > deadline:
            raise BenchError('latency: the warm-up rows were not done in 30 s')
        time.sleep(0.05)


def latency_sql(b, c, n, tag='lat-sql'):
    took, returned = [], {}
    for i in paced(n):
        t0 = time.perf_counter()
        b.db.sql.query("INSERT INTO work_items (payload) VALUES ('%s-%d')" % (tag, i))
        returned['%s-%d' % (tag, i)] = time.time()
        took.append((time.perf_counter() - t0) * 1000)
    res = latency_rows(b, c, "payload LIKE '%s-%%'" % tag)
    res['insert_p50_ms'] = stats.percentile(took, 50)
    # the server's clock is this machine's: when the row started after its INSERT
    # returned to the client (negative: before the client had read the answer)
    after = [(float(r[1]) - returned[r[0]]) * 1000 for r in b.db.sql.query(
        "SELECT payload, UNIX_TIMESTAMP(claimed_at) FROM work_items WHERE payload LIKE "
        "'%s-%%'" % tag)]
    res['after_return_p50_ms'] = stats.percentile(after, 50)
    return res


def round_trips(b, n):
    """What one statement costs on this machine, through the bench's mariadb client: SELECT 1
    back to back, and after 30 ms of quiet as the latency rows are (the CPUs of an idle
    machine wake slowly)."""
    warm, cold = [], []
    for i in range(n):
        t0 = time.perf_counter()
        b.db.sql.query('SELECT 1')
        warm.append((time.perf_counter() - t0) * 1000)
    for i in paced(n):
        t0 = time.perf_counter()
        b.db.sql.query('SELECT 1')
        cold.append((time.perf_counter() - t0) * 1000)
    return {'warm_p50_ms': stats.percentile(warm, 50), 'quiet_p50_ms': stats.percentile(cold, 50)}


def latency_add(b, c, n):
    ctl = b.bin('claimctl')
    usage = subprocess.run([ctl, '--help'], capture_output=True, text=True).stdout
    if not re.search(r'^\s*(usage:.*\s)?add\b', usage, re.M) and ' add ' not in usage:
        log('claimctl add: not available (not in claimctl --help); skipped')
        return {'skipped': 'claimctl add not available'}
    ids = []
    for i in paced(n):
        r = subprocess.run([ctl, '--control', c.control, 'add', 'lat-add-%d' % i],
                           capture_output=True, text=True)
        if r.returncode == 2 or 'unknown command' in r.stderr:
            log('claimctl add: not available (%s); skipped' % r.stderr.strip())
            return {'skipped': 'claimctl add not available'}
        m = re.findall(r'\d+', r.stdout)
        if r.returncode != 0 or not m:
            raise BenchError('claimctl add failed (status %d): %s %s'
                             % (r.returncode, r.stdout.strip(), r.stderr.strip()))
        ids.append(int(m[-1]))
    return latency_rows(b, c, 'id IN (%s)' % ','.join(map(str, ids)))



def record(b, res):
    s = res['sql']
    b.metric('latency.sql_p50_ms', s['p50_ms'])
    b.metric('latency.sql_p99_ms', s['p99_ms'])
    a = res['claimctl_add']
    if a.get('skipped'):
        b.unmeasured('latency.add_p50_ms', a['skipped'])
        b.unmeasured('latency.add_p99_ms', a['skipped'])
    else:
        b.metric('latency.add_p50_ms', a['p50_ms'])
        b.metric('latency.add_p99_ms', a['p99_ms'])
    b.metric('latency.delayed_p50_ms', res['delayed']['p50_ms'])
    rt = res['round_trip']
    b.info('one statement p50: SELECT 1 back to back / after 30 ms of quiet / the INSERT',
           '%.2f / %.2f / %.2f ms' % (rt['warm_p50_ms'], rt['quiet_p50_ms'], s['insert_p50_ms']))
    b.metric('latency.sql_after_return_p50_ms', s['after_return_p50_ms'])
    if s.get('messages_per_job') is None:
        b.unmeasured('latency.lone_job_messages', 'this claimd does not count its messages')
    else:
        b.metric('latency.lone_job_messages', s['messages_per_job'])
    p = res['sql_poll']
    b.info('enqueue->start p50 / p99, plain SQL, --wake poll', '%.1f / %.1f ms'
           % (p['p50_ms'], p['p99_ms']))


def markdown(res):
    return '## Enqueue → start, idle workers (`--workers 2`, so:)\n\n' + md_table(
        ('enqueued by', 'rows', 'p50 ms', 'p99 ms', 'max ms'),
        [(label, 'skipped: ' + r['skipped'], '', '', '') if r.get('skipped') else
         (label, r['n'], '%.2f' % r['p50_ms'], '%.2f' % r['p99_ms'], '%.2f' % r['max_ms'])
         for label, r in (('plain SQL INSERT', res['sql']),
                          ('claimctl add', res['claimctl_add']),
                          ('a delayed row (run_at → start)', res.get('delayed')),
                          ('plain SQL INSERT, --wake poll', res.get('sql_poll'))) if r]) + '\n\n'


def plot_data(res):
    return [('enqueue: ' + label, res[k]['p50_ms'], res[k]['p99_ms'])
            for k, label in (('sql', 'plain SQL'), ('claimctl_add', 'claimctl add'))
            if not res[k].get('skipped')]
