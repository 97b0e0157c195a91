"""Section http: POST /v1/queues/bench/jobs with wrk (Debian's) at 1 and 64 connections for
10 s (durable: every 202 follows a commit), beside single-row INSERTs from one SQL client in
the same run. The queue is one no worker serves, so only enqueueing is measured."""

import os
import re
import shutil
import subprocess
import time

from .common import BenchError, fmt_int, log, print_table
from .claimd import Claimd
from . import stats

NAME = 'http'
SUMMARY = 'HTTP enqueues/s with wrk at 1 and 64 connections, beside SQL INSERTs'


def run(b):
    """POST /v1/queues/bench/jobs with wrk (durable: every 202 follows a commit), at 1 and
    64 connections, beside single-row INSERTs from one SQL client in the same run. The
    queue is one no worker serves, so only enqueueing is measured."""
    secs = 3 if b.a.quick else 10
    log('== http: enqueue: wrk %d s at 1 and 64 connections; single-row SQL INSERTs' % secs)
    wrk = shutil.which('wrk')
    if not wrk:
        log('wrk not found (apt-get install wrk): section skipped')
        return {'skipped': 'wrk not installed'}
    b.db.empty()
    # wrk's 64 connections come from one address: the per-address limit must let them in.
    c = Claimd(b, 'http', '--handler', 'noop', '--workers', '1', '--http', '127.0.0.1:0',
               '--http-max-connections-per-ip', '64')
    res = {'seconds': secs, 'runs': []}
    try:
        c.wait_idle(1)
        url = c.http_url()
        token = c.http_token()
        script = os.path.join(b.out, 'post.lua')
        with open(script, 'w') as f:
            f.write('wrk.method = "POST"\nwrk.body = \'{"to":"a@b"}\'\n'
                    'wrk.headers["Content-Type"] = "application/json"\n'
                    'wrk.headers["Authorization"] = "Bearer %s"\n' % token +
                    'done = function(summary, latency, requests)\n'
                    '  io.write(string.format("RESULT %d %d %d %.1f %.1f\\n", '
                    'summary.requests, summary.errors.status, summary.duration, '
                    'latency:percentile(50), latency:percentile(99)))\nend\n')
        for conns in (1, 64):
            before = int(b.db.sql.query('SELECT COUNT(*) FROM work_items')[0][0])
            r = subprocess.run([wrk, '-t', '2' if conns > 1 else '1', '-c', str(conns),
                                '-d', '%ds' % secs, '-s', script,
                                url + '/v1/queues/bench/jobs'], capture_output=True,
                               text=True, timeout=secs + 60)
            m = re.search(r'^RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$', r.stdout, re.M)
            if not m:
                raise BenchError('wrk said: ' + r.stdout[-2000:] + r.stderr[-1000:])
            reqs, errs, us = int(m.group(1)), int(m.group(2)), int(m.group(3))
            after = int(b.db.sql.query('SELECT COUNT(*) FROM work_items')[0][0])
            res['runs'].append({'connections': conns, 'requests': reqs, 'non_2xx': errs,
                                'rows_added': after - before,
                                'per_s': stats.rate(reqs, us / 1e6), 'p50_ms': float(m.group(4)) / 1000,
                                'p99_ms': float(m.group(5)) / 1000})
    except BaseException:
        c.kill()
        raise
    c.stop()
    # One SQL client, one row per INSERT (autocommit): what a producer without claimd does.
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < secs:
        b.db.sql.query("INSERT INTO work_items (queue, payload) VALUES ('sql', '{\"to\":\"a@b\"}')")
        n += 1
    res['sql_inserts_per_s'] = stats.rate(n, time.monotonic() - t0)
    rows = [('HTTP, %d connection%s' % (r['connections'], 's' if r['connections'] > 1 else ''),
             fmt_int(r['per_s']), '%.2f' % r['p50_ms'], '%.2f' % r['p99_ms'],
             '%d non-2xx, %d rows for %d requests' % (r['non_2xx'], r['rows_added'], r['requests']))
            for r in res['runs']]
    rows.append(('SQL INSERT, 1 client', fmt_int(res['sql_inserts_per_s']), '-', '-', ''))
    print_table('http: enqueue, durable (innodb_flush_log_at_trx_commit=1)',
                ('by', 'per s', 'p50 ms', 'p99 ms', ''), rows)
    return res



def record(b, res):
    if res.get('skipped'):
        for k in ('http.enqueues_per_s_64', 'http.p99_ms_64'):
            b.unmeasured(k, res['skipped'])
        return
    for r in res['runs']:
        if r['connections'] == 64:
            b.metric('http.enqueues_per_s_64', r['per_s'])
            b.metric('http.p99_ms_64', r['p99_ms'])
        else:
            b.info('HTTP enqueues/s, 1 connection (p99)', '%s (%.1f ms)' % (fmt_int(r['per_s']),
                                                                          r['p99_ms']))
    b.info('single-row SQL INSERTs/s, 1 client', fmt_int(res['sql_inserts_per_s']))
