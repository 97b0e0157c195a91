#!/usr/bin/env python3
"""The pipe: and so: handler kinds, and the item metadata every kind receives.

pipe: runs tests/pipe_echo.py as the co-process; so: runs the plugins of tests/plugins/
(built as claimd_test_<name>.so in $CLAIMD_TEST_PLUGIN_DIR). Both log one line per event in
the harness's handler-log format, with the pid that handled the item."""

import datetime
import os
import signal
import time

import harness
from harness import check, check_eq, pid_running, wait_for

PLUGIN_DIR = os.environ.get('CLAIMD_TEST_PLUGIN_DIR') or os.path.join(
    os.path.dirname(harness.CLAIMD_BIN), 'tests')
PIPE_ECHO = harness.PIPE_ECHO


def _log(t, name):
    """A handler log the harness prints on failure (and whose pids it cleans up)."""
    h = harness.Handler(None, os.path.join(t.tmpdir, name + '.log'))
    t._handlers.append(h)
    return h


def _plugin(t, name):
    path = os.path.join(PLUGIN_DIR, f'claimd_test_{name}.so')
    check(os.path.exists(path), f'plugin {path} not built')
    h = _log(t, name)
    return h, f'so:{path} {h.log_path}'


def _finished(db, n):
    return wait_for(db.states, 30, f'{n} rows finished',
                    until=lambda s: s['done'] + s['dead'] == n and s['claimed'] == 0)


def _fields(ev):
    """A start line's rest: queue group seq max_attempts deadline_ms hex."""
    q, group, seq, max_attempts, deadline, hexed = ev.rest.split(' ')
    return {'queue': q, 'group': group, 'seq': int(seq), 'max_attempts': int(max_attempts),
            'deadline_ms': int(deadline), 'hex': '' if hexed == '-' else hexed}


def _hex_payloads(db):
    return {int(i): (h or '').lower() for i, h in db.sql('SELECT id, HEX(payload) FROM work_items')}


def _check_once_each(h, ids):
    starts = sorted(e.id for e in h.starts())
    check_eq(starts, sorted(ids), 'items started (each once)')


def _restarts(st):
    return sum(w['restarts'] for w in st['workers'])


# ---------------------------------------------------------------------------------------------
# pipe:

def it_pipe_runs_many_items_in_one_coprocess(t):
    db = t.database()
    ids = db.insert_items(40)
    ids += [db.insert_items(1, payload=p)[0] for p in (
        "UNHEX('FF00FE80')",                       # not UTF-8: goes as payload_b64
        "CONCAT('q\"b', CHAR(92), 'n', CHAR(10), CHAR(9), 'x', CHAR(0))",
        "'\u00fc\u20ac\U0001F600'", "''", 'NULL')]
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec)
    _finished(db, len(ids))
    check_eq(db.states()['done'], len(ids), 'rows done')

    boots = h.events('boot')
    check_eq(len(boots), 1, 'co-processes started for all items')
    pid = boots[0].pid
    check_eq({e.pid for e in h.starts()}, {pid}, 'pids that handled the items')
    _check_once_each(h, ids)
    payloads = _hex_payloads(db)
    for ev in h.starts():
        f = _fields(ev)
        check_eq(f['hex'], payloads[ev.id], f'payload bytes of row {ev.id} as the co-process got them')
        check_eq((f['queue'], f['group'], ev.attempt, f['max_attempts']), ('default', '-', 1, 5),
                 f'queue, group, attempt, max_attempts of row {ev.id}')
        check(0 < f['deadline_ms'] <= 300000, f'deadline_ms {f["deadline_ms"]} of row {ev.id}')

    worker = c.status()['workers'][0]['pid']
    st = harness.proc_stat(pid)
    check(st and st['pgrp'] != worker and st['pgrp'] != c.pid,
          f'co-process {pid} runs in its own process group ({st})')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    wait_for(lambda: not pid_running(pid), 5, f'co-process {pid} gone after claimd stopped')


def _questions(db):
    return int(db.scalar("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                         "WHERE VARIABLE_NAME = 'QUESTIONS'"))


def it_pipe_quick_outcomes_ride_on_the_claims(t):
    """A quick item's outcome is not a transaction of its own: it goes with the next claim
    (or after 20 ms). Counted in statements the server got: a few per batch of 64, not one or
    more per row (which was 4 per row)."""
    db = t.database()
    ids = db.insert_items(1000)
    h, spec = t.pipe_echo()
    q0 = _questions(db)
    c = t.claimd(db, '--workers', '1', '--batch', '64', '--handler', spec)
    _finished(db, len(ids))
    per_row = (_questions(db) - q0) / len(ids)
    t.note(f'{per_row:.2f} statements per row, the test\'s own polling included')
    check(per_row < 1.0, f'{per_row:.2f} statements per row for quick pipe: items')
    check_eq(db.states()['done'], len(ids), 'rows done')
    _check_once_each(h, ids)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_pipe_outcome_is_written_within_20_ms_when_no_claim_comes(t):
    """An outcome rides on the next claim, or is written within 20 ms: while the rest of its
    batch runs (no claim then), it is done in the database moments after it ended."""
    db = t.database()
    nap = db.insert_item('nap')
    sleeper = db.insert_item('sleep')
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--batch', '2', '--handler', spec, '--grace', '1s')
    wait_for(lambda: h.starts(sleeper), 10, f'row {sleeper} (the second of the batch) to start')
    t0 = time.monotonic()
    wait_for(lambda: db.row(nap, 'state')[0], 1, f'row {nap} (30 ms) done while row {sleeper} '
             'runs', until=lambda s: s == 'done')
    t.note(f'row {nap} done in the database {(time.monotonic() - t0) * 1000:.0f} ms after the '
           'next item started (one poll of the test included)')
    check_eq(db.row(sleeper, 'state')[0], 'claimed', f'row {sleeper} still running')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_pipe_failure_is_retried_then_dead(t):
    db = t.database()
    bad = db.insert_item('fail', max_attempts=3)
    good = db.insert_items(5)
    h, spec = t.pipe_echo()
    t.claimd(db, '--workers', '1', '--handler', spec, '--retry-base', '100ms')
    _finished(db, 1 + len(good))
    state, attempts, last_error = db.row(bad)
    check_eq((state, attempts), ('dead', '3'), f'row {bad} after 3 failures')
    check_eq(last_error, 'pipe_echo: failing as asked', 'last_error (the reply\'s "error")')
    check_eq([e.attempt for e in h.starts(bad)], [1, 2, 3], f'attempts of row {bad}')
    check_eq(db.states()['done'], len(good), 'other rows done')
    check_eq(len(h.events('boot')), 1, 'co-process starts (a failure reply is no reason to restart)')


def it_pipe_reply_may_carry_nested_values(t):
    db = t.database()
    ok = db.insert_item('nested')
    bad = db.insert_item('nestedfail', max_attempts=1)
    h, spec = t.pipe_echo()
    t.claimd(db, '--workers', '1', '--handler', spec)
    _finished(db, 2)
    check_eq(db.row(ok)[0], 'done', f'row {ok}: a reply with a nested result and progress')
    state, _, last_error = db.row(bad)
    check_eq((state, last_error), ('dead', 'pipe_echo: nested failure'),
             f'row {bad}: ok false with nested values beside its error')
    check_eq(len(h.events('boot')), 1, 'co-process starts (nested replies are good replies)')


def it_pipe_retry_in_ms_runs_it_later_without_using_an_attempt(t):
    db = t.database()
    later = db.insert_item('later', max_attempts=2)
    h, spec = t.pipe_echo()
    t.claimd(db, '--workers', '1', '--handler', spec, '--poll-interval', '50ms')
    _finished(db, 1)
    state, attempts, last_error = db.row(later)
    check_eq((state, attempts, last_error), ('done', '1', None),
             f'row {later} after three deferrals with max_attempts 2')
    starts = h.starts(later)
    check_eq([e.attempt for e in starts], [1, 1, 1, 1], f'attempt numbers of row {later}')
    gaps = [round(b.time - a.time, 3) for a, b in zip(starts, starts[1:])]
    check(all(g >= 0.29 for g in gaps), f'runs at least retry_in_ms (300 ms) apart: {gaps}')


def it_pipe_coprocess_death_fails_the_item_and_it_is_restarted(t):
    db = t.database()
    before = db.insert_items(3)
    die = db.insert_item('die', max_attempts=1)
    after = db.insert_items(3)
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec)
    _finished(db, 7)
    state, _, last_error = db.row(die)
    check_eq(state, 'dead', f'row {die} (its co-process died)')
    for want in ('exited', 'exit status 3', 'pipe_echo: dying as asked'):
        check(want in (last_error or ''), f'last_error {last_error!r} does not mention {want!r}')
    check_eq(db.states()['done'], 6, 'rows done around the death')

    boots = [e.pid for e in h.events('boot')]
    check_eq(len(boots), 2, 'co-processes started (one restart)')
    first, second = boots
    check_eq({e.pid for e in h.starts() if e.id in before + [die]}, {first}, 'first co-process items')
    check_eq({e.pid for e in h.starts() if e.id in after}, {second}, 'restarted co-process items')
    check(not pid_running(first), f'dead co-process {first} still running')
    st = c.status()['workers'][0]
    check_eq((st['restarts'], st['failed']), (0, 1), 'worker restarts, failures (the worker lived on)')


def it_pipe_bad_replies_fail_with_clear_errors(t):
    db = t.database()
    cases = {'garbage': 'not a JSON object', 'wrongid': 'wrong id', 'huge': 'longer than 1 MiB'}
    ids = {}
    good = db.insert_items(2)
    for payload in cases:
        ids[payload] = db.insert_item(payload, max_attempts=1)
        good += db.insert_items(2)
    h, spec = t.pipe_echo()
    t.claimd(db, '--workers', '1', '--handler', spec)
    _finished(db, len(good) + len(ids))
    for payload, want in cases.items():
        state, _, last_error = db.row(ids[payload])
        check_eq(state, 'dead', f'row {ids[payload]} ({payload})')
        check(last_error and 'bad reply from the co-process' in last_error and want in last_error,
              f'{payload}: last_error {last_error!r} does not say "bad reply ... {want}"')
    check('this is not json' in db.row(ids['garbage'])[2], 'the garbage is quoted in last_error')
    check_eq(db.states()['done'], len(good), 'good rows done')
    check_eq(len(h.events('boot')), 1 + len(cases), 'co-process starts (restarted after each bad reply)')


def it_pipe_timeout_stops_and_restarts_the_coprocess(t):
    db = t.database()
    slow = db.insert_item('sleep', max_attempts=1)
    good = db.insert_items(3)
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec, '--timeout', '1s', '--kill-grace', '500ms')
    _finished(db, 4)
    state, _, last_error = db.row(slow)
    check_eq(state, 'dead', f'row {slow} (ran past --timeout)')
    check(last_error and 'timed out' in last_error, f'last_error {last_error!r} does not say it timed out')
    sleeper = h.starts(slow)[0].pid
    wait_for(lambda: not pid_running(sleeper), 5, f'timed-out co-process {sleeper} gone')
    check_eq(len(h.events('boot')), 2, 'co-process starts')
    check_eq(db.states()['done'], 3, 'rows done after the restart')
    check_eq(c.status()['workers'][0]['restarts'], 0, 'worker restarts (a timeout is not a crash)')


def it_pipe_coprocess_dies_with_its_worker(t):
    db = t.database()
    db.insert_items(1)
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec)
    boot = wait_for(lambda: h.events('boot'), 15, 'the co-process to start')[0]
    wait_for(db.states, 15, 'the row done', until=lambda s: s['done'] == 1)
    worker = c.status()['workers'][0]['pid']
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: not pid_running(boot.pid), 5, f'co-process {boot.pid} gone with worker {worker}')


def it_pipe_ready_claims_nothing_before_the_coprocess_says_so(t):
    db = t.database()
    db.insert_items(5)
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec + ' ready=1000', '--pipe-ready')
    boot = wait_for(lambda: h.events('boot'), 15, 'the co-process to start (no item yet)')[0]
    seen = set()
    wait_for(lambda: seen.add(c.status()['workers'][0]['state']) or h.events('ready'), 15,
             'its ready line')
    check('starting' in seen, f'the worker\'s states before the ready line: {seen!r}')
    ready = h.events('ready')[0]
    _finished(db, 5)
    first = float(db.scalar('SELECT UNIX_TIMESTAMP(MIN(claimed_at)) FROM work_items'))
    check(first >= ready.time - 0.005, f'a row was claimed at {first:.3f}, before the ready line '
          f'at {ready.time:.3f} (the co-process started at {boot.time:.3f})')
    check_eq({e.pid for e in h.starts()}, {boot.pid}, 'the co-process that ran the items')
    # Gone with no item waiting: another is started at once, and claims wait for its line.
    # The worker, asleep, shows that it cannot take items meanwhile, and idle once it can.
    os.kill(boot.pid, signal.SIGKILL)
    seen = []
    wait_for(lambda: seen.append(c.status()['workers'][0]['state']) or len(h.events('ready')),
             15, 'the next co-process ready', until=lambda n: n == 2)
    check('starting' in seen, f'the worker\'s states until the next ready line: {seen!r}')
    wait_for(lambda: c.status()['workers'][0]['state'], 5, 'the worker idle again',
             until=lambda s: s == 'idle')
    more = db.insert_items(2)
    _finished(db, 7)
    second = h.events('boot')[1].pid
    check_eq({e.pid for e in h.starts() if e.id in more}, {second}, 'the next co-process\'s items')
    check_eq(c.status()['workers'][0]['restarts'], 0, 'worker restarts')


def it_pipe_ready_says_so_when_the_coprocess_never_does(t):
    db = t.database()
    db.insert_items(2)
    h, spec = t.pipe_echo()
    c = t.claimd(db, '--workers', '1', '--handler', spec + ' ready=never', '--pipe-ready')
    wait_for(lambda: 'has not written {"ready":true} in 5 s (--pipe-ready)' in c.log(), 15,
             'the notice of a co-process that is not ready')
    check_eq(db.states()['ready'], 2, 'rows claimed meanwhile (none)')
    check_eq(c.status()['workers'][0]['state'], 'starting', 'the worker\'s state')
    check_eq(c.stop(), 0, 'claimd exit code')


# ---------------------------------------------------------------------------------------------
# so:

def it_so_plugin_runs_items_inside_the_worker(t):
    db = t.database()
    ids = db.insert_items(20) + [db.insert_items(1, payload="UNHEX('00FF')")[0]]
    grouped = db.insert_items(3, group_key="'cart-3'")
    ids += grouped
    bad = db.insert_item('fail', max_attempts=2)
    h, spec = _plugin(t, 'ok')
    c = t.claimd(db, '--workers', '2', '--handler', spec, '--retry-base', '100ms')
    _finished(db, len(ids) + 1)
    check_eq(db.states()['done'], len(ids), 'rows done')
    state, attempts, last_error = db.row(bad)
    check_eq((state, attempts), ('dead', '2'), f'row {bad} (failing)')
    check(last_error and f'ok plugin: failing item {bad}' in last_error, f'last_error {last_error!r}')
    st = c.status()
    workers = {w['pid'] for w in st['workers']}
    check({e.pid for e in h.starts()} <= workers, f'plugin ran outside the workers {workers}: '
          f'{sorted({e.pid for e in h.starts()})}')
    check_eq(_restarts(st), 0, 'worker restarts')
    payloads = _hex_payloads(db)
    for ev in h.starts():
        f = _fields(ev)
        check_eq(f['hex'], payloads[ev.id], f'payload bytes of row {ev.id} in the plugin')
        check(0 < f['deadline_ms'] <= 300000, f'deadline of row {ev.id}: {f["deadline_ms"]} ms away')
        want = ('cart-3', grouped.index(ev.id) + 1) if ev.id in grouped else ('-', 0)
        check_eq((f['group'], f['seq']), want, f'group and seq of row {ev.id} in the plugin')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_so_crash_kills_only_its_worker_and_the_item_is_retried(t):
    # In a sanitized build the plugin's null store is reported by UBSan or ASan, and the worker
    # exits 1 instead of dying of SIGSEGV: either outcome is the crash this test expects.
    sanitizer_crash = ('runtime error: store to null pointer', 'AddressSanitizer: SEGV')
    t.allow_sanitizer_report(*sanitizer_crash)
    db = t.database()
    crash = db.insert_item('crash', max_attempts=2)
    good = db.insert_items(6)
    h, spec = _plugin(t, 'crash')
    c = t.claimd(db, '--workers', '2', '--handler', spec)
    _finished(db, 1 + len(good))
    state, attempts, _ = db.row(crash)
    check_eq((state, attempts), ('dead', '2'), f'row {crash} after two crashes')
    check_eq(db.states()['done'], len(good), 'other rows done')
    runs = h.starts(crash)
    check_eq([e.attempt for e in runs], [1, 2], f'runs of row {crash}')
    check(runs[0].pid != runs[1].pid, 'the retry ran in a new worker')
    c.wait_status(lambda s: _restarts(s) == 2, 10, 'two worker restarts in status')
    log = c.log()
    check('signal 11' in log or any(k in log for k in sanitizer_crash),
          'claimd log does not report the SIGSEGV')
    c.wait_ready(workers=2)
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_so_hang_past_timeout_replaces_the_worker_and_the_item_is_retried(t):
    db = t.database()
    hang = db.insert_item('hang', max_attempts=2)
    good = db.insert_items(3)
    h, spec = _plugin(t, 'hang')
    c = t.claimd(db, '--workers', '1', '--handler', spec, '--timeout', '1s')
    _finished(db, 1 + len(good))
    state, attempts, _ = db.row(hang)
    check_eq((state, attempts), ('dead', '2'), f'row {hang} after two timeouts')
    runs = h.starts(hang)
    check_eq([e.attempt for e in runs], [1, 2], f'runs of row {hang}')
    check(runs[1].time - runs[0].time >= 0.95, 'second run began before the 1 s timeout')
    check_eq(h.ends(hang), [], 'runs of the hanging item that ended')
    for pid in {e.pid for e in runs}:
        wait_for(lambda: not pid_running(pid), 5, f'worker {pid} that ran the hanging plugin gone')
    check_eq(db.states()['done'], len(good), 'other rows done')
    c.wait_status(lambda s: _restarts(s) == 2, 10, 'two worker restarts in status')
    check('cannot be stopped' in c.log(), 'claimd log does not say why the worker exited')


def it_so_bad_plugin_is_refused_at_start(t):
    db = t.database()
    cases = [(os.path.join(PLUGIN_DIR, 'claimd_test_badabi.so'), 'ABI version 101'),
             (os.path.join(t.tmpdir, 'missing.so'), 'cannot load plugin'),
             (PIPE_ECHO, 'cannot load plugin')]
    for i, (path, want) in enumerate(cases):
        c = t.claimd(db, '--handler', f'so:{path}', name=f'bad{i}')
        check_eq(c.wait_exit(10), 2, f'claimd exit code with so:{path}')
        check(want in c.log(), f'so:{path}: message {c.log()!r} does not say {want!r}')


# ---------------------------------------------------------------------------------------------
# exec: metadata

def it_exec_handler_gets_item_metadata_and_no_claimd_variables(t):
    db = t.database()
    item = db.insert_item('x')
    grouped = db.insert_items(2, payload="'g'", group_key="'order-9'")
    h = t.log_handler('ev meta "$$ seq=${CLAIMD_SEQ-unset} group=${CLAIMD_GROUP-unset} '
                      'deadline=${CLAIMD_DEADLINE_MS-unset} secret=${CLAIMD_TEST_SECRET-unset} '
                      'enqueued=${CLAIMD_ENQUEUED_AT-unset}"')
    env = dict(os.environ, CLAIMD_TEST_SECRET='leaked')
    t.claimd(db, '--workers', '1', '--handler', h.spec, env=env)
    wait_for(db.states, 15, 'the rows done', until=lambda s: s['done'] == 3)
    for seq, gid in enumerate(grouped, 1):
        gm = dict(kv.split('=', 1) for kv in h.events('meta', gid)[0].rest.split(' '))
        check_eq((gm['seq'], gm['group']), (str(seq), 'order-9'),
                 f'CLAIMD_SEQ, CLAIMD_GROUP of grouped row {gid}')
    meta = dict(kv.split('=', 1) for kv in h.events('meta', item)[0].rest.split(' '))
    check_eq((meta['seq'], meta['group'], meta['secret']), ('0', 'unset', 'unset'),
             'CLAIMD_SEQ, CLAIMD_GROUP (no group), CLAIMD_TEST_SECRET (not passed on)')
    check(meta['deadline'].isdigit() and 0 < int(meta['deadline']) <= 300000,
          f'CLAIMD_DEADLINE_MS {meta["deadline"]!r}')
    # Every row has its created_at: the variable is always set, to it (ms, UTC).
    ms = int(db.scalar(f'SELECT ROUND(UNIX_TIMESTAMP(created_at) * 1000) FROM work_items '
                       f'WHERE id = {item}'))
    want = (datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
            .strftime('%Y-%m-%dT%H:%M:%S') + f'.{ms % 1000:03d}Z')
    check_eq(meta['enqueued'], want, "CLAIMD_ENQUEUED_AT (the row's created_at)")


if __name__ == '__main__':
    harness.main()
