#!/usr/bin/env python3
"""Requests that hold their connection (event streams: suspended, they never time out) and
idle connections against the real claimd: with the places filled by streams and idle
connections, idle ones are closed to take /healthz in; the per-client cap counts an IPv6 /64 as
one client (claimd in a network namespace of its own, where the test gives its loopback IPv6
addresses of two /64s). /healthz's time is measured."""

import json
import os
import re
import select
import socket
import statistics
import subprocess
import time

import harness
from harness import check, check_eq, wait_for
from test_http_abuse import Conn, request

FAR = '2037-01-01T00:00:00Z'


def _claimd(t, db, *args, listen='127.0.0.1:0', binary=None):
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--queue', 'served',
                 '--http', listen, *args, binary=binary)
    m = wait_for(lambda: re.search(r'http: listening on http://(?:127\.0\.0\.1|\[::\]):(\d+)/',
                                   c.log()), 10, f'{c.name}: the http line')
    c.port = int(m.group(1))
    return c


def _auth(c):
    return {'Authorization': f'Bearer {c.http_token()}'}


def _far_job(c):
    """A row due in 2037 on a queue nobody serves: it never changes while the test runs."""
    status, _, b = request(c.port, 'POST', f'/v1/queues/later/jobs?run_at={FAR}', b'{}', _auth(c))
    check_eq(status, 202, f'the add: {b!r}')
    return b['id']


class Held:
    """A request that holds its connection (a stream, a ?wait) from src, sent at once; its
    answer's head read later (head())."""

    def __init__(self, c, path, src):
        self.path, self.src = path, src
        self.conn = Conn(c.port, src, timeout=15)
        self.conn.send(f'GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{c.port}\r\n'
                       f'Authorization: Bearer {c.http_token()}\r\n\r\n'.encode())
        self.data = b''
        self.status = None

    def head(self):
        """The status (and what came with it), once the head is in (None: none in 10 s)."""
        return heads([self])[0]

    def take(self):
        """What the server sent now; False once it closed."""
        try:
            got = self.conn.s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            got = b''
        self.data += got
        if b'\r\n\r\n' in self.data and self.data.startswith(b'HTTP/1.1 '):
            self.status = int(self.data.split()[1])
        return bool(got)

    def headers(self):
        head = self.data.split(b'\r\n\r\n', 1)[0].decode('latin-1').split('\r\n')[1:]
        return {k.strip().lower(): v.strip() for k, v in (ln.split(':', 1) for ln in head)}

    def read_until(self, token, wait):
        """Whether token came within wait seconds (what comes is kept in data)."""
        end = time.monotonic() + wait
        while token not in self.data and time.monotonic() < end:
            if select.select([self.conn.s], [], [], max(0, end - time.monotonic()))[0]:
                got = self.conn.s.recv(65536)
                if not got:
                    break
                self.data += got
        return token in self.data

    def body_to_close(self):
        """The rest, until the server closes (a refusal's body)."""
        body = self.data.split(b'\r\n\r\n', 1)[1]
        while True:
            got = self.conn.s.recv(65536)
            if not got:
                return body
            body += got

    def closed_by_server(self, wait):
        """Whether the server closed the connection, now or within wait seconds (what is in
        before the close is read and dropped)."""
        end = time.monotonic() + wait
        while select.select([self.conn.s], [], [], max(0, end - time.monotonic()))[0]:
            try:
                if not self.conn.s.recv(65536):
                    return True
            except ConnectionResetError:
                return True
        return False

    def close(self):
        self.conn.close()


def heads(held, wait=10):
    """Each one's status once its head is in, all waited for together (None: none came)."""
    end = time.monotonic() + wait
    todo = [h for h in held if h.status is None]
    while todo and time.monotonic() < end:
        ready = select.select([h.conn.s for h in todo], [], [], max(0, end - time.monotonic()))[0]
        for h in [h for h in todo if h.conn.s in ready]:
            if not h.take() or h.status is not None:
                todo.remove(h)
    return [h.status for h in held]


def _metrics(c):
    text = request(c.port, 'GET', '/metrics', headers=_auth(c))[2].decode()
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r'^(claimd_http_\w+(?:\{[^}]*\})?) (\S+)$', text, re.M)}


def _timed(port, method, path, src, headers=None, n=20):
    """n requests, each on its own connection: their statuses and times (ms); after the first
    that is not answered 200, no more."""
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        try:
            status = request(port, method, path, headers=headers, src=src)[0]
        except OSError as e:
            status = repr(e)
        out.append((status, (time.monotonic() - t0) * 1000))
        if status != 200:
            break
    return out


def _summary(times):
    ms = sorted(x[1] for x in times)
    return (f'median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms '
            f'({len(ms)} requests)')


def it_closes_idle_connections_to_answer_healthz_at_the_limit(t):
    db = t.database()
    # 64 connections, 32 of them streams (auto: half), 16 per client; 8 places kept free.
    c = _claimd(t, db, '--http-max-connections', '64', '--http-max-connections-per-ip', '16')
    c.wait_ready()
    job, port = _far_job(c), c.port
    streams = [Held(c, f'/v1/jobs/{job}/events', f'127.0.0.{2 + k // 16}') for k in range(32)]
    check_eq(heads(streams), [200] * 32, '32 streams')
    # The other 32 places: 16 connections that never send a request, 16 keep-alive ones
    # idle after one.
    silent = [Conn(port, '127.0.0.4') for _ in range(16)]
    kept = []
    for _ in range(16):
        k = Conn(port, '127.0.0.5')
        k.send(f'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n'.encode())
        check_eq(k.reply()[0], 200, 'a keep-alive request')
        kept.append(k)
    # Idle for a second, enough of them are closed to keep 8 places free.
    # (57: with /metrics' own)
    wait_for(lambda: _metrics(c), 10, 'idle connections closed, 8 places free',
             until=lambda m: m.get('claimd_http_connections_shed_total', 0) >= 8 and
             m.get('claimd_http_connections', 64) <= 57)
    # Every place taken again, by connections that send nothing; /healthz from another
    # client comes in as older idle ones give way.
    fresh = [Conn(port, '127.0.0.6') for _ in range(12)]
    t0 = time.monotonic()
    status = request(port, 'GET', '/healthz', src='127.0.0.7')[0]
    took = (time.monotonic() - t0) * 1000
    check_eq(status, 200, '/healthz with every place taken')
    t.note(f'/healthz with every place taken (32 streams, the rest idle): {took:.1f} ms')
    check(took < 5000, f'/healthz in {took:.0f} ms')
    times = _timed(port, 'GET', '/healthz', '127.0.0.7')
    check(all(s == 200 for s, _ in times), f'/healthz after: {times!r}')
    t.note(f'/healthz after: {_summary(times)}')
    # Idle connections were closed (the oldest first), the streams never.
    old = [x for x in silent + kept if x.answered(0)]
    check(len(old) >= 8, f'idle connections closed: {len(old)}')
    check(all(x.reply()[0] is None for x in old[:8]), 'closed without an answer')
    check(all(not h.closed_by_server(0) for h in streams), 'no stream closed')
    for x in silent + kept + fresh + streams:
        x.close()
    check_eq(c.stop(), 0, 'claimd exit code')


_NETNS = r'''
set -e
ip link set lo up
for a in 2001:db8:1:ff::1 2001:db8:1:1::a 2001:db8:1:1::b 2001:db8:1:1::c 2001:db8:1:1::d \
         2001:db8:1:1::e 2001:db8:1:2::a 2001:db8:1:3::a; do
	ip -6 addr add "$a/128" dev lo nodad
done
exec "$@"
'''

_CLIENT = r'''
import json, socket, sys
port = int(sys.argv[1])
def conn(src):
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((src, 0))
    s.connect(('2001:db8:1:ff::1', port))
    return s
def healthz(s, close=True):
    s.sendall(b'GET /healthz HTTP/1.1\r\nHost: x\r\n' +
              (b'Connection: close\r\n' if close else b'') + b'\r\n')
    data = b''
    try:
        while not data.endswith(b'ok\n'):
            got = s.recv(4096)
            if not got:
                break
            data += got
    except (ConnectionResetError, socket.timeout):
        pass
    return int(data.split()[1]) if data.startswith(b'HTTP/1.1 ') else None
out = {}
for prefix, srcs, more, other in (
        ('v6', ['2001:db8:1:1::a', '2001:db8:1:1::b', '2001:db8:1:1::c', '2001:db8:1:1::d'],
         '2001:db8:1:1::e', '2001:db8:1:2::a'),
        ('one', ['2001:db8:1:3::a'] * 4, '2001:db8:1:3::a', '2001:db8:1:2::a')):
    held = [conn(s) for s in srcs]
    # each answered once and kept open: taken in and counted
    out[prefix + '_held'] = [healthz(s, close=False) for s in held]
    out[prefix + '_more'] = healthz(conn(more))
    out[prefix + '_other'] = healthz(conn(other))
    for s in held:
        s.close()
print(json.dumps(out))
'''


def it_counts_an_ipv6_64_as_one_client(t):
    if os.geteuid() != 0:
        if os.environ.get('CLAIMD_TEST_REQUIRE_NETNS') == '1':
            harness.fail('needs root for a network namespace (CLAIMD_TEST_REQUIRE_NETNS=1)')
        raise harness.Skip('needs root (a network namespace)')
    db = t.database()
    wrapper = t.script(_NETNS + '\n', name='netns-claimd')
    inner = t.script(f'exec unshare --net {wrapper} {harness.CLAIMD_BIN} "$@"\n',
                     name='claimd-in-netns')
    c = _claimd(t, db, '--http-max-connections-per-ip', '4', '--http-insecure-cleartext',
                listen='[::]:0', binary=inner)
    client = t.script(_CLIENT, lang='python', name='client')
    r = subprocess.run(['nsenter', f'--net=/proc/{c.pid}/ns/net', client,
                        str(c.port)], capture_output=True, text=True, timeout=60)
    check_eq(r.returncode, 0, f'the client: {r.stderr.strip()!r}')
    got = json.loads(r.stdout)
    check_eq(got, {'v6_held': [200] * 4, 'v6_more': None, 'v6_other': 200,
                   'one_held': [200] * 4, 'one_more': None, 'one_other': 200},
             'four from one /64 (four addresses), then a fifth address of it and one of '
             'another /64; four from one address, then it again and the other /64')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
