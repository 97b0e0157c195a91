#!/usr/bin/env python3
"""Secret files (the DSN's password_file, --http-token-file, --http-read-token-file,
--http-tls-key) are taken only when they are regular files of their owner's alone: one that
group or others may access is refused at the start and at a reload, with an error naming
the file, its mode and the fix."""

import os
import stat

import harness
from harness import check, check_eq, wait_for

TOKEN = 'secrets-test-token-0123456789'


def _user_dsn(t, db, pwfile):
    """A user of db's with a password, and a DSN with it in pwfile."""
    user = f'sec{os.getpid()}'
    db.server.sql(f"CREATE USER IF NOT EXISTS '{user}'@'localhost' IDENTIFIED BY 'pw-{user}'; "
                  f"GRANT ALL ON `{db.name}`.* TO '{user}'@'localhost'")
    t.defer(db.server.sql, f"DROP USER IF EXISTS '{user}'@'localhost'")
    harness.write_secret(pwfile, f'pw-{user}\n')
    return db.dsn.replace('mysql://root@', f'mysql://{user}@', 1) + f'&password_file={pwfile}'


def _env():
    return {k: v for k, v in os.environ.items() if k != 'CLAIMD_DB_PASSWORD'}


def _refused(c, what, path, mode):
    code = c.wait_exit(10)
    log = c.log()
    check(code != 0 and what in log and path in log and f'(mode {mode:04o})' in log and
          f'chmod 600 {path}' in log,
          f'{what} of mode {mode:04o} refused with the file, its mode and the fix: exit '
          f'{code}, {c.log_tail(3)!r}')


def it_refuses_secret_files_group_or_others_can_read_at_start(t):
    db = t.database()
    pwfile = os.path.join(t.tmpdir, 'db-password')
    dsn = _user_dsn(t, db, pwfile)
    os.chmod(pwfile, 0o644)
    c = t.claimd(None, '--handler', 'noop', dsn=dsn, env=_env(), name='pw644')
    _refused(c, 'password_file', pwfile, 0o644)
    os.chmod(pwfile, 0o640)
    c = t.claimd(None, '--handler', 'noop', dsn=dsn, env=_env(), name='pw640')
    _refused(c, 'password_file', pwfile, 0o640)
    os.chmod(pwfile, 0o600)
    token = harness.write_secret(os.path.join(t.tmpdir, 'token'), TOKEN + '\n')
    for opt in ('--http-token-file', '--http-read-token-file'):
        args = ['--http-token-file', token] if opt != '--http-token-file' else []
        other = harness.write_secret(os.path.join(t.tmpdir, f'other{opt}'),
                                     TOKEN[::-1] + '\n')
        os.chmod(other, 0o604)
        c = t.claimd(None, '--handler', 'noop', '--http', '127.0.0.1:0', *args, opt, other,
                     dsn=dsn, env=_env(), name=f'token{opt}')
        _refused(c, opt, other, 0o604)
    # Not a regular file: a FIFO (which must not hang the start either).
    fifo = os.path.join(t.tmpdir, 'fifo')
    os.mkfifo(fifo, 0o600)
    c = t.claimd(None, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-token-file', fifo,
                 dsn=dsn, env=_env(), name='fifo')
    check(c.wait_exit(10) != 0 and 'not a regular file' in c.log() and fifo in c.log(),
          f'a FIFO refused: {c.log_tail(3)!r}')
    # 0600 (and 0400): it starts, and uses them.
    os.chmod(token, 0o400)
    c = t.claimd(None, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-token-file', token,
                 dsn=dsn, env=_env(), name='fine')
    c.wait_ready()
    item = db.insert_item('x')
    wait_for(lambda: db.row(item, 'state')[0], 15, 'the row done', until=lambda s: s == 'done')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_refuses_a_reload_while_a_secret_file_is_open_to_others(t):
    db = t.database()
    pwfile = os.path.join(t.tmpdir, 'db-password')
    dsn = _user_dsn(t, db, pwfile)
    token = harness.write_secret(os.path.join(t.tmpdir, 'token'), TOKEN + '\n')
    c = t.claimd(None, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0',
                 '--http-token-file', token, dsn=dsn, env=_env())
    c.wait_ready()
    for path, what in ((token, '--http-token-file'), (pwfile, 'password_file')):
        os.chmod(path, 0o644)
        r = c.ctl('reload')
        out = r.stdout + r.stderr
        check(r.returncode != 0 and 'not reloaded' in out and what in out and path in out and
              '(mode 0644)' in out and f'chmod 600 {path}' in out,
              f'reload with {what} mode 0644: {r.returncode} {out!r}')
        check(f'chmod 600 {path}' in c.log(), f'the refusal logged: {c.log_tail(3)!r}')
        os.chmod(path, 0o600)
        r = c.ctl('reload')
        check(r.returncode == 0 and 'reloaded' in r.stdout, f'reload once fixed: {r.stdout!r}')
    check_eq(stat.S_IMODE(os.stat(token).st_mode), 0o600, 'the file left as it was')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
