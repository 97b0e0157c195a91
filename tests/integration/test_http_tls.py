#!/usr/bin/env python3
"""HTTPS (--http-tls-cert, --http-tls-key) with a certificate the test makes with openssl (a
CA of its own and a server certificate it signs): a client that trusts only that CA verifies
claimd; a reload (claimctl reload, as SIGHUP) with a new certificate is seen by a new
connection while one opened before goes on with the old; a certificate that does not load is
refused at start (exit 1, the reason) and at a reload (the one in use stays). A non-loopback
address needs HTTPS or --http-insecure-cleartext."""

import hashlib
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess

import harness
from harness import check, check_eq, wait_for


def _openssl(*args, cwd):
    r = subprocess.run(['openssl', *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f'openssl {" ".join(args)}: {r.stderr.strip()}')


class Pki:
    """A CA and the server certificates it signs, in dir."""

    def __init__(self, dir):
        if not shutil.which('openssl'):
            harness.fail('openssl is not installed')   # as in test_tls: CI has it
        self.dir = dir
        self.ca = os.path.join(dir, 'ca.pem')
        _openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
                 '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj',
                 '/CN=claimd test CA', cwd=dir)
        with open(os.path.join(dir, 'ext'), 'w') as f:
            f.write('subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n'
                    'extendedKeyUsage=serverAuth\n')

    def server(self, name):
        """A new key and a certificate for 127.0.0.1 and localhost: (cert path, key path)."""
        _openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
                 '-keyout', f'{name}.key', '-out', f'{name}.csr', '-subj', f'/CN={name}',
                 cwd=self.dir)
        _openssl('x509', '-req', '-in', f'{name}.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key',
                 '-CAcreateserial', '-out', f'{name}.pem', '-days', '2', '-extfile', 'ext',
                 cwd=self.dir)
        return os.path.join(self.dir, f'{name}.pem'), os.path.join(self.dir, f'{name}.key')


def _der_sha(pem_path):
    with open(pem_path) as f:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()


def _install(src, dst):
    """Put src in dst's place at once (as a certificate renewal does)."""
    shutil.copy(src, dst + '.new')
    os.replace(dst + '.new', dst)


class Client:
    """An HTTPS connection (kept open) that trusts only the test's CA."""

    def __init__(self, port, ca, token):
        self.ctx = ssl.create_default_context(cafile=ca)
        self.conn = http.client.HTTPSConnection('127.0.0.1', port, context=self.ctx, timeout=10)
        self.token = token

    def get(self, path, token=True):
        self.conn.request('GET', path, headers={'Authorization': f'Bearer {self.token}'}
                          if token else {})
        r = self.conn.getresponse()
        return r.status, r.read()

    def cert_sha(self):
        return hashlib.sha256(self.conn.sock.getpeercert(binary_form=True)).hexdigest()

    def close(self):
        self.conn.close()


def _https_claimd(t, db, cert, key, *args, address='127.0.0.1:0', name=None):
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', address,
                 '--http-tls-cert', cert, '--http-tls-key', key, *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on https://[0-9.]+:(\d+)/', c.log()), 10,
                 f'{c.name}: the https line')
    c.port = int(m.group(1))
    return c


def it_serves_https_and_reloads_its_certificate(t):
    pki = Pki(t.tmpdir)
    a_cert, a_key = pki.server('a')
    b_cert, b_key = pki.server('b')
    cert, key = os.path.join(t.tmpdir, 'cert.pem'), os.path.join(t.tmpdir, 'key.pem')
    _install(a_cert, cert)
    _install(a_key, key)
    db = t.database()
    c = _https_claimd(t, db, cert, key)
    token = c.http_token()
    c.wait_ready()
    first = Client(c.port, pki.ca, token)
    check_eq(first.get('/healthz', token=False)[0], 200, '/healthz over HTTPS')
    check_eq(first.get('/v1/status')[0], 200, 'the API over HTTPS, with the token')
    check_eq(first.cert_sha(), _der_sha(a_cert), 'the certificate served')
    other = Client(c.port, pki.ca, token)
    check_eq(other.get('/v1/status', token=False)[0], 401, 'the API over HTTPS, without')
    other.close()
    # A client that does not trust the CA is refused by its own check; plain HTTP gets no
    # HTTP answer.
    try:
        http.client.HTTPSConnection('127.0.0.1', c.port, timeout=10,
                                    context=ssl.create_default_context()).request('GET', '/healthz')
        harness.fail('a client without the CA verified claimd')
    except ssl.SSLCertVerificationError:
        pass
    s = socket.create_connection(('127.0.0.1', c.port), timeout=10)
    s.sendall(b'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    try:
        plain = s.recv(100)
    except (ConnectionResetError, socket.timeout):
        plain = b''
    s.close()
    check(not plain.startswith(b'HTTP/'), f'plain HTTP on the HTTPS port: {plain!r}')
    # A new certificate in the same files, and a reload: new connections get it; the one open
    # since before goes on, on the old.
    _install(b_cert, cert)
    _install(b_key, key)
    r = c.ctl('reload')
    check(r.returncode == 0 and 'stays' not in r.stdout, f'claimctl reload: {r.stdout!r} {r.stderr!r}')
    second = Client(c.port, pki.ca, token)
    check_eq(second.get('/v1/status')[0], 200, 'a new connection after the reload')
    check_eq(second.cert_sha(), _der_sha(b_cert), 'the certificate a new connection gets')
    check_eq(first.get('/v1/queues')[0], 200, 'the connection open since before the reload')
    check_eq(first.cert_sha(), _der_sha(a_cert), 'its certificate')
    first.close()
    # A certificate its key does not go with, a key that is not there: the reload says so,
    # the one in use stays, and nothing is left open by the attempts.
    fds = lambda: sorted(os.listdir(f'/proc/{c.pid}/fd'))
    wait_for(lambda: 'the listener from before the reload stopped: its connections ended' in
             c.log(), 10, 'the old listener stopped once its connection closed')
    before = fds()
    _install(a_cert, cert)
    for _ in range(2):
        r = c.ctl('reload')
        check(r.returncode == 0 and 'the HTTPS certificate in use stays' in r.stdout,
              f'claimctl reload with a certificate of another key: {r.stdout!r} {r.stderr!r}')
    os.rename(key, key + '.away')
    r = c.ctl('reload')
    check(r.returncode == 0 and '--http-tls-key' in r.stdout and 'stays' in r.stdout,
          f'claimctl reload without the key: {r.stdout!r} {r.stderr!r}')
    os.rename(key + '.away', key)
    wait_for(fds, 5, 'the descriptors as before three reloads that failed',
             until=lambda v: v == before)
    third = Client(c.port, pki.ca, token)
    check_eq((third.get('/healthz', token=False)[0], third.cert_sha()), (200, _der_sha(b_cert)),
             'a new connection after the refused reload')
    third.close()
    # SIGHUP does the same as claimctl reload.
    _install(a_key, key)
    c.send(1)   # SIGHUP
    wait_for(lambda: c.log().count('the certificate and key were read again'), 10,
             'the SIGHUP reload', until=lambda n: n == 2)
    fourth = Client(c.port, pki.ca, token)
    check_eq((fourth.get('/healthz', token=False)[0], fourth.cert_sha()), (200, _der_sha(a_cert)),
             'a new connection after SIGHUP')
    fourth.close()
    second.close()
    check_eq(c.stop(), 0, 'claimd exit code')


def it_keeps_its_certificate_when_a_reload_reads_no_certificate(t):
    pki = Pki(t.tmpdir)
    a_cert, a_key = pki.server('a')
    cert = os.path.join(t.tmpdir, 'cert.pem')
    _install(a_cert, cert)
    # GnuTLS 3.7.9 leaks what it parsed of a PEM certificate whose content is no certificate
    # (two gnutls_x509_crt_init allocations, 336 bytes): a sanitized build is told so, for
    # that function only.
    supp = os.path.join(t.tmpdir, 'lsan.supp')
    with open(supp, 'w') as f:
        f.write('leak:gnutls_x509_crt_init\n')
    env = dict(os.environ, LSAN_OPTIONS=f'suppressions={supp}')
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0',
                 '--http-tls-cert', cert, '--http-tls-key', a_key, env=env)
    port = int(wait_for(lambda: re.search(r'listening on https://[0-9.]+:(\d+)/', c.log()), 10,
                        'the https line').group(1))
    token = c.http_token()
    c.wait_ready()   # /healthz answers 200 only once the pool is at strength
    with open(cert, 'w') as f:
        f.write('-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n')
    r = c.ctl('reload')
    check(r.returncode == 0 and 'the HTTPS certificate in use stays' in r.stdout,
          f'claimctl reload with no certificate in the file: {r.stdout!r} {r.stderr!r}')
    client = Client(port, pki.ca, token)
    check_eq((client.get('/healthz', token=False)[0], client.cert_sha()), (200, _der_sha(a_cert)),
             'a new connection after the refused reload')
    client.close()
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_a_certificate_that_does_not_load_and_cleartext_off_loopback(t):
    pki = Pki(t.tmpdir)
    a_cert, a_key = pki.server('a')
    _, b_key = pki.server('b')
    db = t.database()
    c = t.claimd(db, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-tls-cert', a_cert,
                 '--http-tls-key', b_key, name='mismatch')
    check_eq(c.wait_exit(10), 1, 'exit code for a key that is not the certificate\'s')
    check('cannot serve HTTPS' in c.log(), f'message: {c.log_tail(3)!r}')
    c = t.claimd(db, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-tls-cert', a_cert,
                 '--http-tls-key', os.path.join(t.tmpdir, 'missing.key'), name='missing')
    check_eq(c.wait_exit(10), 2, 'exit code for a key file that is not there')
    check('--http-tls-key' in c.log(), f'message: {c.log_tail(3)!r}')
    c = t.claimd(db, '--handler', 'noop', '--http', '127.0.0.1:0', '--http-tls-cert', a_cert,
                 name='half')
    check_eq(c.wait_exit(10), 2, 'exit code for a certificate without its key')
    # Off loopback: HTTPS, or plain HTTP acknowledged.
    c = t.claimd(db, '--handler', 'noop', '--http', '0.0.0.0:0', name='open')
    check_eq(c.wait_exit(10), 2, 'exit code for 0.0.0.0 over plain HTTP')
    check('--http-insecure-cleartext' in c.log(), f'message: {c.log_tail(3)!r}')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '0.0.0.0:0',
                 '--http-insecure-cleartext', name='cleartext')
    wait_for(lambda: re.search(r'listening on http://0\.0\.0\.0:\d+/', c.log()), 10,
             'plain HTTP on 0.0.0.0, acknowledged')
    check_eq(c.stop(), 0, 'exit code')
    c = _https_claimd(t, db, a_cert, a_key, address='0.0.0.0:0', name='wildcard')
    token = c.http_token()
    client = Client(c.port, pki.ca, token)
    check_eq(client.get('/v1/status')[0], 200, 'HTTPS on 0.0.0.0, by its IP')
    client.close()
    # --doctor does not take an HTTPS port that refuses its plain request for claimd down.
    r = subprocess.run([harness.CLAIMD_BIN, '--doctor', '--dsn', db.dsn, '--handler', 'noop',
                        '--control', c.control, '--http', f'0.0.0.0:{c.port}', '--http-tls-cert',
                        a_cert, '--http-tls-key', a_key], capture_output=True, text=True,
                       timeout=60)
    check(f'http 0.0.0.0:{c.port} serves HTTPS' in r.stdout + r.stderr,
          f'claimd --doctor: {r.stdout!r} {r.stderr!r}')
    check_eq(c.stop(), 0, 'exit code')


if __name__ == '__main__':
    harness.main()
