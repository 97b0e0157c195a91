#!/usr/bin/env python3
"""claimd under systemd: the notify protocol spoken to a fake $NOTIFY_SOCKET (READY=1 once
the pool serves, STATUS=, WATCHDOG=1 at half $WATCHDOG_USEC, STOPPING=1; the variables are not
passed on to handlers), and the shipped unit file checked by systemd-analyze verify."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import harness
from harness import check, check_eq, wait_for


def _datagrams(sock, seconds):
    """Everything the socket gets within seconds, as a list of (time, text)."""
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            got.append((time.monotonic(), sock.recv(4096).decode()))
        except socket.timeout:
            break
    return got


def it_speaks_the_notify_protocol(t):
    db = t.database()
    path = os.path.join(t.tmpdir, 'notify.sock')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    t.defer(sock.close)
    env_log = os.path.join(t.tmpdir, 'env.log')
    h = t.log_handler(f'env | grep -E "^(NOTIFY_SOCKET|WATCHDOG_)" >> {env_log}; true')
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC='400000')
    start = time.monotonic()
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, env=env)
    got = _datagrams(sock, 3.0)
    texts = [g[1] for g in got]
    ready = [g for g in got if 'READY=1' in g[1]]
    check(ready, f'READY=1 came: {texts}')
    check(re.search(r'STATUS=2 of 2 workers up, database up', ready[0][1]),
          f'READY with a STATUS: {ready[0][1]!r}')
    check(ready[0][0] - start < 3, 'READY=1 within 3 s')
    st = c.status()
    check(all(w['state'] in ('idle', 'busy') for w in st['workers']),
          f'the pool served when READY came: {st}')
    pings = [g[0] for g in got if g[1] == 'WATCHDOG=1']
    check(len(pings) >= 8, f'WATCHDOG=1 about every 200 ms: {len(pings)} in 3 s')
    # A handler does not see the variables.
    db.insert_item('x')
    wait_for(db.states, 10, 'the row done', until=lambda s: s['done'] == 1)
    check(not os.path.exists(env_log) or os.path.getsize(env_log) == 0,
          'the handler saw NOTIFY_SOCKET or WATCHDOG_*')
    c.send(signal.SIGTERM)
    got = _datagrams(sock, 2.0)
    check(any('STOPPING=1' in g[1] for g in got), f'STOPPING=1 at SIGTERM: {[g[1] for g in got]}')
    check_eq(c.wait_exit(15), 0, 'claimd exit code')


def it_ships_a_unit_that_systemd_analyze_accepts(t):
    analyze = shutil.which('systemd-analyze')
    if not analyze:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('systemd-analyze is not installed (Debian: systemd)')
        raise harness.Skip('systemd-analyze is not installed (Debian: systemd)')
    src = os.path.join(harness.SOURCE_ROOT, 'src', 'deploy', 'claimd.service.in')
    with open(src) as f:
        text = f.read()
    # Where this build's claimd is (systemd-analyze checks that ExecStart can run).
    unit = text.replace('@bindir@', os.path.dirname(harness.CLAIMD_BIN)).replace(
        '@sysconfdir@', '/etc')
    path = os.path.join(t.tmpdir, 'claimd.service')
    with open(path, 'w') as f:
        f.write(unit)
    # --man=no: the man page is checked by the install test (tests/integration/test_install.py)
    r = subprocess.run([analyze, 'verify', '--man=no', path], capture_output=True, text=True, timeout=60)
    # Only what is about this unit counts (a container lacks the units it names in After=).
    about = [ln for ln in (r.stdout + r.stderr).splitlines()
             if 'claimd.service' in ln and 'not found' not in ln]
    check_eq(about, [], 'systemd-analyze verify says nothing about claimd.service')
    for want in ('Type=notify', 'KillMode=mixed', 'RuntimeDirectory=claimd',
                 'EnvironmentFile=', 'User=claimd', 'Restart=on-failure', 'WatchdogSec='):
        check(want in unit, f'the unit has {want}')
    stop = int(re.search(r'^TimeoutStopSec=(\d+)', unit, re.M).group(1))
    check(stop > 30 + 2, f'TimeoutStopSec={stop} is above the default grace and kill grace')


if __name__ == '__main__':
    harness.main()
