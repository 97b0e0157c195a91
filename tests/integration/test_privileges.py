#!/usr/bin/env python3
"""Started as root: with --user NAME claimd opens its control socket (given to NAME), then
becomes NAME, its groups and gid with it, before the fork server, any worker or handler
starts; without --user its handlers would run as root, which it refuses unless --allow-root.
Needs root (CI runs as root); the user is Debian's nobody."""

import os
import pwd
import subprocess

import harness
from harness import check, check_eq, wait_for
from test_cli import GOOD_DSN, run_claimd


def _ids(pid):
    with open(f'/proc/{pid}/status') as f:
        st = dict(line.split(':', 1) for line in f if ':' in line)
    return int(st['Uid'].split()[0]), int(st['Gid'].split()[0]), st['Groups'].split()


def _reachable_by(user, path):
    """Whether user can reach path (every directory above it searchable)."""
    r = subprocess.run(['setpriv', f'--reuid={user.pw_uid}', f'--regid={user.pw_gid}',
                        '--clear-groups', 'test', '-e', path], capture_output=True)
    return r.returncode == 0


def it_drops_to_the_user_before_any_worker_starts(t):
    if os.geteuid() != 0:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('CI runs the tests as root; this one needs it')
        raise harness.Skip('needs root')
    nobody = pwd.getpwnam('nobody')
    db = t.database()
    out = os.path.join(t.tmpdir, 'handler-out')
    os.mkdir(out)
    os.chmod(out, 0o777)
    os.chmod(t.tmpdir, 0o755)
    handler = harness.write_script(out, 'who.sh',
                                   f'cat >/dev/null; id -u > {out}/uid-$CLAIMD_ITEM_ID\n')
    c = t.claimd(db, '--workers', '2', '--handler', f'exec:{handler}', '--user', 'nobody')
    wait_for(lambda: c.status(), 15, 'the control socket answers')
    st = os.stat(c.control)
    check_eq((st.st_uid, st.st_gid), (nobody.pw_uid, nobody.pw_gid), 'the control socket owner')
    check_eq(_ids(c.pid)[:2], (nobody.pw_uid, nobody.pw_gid), 'the supervisor uid and gid')
    check('0' not in _ids(c.pid)[2], 'root group left')
    status = wait_for(c.status, 15, 'two workers and a fork server',
                      until=lambda s: s.get('fork_server_pid') and
                      sum(1 for w in s['workers'] if w['pid']) == 2)
    for pid in [status['fork_server_pid']] + [w['pid'] for w in status['workers']]:
        check_eq(_ids(pid)[:2], (nobody.pw_uid, nobody.pw_gid), f'uid and gid of {pid}')
    # A handler as nobody, where nobody can reach the test database's socket.
    sock = db.dsn.split('socket=', 1)[1]
    if _reachable_by(nobody, sock):
        item = db.insert_item('x')
        # The shell makes the file before `id` writes to it: wait for its line.
        uid = wait_for(lambda: open(f'{out}/uid-{item}').read(), 15, 'the handler ran',
                       until=lambda text: text.endswith('\n'))
        check_eq(int(uid), nobody.pw_uid, "the handler's uid")
    else:
        t.note(f'nobody cannot reach {sock}: the handler run is not checked here')
    check_eq(c.stop(), 0, 'exit code')


def it_refuses_handlers_as_root_unless_allowed(t):
    if os.geteuid() != 0:
        raise harness.Skip('needs root')
    rc, _, err, left = run_claimd(t, ['--dsn', GOOD_DSN, '--handler', 'exec:/bin/true'])
    check(rc == 2 and 'handlers would run as root' in err and '--allow-root' in err,
          f'exec: as root: {rc} {err!r}')
    check_eq(left, [], 'processes left')
    rc, _, err, _ = run_claimd(t, ['--dsn', GOOD_DSN, '--handler', 'noop', '--user', 'no-such-u'])
    check(rc != 0 and 'no-such-u' in err, f'an unknown user: {rc} {err!r}')
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'exec:/bin/true')  # the harness adds --allow-root
    check('--allow-root' in c.argv, 'the harness asks for it')
    c.wait_ready()
    check_eq(c.stop(), 0, 'exit code with --allow-root')


# A handler that reports who it runs as and what of claimd's it can reach: the token file,
# the database's password file, the control socket (paths as its arguments). As exec: (its
# stdout the row's result) and as pipe: (the result of its reply). The system's python: the
# test's own may be where another user cannot reach it.
_PROBE = """#!/usr/bin/python3
import json, os, socket, sys

def read(p):
    try:
        with open(p, 'rb') as f:
            f.read()
        return 'read'
    except OSError:
        return 'denied'

def connect(p):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(p)
        return 'connected'
    except OSError:
        return 'denied'
    finally:
        s.close()

def capeff():
    with open('/proc/self/status') as f:
        return [l.split()[1] for l in f if l.startswith('CapEff:')][0]

def report():
    token, pw, ctl = sys.argv[2:5]
    return (f'uid={os.getuid()} euid={os.geteuid()} gid={os.getgid()} token={read(token)} '
            f'pw={read(pw)} ctl={connect(ctl)} capeff={capeff()}')

if sys.argv[1] == 'exec':
    sys.stdin.buffer.read()
    print(report())
else:
    for line in sys.stdin:
        req = json.loads(line)
        if not req.get('cancel'):
            print(json.dumps({'id': req['id'], 'ok': True, 'result': report()}), flush=True)
"""


def _need_root():
    if os.geteuid() != 0:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('CI runs the tests as root; this one needs it')
        raise harness.Skip('needs root')


def _password_dsn(t, db):
    """A user of db's with a password in a 0600 file: (DSN, the file)."""
    user = f'priv{os.getpid()}'
    pwfile = os.path.join(t.tmpdir, 'db-password')
    db.server.sql(f"CREATE USER IF NOT EXISTS '{user}'@'localhost' IDENTIFIED BY 'pw-{user}'; "
                  f"GRANT ALL ON `{db.name}`.* TO '{user}'@'localhost'")
    t.defer(db.server.sql, f"DROP USER IF EXISTS '{user}'@'localhost'")
    harness.write_secret(pwfile, f'pw-{user}\n')
    dsn = db.dsn.replace('mysql://root@', f'mysql://{user}@', 1) + f'&password_file={pwfile}'
    return dsn, pwfile


def _probe_as(t, db, kind, *args):
    """One row through the probe handler (kind exec or pipe) of a claimd with args, serving
    HTTP (so that it makes a token file); returns the probe's report."""
    dsn, pwfile = _password_dsn(t, db)
    name = f'{kind}{len(args)}'
    control = os.path.join(t.tmpdir, f'{name}.sock')
    token = os.path.splitext(control)[0] + '.http-token'
    probe = harness.write_script(t.tmpdir, 'probe.py', _PROBE, lang='python')
    spec = f'{kind}:{probe} {kind} {token} {pwfile} {control}'
    env = {k: v for k, v in os.environ.items() if k != 'CLAIMD_DB_PASSWORD'}
    c = t.claimd(None, '--workers', '1', '--handler', spec, '--exec-result', '--http',
                 '127.0.0.1:0', *args, dsn=dsn, env=env, name=name)
    check_eq(c.control, control, 'the control socket where the probe looks')
    c.http_token()   # written
    c.wait_ready()
    item = db.insert_item('probe')
    state, result = wait_for(lambda: db.row(item, 'state, result'), 15,
                             f'{kind}: the probe row done', until=lambda r: r[0] != 'ready' and
                             r[0] != 'claimed')
    check_eq(state, 'done', f'{kind}: the probe row ({result!r}; {c.log_tail(3)!r})')
    # The supervisor and its workers stay root: they read the secrets, the handler may not.
    for pid in [c.pid] + [w['pid'] for w in c.status()['workers']]:
        check_eq(_ids(pid)[0], 0, f'{kind}: uid of claimd process {pid}')
    check_eq(c.stop(), 0, f'{kind}: exit code')
    return result if isinstance(result, str) else result.decode()


def it_runs_handlers_as_the_handler_user_away_from_claimds_secrets(t):
    _need_root()
    nobody = pwd.getpwnam('nobody')
    os.chmod(t.tmpdir, 0o755)   # nobody may look in: the files' own modes must keep it out
    db = t.database()
    for kind in ('exec', 'pipe'):
        got = _probe_as(t, db, kind, '--handler-user', 'nobody')
        want = (f'uid={nobody.pw_uid} euid={nobody.pw_uid} gid={nobody.pw_gid} token=denied '
                f'pw=denied ctl=denied capeff={"0" * 16}')
        check(want in got, f'{kind}: as nobody: {got!r}, want {want!r}')
        # The same handler without the option runs as claimd (root, --allow-root): it reads
        # and connects, which is what the option takes away.
        got = _probe_as(t, db, kind)
        want = 'uid=0 euid=0 gid=0 token=read pw=read ctl=connected'
        check(want in got, f'{kind}: as claimd: {got!r}, want {want!r}')


def it_runs_handlers_as_the_handler_user_from_a_user_with_capabilities(t):
    """claimd as a user of its own (nobody here) given CAP_SETUID, CAP_SETGID and CAP_KILL
    (systemd's AmbientCapabilities=), its handlers as another (daemon): they run as daemon,
    with no capability left, and cannot read nobody's files nor use its control socket."""
    _need_root()
    nobody, daemon = pwd.getpwnam('nobody'), pwd.getpwnam('daemon')
    db = t.database()
    sock = db.dsn.split('socket=', 1)[1]
    if not _reachable_by(nobody, sock):
        harness.fail(f'nobody cannot reach the test database at {sock}')
    os.chmod(t.tmpdir, 0o777)   # nobody makes its control socket here
    secret = harness.write_secret(os.path.join(t.tmpdir, 'nobody-secret'), 'x\n')
    os.chown(secret, nobody.pw_uid, nobody.pw_gid)
    caps = '+setuid,+setgid,+kill'
    wrapper = t.script(f'exec setpriv --reuid=nobody --regid=nogroup --clear-groups '
                       f'--inh-caps={caps} --ambient-caps={caps} {harness.CLAIMD_BIN} "$@"\n',
                       name='as-nobody-with-caps')
    control = os.path.join(t.tmpdir, 'caps.sock')
    token = os.path.splitext(control)[0] + '.http-token'
    probe = harness.write_script(t.tmpdir, 'probe.py', _PROBE, lang='python')
    c = t.claimd(db, '--workers', '1', '--handler', f'exec:{probe} exec {token} {secret} '
                 f'{control}', '--exec-result', '--http', '127.0.0.1:0', '--handler-user',
                 'daemon', binary=wrapper, name='caps')
    c.http_token()
    c.wait_ready()
    check_eq(_ids(c.pid)[0], nobody.pw_uid, 'claimd runs as nobody')
    item = db.insert_item('probe')
    state, result = wait_for(lambda: db.row(item, 'state, result'), 15, 'the probe row done',
                             until=lambda r: r[0] in ('done', 'dead'))
    want = (f'uid={daemon.pw_uid} euid={daemon.pw_uid} gid={daemon.pw_gid} token=denied '
            f'pw=denied ctl=denied capeff={"0" * 16}')
    check(state == 'done' and want in result, f'as daemon: {state} {result!r}, want {want!r}')
    check_eq(c.stop(), 0, 'exit code')


def it_refuses_a_handler_user_it_cannot_become(t):
    _need_root()
    db = t.database()
    base = ['--dsn', GOOD_DSN, '--handler', 'exec:/bin/true']
    cases = [
        (['--handler-user', 'no-such-user-x'], "--handler-user no-such-user-x: no user"),
        (['--handler-user', 'nobody', '--user', 'nobody'], 'gives up root'),
        (['--handler-user', 'root'], 'the user claimd runs as'),
        (['--handler-user', 'nobody', '--control-group', 'nogroup'],
         'could use the control socket'),
    ]
    for args, says in cases:
        rc, _, err, left = run_claimd(t, base + args)
        check(rc == 2 and says in err, f'{args}: {rc} {err!r}')
        check_eq(left, [], f'{args}: processes left')
    plugin = os.path.join(harness.PLUGIN_DIR, 'claimd_test_ok.so')
    rc, _, err, _ = run_claimd(t, ['--dsn', GOOD_DSN, '--handler', f'so:{plugin} /dev/null',
                                   '--handler-user', 'nobody'])
    check(rc == 2 and 'runs inside the worker' in err, f'so: with --handler-user: {rc} {err!r}')
    # Not root, without the capabilities: it cannot start processes as another user.
    os.chmod(t.tmpdir, 0o777)
    r = subprocess.run(['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups',
                        harness.CLAIMD_BIN, '--control', os.path.join(t.tmpdir, 'n.sock'),
                        *base, '--handler-user', 'daemon'],
                       capture_output=True, text=True, timeout=20)
    check(r.returncode == 2 and 'without CAP_SETUID, CAP_SETGID and CAP_KILL' in r.stderr,
          f'as nobody: {r.returncode} {r.stderr!r}')
    # A reload that asks for a so: plugin beside --handler-user: refused, the running stay.
    os.chmod(t.tmpdir, 0o755)
    conf = os.path.join(t.tmpdir, 'c.conf')
    with open(conf, 'w') as f:
        f.write('handler = exec:/bin/true\nhandler-user = nobody\n')
    c = t.claimd(db, '--workers', '1', '--config', conf)
    c.wait_ready()
    with open(conf, 'w') as f:
        f.write(f'handler = so:{plugin} /dev/null\nhandler-user = nobody\n')
    r = c.ctl('reload')
    check(r.returncode != 0 and 'runs inside the worker' in r.stderr,
          f'a reload to so: with --handler-user: {r.returncode} {r.stdout!r} {r.stderr!r}')
    check_eq(c.stop(), 0, 'exit code')


if __name__ == '__main__':
    harness.main()
