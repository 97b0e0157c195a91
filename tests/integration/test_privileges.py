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


if __name__ == '__main__':
    harness.main()
