"""Section dashboard: (a) no-op jobs/s (2 workers) with and without the dashboard's requests
and a /metrics scrape every second, alternating over the rounds; (b) 1M done + 1,000 dead
rows: the server's CPU with and without that polling, and its latency."""

import threading
import time
import urllib.error
import urllib.request

from .claimd import Claimd
from .common import fmt_count, fmt_int, log, print_table, proc_cpu
from .db import LOAD_CHUNK
from . import stats

NAME = 'dashboard'
SUMMARY = 'noop jobs/s with the dashboard polled against without; server CPU at 1M rows'
DASHBOARD_PATHS = ('/v1/stats?seconds=300', '/v1/stats?since=1h', '/v1/status', '/v1/queues',
                   '/v1/supervisors', '/v1/jobs?state=dead&limit=20', '/v1/schedules',
                   '/v1/batches?limit=10', '/healthz', '/metrics')


def dashboard_poller(b, url, stop, lat, token):
    """What an open dashboard and a Prometheus scrape ask, once a second, until stop."""
    while not stop.is_set():
        t0 = time.monotonic()
        for path in DASHBOARD_PATHS:
            t = time.monotonic()
            req = urllib.request.Request(url + path,
                                         headers={'Authorization': 'Bearer ' + token})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    r.read()
            except urllib.error.HTTPError as e:   # /healthz may say 503 mid-run
                e.read()
            lat.append(time.monotonic() - t)
        stop.wait(max(0.0, 1.0 - (time.monotonic() - t0)))


def run(b):
    """(a) no-op jobs/s, 2 workers, --batch B, with and without a dashboard and a scrape
    polling every second (the overview's requests and /metrics), alternating, 5 rounds:
    the rows are loaded into a paused queue, claimd starts (and the poller, which has 5 s
    to settle: a dashboard that is open), then the queue is resumed; (b) a table of 1M done
    and 1,000 dead rows: the server's CPU over 40 s of polling, beside 40 s without, and
    the requests' latency."""
    n = b.sizes['rows']
    rounds = 2 if b.a.quick else 5
    log('== dashboard: %d rounds of %s no-op rows without and with it; 1M rows'
        % (rounds, fmt_count(n)))
    res = {'rows': n, 'runs': {'off': [], 'on': []}, 'ratios': []}
    for rnd in range(rounds):
        for mode in ('off', 'on'):
            b.db.empty()
            b.db.sql.query("INSERT INTO queues (name, paused) VALUES ('default', 1) "
                              "ON DUPLICATE KEY UPDATE paused = 1")
            b.db.load_ready(n)
            c = Claimd(b, 'dash-%s' % mode, '--handler', 'noop', '--workers', '2',
                       *(['--batch', str(b.a.batch)] if b.a.batch else []),
                       '--http', '127.0.0.1:0')
            stop, lat = threading.Event(), []
            try:
                url = c.http_url()
                t = None
                if mode == 'on':
                    t = threading.Thread(target=dashboard_poller,
                                         args=(b, url, stop, lat, c.http_token()))
                    t.start()
                time.sleep(5)
                b.db.sql.query("UPDATE queues SET paused = 0 WHERE name = 'default'")
                b.db.wait_no_live_row(c.p, 600, 'claimd')
            finally:
                stop.set()
                if mode == 'on' and t:
                    t.join()
                c.stop()
            r = b.db.rate()
            r['requests'] = len(lat)
            res['runs'][mode].append(r)
            log('round %d dashboard %-3s %s jobs/s' % (rnd + 1, mode, fmt_int(r['jobs_per_s'])))
        res['ratios'].append(stats.ratio(res['runs']['on'][-1]['jobs_per_s'],
                                         res['runs']['off'][-1]['jobs_per_s']))
    med = {m: stats.median_run(res['runs'][m])['jobs_per_s'] for m in ('off', 'on')}
    # Rounds run back to back: the median of their ratios, drift falls on both alike.
    res['ratio'] = stats.median(res['ratios'])
    # (b) a large table
    big = 100000 if b.a.quick else 1000000
    b.db.empty()
    b.db.sql.query("DELETE FROM queues")
    done = 0
    while done < big:
        k = min(LOAD_CHUNK, big - done)
        b.db.sql.query("INSERT INTO work_items (payload, state, finished_at) SELECT "
                          "CONCAT('old-', seq), 'done', NOW(6) FROM seq_1_to_%d" % k)
        done += k
    b.db.sql.query("INSERT INTO work_items (payload, state, finished_at, last_error) "
                      "SELECT 'bad', 'dead', NOW(6), 'exit status 1' FROM seq_1_to_1000")
    t0 = time.monotonic()
    b.db.sql.query('SELECT queue, state, COUNT(*) FROM work_items GROUP BY queue, state')
    res['big'] = {'rows': big + 1000, 'count_query_s': time.monotonic() - t0}
    c = Claimd(b, 'dash-big', '--handler', 'noop', '--workers', '2', '--http',
               '127.0.0.1:0')
    try:
        url = c.http_url()
        c.wait_idle(2)
        pid = b.db.server_pid()
        for mode in ('idle', 'polled'):
            stop, lat = threading.Event(), []
            t = threading.Thread(target=dashboard_poller, args=(b, url, stop, lat,
                                                                c.http_token()))
            cpu0, w0 = proc_cpu(pid), time.monotonic()
            if mode == 'polled':
                t.start()
            time.sleep(5 if b.a.quick else 40)
            stop.set()
            if mode == 'polled':
                t.join()
            cpu = stats.rate(proc_cpu(pid) - cpu0, time.monotonic() - w0)
            res['big'][mode] = {'server_cpu_share': cpu, 'requests': len(lat)}
            if lat:
                res['big'][mode].update({'p50_ms': stats.percentile(lat, 50) * 1000,
                                         'p99_ms': stats.percentile(lat, 99) * 1000})
    finally:
        c.stop()
    b = res['big']
    rows = [('jobs/s without the dashboard', fmt_int(med['off']),
             ', '.join(fmt_int(r['jobs_per_s']) for r in res['runs']['off'])),
            ('jobs/s with it (1 poll/s)', fmt_int(med['on']),
             ', '.join(fmt_int(r['jobs_per_s']) for r in res['runs']['on'])),
            ('with / without (median round)', '%.3f' % res['ratio'],
             'per round: ' + ', '.join('%.3f' % x for x in res['ratios'])),
            ('%s rows: one count of the table' % fmt_count(b['rows']),
             '%.0f ms' % (b['count_query_s'] * 1000), ''),
            ('%s rows: server CPU, idle' % fmt_count(b['rows']),
             '%.1f %%' % (100 * b['idle']['server_cpu_share']), 'of one core'),
            ('%s rows: server CPU, polled' % fmt_count(b['rows']),
             '%.1f %%' % (100 * b['polled']['server_cpu_share']),
             '%d requests, p50 %.1f ms, p99 %.1f ms' % (
                 b['polled']['requests'], b['polled'].get('p50_ms', 0),
                 b['polled'].get('p99_ms', 0)))]
    print_table('dashboard: the dashboard and /metrics polled every second', ('', 'value', ''), rows)
    return res



def record(b, res):
    b.metric('dashboard.ratio', res['ratio'])
    b.info('server CPU, dashboard polled, %s rows' % fmt_count(res['big']['rows']),
           '%.1f %%' % (100 * res['big']['polled']['server_cpu_share']))
