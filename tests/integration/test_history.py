#!/usr/bin/env python3
"""The queues' history (GET /v1/stats, claimctl stats): two supervisors on one database, each
serving its queue, write what their workers finished per minute (done, retried, dead, run and
wait histograms) to queue_history; either answers the cluster's totals, percentiles from the
merged buckets, and a queue's own; the history survives a restart; what could not be written
is kept and written once; maintenance deletes what is older than --keep-history; bad
requests are refused by name."""

import json

import harness
from harness import check, check_eq, wait_for

# Every run sleeps 0.6 s: its bucket is (0.5 s, 1 s], so p50, p95 and p99 are 1 (a sanitized
# worker's fork of the handler may add a few hundred ms, still within the bucket).
HANDLER = '''sleep 0.6
case "$payload" in
fail*) rc=1 ;;
flaky*) [ "$CLAIMD_ATTEMPT" = 1 ] && rc=1 ;;
esac'''


def start(t, db, h, queue, *extra):
    c = t.claimd(db, '--queue', queue, '--workers', '2', '--handler', h.spec,
                 '--history-flush', '1s', '--retry-base', '100ms', '--poll-interval', '50ms',
                 '--http', '127.0.0.1:0', *extra, name=f'claimd_{queue}')
    c.wait_ready()
    return c


def add_rows(db, queue, ok, fail, flaky):
    for n, payload, attempts in ((ok, 'ok', 3), (fail, 'fail', 1), (flaky, 'flaky', 2)):
        if n:   # seq_1_to_0 is not empty: it counts down
            db.insert_items(n, payload=f"'{payload}'", queue=f"'{queue}'", max_attempts=attempts)


def totals(c, query=''):
    st, body = c.api('GET', '/v1/stats' + query)
    check_eq(st, 200, f'GET /v1/stats{query}: {body}')
    t = body['total']
    return (t['done'], t['retried'], t['dead'], t['failed'], t['run']['count']), body


def it_two_supervisors_write_one_history_that_outlives_a_restart(t):
    db = t.database()
    h = t.log_handler(HANDLER)
    a = start(t, db, h, 'a')
    b = start(t, db, h, 'b')
    add_rows(db, 'a', 4, 2, 1)    # done 4 + 1, retried 1, dead 2
    add_rows(db, 'b', 3, 1, 1)    # done 3 + 1, retried 1, dead 1
    wait_for(lambda: db.states(), 30, 'every row done or dead',
             until=lambda s: s['ready'] == 0 and s['claimed'] == 0 and s['done'] == 9)
    want = (9, 2, 3, 5, 14)       # done, retried, dead, failed, runs
    got, body = wait_for(lambda: totals(a), 15, 'the cluster totals on a',
                         until=lambda r: r[0] == want)
    run, wait = body['total']['run'], body['total']['wait']
    check_eq((run['p50'], run['p95'], run['p99']), (1, 1, 1),
             'run percentiles: the bucket of 0.6 s')
    check(0.6 <= run['mean'] < 1, f"the mean run {run['mean']}")
    check(wait['count'] == 14 and wait['p50'] <= wait['p95'] <= wait['p99'],
          f'wait percentiles in order: {wait}')
    check_eq((body['queue'], body['step']), (None, 60), 'every queue, steps of a minute')
    check(body['from'].endswith(':00Z') and body['to'].endswith(':00Z') and
          len(body['points']) == 60, f"the last hour's 60 steps, RFC 3339: {body['from']} "
          f"{body['to']} {len(body['points'])}")
    check_eq(sum(p['done'] for p in body['points']), 9, 'the steps add up to the total')

    check_eq(wait_for(lambda: totals(b), 15, 'the cluster totals on b',
                      until=lambda r: r[0] == want)[0], want, 'b answers the same')
    check_eq(totals(b, '?queue=a')[0][:3], (5, 1, 2), "queue a's own, on b")
    check_eq(totals(a, '?queue=b&since=2h&step=300')[0][:3], (4, 1, 1), "queue b's own, on a")
    check_eq(int(db.scalar('SELECT COUNT(DISTINCT supervisor_id) FROM queue_history')), 2,
             'a row per supervisor')

    r = b.ctl('stats', '--json')
    check_eq(r.returncode, 0, f'claimctl stats --json: {r.stderr}')
    check_eq(json.loads(r.stdout)['total']['done'], 9, 'claimctl stats --json: the total')
    r = b.ctl('stats', '--queue', 'a', '--since', '30m')
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and lines[0].startswith('queue a') and
          lines[-1].split()[:4] == ['total', '5', '3', '2'], f'claimctl stats: {r.stdout}')

    # A clean stop writes what is left; a new claimd reads the history from the database.
    check_eq(a.stop(), 0, 'a stops cleanly')
    a2 = start(t, db, h, 'a')
    check_eq(wait_for(lambda: totals(a2), 10, 'the totals after a restart',
                      until=lambda r: r[0] == want)[0], want, 'the history outlived a restart')

    for query, why in (('?step=90', 'not whole minutes'), ('?from=yesterday', 'stats: from'),
                       ('?since=30d&step=60', 'at most 1440'),
                       ('?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', 'before to'),
                       ('?since=1h&from=2026-01-01T00:00:00Z', 'not both'),
                       ('?nonsense=1', 'nonsense'), ('?seconds=5&step=60', 'seconds')):
        st, body = a2.api('GET', '/v1/stats' + query)
        check(st == 400 and why in body.get('error', ''), f'{query}: {st} {body}')
    st, body = a2.api('GET', '/v1/stats?seconds=5')
    check(st == 200 and len(body['done']) == 5, f"the chart's per-second series: {body}")
    r = a2.ctl('stats', '--step', '90s')
    check(r.returncode != 0 and 'whole minutes' in r.stderr, f'claimctl stats --step 90s: {r}')


def it_keeps_what_it_could_not_write_and_sends_it_again(t):
    db = t.database()
    h = t.log_handler(HANDLER)
    db.execute('RENAME TABLE queue_history TO queue_history_away')
    c = start(t, db, h, 'default')
    add_rows(db, 'default', 5, 1, 0)
    wait_for(lambda: db.states(), 20, 'every row done or dead',
             until=lambda s: s['done'] == 5 and s['dead'] == 1)
    wait_for(lambda: 'cannot write' in c.log(), 10, 'a failed flush logged')
    db.execute('RENAME TABLE queue_history_away TO queue_history')
    got = wait_for(lambda: totals(c), 10, 'the kept minutes written',
                   until=lambda r: r[0] == (5, 0, 1, 1, 6))[0]
    check_eq(got, (5, 0, 1, 1, 6), 'nothing lost, nothing twice')
    wait_for(lambda: 'history: written again' in c.log(), 5, 'its recovery logged')
    check_eq(c.stop(), 0, 'a clean stop')
    check_eq(int(db.scalar('SELECT SUM(done) FROM queue_history')), 5, 'still once each')


def it_prunes_the_history_past_keep_history(t):
    db = t.database()
    h = t.log_handler('')
    # A row three days old and one of ten minutes ago, from a supervisor long gone.
    for age in ('3 DAY', '10 MINUTE'):
        db.execute('INSERT INTO queue_history (minute, queue, supervisor_id, done, run9) VALUES '
                   f"(DATE_FORMAT(UTC_TIMESTAMP() - INTERVAL {age}, '%Y-%m-%d %H:%i:00'), "
                   "'default', 'gone:1:1', 7, 7)")
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--keep-history', '1d',
                 '--maintenance-interval', '1s', '--http', '127.0.0.1:0')
    wait_for(lambda: int(db.scalar('SELECT COUNT(*) FROM queue_history')), 15,
             'the old row pruned', until=lambda n: n == 1)
    check_eq(int(db.scalar('SELECT done FROM queue_history')), 7, 'the recent row stays')
    got, body = totals(c, '?queue=default')
    check_eq(got[:2], (7, 0), 'what another supervisor wrote counts')
    check_eq(body['total']['run']['p50'], 0.5, 'its buckets too')
    st, body = totals(c, '?since=4d&step=1h')[1], None
    check_eq(st['total']['done'], 7, 'the pruned row is gone from the history')


if __name__ == '__main__':
    harness.main()
