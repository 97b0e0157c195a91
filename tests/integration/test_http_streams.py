#!/usr/bin/env python3
"""Requests that hold their connection (event streams, ?wait long polls: suspended, they never
time out) against the real claimd: at most --http-max-streams at once, more answered 503 at once
with Retry-After and the API's JSON error, their connection closed; a place freed when a client
goes away; the rest of --http-max-connections kept for /healthz and short requests, from any
client, even with the rest filled by idle connections (closed to make room); the per-client
cap counting an IPv6 /64 as one client (claimd in a network namespace of its own, where the
test gives its loopback IPv6 addresses of two /64s). /healthz's time is
measured while the streams are open."""

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
from test_cli import GOOD_DSN, run_claimd
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


def it_answers_healthz_and_the_api_under_300_streams(t):
    db = t.database()
    c = _claimd(t, db)       # the defaults: 256 connections, 32 per client, 128 streams
    c.wait_ready()
    job, port = _far_job(c), c.port
    before = _timed(port, 'GET', '/healthz', '127.0.0.12')
    # 30 streams from each of 10 addresses (under the per-client cap of 32).
    t0 = time.monotonic()
    held = [Held(c, f'/v1/jobs/{job}/events', f'127.0.0.{2 + k // 30}') for k in range(300)]
    statuses = heads(held)
    t.note(f'300 streams asked for and answered in {(time.monotonic() - t0) * 1000:.0f} ms')
    # Another client, and one of the ten (30 held of its 32), still get /healthz and the API.
    ok = [h for h in held if h.status == 200]
    busiest = max(range(2, 12), key=lambda k: sum(h.src == f'127.0.0.{k}' for h in ok))
    check(sum(h.src == f'127.0.0.{busiest}' for h in ok) < 32, 'room left for the busiest')
    for src in ('127.0.0.12', f'127.0.0.{busiest}'):
        for what, times in (('/healthz', _timed(port, 'GET', '/healthz', src)),
                            ('/v1/queues', _timed(port, 'GET', '/v1/queues', src, _auth(c), n=5))):
            check(all(s == 200 for s, _ in times), f'{what} from {src}: {times!r}')
            t.note(f'{what} from {src} while 128 streams are open: {_summary(times)}')
    ok = [h for h in held if h.status == 200]
    refused = [h for h in held if h.status == 503]
    check_eq((len(ok), len(refused)), (128, 172),
             f'streams taken and refused (statuses {sorted(set(map(str, statuses)))})')
    for h in refused[:5]:
        hd = h.headers()
        body = json.loads(h.body_to_close())   # the server closes after it
        check_eq(hd.get('retry-after'), '5', 'Retry-After of a refused stream')
        check('--http-max-streams' in body.get('error', ''), f'the refusal says why: {body!r}')
    check(all(h.closed_by_server(5) for h in refused), 'refused streams closed by the server')
    check(all(h.read_until(b'event: job', 5) for h in ok), 'the streams sent the row')
    t.note(f'/healthz from 127.0.0.12 before the streams: {_summary(before)}')
    m = _metrics(c)
    check_eq((m.get('claimd_http_streams'), m.get('claimd_http_streams_max'),
              m.get('claimd_http_streams_refused_total'),
              m.get('claimd_http_requests_total{route="job.events",code="503"}')),
             (128.0, 128.0, 172.0, 172.0), 'the streams in /metrics')
    check(all(not h.closed_by_server(0) for h in ok), 'the streams taken are still open')
    for h in held:
        h.close()
    check_eq(c.stop(), 0, 'claimd exit code')


def it_refuses_a_stream_past_the_cap_and_frees_a_place_when_a_client_leaves(t):
    db = t.database()
    c = _claimd(t, db, '--http-max-connections', '16', '--http-max-streams', '4')
    c.wait_ready()
    job, port = _far_job(c), c.port
    held = [Held(c, f'/v1/jobs/{job}/events', '127.0.0.2') for _ in range(4)]
    check_eq(heads(held), [200] * 4, 'four streams')
    extra = Held(c, f'/v1/jobs/{job}/events', '127.0.0.3')
    check_eq(extra.head(), 503, 'a fifth stream')
    check_eq(extra.headers().get('retry-after'), '5', 'its Retry-After')
    check_eq(extra.headers().get('content-type'), 'application/json', 'its type')
    check('error' in json.loads(extra.body_to_close()), 'its body: {"error": ...}')
    check(extra.closed_by_server(5), 'its connection closed')
    # Short requests go on meanwhile.
    check_eq(request(port, 'GET', '/v1/queues', headers=_auth(c), src='127.0.0.3')[0], 200,
             '/v1/queues while the streams are full')
    # A client goes away: its place is taken by the next stream, within a few seconds.
    held[0].close()
    t0 = time.monotonic()

    def next_stream():
        h = Held(c, f'/v1/jobs/{job}/events', '127.0.0.4')
        if h.head() == 200:
            return h
        h.close()
        return None
    again = wait_for(next_stream, 10, 'a stream taken after a client went away', interval=0.1)
    t.note(f'a place freed {(time.monotonic() - t0) * 1000:.0f} ms after its client went away')
    m = _metrics(c)
    check_eq(m.get('claimd_http_streams'), 4.0, 'streams open')
    check(m.get('claimd_http_streams_refused_total', 0) >= 1, f'refusals counted: {m!r}')
    for h in held[1:] + [again, extra]:
        h.close()
    check_eq(c.stop(), 0, 'claimd exit code')


def it_counts_wait_requests_as_streams(t):
    db = t.database()
    c = _claimd(t, db, '--http-max-connections', '16', '--http-max-streams', '4')
    c.wait_ready()
    job, port = _far_job(c), c.port
    waits = [Held(c, f'/v1/jobs/{job}?wait=60s', '127.0.0.2') for _ in range(4)]
    # They wait: no answer yet (the row is due in 2037).
    check(not any(w.conn.answered(0.5) for w in waits), 'the waits wait')
    for path in (f'/v1/jobs/{job}?wait=60s', f'/v1/jobs/{job}/events'):
        h = Held(c, path, '127.0.0.3')
        t0 = time.monotonic()
        check_eq(h.head(), 503, f'{path} with four waits held')
        check((time.monotonic() - t0) < 2, f'{path}: refused at once')
        check_eq(h.headers().get('retry-after'), '5', f'{path}: Retry-After')
        h.close()
    # A plain read of the row is no long poll.
    check_eq(request(port, 'GET', f'/v1/jobs/{job}', headers=_auth(c), src='127.0.0.3')[0], 200,
             'the row without ?wait')
    check_eq(request(port, 'GET', '/healthz', src='127.0.0.3')[0], 200, '/healthz')
    # A waiting client goes away (MHD does not watch a suspended connection: claimd looks).
    waits[0].close()
    t0 = time.monotonic()

    def short_wait():
        h = Held(c, f'/v1/jobs/{job}?wait=1s', '127.0.0.4')
        status = h.head()
        h.close()
        return status
    wait_for(short_wait, 10, 'a wait taken after a waiting client went away',
             until=lambda s: s == 200, interval=0.1)
    t.note(f'a wait\'s place freed within {(time.monotonic() - t0) * 1000:.0f} ms of its client '
           'going away (the probe itself waits 1 s)')
    m = _metrics(c)
    check_eq(m.get('claimd_http_streams'), 3.0, 'three waits held after the probe')
    check_eq(m.get('claimd_http_requests_total{route="job",code="499"}'), 1.0,
             'the wait whose client went away, counted')
    for w in waits[1:]:
        w.close()
    check_eq(c.stop(), 0, 'claimd exit code')


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
    m = _metrics(c)
    check_eq(m.get('claimd_http_streams'), 32.0, 'streams open')
    for x in silent + kept + fresh + streams:
        x.close()
    check_eq(c.stop(), 0, 'claimd exit code')


def it_takes_a_stream_cap_under_the_connections_only(t):
    for n in ('16', '17'):
        rc, _, err, left = run_claimd(t, ['--dsn', GOOD_DSN, '--handler', 'noop', '--http',
                                          '127.0.0.1:0', '--http-max-connections', '16',
                                          '--http-max-streams', n])
        check_eq(rc, 2, f'exit code for --http-max-streams {n} of 16: {err!r}')
        check(f'--http-max-streams {n}: must be under --http-max-connections (16)' in err,
              f'the message: {err!r}')
        check_eq(left, [], 'processes left')
    db = t.database()
    c = _claimd(t, db, '--http-max-connections', '17', '--http-max-streams', 'auto')
    m = _metrics(c)
    check_eq((m.get('claimd_http_streams_max'), m.get('claimd_http_connections_max')),
             (8.0, 17.0), 'auto: half, rounded down')
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
    c.wait_ready()   # /healthz answers 503 until the pool is up (slow in a sanitized build)
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
