#!/usr/bin/env python3
"""The control socket. Who may use it: claimd's user, root and the members of --control-group
(the socket is then 0660 with that group, else 0600); claimd itself checks each connection's
credentials whatever the file's mode lets through, and refuses anyone else with the reason,
doing nothing, and logs it. Where it is when no setting says: /run/claimd/claimd.sock where
claimd may write, else $XDG_RUNTIME_DIR/claimd.sock, never in a directory others may write in
(with no such place claimd exits 2 naming --control); claimctl looks in the same order, after
$CLAIMD_CONTROL and the control key of the config file (--config, $CLAIMD_CONFIG, else the
installed claimd.conf).

Needs root (CI runs the tests as root): it makes users and a group (deleted after), runs
claimctl as them (setpriv), and runs claimd and claimctl in a mount namespace with a /run and
a config directory of its own, so that nothing of the host's is read or changed."""

import functools
import grp
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile

import harness
from harness import CLAIMCTL_BIN, CLAIMD_BIN, check, check_eq, wait_for


def need_root():
    if os.geteuid() != 0:
        raise harness.Skip('needs root: it makes users and a group, and a mount namespace')


_made = 0


class Users:
    """System users and groups made for one test (useradd, groupadd), deleted after it."""

    def __init__(self, t):
        global _made
        _made += 1
        self.t = t
        self.prefix = f'cdt{os.getpid()}{_made}'

    def _remove_later(self, *argv):
        self.t.defer(functools.partial(subprocess.run, list(argv), capture_output=True))

    def group(self, suffix):
        name = self.prefix + suffix
        subprocess.run(['groupadd', '--system', name], check=True, capture_output=True)
        self._remove_later('groupdel', name)
        return name

    def user(self, suffix, groups=()):
        """A user with a group of its own (its primary), and these supplementary ones."""
        name = self.prefix + suffix
        argv = ['useradd', '--system', '--user-group', '--no-create-home', '--home-dir',
                '/nonexistent', '--shell', '/usr/sbin/nologin']
        if groups:
            argv += ['--groups', ','.join(groups)]
        subprocess.run(argv + [name], check=True, capture_output=True)
        self._remove_later('groupdel', name)
        self._remove_later('userdel', name)
        return pwd.getpwnam(name)


def claimctl_for_all(t):
    """This build's claimctl where any user may run it (the checkout may be in a private
    home), in t.tmpdir made searchable for all."""
    os.chmod(t.tmpdir, 0o755)
    path = os.path.join(t.tmpdir, 'claimctl')
    if not os.path.exists(path):
        shutil.copy(CLAIMCTL_BIN, path)
        os.chmod(path, 0o755)
    return path


def user_argv(pw, argv, gid=None, init_groups=True):
    """argv run as pw's uid with its gid (or gid) and its groups (or none)."""
    return ['setpriv', f'--reuid={pw.pw_uid}', f'--regid={pw.pw_gid if gid is None else gid}',
            '--init-groups' if init_groups else '--clear-groups', '--', *argv]


def as_user(pw, argv, gid=None, init_groups=True, env=None, timeout=10):
    return subprocess.run(user_argv(pw, argv, gid, init_groups), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, env=env, timeout=timeout)


def clean_env(**extra):
    """The environment without the settings that would name a socket or a config file."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('CLAIMD_CONTROL', 'CLAIMD_CONFIG', 'CLAIMD_CONTROL_GROUP',
                        'XDG_RUNTIME_DIR')}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def default_config_file():
    """The config file claimctl reads when none is named (its --help says which)."""
    r = subprocess.run([CLAIMCTL_BIN, '--help'], capture_output=True, text=True)
    m = re.search(r'else (/\S+/claimd/claimd\.conf) when', r.stdout.replace('\n', ' '))
    check(m, f'claimctl --help names its default config file: {r.stdout!r}')
    return m.group(1)


class MountNamespace:
    """A mount namespace with an empty /run of its own and an overlay on the directory of
    claimctl's default config file (what is written there stays in the namespace), held by a
    process that sleeps in it; argv() runs a command inside it."""

    def __init__(self, t):
        self.conf = default_config_file()
        sysconf = os.path.dirname(self.conf)
        while not os.path.isdir(sysconf):      # the nearest directory there is, to cover
            sysconf = os.path.dirname(sysconf)
        base = tempfile.mkdtemp(prefix='claimd-ns-')
        t.defer(shutil.rmtree, base, True)
        self.run = os.path.join(base, 'run')
        # The overlay's upper layer on a tmpfs of the namespace's own: /tmp itself may be on
        # overlayfs (a container), which cannot be an upper layer.
        ovl = os.path.join(base, 'overlay')
        upper, work = os.path.join(ovl, 'upper'), os.path.join(ovl, 'work')
        for d in (self.run, ovl):
            os.mkdir(d)
        os.chmod(self.run, 0o755)
        script = (f'mount -t tmpfs tmpfs {ovl} && mkdir {upper} {work} && '
                  f'mount --bind {self.run} /run && mount -t overlay overlay -o '
                  f'lowerdir={sysconf},upperdir={upper},workdir={work} {sysconf} && '
                  'echo ready && exec sleep 86400')
        self.proc = subprocess.Popen(['unshare', '--mount', '--propagation', 'private', 'sh',
                                      '-c', script], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        t.defer(self.close)
        line = self.proc.stdout.readline()
        if line != b'ready\n':
            self.proc.wait(10)
            harness.fail(f'making a mount namespace failed: {self.proc.stderr.read()!r}')

    def argv(self, *cmd):
        return ['nsenter', f'--target={self.proc.pid}', '--mount', '--', *cmd]

    def write(self, path, text):
        """Write a file inside the namespace (its directories made)."""
        r = subprocess.run(self.argv('sh', '-c', 'mkdir -p "$(dirname "$1")" && cat > "$1"',
                                     'sh', path), input=text, text=True, capture_output=True)
        check_eq(r.returncode, 0, f'writing {path} in the namespace: {r.stderr}')

    def close(self):
        harness.kill_quietly(self.proc.pid)
        self.proc.wait(10)


class Started:
    """claimd started without --control (harness.Claimd always gives one), in its own
    session, its output in a log file."""

    def __init__(self, t, argv, env, name):
        self.log_path = os.path.join(t.tmpdir, name + '.log')
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, env=env, start_new_session=True)
        t.defer(self.kill)

    def log(self):
        with open(self.log_path, encoding='utf-8', errors='replace') as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(15)

    def kill(self):
        for pid in harness.pids_where(lambda st: st['session'] == self.proc.pid):
            harness.kill_quietly(pid)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


def it_lets_its_user_root_and_group_members_in_and_refuses_others(t):
    need_root()
    users = Users(t)
    ops = users.group('g')
    owner = users.user('a')              # claimd runs as it
    member = users.user('b', [ops])      # an operator: in the group (a supplementary one)
    other = users.user('c')
    ctl = claimctl_for_all(t)
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--user', owner.pw_name,
                 '--control-group', ops)
    wait_for(c.status, 15, 'the control socket answers root')
    st = os.stat(c.control)
    check_eq((st.st_uid, st.st_gid, st.st_mode & 0o777),
             (owner.pw_uid, grp.getgrnam(ops).gr_gid, 0o660), 'the socket: owner, group, mode')

    def ask(pw, *args, **kw):
        return as_user(pw, [ctl, '--control', c.control, *args], **kw)

    r = ask(owner, 'status', '--json')
    check_eq((r.returncode, r.stderr), (0, ''), "claimd's own user")
    r = ask(member, 'status', '--json')
    check_eq((r.returncode, r.stderr), (0, ''), 'a member of the control group')
    r = ask(other, 'status')
    check(r.returncode == 3 and 'Permission denied' in r.stderr,
          f'another user, kept out by the mode: {r.returncode} {r.stderr!r}')
    r = ask(other, 'status', gid=grp.getgrnam(ops).gr_gid, init_groups=False)
    check_eq((r.returncode, r.stderr), (0, ''), 'another user whose gid is the control group')

    # The mode let through (as a careless chmod would): claimd's own check keeps them out.
    os.chmod(c.control, 0o666)
    r = ask(other, 'pause', 'held')
    check(r.returncode == 1 and 'permission denied' in r.stderr and
          f'uid {other.pw_uid}' in r.stderr and f'member of group {ops}' in r.stderr,
          f'another user, past the mode: {r.returncode} {r.stderr!r}')
    check_eq(db.sql("SELECT COUNT(*) FROM queues WHERE name = 'held'"), [('0',)],
             'queues paused by the refused request')
    wait_for(c.log, 5, 'the refusal logged', until=lambda text: re.search(
        rf'warn: control socket: refused a connection: uid {other.pw_uid} .*closed it', text))
    r = ask(member, 'pause', 'held')
    check_eq((r.returncode, r.stderr), (0, ''), 'a member pauses a queue')
    check_eq(db.sql("SELECT paused FROM queues WHERE name = 'held'"), [('1',)],
             'the queue the member paused')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_keeps_the_socket_to_its_user_without_a_control_group(t):
    need_root()
    other = Users(t).user('d')
    ctl = claimctl_for_all(t)
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    check_eq(os.stat(c.control).st_mode & 0o777, 0o600, 'the socket mode')
    os.chmod(c.control, 0o666)
    r = as_user(other, [ctl, '--control', c.control, 'status'])
    check(r.returncode == 1 and f'uid {other.pw_uid}' in r.stderr and
          'no --control-group' in r.stderr, f'another user: {r.returncode} {r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


def _in_ns(ns, *argv, env=None):
    return subprocess.run(ns.argv(*argv), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=env, timeout=30)


def _private_dir(t, name, mode=0o700):
    path = os.path.join(t.tmpdir, name)
    os.mkdir(path)
    os.chmod(path, mode)
    return path


def it_listens_and_is_found_where_no_setting_says(t):
    need_root()
    ns = MountNamespace(t)
    db = t.database()
    xdg = _private_dir(t, 'xdg')
    elsewhere = _private_dir(t, 'elsewhere')
    run_dir = os.path.join(ns.run, 'claimd')        # /run/claimd inside
    base = ['--dsn', db.dsn, '--workers', '1', '--handler', 'noop']

    # No /run/claimd: the user's runtime directory, for claimd and for claimctl.
    env = clean_env(XDG_RUNTIME_DIR=xdg)
    c = Started(t, ns.argv(CLAIMD_BIN, *base), env, 'xdg')
    wait_for(lambda: _in_ns(ns, CLAIMCTL_BIN, 'status', '--json', env=env), 15,
             'claimctl finds it in $XDG_RUNTIME_DIR', until=lambda r: r.returncode == 0)
    check(os.path.exists(os.path.join(xdg, 'claimd.sock')), 'the socket in $XDG_RUNTIME_DIR')
    check(f'control socket {xdg}/claimd.sock' in c.log(), 'its start line names the socket')
    r = _in_ns(ns, CLAIMCTL_BIN, 'status', env=clean_env())
    check(r.returncode == 3 and '/run/claimd/claimd.sock' in r.stderr,
          f'claimctl with no runtime directory looks at /run/claimd: {r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')

    # /run/claimd (as systemd makes it): first, for both; the runtime directory unused.
    os.mkdir(run_dir)
    os.chmod(run_dir, 0o750)
    c = Started(t, ns.argv(CLAIMD_BIN, *base), env, 'run')
    env2 = clean_env(XDG_RUNTIME_DIR=elsewhere)
    wait_for(lambda: _in_ns(ns, CLAIMCTL_BIN, 'status', '--json', env=env2), 15,
             'claimctl finds it in /run/claimd', until=lambda r: r.returncode == 0)
    check(os.path.exists(os.path.join(run_dir, 'claimd.sock')), 'the socket in /run/claimd')
    check(not os.path.exists(os.path.join(xdg, 'claimd.sock')), 'none in $XDG_RUNTIME_DIR')
    check_eq(c.stop(), 0, 'claimd exit code')
    check(not os.path.exists(os.path.join(run_dir, 'claimd.sock')), 'the socket gone at stop')
    os.rmdir(run_dir)

    # Nowhere private: no socket in /tmp or any directory others may write in; exit 2.
    shared = _private_dir(t, 'shared', 0o777)
    for why, xdg_dir in (('no runtime directory', None), ('/tmp', '/tmp'),
                         ('a directory anyone may write in', shared)):
        p = subprocess.Popen(ns.argv(CLAIMD_BIN, *base), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, env=clean_env(XDG_RUNTIME_DIR=xdg_dir))
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            for pid in harness.pids_where(lambda st: st['session'] == p.pid):
                harness.kill_quietly(pid)
            p.communicate()
            harness.fail(f'{why}: claimd started instead of exiting 2')
        r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(lines) == 1 and '--control' in lines[0],
              f'{why}: exit {r.returncode}, {r.stderr!r}')
        check(not os.path.exists(os.path.join(xdg_dir or '/nonexistent', 'claimd.sock')),
              f'{why}: a socket was made there')


def it_claimctl_takes_the_socket_from_the_config_file(t):
    need_root()
    ns = MountNamespace(t)
    db = t.database()
    sock = os.path.join(t.tmpdir, 'from-file.sock')
    conf = os.path.join(t.tmpdir, 'claimd.conf')
    with open(conf, 'w') as f:
        f.write(f'[claimd]\nworkers = 1\ncontrol = {sock}\n')
    env = clean_env(XDG_RUNTIME_DIR=_private_dir(t, 'xdg'))
    c = Started(t, ns.argv(CLAIMD_BIN, '--config', conf, '--dsn', db.dsn, '--handler', 'noop'),
                env, 'conf')
    wait_for(lambda: _in_ns(ns, CLAIMCTL_BIN, '--config', conf, 'status', env=env), 15,
             'claimctl --config finds it', until=lambda r: r.returncode == 0)
    check(os.path.exists(sock), 'claimd listens where the file says')
    r = _in_ns(ns, CLAIMCTL_BIN, 'status', env=dict(env, CLAIMD_CONFIG=conf))
    check_eq((r.returncode, r.stderr), (0, ''), 'claimctl with $CLAIMD_CONFIG')
    r = _in_ns(ns, CLAIMCTL_BIN, 'status', env=env)
    check(r.returncode == 3, f'no config file installed, the socket not found: {r.stderr!r}')
    ns.write(ns.conf, f'# the installed one\n[claimd]\ndsn = mysql://x@y/z\ncontrol = {sock}\n')
    r = _in_ns(ns, CLAIMCTL_BIN, 'status', env=env)
    check_eq((r.returncode, r.stderr), (0, ''), f'claimctl with {ns.conf} installed')
    bogus = os.path.join(t.tmpdir, 'bogus.sock')
    r = _in_ns(ns, CLAIMCTL_BIN, 'status', env=dict(env, CLAIMD_CONTROL=bogus))
    check(r.returncode == 3 and bogus in r.stderr and 'CLAIMD_CONTROL' in r.stderr,
          f'$CLAIMD_CONTROL comes before the file: {r.returncode} {r.stderr!r}')
    missing = os.path.join(t.tmpdir, 'missing.conf')
    r = _in_ns(ns, CLAIMCTL_BIN, '--config', missing, 'status', env=env)
    check(r.returncode == 2 and missing in r.stderr, f'a missing --config: {r.stderr!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
