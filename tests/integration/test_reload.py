#!/usr/bin/env python3
"""Changing a running claimd: SIGTTIN and SIGTTOU add and retire a worker (the idlest,
after its item), claimctl workers N sets the count, and SIGHUP (or claimctl reload) reads the
settings again: the supervisor's apply at once, a new handler by replacing every worker after
its item, what needs a restart is logged, and bad settings are refused with the running ones
kept. Nothing is lost on the way."""

import os
import signal
import socket
import time

import harness
from harness import check, check_eq, wait_for


def _up(c):
    st = c.status()
    return [w for w in st['workers'] if w['state'] in ('idle', 'busy')]


def _pids(c):
    return sorted(w['pid'] for w in _up(c))


def _wait_count(c, n, what):
    return wait_for(lambda: c.status()['workers'], 15, what,
                    until=lambda ws: len(ws) == n and all(w['state'] in ('idle', 'busy')
                                                          for w in ws))


def it_adds_and_retires_workers_with_signals_and_claimctl(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = slow ] && sleep 4; true')
    c = t.claimd(db, '--workers', '2', '--handler', h.spec)
    c.wait_ready(workers=2)
    c.send(signal.SIGTTIN)
    _wait_count(c, 3, 'three workers after SIGTTIN')
    # One busy worker (a 4 s item) and two idle: SIGTTOU twice retires the idle ones (one
    # signal at a time: two sent at once may arrive as one).
    busy_id = db.insert_item('slow')
    busy = wait_for(lambda: [w for w in c.status()['workers'] if w['item'] == busy_id], 10,
                    'a worker on the slow row')[0]
    c.send(signal.SIGTTOU)
    _wait_count(c, 2, 'two workers after a SIGTTOU')
    c.send(signal.SIGTTOU)
    ws = _wait_count(c, 1, 'one worker after two SIGTTOU')
    check_eq(ws[0]['pid'], busy['pid'], 'the busy worker stayed (the idle ones retired)')
    check_eq(ws[0]['item'], busy_id, 'still on its row')
    wait_for(lambda: db.row(busy_id, 'state')[0], 10, 'its row done',
             until=lambda s: s == 'done')
    r = c.ctl('workers', '4')
    check(r.returncode == 0 and 'workers 4' in r.stdout, f'claimctl workers 4: {r.stdout!r}')
    _wait_count(c, 4, 'four workers')
    ids = db.insert_items(8, payload="'x'")
    r = c.ctl('workers', '2')
    check_eq(r.returncode, 0, 'claimctl workers 2')
    _wait_count(c, 2, 'two workers')
    wait_for(db.states, 30, 'every row done', until=lambda s: s['done'] == len(ids) + 1)
    starts = [e.id for e in h.starts()]
    check_eq(sorted(set(starts)), sorted(ids + [busy_id]), 'every row ran')
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1',
             'no row ran twice (retired workers finished their items)')
    check(c.ctl('workers', '0').returncode != 0, 'claimctl workers 0 is refused')
    check_eq(c.stop(), 0, 'exit code')


def it_reloads_settings_and_replaces_workers_for_a_new_handler(t):
    db = t.database()
    ha = t.log_handler('sleep 1', name='a')
    hb = t.log_handler('', name='b')
    conf = os.path.join(t.tmpdir, 'claimd.conf')

    def write(handler, workers, extra=''):
        with open(conf, 'w') as f:
            f.write(f'dsn = {db.dsn}\nhandler = exec:{handler}\nworkers = {workers}\n{extra}')

    notify = os.path.join(t.tmpdir, 'notify.sock')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify)
    t.defer(sock.close)
    write(ha.path, 2)
    env = {k: v for k, v in os.environ.items() if not k.startswith('CLAIMD_')}
    c = t.claimd(None, '--config', conf, env=dict(env, NOTIFY_SOCKET=notify))
    c.wait_ready(workers=2)
    before = _pids(c)
    running = db.insert_item('during')
    wait_for(lambda: ha.starts(running), 10, 'the row started under handler a')
    # A new handler and three workers: every worker is replaced after its item.
    write(hb.path, 3, 'hang-timeout = 20s\n')
    c.send(signal.SIGHUP)
    wait_for(lambda: _pids(c), 20, 'every worker replaced',
             until=lambda pids: len(pids) == 3 and not set(pids) & set(before))
    check(ha.ends(running), 'the row that was running finished under handler a')
    check_eq(db.row(running, 'state, attempts')[:2], ('done', '1'), 'the running row')
    after = db.insert_item('after')
    wait_for(lambda: hb.starts(after), 10, 'a new row runs under handler b')
    check(not ha.starts(after), 'handler a did not run the new row')
    sock.settimeout(0.2)
    said = []
    try:
        while True:
            said.append(sock.recv(4096).decode())
    except socket.timeout:
        pass
    check('RELOADING=1' in said and said.index('RELOADING=1') < said.index('READY=1', 1),
          f'RELOADING=1 then READY=1: {said}')
    # What only a restart applies is logged; bad settings are refused and nothing changes.
    write(hb.path, 3, 'http = 127.0.0.1:0\n')
    r = c.ctl('reload')
    check(r.returncode == 0 and 'a restart applies what changed in: http' in r.stdout,
          f'claimctl reload: {r.stdout!r} {r.stderr!r}')
    pids = _pids(c)
    write(hb.path, 'lots')
    r = c.ctl('reload')
    check(r.returncode == 1 and 'claimd.conf:3' in r.stderr, f'a bad reload: {r.stderr!r}')
    check('the running settings stay' in c.log(), 'the log says the running settings stay')
    time.sleep(0.5)
    check_eq(_pids(c), pids, 'the workers after a refused reload')
    check_eq(c.stop(), 0, 'exit code')


if __name__ == '__main__':
    harness.main()
