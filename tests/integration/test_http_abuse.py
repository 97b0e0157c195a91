#!/usr/bin/env python3
"""The HTTP API against what a hostile client or a hostile web page sends, through the real
claimd and the real MariaDB: no token, a wrong one, the read-only token asking for a change, a
Host that is not claimd's (DNS rebinding), a change from another site's page (Origin,
Sec-Fetch-Site; with a token and with --http-insecure-no-auth), bodies refused before they are
read (the answer comes while the client is still sending), more connections from one address
than it may hold, bytes that are not UTF-8, a multibyte character at the payload preview's cut.
Each is answered as designed and writes nothing (the table's rows counted), while /healthz
answers another client throughout."""

import json
import os
import pwd
import re
import select
import socket
import subprocess
import threading
import time
import urllib.parse

import harness
from harness import check, check_eq, wait_for

READ_TOKEN = 'read-only-token-0123456789abcdef'


class Conn:
    """A raw HTTP/1.1 connection from a chosen local address (127.0.0.x: another client)."""

    def __init__(self, port, src='127.0.0.1', timeout=10):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.bind((src, 0))
        self.s.connect(('127.0.0.1', port))

    def send(self, data):
        self.s.sendall(data)

    def answered(self, wait):
        """Whether the server has said something (or closed) within wait seconds."""
        return bool(select.select([self.s], [], [], wait)[0])

    def reply(self):
        """The whole answer: (status, headers dict, body bytes); (None, {}, b'') if the server
        closed without one."""
        data = b''
        try:
            while b'\r\n\r\n' not in data:
                got = self.s.recv(65536)
                if not got:
                    break
                data += got
        except (ConnectionResetError, socket.timeout):
            pass
        if b'\r\n\r\n' not in data:
            return None, {}, b''
        head, body = data.split(b'\r\n\r\n', 1)
        lines = head.decode('latin-1').split('\r\n')
        headers = {k.strip().lower(): v.strip() for k, v in
                   (ln.split(':', 1) for ln in lines[1:] if ':' in ln)}
        want = int(headers.get('content-length', 0))
        try:
            while len(body) < want:
                got = self.s.recv(65536)
                if not got:
                    break
                body += got
        except (ConnectionResetError, socket.timeout):
            pass
        return int(lines[0].split()[1]), headers, body

    def close(self):
        self.s.close()


def request(port, method, path, body=b'', headers=None, src='127.0.0.1'):
    """One request on its own connection: (status, headers, body as JSON when it is)."""
    h = {'Host': f'127.0.0.1:{port}', 'Connection': 'close'}
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    if body or method in ('POST', 'PUT', 'PATCH'):
        h['Content-Length'] = str(len(body))
    target = path.encode() if isinstance(path, str) else path
    c = Conn(port, src)
    try:
        c.send(method.encode() + b' ' + target + b' HTTP/1.1\r\n' +
               ''.join(f'{k}: {v}\r\n' for k, v in h.items()).encode('latin-1') + b'\r\n' +
               body)
        status, hdrs, raw = c.reply()
    finally:
        c.close()
    if hdrs.get('content-type', '').startswith('application/json'):
        return status, hdrs, json.loads(raw)
    return status, hdrs, raw


class Healthz:
    """Another client (127.0.0.3) asking for /healthz every 20 ms while the test runs."""

    def __init__(self, port):
        self.port, self.answers, self.stop = port, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                status = request(self.port, 'GET', '/healthz', src='127.0.0.3')[0]
            except OSError as e:
                status = repr(e)
            self.answers.append((status, time.monotonic() - t0))
            self.stop.wait(0.02)

    def end(self):
        self.stop.set()
        self.thread.join(20)
        return self.answers


def _claimd(t, db, *args, name=None):
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--queue', 'served',
                 '--http', '127.0.0.1:0', *args, name=name)
    m = wait_for(lambda: re.search(r'http: listening on http://127\.0\.0\.1:(\d+)/', c.log()),
                 10, f'{c.name}: the http line')
    c.port = int(m.group(1))
    return c


def _count(db):
    return int(db.scalar('SELECT COUNT(*) FROM work_items'))


def _auth(token):
    return {'Authorization': f'Bearer {token}'}


def it_refuses_what_it_should_before_reading_and_writes_nothing(t):
    db = t.database()
    read_file = os.path.join(t.tmpdir, 'read-token')
    harness.write_secret(read_file, READ_TOKEN + '\n')
    c = _claimd(t, db, '--http-read-token-file', read_file)
    token, port = c.http_token(), c.port
    c.wait_ready()
    existing = db.insert_item('here before', queue="'abuse'", state="'dead'")
    before = _count(db)
    health = Healthz(port)
    add = '/v1/queues/abuse/jobs'
    own = f'http://127.0.0.1:{port}'

    def refused(status, words, method, path, body=b'', **headers):
        got, hdrs, b = request(port, method, path, body, headers)
        check_eq(got, status, f'{method} {path} {headers}')
        check(words in b['error'], f'{method} {path} {headers}: {b!r} lacks {words!r}')
        return hdrs

    # No token, a wrong one: 401, nothing read or written.
    hdrs = refused(401, 'Bearer', 'POST', add, b'x')
    check_eq(hdrs.get('www-authenticate'), 'Bearer', 'WWW-Authenticate')
    refused(401, 'Bearer', 'GET', '/v1/jobs?state=dead')
    refused(401, 'Bearer', 'GET', '/metrics')
    refused(401, 'Bearer', 'POST', add, b'x', Authorization='Bearer ' + token[:-1] + 'x')
    refused(401, 'Bearer', 'POST', add, b'x', Authorization=token)
    # The read-only token reads everything and changes nothing.
    ro = _auth(READ_TOKEN)
    for path in ('/v1/queues', '/v1/status', f'/v1/jobs/{existing}', '/v1/jobs?state=dead',
                 '/metrics', '/v1/stats'):
        check_eq(request(port, 'GET', path, headers=ro)[0], 200, f'read-only GET {path}')
    stream = Conn(port)
    stream.send(f'GET /v1/jobs/{existing}/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n'
                f'Authorization: Bearer {READ_TOKEN}\r\n\r\n'.encode())
    first = stream.s.recv(4096)
    stream.close()
    check(first.startswith(b'HTTP/1.1 200') and b'text/event-stream' in first,
          f'read-only event stream: {first[:120]!r}')
    for method, path in (('POST', add), ('POST', f'/v1/jobs/{existing}/retry'),
                         ('DELETE', f'/v1/jobs/{existing}'), ('POST', '/v1/queues/abuse/pause'),
                         ('POST', '/v1/queues/abuse/jobs:batch')):
        refused(403, 'read-only', method, path, b'{}', **ro)
    check_eq(db.row(existing, 'state'), ('dead',), 'the dead row after the read-only token')
    # A Host that is not claimd's (a rebound name), with the token: 421.
    for host in (f'evil.example:{port}', 'evil.example', f'127.0.0.1:{port + 1}',
                 f'localhost.evil.example:{port}'):
        refused(421, 'Host', 'POST', add, b'x', Host=host, **_auth(token))
        refused(421, 'Host', 'GET', '/v1/jobs?state=dead', Host=host, **_auth(token))
    # No Host at all (HTTP/1.0; libmicrohttpd itself refuses an HTTP/1.1 request without one).
    conn = Conn(port)
    conn.send(f'GET /v1/queues HTTP/1.0\r\nAuthorization: Bearer {token}\r\n\r\n'.encode())
    status, _, body = conn.reply()
    conn.close()
    check_eq((status, b'Host' in body), (400, True), f'no Host: {body!r}')
    check_eq(request(port, 'GET', '/v1/queues', headers=dict(_auth(token), Host=f'localhost:{port}'))[0],
             200, 'Host: localhost with the port')
    # A change asked for by another site's page, with the token: 403.
    refused(403, 'origin', 'POST', add, b'x', Origin='http://evil.example', **_auth(token))
    refused(403, 'origin', 'POST', add, b'x', Origin='null', **_auth(token))
    refused(403, 'origin', 'POST', add, b'x', **{'Sec-Fetch-Site': 'cross-site'}, **_auth(token))
    refused(403, 'origin', 'DELETE', f'/v1/jobs/{existing}', Origin='http://evil.example',
            **_auth(token))
    # claimd's own page may.
    status, _, b = request(port, 'POST', add, b'from the page', dict(
        _auth(token), Origin=own, **{'Sec-Fetch-Site': 'same-origin'}))
    check_eq(status, 202, f'a change from claimd\'s own page ({b!r})')
    before += 1
    check_eq(_count(db), before, 'rows after the refusals')

    # Bodies refused before they are read: the answer comes while the client is still sending
    # (it has sent 1 KiB of the body it announced, and waits).
    def early(head, total, want, **headers):
        conn = Conn(port)
        h = {'Host': f'127.0.0.1:{port}'}
        h.update(headers)
        conn.send(head + ''.join(f'{k}: {v}\r\n' for k, v in h.items()).encode() + b'\r\n')
        conn.send(b'x' * 1024)
        check(conn.answered(5), f'{head!r}: no answer while the body was coming ({total} bytes)')
        status, _, body = conn.reply()
        conn.close()
        check_eq(status, want, f'{head!r}: the early answer {body[:100]!r}')

    mib = 1024 * 1024
    early(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nContent-Length: %d\r\n' % (mib // 2), mib // 2,
          401)
    early(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nTransfer-Encoding: chunked\r\n', 0, 401)
    early(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nContent-Length: %d\r\n' % (mib // 2), mib // 2,
          403, Authorization=f'Bearer {READ_TOKEN}')
    early(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nContent-Length: %d\r\n' % (mib // 2), mib // 2,
          421, Authorization=f'Bearer {token}', Host='evil.example')
    early(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nContent-Length: %d\r\n' % (16 * mib), 16 * mib,
          413, Authorization=f'Bearer {token}')
    early(b'POST /v1/queues/abuse/nothing HTTP/1.1\r\nContent-Length: %d\r\n' % (mib // 2),
          mib // 2, 404, Authorization=f'Bearer {token}')
    early(b'PUT /v1/queues/abuse/jobs HTTP/1.1\r\nContent-Length: %d\r\n' % (mib // 2), mib // 2,
          405, Authorization=f'Bearer {token}')
    check_eq(_count(db), before, 'rows after the bodies refused early')

    # Bytes that are not UTF-8: a payload is bytes (kept as they are, shown as base64); a
    # queue, a key or a content type is text: 400, named.
    blob = b'\xff\xfe\x00\xc3(binary'
    status, _, b = request(port, 'POST', add, blob, _auth(token))
    check_eq(status, 202, 'a payload that is not UTF-8')
    before += 1
    check_eq(db.scalar(f'SELECT HEX(payload) FROM work_items WHERE id = {b["id"]}'),
             blob.hex().upper(), 'the payload kept byte for byte')
    j = request(port, 'GET', f'/v1/jobs/{b["id"]}', headers=_auth(token))[2]
    check(j.get('payload_b64') and 'payload' not in j, f'a binary payload shown as base64: {j!r}')
    for path, words, headers in (
            ('/v1/queues/%FF/jobs', 'queue: not UTF-8', {}),
            (b'/v1/queues/\xc3\x28/jobs', 'queue: not UTF-8', {}),
            ('/v1/queues/abuse/jobs?group=%C3%28', 'group: not UTF-8', {}),
            ('/v1/queues/abuse/jobs?dedupe=%ED%A0%80', 'dedupe: not UTF-8', {}),
            ('/v1/queues/abuse/jobs?%FF=1', "a query parameter's name: not UTF-8", {}),
            ('/v1/queues/abuse/jobs', 'content_type: not UTF-8', {'Content-Type': 'text/\xff'}),
            ('/v1/queues/%FF/jobs:batch', 'queue: not UTF-8', {})):
        status, _, b = request(port, 'POST', path, b'{}', dict(_auth(token), **headers))
        check_eq((status, b.get('error') if isinstance(b, dict) else b), (400, words),
                 f'POST {path!r} {headers}')
    check_eq(request(port, 'GET', '/v1/jobs?state=%FF', headers=_auth(token))[0], 400,
             'a state that is not UTF-8')
    check_eq(_count(db), before, 'rows after the text that is not UTF-8')

    # A multibyte character at the preview's cut (200 bytes in a list, 1024 for one row): the
    # preview stops before it and stays text.
    list_payload = ('a' * 199 + 'é' + 'b' * 50).encode()       # é is bytes 199 and 200
    one_payload = ('a' * 1022 + '€' + 'b' * 50).encode()       # € is bytes 1022 to 1024
    ids = []
    for p in (list_payload, one_payload):
        status, _, b = request(port, 'POST', '/v1/queues/preview/jobs', p,
                               dict(_auth(token), **{'Content-Type': 'text/plain; charset=utf-8'}))
        check_eq(status, 202, 'a multibyte payload')
        ids.append(b['id'])
        before += 1
    rows = wait_for(lambda: request(port, 'GET', '/v1/jobs?state=ready&queue=preview',
                                    headers=_auth(token))[2], 10, 'the preview rows listed',
                    until=lambda v: isinstance(v, list) and len(v) == 2)
    listed = {r['id']: r for r in rows}[ids[0]]
    check_eq((listed.get('payload'), 'payload_b64' in listed, listed['payload_truncated']),
             ('a' * 199, False, True), 'the list preview cut before the é')
    one = request(port, 'GET', f'/v1/jobs/{ids[1]}', headers=_auth(token))[2]
    check_eq((one.get('payload'), 'payload_b64' in one, one['payload_bytes']),
             ('a' * 1022, False, len(one_payload)), 'the row preview cut before the €')

    answers = health.end()
    bad = [a for a in answers if a[0] != 200]
    t.note(f'/healthz from another client: {len(answers)} answers, the slowest '
           f'{max(a[1] for a in answers) * 1000:.1f} ms')
    check(len(answers) >= 3 and not bad, f'/healthz throughout: {bad[:5]!r} of {len(answers)}')
    check_eq(_count(db), before, 'rows at the end')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_holds_a_client_to_its_connections_and_answers_others(t):
    db = t.database()
    # 16 connections in all, 8 from one address: a client that holds all it may leaves room
    # for the others.
    c = _claimd(t, db, '--http-max-connections', '16', '--http-max-connections-per-ip', '8')
    token, port = c.http_token(), c.port
    c.wait_ready()
    health = Healthz(port)
    # A slow client from 127.0.0.1: 20 connections that send half a request and wait.
    slow = []
    for _ in range(20):
        conn = Conn(port)
        try:
            conn.send(b'POST /v1/queues/abuse/jobs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n' % port)
        except (BrokenPipeError, ConnectionResetError):
            pass
        slow.append(conn)
    # Another client is answered at once, the API too.
    t0 = time.monotonic()
    check_eq(request(port, 'GET', '/healthz', src='127.0.0.2')[0], 200, '/healthz of another client')
    check_eq(request(port, 'GET', '/v1/status', headers=_auth(token), src='127.0.0.2')[0], 200,
             'the API for another client')
    t.note(f'another client answered in {(time.monotonic() - t0) * 1000:.1f} ms while one held '
           'its 8 connections')
    # The slow one keeps 8: the others were closed at once, without an answer.
    wait_for(lambda: sum(conn.answered(0) for conn in slow), 5, 'connections closed',
             until=lambda n: n >= 12)
    closed = [conn for conn in slow if conn.answered(0)]
    check_eq(len(closed), 12, 'connections of the slow client closed at once')
    check(all(conn.reply()[0] is None for conn in closed), 'closed without an answer')
    for conn in slow:
        conn.close()
    # Its connections gone, the first client is served again.
    check_eq(wait_for(lambda: request(port, 'GET', '/healthz')[0], 10, 'the first client again',
                      until=lambda s: s == 200), 200, 'the first client again')
    answers = health.end()
    bad = [a for a in answers if a[0] != 200]
    check(answers and not bad, f'/healthz throughout: {bad[:5]!r} of {len(answers)}')
    check_eq(_count(db), 0, 'rows')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_checks_host_and_origin_without_a_token(t):
    db = t.database()
    c = _claimd(t, db, '--http-insecure-no-auth')
    port = c.port
    c.wait_ready()
    check(not os.path.exists(os.path.splitext(c.control)[0] + '.http-token'),
          'no token file without a token')
    check('no token: --http-insecure-no-auth' in c.log(), 'the log says there is no token')
    health = Healthz(port)
    add = '/v1/queues/abuse/jobs'
    # What a page of evil.example sent: text/plain, its Origin, its Host (rebound): refused.
    for headers, want in (
            ({'Origin': 'http://evil.example', 'Host': f'evil.example:{port}'}, 421),
            ({'Host': f'evil.example:{port}'}, 421),
            ({'Origin': 'http://evil.example'}, 403),
            ({'Origin': f'http://localhost:{port + 1}'}, 403),
            ({'Sec-Fetch-Site': 'cross-site'}, 403),
            ({'Sec-Fetch-Site': 'same-site', 'Origin': f'http://localhost:{port}'}, 403)):
        status, _, b = request(port, 'POST', add, b'x', dict(headers, **{'Content-Type': 'text/plain'}))
        check_eq(status, want, f'POST {headers}: {b!r}')
        status, _, b = request(port, 'POST', '/v1/queues/abuse/pause', b'', headers)
        check_eq(status, want, f'pause {headers}: {b!r}')
    check_eq(_count(db), 0, 'rows after the cross-site requests')
    check_eq(db.sql("SELECT COUNT(*) FROM queues WHERE paused = 1")[0][0], '0', 'paused queues')
    # Reading through a rebound name is refused too.
    check_eq(request(port, 'GET', '/v1/jobs?state=ready', headers={'Host': 'evil.example'})[0],
             421, 'a read through a rebound name')
    # claimd's own page, and a client that is no browser, may.
    check_eq(request(port, 'POST', add, b'x', {'Origin': f'http://127.0.0.1:{port}',
                                               'Sec-Fetch-Site': 'same-origin'})[0], 202,
             'a change from claimd\'s own page')
    check_eq(request(port, 'POST', add, b'y', {'Host': f'localhost:{port}'})[0], 202,
             'curl through localhost')
    check_eq(_count(db), 2, 'rows added by the allowed requests')
    answers = health.end()
    check(answers and all(a[0] == 200 for a in answers), f'/healthz throughout: {answers[:5]!r}')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_no_auth_on_an_open_address_and_keeps_the_token_file_private(t):
    db = t.database()
    c = t.claimd(db, '--handler', 'noop', '--http', '0.0.0.0:0', '--http-insecure-no-auth',
                 '--http-insecure-cleartext')
    check_eq(c.wait_exit(10), 2, 'exit code for --http-insecure-no-auth on 0.0.0.0')
    check('loopback address only' in c.log(), f'message: {c.log_tail(3)!r}')
    c = _claimd(t, db, name='private')
    token = c.http_token()
    path = os.path.splitext(c.control)[0] + '.http-token'
    check_eq(oct(os.stat(path).st_mode & 0o777), '0o600', 'the token file\'s mode')
    check_eq(len(token), 64, 'the token: 32 random bytes in hex')
    check(token not in c.log(), 'the token is not logged')
    check(path in c.log(), 'the log names the token file')
    check_eq(c.stop(), 0, 'exit code')
    check(not os.path.exists(path), 'the token file removed at a clean stop')
    # A new start, a new token.
    c = _claimd(t, db, name='private')
    check(c.http_token() != token, 'a new token at each start')
    check_eq(c.stop(), 0, 'exit code')


def it_gives_the_token_file_to_the_user_it_becomes(t):
    if os.geteuid() != 0:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('CI runs the tests as root; this one needs it')
        raise harness.Skip('needs root')
    nobody = pwd.getpwnam('nobody')
    os.chmod(t.tmpdir, 0o755)
    run = os.path.join(t.tmpdir, 'run')     # as systemd's RuntimeDirectory: the user's
    os.mkdir(run, 0o755)
    os.chown(run, nobody.pw_uid, nobody.pw_gid)
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0',
                 '--user', 'nobody', '--control', os.path.join(run, 'claimd.sock'))
    path = os.path.join(run, 'claimd.http-token')
    token = wait_for(lambda: open(path).read(), 15, 'the token file', until=lambda v: v.endswith('\n'))
    st = os.stat(path)
    check_eq((st.st_uid, st.st_gid, oct(st.st_mode & 0o777)),
             (nobody.pw_uid, nobody.pw_gid, '0o600'), 'the token file\'s owner and mode')
    r = subprocess.run(['setpriv', f'--reuid={nobody.pw_uid}', f'--regid={nobody.pw_gid}',
                        '--clear-groups', 'cat', path], capture_output=True, text=True)
    check_eq(r.stdout, token, 'the token as the user reads it')
    check_eq(c.stop(), 0, 'exit code')
    check(not os.path.exists(path), 'the token file removed at a clean stop, by the user')


if __name__ == '__main__':
    harness.main()
