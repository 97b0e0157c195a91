#!/usr/bin/env python3
"""claimd under systemd: the notify protocol spoken to a fake $NOTIFY_SOCKET (READY=1 once
the pool serves, STATUS=, WATCHDOG=1 at half $WATCHDOG_USEC, STOPPING=1; the variables are not
passed on to handlers), the shipped unit file checked by systemd-analyze verify, and its
control socket settings run as systemd would: the socket in its RuntimeDirectory, found by
claimctl with no option, open to the members of the service's group and to nobody else."""

import os
import re
import shutil
import signal
import socket
import subprocess
import time

import harness
import test_control
from harness import CLAIMD_BIN, check, check_eq, wait_for

UNIT = os.path.join(harness.SOURCE_ROOT, 'src', 'deploy', 'claimd.service.in')


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
    with open(UNIT) as f:
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


def _unit_settings():
    """The unit's [Service] keys (the last of each) and its Environment= variables."""
    keys, env = {}, {}
    with open(UNIT) as f:
        for line in f:
            m = re.match(r'^(\w+)=(.*)$', line.strip())
            if not m:
                continue
            keys[m.group(1)] = m.group(2)
            if m.group(1) == 'Environment':
                name, _, value = m.group(2).partition('=')
                env[name] = value
    return keys, env


def it_ships_a_unit_whose_group_may_use_claimctl(t):
    test_control.need_root()
    keys, env = _unit_settings()
    check_eq((keys.get('User'), keys.get('Group'), keys.get('RuntimeDirectory'),
              keys.get('RuntimeDirectoryMode'), env.get('CLAIMD_CONTROL_GROUP')),
             ('claimd', 'claimd', 'claimd', '0750', 'claimd'),
             'User, Group, RuntimeDirectory, its mode, CLAIMD_CONTROL_GROUP')
    check('CLAIMD_CONTROL' not in env, 'the unit leaves the socket to its default')
    # The service's user and group as `useradd --system claimd` makes them, under a name of
    # the test's; an operator in its group; someone else.
    users = test_control.Users(t)
    service = users.user('s')
    operator = users.user('o', [service.pw_name])
    other = users.user('x')
    ctl = test_control.claimctl_for_all(t)
    ns = test_control.MountNamespace(t)
    run_dir = os.path.join(ns.run, keys['RuntimeDirectory'])    # as systemd makes it
    os.mkdir(run_dir)
    os.chown(run_dir, service.pw_uid, service.pw_gid)
    os.chmod(run_dir, int(keys['RuntimeDirectoryMode'], 8))
    unit_env = {k: v.replace('claimd', service.pw_name) if k == 'CLAIMD_CONTROL_GROUP' else v
                for k, v in env.items()}
    db = t.database()
    # Started as root and dropping to the user (--user), so that it reaches the test
    # database's socket wherever the checkout is; the socket is then as under User=.
    c = test_control.Started(t, ns.argv(CLAIMD_BIN, '--dsn', db.dsn, '--handler', 'noop',
                                        '--workers', '1', '--user', service.pw_name),
                             test_control.clean_env(**unit_env), 'unit')
    ask = lambda pw: subprocess.run(ns.argv(*test_control.user_argv(pw, [ctl, 'status'])),
                                    capture_output=True, text=True, timeout=10,
                                    env=test_control.clean_env())
    wait_for(lambda: ask(operator), 15, 'an operator in the service\'s group: claimctl status',
             until=lambda r: r.returncode == 0)
    sock = os.path.join(run_dir, 'claimd.sock')
    st = os.stat(sock)
    check_eq((st.st_uid, st.st_gid, st.st_mode & 0o777),
             (service.pw_uid, service.pw_gid, 0o660), '/run/claimd/claimd.sock')
    r = ask(other)
    check(r.returncode == 3 and 'Permission denied' in r.stderr,
          f'someone else: {r.returncode} {r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
