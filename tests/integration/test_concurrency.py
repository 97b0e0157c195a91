#!/usr/bin/env python3
"""Many items in flight per worker (--concurrency), with in-process handlers (so:, noop): items
run at once up to the concurrency and never beyond it, none twice at once; the supervisor shows
the items each worker runs; a plugin that is not thread-safe runs one at a time; a crash blames
every item running, a plugin stuck past its deadline fails that item alone and its worker's
other items go back; a cooperative plugin told to stop at its deadline keeps its worker."""

import json
import os
import re
import signal
import time
import urllib.request

import harness
from harness import check, check_eq, wait_for, worker_in_slot

def _http_get(c, path):
    url = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                   'the http listening line').group(1)
    req = urllib.request.Request(url + path, headers={'Authorization':
                                                      f'Bearer {c.http_token()}'})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().decode()


def it_so_runs_up_to_concurrency_items_at_once_in_one_worker(t):
    db = t.database()
    ids = db.insert_items(40, payload="'sleep:300'")
    h, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '1', '--concurrency', '8', '--handler', spec,
                 '--http', '127.0.0.1:0')
    # The supervisor sees the 8 items the worker runs (the scoreboard), while they run:
    # claimctl status, /v1/status and /metrics.
    st = c.wait_status(lambda s: worker_in_slot(s, 0)['inflight'] == 8, 15,
                       'the worker running 8 items at once')
    w = worker_in_slot(st, 0)
    check(w['item'] in ids and w['item_ms'] is not None, f'the oldest running item shown: {w}')
    text = c.ctl('status').stdout
    check(re.search(r'RUNNING', text) and re.search(r'^0\s+\d+\s+busy\s+8\s', text, re.M),
          f'claimctl status shows 8 running in slot 0: {text!r}')
    wait_for(lambda: worker_in_slot(json.loads(_http_get(c, '/v1/status')), 0)['inflight'], 5,
             'items in flight in /v1/status', until=lambda n: n == 8)
    wait_for(lambda: [ln for ln in _http_get(c, '/metrics').splitlines()
                      if ln.startswith('claimd_worker_items_running')], 5,
             'claimd_worker_items_running in /metrics',
             until=lambda lines: lines == ['claimd_worker_items_running{slot="0"} 8'])
    t0 = time.monotonic()
    wait_for(db.states, 30, 'all 40 rows done', until=lambda s: s['done'] == 40)
    took = time.monotonic() - t0
    runs = harness.runs_of(h)
    check_eq(sorted(runs), ids, 'rows that ran')
    check(all(len(r) == 1 for r in runs.values()), 'a row ran more than once')
    most = harness.most_at_once([(r[0][0], r[0][1]) for r in runs.values()])
    t.note(f'40 items of 300 ms, 8 at once, in one worker: {took:.2f} s; at most {most} at once')
    check_eq(most, 8, 'items at once in the one worker')
    # One at a time would take 12 s.
    check(took < 6, f'40 items of 300 ms at 8 at once took {took:.1f} s')
    check_eq(len({r[0][2] for r in runs.values()}), 1, 'worker processes that ran them')
    st = c.wait_status(lambda s: worker_in_slot(s, 0)['inflight'] == 0, 5, 'nothing running')
    check_eq(c.stop(), 0, 'claimd exit code')


def _lanes(pid):
    """The threads of worker pid that run in-process items (named handler-lane)."""
    n = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/comm') as f:
                n += f.read().strip() == 'handler-lane'
        except FileNotFoundError:
            pass
    return n


def it_noop_goes_through_the_same_path_at_any_concurrency(t):
    """noop is a plugin built in: at each --concurrency its workers run it as they run a
    thread-safe so: plugin, on as many handler threads of theirs (counted in /proc), and every
    row is done once."""
    db = t.database()
    _, spec = t.plugin('ok')
    threads = {}
    for conc, n in ((1, 500), (4, 3000)):
        for kind, handler in (('noop', 'noop'), ('so', spec)):
            c = t.claimd(db, '--workers', '2', '--concurrency', str(conc), '--handler', handler,
                         name=f'{kind}{conc}')
            c.wait_ready(workers=2)
            db.execute('DELETE FROM work_items')
            db.insert_items(n)
            wait_for(db.states, 60, f'{kind} at {conc}: all {n} rows done',
                     until=lambda s: s['done'] == n)
            check_eq(db.states(), {'ready': 0, 'claimed': 0, 'done': n, 'dead': 0},
                     f'{kind} at {conc}: rows by state')
            check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1',
                     f'{kind} at {conc}: attempts')
            threads[kind, conc] = sorted(_lanes(w['pid']) for w in c.status()['workers'])
            check_eq(c.stop(), 0, f'{kind} at {conc}: claimd exit code')
    t.note(f'handler threads of each worker: {threads}')
    for conc in (1, 4):
        check_eq(threads['noop', conc], threads['so', conc],
                 f'handler threads of a noop worker and of a so: worker at --concurrency {conc}')
        check_eq(threads['noop', conc], [conc, conc],
                 f'handler threads of each noop worker at --concurrency {conc}')


def it_v2_plugin_runs_one_at_a_time_whatever_the_concurrency(t):
    db = t.database()
    db.insert_items(6, payload="'sleep:150'")
    h, spec = t.plugin('v2')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--handler', spec)
    wait_for(db.states, 20, 'all 6 rows done', until=lambda s: s['done'] == 6)
    runs = harness.runs_of(h)
    most = harness.most_at_once([(r[0][0], r[0][1]) for r in runs.values()])
    check_eq(most, 1, 'items of a version 2 plugin at once')
    check('does not say it is thread-safe' in c.log(), 'no warning that --concurrency 4 is '
          'not used with a plugin that is not thread-safe')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_so_crash_blames_every_item_it_was_running(t):
    t.allow_sanitizer_report('AddressSanitizer: SEGV', 'AddressSanitizer:DEADLYSIGNAL')
    db = t.database()
    sleepers = db.insert_items(3, payload="'sleep:3000'", max_attempts=3)
    crash = db.insert_item('crash:300', max_attempts=1)
    h, spec = t.plugin('crash')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--handler', spec)
    wait_for(lambda: db.row(crash)[0], 15, f'row {crash} dead', until=lambda s: s == 'dead')
    state, attempts, err = db.row(crash)
    check_eq(attempts, '1', f'attempts of row {crash}')
    check('crashed' in (err or '') and 'among others' in err, f'last_error of {crash}: {err!r}')
    wait_for(db.states, 30, 'the others done', until=lambda s: s['done'] == 3)
    for i in sleepers:
        # Running beside the crash: their first attempt counted, the second ran to the end.
        check_eq(db.row(i)[:2], ('done', '2'), f'row {i} (state, attempts)')
    harness.check_runs_apart(harness.runs_of(h))
    check_eq(c.stop(), 0, 'claimd exit code')


def it_so_stuck_item_fails_alone_and_its_neighbours_go_back(t):
    db = t.database()
    sleepers = db.insert_items(3, payload="'sleep:2500'", max_attempts=1, timeout_s=10)
    hang = db.insert_item('hang', max_attempts=1)
    h, spec = t.plugin('hang')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--timeout', '1s',
                 '--kill-grace', '500ms', '--handler', spec)
    wait_for(lambda: db.row(hang)[0], 15, f'row {hang} dead', until=lambda s: s == 'dead')
    state, attempts, err = db.row(hang)
    check('timed out' in (err or ''), f'last_error of the stuck row: {err!r}')
    check(re.search(r'still running 500 ms after its deadline', c.log()),
          'the worker did not say why it exits')
    # Its neighbours' leases were given back with their attempt: they run again and finish,
    # though max_attempts is 1.
    wait_for(db.states, 30, 'the neighbours done', until=lambda s: s['done'] == 3)
    runs = harness.runs_of(h)
    for i in sleepers:
        check_eq(db.row(i)[:2], ('done', '1'), f'row {i} (state, attempts)')
        check_eq(len(runs[i]), 2, f'runs of row {i} (cut short by the exit, then again)')
    harness.check_runs_apart(runs)
    check_eq(c.stop(), 0, 'claimd exit code')


def it_so_cooperative_item_stops_at_its_deadline_and_keeps_its_worker(t):
    db = t.database()
    polite = db.insert_item('polite', max_attempts=1)
    h, spec = t.plugin('hang')
    c = t.claimd(db, '--workers', '1', '--timeout', '1s', '--kill-grace', '3s',
                 '--handler', spec)
    pid = c.wait_ready(workers=1)['workers'][0]['pid']
    wait_for(lambda: db.row(polite)[0], 10, f'row {polite} dead', until=lambda s: s == 'dead')
    err = db.row(polite)[2] or ''
    check('timed out' in err, f'last_error: {err!r}')
    check(h.events('cancelled', polite), 'the plugin never saw job->cancelled()')
    st = c.status()
    check_eq(worker_in_slot(st, 0)['pid'], pid, 'the worker (it was not replaced)')
    check_eq(worker_in_slot(st, 0)['restarts'], 0, 'restarts')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_so_drain_lets_running_items_finish_and_releases_the_rest(t):
    db = t.database()
    db.insert_items(20, payload="'sleep:1000'")
    h, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--batch', '8', '--handler', spec)
    c.wait_status(lambda s: worker_in_slot(s, 0)['inflight'] == 4, 15, '4 items running')
    running = {e.id for e in h.starts()}
    c.send(signal.SIGTERM)
    check_eq(c.wait_exit(15), 0, 'claimd exit code after SIGTERM')
    ended = {e.id for e in h.ends()}
    check(running <= ended, f'items running at SIGTERM that did not finish: {running - ended}')
    s = db.states()
    check_eq(s['claimed'], 0, 'rows left claimed')
    check_eq(s['done'] + s['ready'], 20, f'rows done or back to ready: {s}')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'ready' AND attempts > 0"),
             '0', 'rows given back with an attempt counted')


if __name__ == '__main__':
    harness.main()
