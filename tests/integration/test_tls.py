#!/usr/bin/env python3
"""TLS to the database: a MariaDB started with a certificate this test makes (openssl),
reached over TCP by a user that must use TLS; claimd connects with ssl-mode=VERIFY_CA and
VERIFY_IDENTITY and works; a CA that did not sign the server's certificate, and with
VERIFY_IDENTITY a certificate that names another host, are refused at start with a clear error
and exit 2; the DSN's TLS parameters are checked. And a password in the DSN's option file."""

import os
import socket
import subprocess

import harness
from harness import check, check_eq, wait_for
from test_cli import run_claimd


def _openssl(*args, cwd):
    subprocess.run(['openssl', *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(d):
    _openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca-key.pem', '-out',
             'ca.pem', '-days', '2', '-subj', '/CN=claimd test CA', cwd=d)
    _openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server-key.pem', '-out',
             'server.csr', '-subj', '/CN=localhost', cwd=d)
    with open(os.path.join(d, 'ext.cnf'), 'w') as f:
        f.write('subjectAltName=DNS:localhost,IP:127.0.0.1\n')
    _openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem',
             '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf', cwd=d)
    _openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other-key.pem',
             '-out', 'other-ca.pem', '-days', '2', '-subj', '/CN=another CA', cwd=d)
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def it_connects_over_verified_tls_and_refuses_a_wrong_ca(t):
    if not harness.shutil.which('openssl'):
        harness.fail('openssl is not installed')
    d = os.path.join(t.tmpdir, 'tls')
    os.mkdir(d)
    os.chmod(t.tmpdir, 0o755)
    os.chmod(d, 0o755)
    _certificates(d)
    port = _free_port()
    # 127.0.0.2 as well: the same server at an address its certificate does not name.
    server = t.private_server(env={
        'CLAIMD_DB_PORT': str(port), 'CLAIMD_DB_BIND': '127.0.0.1,127.0.0.2',
        'CLAIMD_DB_EXTRA': f'ssl-ca={d}/ca.pem\nssl-cert={d}/server.pem\n'
                           f'ssl-key={d}/server-key.pem'})
    server.sql("CREATE USER app@'%' IDENTIFIED BY 'tls-test-password' REQUIRE SSL;"
               "GRANT ALL ON claimd.* TO app@'%'")
    pwfile = os.path.join(t.tmpdir, 'db-password')
    harness.write_secret(pwfile, 'tls-test-password\n')
    base = f'mysql://app@127.0.0.1:{port}/claimd?password_file={pwfile}'
    env = {k: v for k, v in os.environ.items() if k != 'CLAIMD_DB_PASSWORD'}
    for mode in ('VERIFY_CA', 'VERIFY_IDENTITY'):
        dsn = f'{base}&ssl-mode={mode}&ssl-ca={d}/ca.pem'
        c = t.claimd(None, '--workers', '2', '--handler', 'noop', dsn=dsn, env=env, name=mode)
        c.wait_ready()
        server.sql("INSERT INTO work_items (payload) VALUES ('over tls')", db='claimd')
        wait_for(lambda: server.sql("SELECT COUNT(*) FROM work_items WHERE state = 'done'",
                                    db='claimd')[0][0], 15, f'{mode}: the row done',
                 until=lambda n: int(n) >= 1)
        check_eq(c.stop(), 0, f'{mode}: exit code')
        server.sql('DELETE FROM work_items', db='claimd')
    # --doctor says the connection is encrypted, and with which cipher.
    r = subprocess.run([harness.CLAIMD_BIN, '--doctor', '--dsn', dsn, '--control',
                        os.path.join(t.tmpdir, 'none.sock')], capture_output=True, text=True,
                       env=env, timeout=60)
    check('ok   connected to the database over TLS (' in r.stdout, f'doctor: {r.stdout!r}')
    # The server's certificate is not signed by this CA: refused at start, exit 2.
    rc, _, err, left = run_claimd(t, ['--dsn', f'{base}&ssl-mode=VERIFY_CA&ssl-ca={d}/other-ca.pem',
                                      '--handler', 'noop'], env_extra={})
    check(rc == 2 and 'refused the connection' in err and ('certificate' in err or 'TLS' in err),
          f'a wrong CA: {rc} {err!r}')
    check_eq(left, [], 'processes left')
    # VERIFY_IDENTITY at an address the certificate does not name (127.0.0.2; it names
    # localhost and 127.0.0.1): refused at start, exit 2, though the CA signed it (VERIFY_CA
    # there connects).
    other = f'mysql://app@127.0.0.2:{port}/claimd?password_file={pwfile}&ssl-ca={d}/ca.pem'
    rc, _, err, left = run_claimd(t, ['--dsn', f'{other}&ssl-mode=VERIFY_IDENTITY',
                                      '--handler', 'noop'], env_extra={})
    t.note(f'VERIFY_IDENTITY at 127.0.0.2: {err.strip()}')
    check(rc == 2 and 'refused the connection' in err and 'certificate' in err and
          "name the host '127.0.0.2'" in err, f'a certificate naming another host: {rc} {err!r}')
    check_eq(left, [], 'processes left')
    r = subprocess.run([harness.CLAIMD_BIN, '--doctor', '--dsn', f'{other}&ssl-mode=VERIFY_CA',
                        '--control', os.path.join(t.tmpdir, 'none.sock')], capture_output=True,
                       text=True, env=env, timeout=60)
    check('over TLS (' in r.stdout, f'VERIFY_CA at 127.0.0.2 connects: {r.stdout!r}')
    # Without TLS the user is refused (REQUIRE SSL): the test's server really needs it.
    rc, _, err, _ = run_claimd(t, ['--dsn', f'{base}&ssl-mode=DISABLED', '--handler', 'noop'])
    check(rc == 2 and 'Access denied' in err, f'without TLS: {rc} {err!r}')
    # The DSN's checks.
    for q, words in [('ssl-mode=VERIFY_CA', 'needs ssl-ca'), ('ssl-mode=SOMETIMES', 'is not DISABLED'),
                     (f'ssl-cert={d}/server.pem', 'go together')]:
        rc, _, err, _ = run_claimd(t, ['--dsn', f'{base}&{q}', '--handler', 'noop'])
        check(rc == 2 and words in err, f'{q}: {rc} {err!r}')


def it_takes_the_password_from_the_dsn_option_file(t):
    """A password only in the MySQL option file the DSN names ([client] password=...): claimd
    connects with it (with no CLAIMD_DB_PASSWORD nor password_file, the client library's own)."""
    db = t.database()
    user = f'optfile_{os.getpid()}'
    db.server.sql(f"CREATE USER IF NOT EXISTS {user}@localhost IDENTIFIED BY 'opt-file-pw';"
                  f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{db.name}`.* TO {user}@localhost")
    t.defer(db.server.sql, f'DROP USER IF EXISTS {user}@localhost')
    opt = os.path.join(t.tmpdir, 'client.cnf')
    with open(opt, 'w') as f:
        f.write('[client]\npassword=opt-file-pw\n')
    base = f'mysql://{user}@localhost/{db.name}?socket={db.server.socket}'
    env = {k: v for k, v in os.environ.items() if k != 'CLAIMD_DB_PASSWORD'}
    # The user needs its password: without the option file it is refused.
    rc, _, err, _ = run_claimd(t, ['--dsn', base, '--handler', 'noop'])
    check(rc == 2 and 'Access denied' in err, f'without the option file: {rc} {err!r}')
    c = t.claimd(None, '--workers', '1', '--handler', 'noop', dsn=f'{base}&option-file={opt}',
                 env=env)
    c.wait_ready()
    item = db.insert_item('by the option file')
    wait_for(lambda: db.row(item, 'state')[0], 15, 'the row done', until=lambda s: s == 'done')
    check_eq(c.stop(), 0, 'claimd exit code')
    r = subprocess.run([harness.CLAIMD_BIN, '--doctor', '--dsn', f'{base}&option-file={opt}',
                        '--control', os.path.join(t.tmpdir, 'none.sock')], capture_output=True,
                       text=True, env=env, timeout=60)
    check(r.returncode == 0 and 'connected to the database' in r.stdout and '0 problems' in r.stdout,
          f'--doctor: {r.stdout!r}')


if __name__ == '__main__':
    harness.main()
