#!/usr/bin/env python3
"""claimd rides out a MariaDB restart: it sees the server gone (claimctl status, its log),
keeps running, and every row still gets done.

This test restarts its server, so it starts a private one rather than the shared one."""

import os
import subprocess
import threading
import time

import harness
from harness import check, check_eq, wait_for

ROWS = 2000
LEASE = 5.0


def _ride_out_a_restart(t, handler_args, payload="CONCAT('item-', seq)"):
    """Returns the database, once every row is done and claimd has stopped cleanly."""
    server = t.private_server()
    db = t.database(server)
    # Spread the rows' run_at over 4 s so that work is still pending whatever the throughput
    # when the server goes away (the restart happens about 1 s in).
    db.insert_items(ROWS, payload=payload, run_at='NOW(6) + INTERVAL (seq * 2000) MICROSECOND')
    c = t.claimd(db, '--workers', '4', *handler_args, '--lease', f'{LEASE:g}s')
    c.wait_ready(workers=4)
    wait_for(db.states, 10, 'some rows done before the restart', until=lambda s: s['done'] >= 50)

    seen = {'db': set(), 'states': set(), 'errors': 0}
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            try:
                st = c.status()
                seen['db'].add(st.get('db'))
                seen['states'].update(w.get('state') for w in st.get('workers', []))
            except harness.ClaimdExited:
                return
            except Exception:  # noqa: BLE001 - status may be slow while the DB is down
                seen['errors'] += 1
            stop.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    before = db.states()
    t0 = time.monotonic()
    # Stopped until claimd says it has seen the server gone, then started again: the outage
    # is one claimd lived through, however quick the restart.
    server.stop()
    try:
        wait_for(c.status, 20, 'claimd to report the database down while it is stopped',
                 until=lambda st: st.get('db') == 'down' or
                 any(w.get('state') == 'db-down' for w in st.get('workers', [])))
    finally:
        harness.Server.start(server.dir)
        restarted = time.monotonic()
        t.note(f'outage of {restarted - t0:.1f}s; rows before it: {before}')

    try:
        check(c.running(), f'claimd exited during the DB restart (code {c.proc.returncode})')
        final = wait_for(db.states, LEASE + 20, f'all {ROWS} rows done after the restart',
                         until=lambda s: s['done'] == ROWS)
        check_eq(final, {'ready': 0, 'claimed': 0, 'done': ROWS, 'dead': 0}, 'row states')
        st = c.wait_status(lambda s: s['db'] == 'up' and all(w['state'] == 'idle' for w in s['workers']),
                           10, 'status: db up, all workers idle')
    finally:
        stop.set()
        watcher.join(10)
    done_after = time.monotonic() - restarted
    log = c.log()
    t.note(f'all rows done {done_after:.1f}s after the restart; status db values seen: {sorted(map(str, seen["db"]))}; '
           f'worker states seen: {sorted(map(str, seen["states"]))}; failed status calls: {seen["errors"]}')
    t.note('claimd log lines about the database: '
           + repr([ln for ln in log.splitlines() if 'db' in ln.lower() or 'mysql' in ln.lower()][:5]))
    check('down' in seen['db'] or 'db-down' in seen['states'],
          f'the outage in claimctl status: db {seen["db"]}, workers {seen["states"]}')
    check('database unreachable' in log, 'the workers log that the database went away')
    check(c.running(), 'claimd is still running')
    check_eq(len(st['workers']), 4, 'workers after the restart')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')
    check_eq(c.group_processes(), [], 'processes left in claimd\'s session')
    return db


def it_keeps_running_through_a_db_restart_and_finishes_every_row(t):
    _ride_out_a_restart(t, ['--handler', 'noop', '--batch', '16'])


def it_so_items_8_at_once_ride_out_a_db_restart(t):
    h, spec = t.plugin('ok')
    db = _ride_out_a_restart(t, ['--handler', spec, '--concurrency', '8'], payload="'sleep:20'")
    runs = harness.runs_of(h)
    check_eq(len(runs), ROWS, 'rows that ran')
    harness.check_runs_apart(runs)
    # Rows may run again (their lease ran out while the database was away), but no run
    # failed: none used up an attempt beyond the one that counted.
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE last_error IS NOT NULL"), '0',
             'rows with an error')


def it_pipe_items_8_at_once_ride_out_a_db_restart(t):
    h, spec = t.pipe_sleeper()
    db = _ride_out_a_restart(t, ['--handler', spec, '--concurrency', '8'], payload="'sleep:20'")
    runs = harness.runs_of(h)
    check_eq(len(runs), ROWS, 'rows that ran')
    harness.check_runs_apart(runs)
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE last_error IS NOT NULL"), '0',
             'rows with an error')


def it_writes_a_failure_held_up_by_a_lock_once_the_lock_goes(t):
    """A failure's outcome whose statement waits on a row lock past every retry (5 s lock
    waits, twice) is not written and not forgotten either: the worker backs off and writes it
    once the lock is gone, long before the row's lease ends. (It was taken for "lost its
    claim" and dropped: the row stayed claimed until its lease ran out.)"""
    db = t.database()
    h = t.log_handler('sleep 1; rc=3')
    c = t.claimd(db, '--workers', '1', '--handler', h.spec, '--lease', '60s')
    c.wait_ready()
    item = db.insert_item('fails', max_attempts=1)
    wait_for(lambda: db.row(item, 'state')[0], 10, 'the row claimed',
             until=lambda s: s == 'claimed')
    # Another session locks the row while its handler runs, and holds it for 13 s.
    holder = subprocess.Popen(
        [harness._client_bin(), '--no-defaults', '--protocol=socket', '-S', db.server.socket,
         '-uroot', db.name], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    t.defer(holder.kill)
    holder.stdin.write(f'START TRANSACTION; SELECT id FROM work_items WHERE id = {item} '
                       'FOR UPDATE; SELECT SLEEP(13); COMMIT;\n')
    holder.stdin.flush()
    wait_for(lambda: h.ends(item), 10, 'the handler to fail')
    wait_for(lambda: 'database error during completing items' in c.log(), 20,
             'the outcome held up by the lock past its retries')
    holder.stdin.close()
    check_eq(holder.wait(timeout=30), 0, f'the session holding the lock: {holder.stderr.read()}')
    released = time.monotonic()
    wait_for(lambda: db.row(item, 'state, attempts, last_error'), 10,
             'the failure written once the lock went',
             until=lambda r: r[0] == 'dead')
    check(time.monotonic() - released < 10, 'written within seconds, not at the lease\'s end')
    check_eq(list(db.row(item, 'state, attempts, last_error')), ['dead', '1', 'exit status 3'],
             'the row: dead after its one attempt, with its error')
    check('lost their claim' not in c.log(), 'no outcome taken for lost')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_stops_at_once_when_the_database_is_down_and_nothing_is_pending(t):
    """SIGTERM with the database unreachable: the workers have nothing to write, so they do
    not wait out the grace period for it to come back."""
    sock = os.path.join(t.tmpdir, 'no-server.sock')
    c = t.claimd(None, '--workers', '2', '--handler', 'noop', '--grace', '30s',
                 dsn=f'mysql://root@localhost/claimd?socket={sock}')
    c.wait_status(lambda s: len(s['workers']) == 2 and
                  all(w['state'] == 'db-down' for w in s['workers']), 10,
                  'both workers reporting the database down')
    t0 = time.monotonic()
    check_eq(c.stop(timeout=10), 0, 'claimd exit code after SIGTERM')
    took = time.monotonic() - t0
    check(took < 3, f'claimd took {took:.1f} s to stop (--grace 30s; nothing to wait for)')


if __name__ == '__main__':
    harness.main(needs_server=False)
