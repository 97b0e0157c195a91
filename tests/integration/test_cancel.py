#!/usr/bin/env python3
"""Cancelling a running row (claimctl cancel ID, DELETE /v1/jobs/ID) through another
supervisor than the one running it: the run is stopped (exec: SIGTERM; pipe: the cancel line,
the co-process stopped if it does not answer; so: the cancelled flag, the worker ended if the
plugin does not return; one not started yet is not run), the row ends dead "cancelled"
within a second and a half, with its one attempt, and never runs again; the worker's other
item finishes as it would have. A row
cancelled while its supervisor is dead ends dead once its lease runs out, without running."""

import json
import re
import time

import harness
from harness import check, check_eq, pid_running, wait_for

# The supervisor running the rows: one worker, two items at once, a quick retry (so a retry
# would show) and a short grace.
RUNNER = ['--workers', '1', '--concurrency', '2', '--retry-base', '200ms', '--kill-grace',
          '500ms']
WITHIN = 1.5   # s from the request to the row dead


def _other(t, db, *args):
    """The second supervisor, on the same database: it serves another queue (it never runs
    the rows) and takes the cancel, on its control socket and HTTP."""
    c = t.claimd(db, '--workers', '1', '--queue', 'elsewhere', '--handler', 'noop', '--http',
                 '127.0.0.1:0', *args, name='other')
    m = wait_for(lambda: re.search(r'http: listening on (http://[0-9.:]+)/', c.log()), 10,
                 'other: the http listening line')
    c.url = m.group(1)
    c.token = c.http_token()
    c.wait_ready()
    return c


def _delete(c, item):
    """DELETE /v1/jobs/ITEM on c: (status, parsed body)."""
    import urllib.request
    req = urllib.request.Request(f'{c.url}/v1/jobs/{item}', method='DELETE',
                                 headers={'Authorization': f'Bearer {c.token}'})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read().decode())


def _cancel_ctl(c, item):
    r = c.ctl('cancel', str(item))
    check_eq(r.returncode, 0, f'claimctl cancel {item}: {r.stderr!r}')
    check(r.stdout.startswith(f'cancelling: row {item} runs on '), f'its answer: {r.stdout!r}')


def _dead_in_time(db, item, t0, within=WITHIN):
    """The row dead "cancelled", with one attempt, within `within` s of t0."""
    left = max(0.1, t0 + within - time.monotonic())
    try:
        wait_for(lambda: db.row(item, 'state')[0], left, f'row {item} dead',
                 until=lambda s: s == 'dead', interval=0.02)
    except harness.WaitTimeout:
        harness.fail(f'row {item} is {db.row(item)!r} {within:g} s after its cancel')
    state, attempts, last_error = db.row(item)
    check_eq((state, attempts), ('dead', '1'), f'row {item}: state, attempts')
    check(last_error and last_error.startswith('cancelled ('), f'last_error {last_error!r}')


def _done(db, item, within=10):
    wait_for(lambda: db.row(item, 'state')[0], within, f'row {item} done', until=lambda s: s == 'done')
    check_eq(db.row(item, 'state, attempts'), ('done', '1'), f'the other row {item}')


def _runs_once(h, item, kind='start'):
    # Past the retry back-off (200 ms +-25 %): a retry would have started by now.
    time.sleep(0.8)
    check_eq(len(h.events(kind, item)), 1, f'runs of row {item}')


def it_exec_run_cancelled_on_another_supervisor_is_killed(t):
    db = t.database()
    long_, short = db.insert_item('long'), db.insert_item('short')
    # A row that waits for it (work_deps, on_dead 'cancel'): cancelled with it.
    child = db.insert_item('child')
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({long_}, {child})')
    h = t.log_handler('if [ "$payload" = long ]; then exec sleep 60; fi; sleep 2.5')
    a = t.claimd(db, *RUNNER, '--handler', h.spec, name='runner')
    run = wait_for(lambda: h.starts(long_), 10, 'the long run')[0]
    wait_for(lambda: h.starts(short), 10, 'the short run beside it')
    b = _other(t, db)
    t0 = time.monotonic()
    _cancel_ctl(b, long_)
    _dead_in_time(db, long_, t0)
    wait_for(lambda: not pid_running(run.pid), 2, f'handler pid {run.pid} gone')
    check_eq(db.row(child), ('dead', '0', f'cancelled: row {long_}, which it waited for, is dead'),
             'the row that waited for it')
    _done(db, short)
    _runs_once(h, long_)
    check(re.search(rf'item id={long_} cancelled by an operator', a.log()),
          'runner: the cancel logged')
    check_eq(a.status()['workers'][0]['restarts'], 0, 'worker restarts')
    check_eq(b.ctl('cancel', str(long_)).returncode, 0, 'a dead row: discarded, as before')
    check_eq(int(db.scalar(f'SELECT COUNT(*) FROM work_items WHERE id = {long_}')), 0,
             'the dead row gone')


def it_pipe_coprocess_that_answers_the_cancel(t):
    db = t.database()
    long_, short = db.insert_item('sleep:60000'), db.insert_item('sleep:2500')
    h, spec = t.pipe_sleeper()
    t.claimd(db, *RUNNER, '--handler', spec, name='runner')
    wait_for(lambda: h.starts(long_) and h.starts(short), 10, 'both runs')
    b = _other(t, db)
    t0 = time.monotonic()
    status, body = _delete(b, long_)
    check_eq((status, body['id'], body['state'], body['cancelling']),
             (202, long_, 'claimed', True), f'DELETE of a running row: {body!r}')
    _dead_in_time(db, long_, t0)
    check_eq(len(h.events('cancelled', long_)), 1, 'the co-process read the cancel line')
    _done(db, short)
    _runs_once(h, long_)
    check_eq(len({e.pid for e in h.events('start')}), 1, 'one co-process all along')


def it_pipe_coprocess_that_ignores_the_cancel_is_stopped(t):
    db = t.database()
    # pipe_echo answers one line at a time: "sleep" holds it 10 minutes, the cancel unread.
    long_, other = db.insert_item('sleep'), db.insert_item('quick')
    h, spec = t.pipe_echo()
    t.claimd(db, *RUNNER, '--handler', spec, name='runner')
    wait_for(lambda: h.starts(long_), 10, 'the long run')
    b = _other(t, db)
    t0 = time.monotonic()
    _cancel_ctl(b, long_)
    _dead_in_time(db, long_, t0)
    # The item that waited behind it in the co-process's stdin went back, its attempt given
    # back, and ran on the next co-process.
    _done(db, other)
    _runs_once(h, long_)


def it_row_claimed_but_not_started_is_not_run(t):
    db = t.database()
    running, waiting = db.insert_item('sleep:2500'), db.insert_item('sleep:10')
    h, spec = t.pipe_sleeper()
    # One at a time, two claimed at once: the second waits in the handler's queue.
    a = t.claimd(db, '--workers', '1', '--batch', '2', '--retry-base', '200ms', '--handler',
                 spec, name='runner')
    wait_for(lambda: h.starts(running), 10, 'the first run')
    check_eq(db.row(waiting, 'state')[0], 'claimed', 'the second row, claimed with it')
    b = _other(t, db)
    t0 = time.monotonic()
    _cancel_ctl(b, waiting)
    _dead_in_time(db, waiting, t0)
    check(re.search(rf'item id={waiting} cancelled before it started', a.log()),
          'runner: cancelled before it started')
    _done(db, running)
    check_eq(h.starts(waiting), [], 'runs of the cancelled row')


def it_so_plugin_cancelled_by_its_flag_or_ended_with_its_worker(t):
    db = t.database()
    polite, hang, short = (db.insert_item('polite'), db.insert_item('hang'),
                           db.insert_item('sleep:2500'))
    h, spec = t.plugin('hang')
    a = t.claimd(db, *RUNNER, '--concurrency', '3', '--handler', spec, name='runner')
    wait_for(lambda: all(h.starts(i) for i in (polite, hang, short)), 10, 'three runs')
    b = _other(t, db)
    # The plugin that reads job->cancelled() returns; the row is dead whatever it returned.
    t0 = time.monotonic()
    _cancel_ctl(b, polite)
    _dead_in_time(db, polite, t0)
    check_eq(len(h.events('cancelled', polite)), 1, 'the plugin saw its cancelled flag')
    check_eq(a.status()['workers'][0]['restarts'], 0, 'no restart for a plugin that returns')
    # One that does not: past the grace its worker ends, the row dead, the short one (still
    # running) released and run again to done, its attempt given back.
    t0 = time.monotonic()
    _cancel_ctl(b, hang)
    _dead_in_time(db, hang, t0)
    a.wait_status(lambda s: s['workers'][0]['restarts'] == 1, 5, 'the worker replaced')
    _done(db, short)
    _runs_once(h, hang)
    check_eq(len(h.starts(polite)), 1, 'runs of the polite row')


def it_cancel_while_its_supervisor_is_dead_ends_it_after_the_lease(t):
    db = t.database()
    item = db.insert_item('long')
    h = t.log_handler('exec sleep 60')
    a = t.claimd(db, *RUNNER, '--lease', '3s', '--handler', h.spec, name='runner')
    wait_for(lambda: h.starts(item), 10, 'the run')
    # A second supervisor of the same queue: it claims the row once the lease is over.
    b = t.claimd(db, *RUNNER, '--lease', '3s', '--handler', h.spec, name='other')
    b.wait_ready()
    a.kill_all()   # before it could notice anything
    r = b.ctl('cancel', str(item))
    check_eq(r.returncode, 0, f'claimctl cancel: {r.stderr!r}')
    check('cancelling' in r.stdout, f'its answer: {r.stdout!r}')
    wait_for(lambda: db.row(item, 'state')[0], 3 + 5, f'row {item} dead after the lease',
             until=lambda s: s == 'dead')
    state, attempts, last_error = db.row(item)
    check_eq((state, attempts), ('dead', '1'), 'state, attempts (the run before the death)')
    check(last_error and last_error.startswith('cancelled ('), f'last_error {last_error!r}')
    _runs_once(h, item)


def it_a_run_that_succeeds_after_its_cancel_was_answered_ends_dead(t):
    """A handler that ends well right after the cancel request is written, before the
    supervisor running it notices (it looks every half second): its success comes after the
    answer "cancelling", so the row does not end done (claimd-handlers(7)). The handler sees
    the request a client round trip after it is written; when the supervisor looked first
    (a slow, sanitized build) the run is stopped instead, and the case is tried on a new row,
    up to five times: every row must end dead either way."""
    db = t.database()
    ask = (f'{harness._client_bin()} --no-defaults -S {db.server.socket} -uroot --batch '
           f'--skip-column-names {db.name} -e "SELECT cancel_requested_at IS NOT NULL FROM '
           f'work_items WHERE id = $CLAIMD_ITEM_ID"')
    h = t.log_handler(f'until [ "$({ask})" = 1 ]; do sleep 0.01; done; ev asked "$$"')
    c = t.claimd(db, *RUNNER, '--handler', h.spec)
    other = _other(t, db)
    ended_well = []
    for attempt in range(5):
        item = db.insert_item(f'quits well {attempt}')
        wait_for(lambda: h.starts(item), 10, 'the run started')
        _cancel_ctl(other, item)
        _dead_in_time(db, item, time.monotonic())
        wait_for(c.status, 10, f'row {item} no longer running',
                 until=lambda st: not any(w.get('item') for w in st.get('workers', [])))
        ends = [e.rest.split()[-1] for e in h.ends(item)]
        if ends == ['rc=0']:
            ended_well.append(item)
            break
        t.note(f'row {item}: the supervisor stopped the run first (ends {ends}); again')
    check(ended_well, 'no run ended well after its cancel was answered in 5 tries')
    check_eq(c.stop(), 0, 'claimd exit code')

if __name__ == '__main__':
    harness.main()
