#!/usr/bin/env python3
"""Work added through `claimctl add` is inserted by claimd, which wakes an idle worker for it
at once; rows inserted with plain SQL are found by the idle poll. Both run with --wake poll:
woken by the binary log (tools/db writes one), a row would start at once either way, and
neither test could tell its own feature broken."""

import hashlib
import socket
import subprocess
import time

import harness
from harness import check, check_eq, wait_for

MIB = 1024 * 1024


def _add(c, *args, payload=None):
    """claimctl add ... with `payload` (bytes) on stdin; returns the CompletedProcess (bytes)."""
    stdin = {'input': payload} if payload is not None else {'stdin': subprocess.DEVNULL}
    return subprocess.run([harness.CLAIMCTL_BIN, '--control', c.control, 'add', *args], **stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)


def _added_id(r, what):
    out = r.stdout.decode('utf-8', 'replace')
    check(r.returncode == 0, f'{what}: claimctl add exited {r.returncode}: '
          f'{r.stderr.decode("utf-8", "replace").strip()!r}')
    check(out.endswith('\n') and out.strip().isdigit(), f'{what}: claimctl add printed {out!r}, want an id')
    return int(out)


def _latency_ms(db, item_id):
    """claimed_at - created_at of a row, by the database clock."""
    return int(db.scalar(f'SELECT TIMESTAMPDIFF(MICROSECOND, created_at, claimed_at) '
                         f'FROM work_items WHERE id = {int(item_id)}')) / 1000


def it_adds_through_claimctl_and_wakes_a_worker(t):
    db = t.database()
    # Polling every 10 s, not following the binary log: only the wake-up from `add` can
    # start a row within half a second.
    c = t.claimd(db, '--workers', '2', '--handler', 'noop', '--wake', 'poll',
                 '--poll-interval', '10s')
    c.wait_ready(workers=2)

    worst = 0
    for n in range(20):
        r = _add(c, 'x')
        item = _added_id(r, f'add {n + 1}')
        wait_for(lambda: db.row(item, 'state')[0], 1.0, f'row {item} (add {n + 1}) done',
                 until=lambda s: s == 'done')
        ms = _latency_ms(db, item)
        worst = max(worst, ms)
        check(ms < 500, f'row {item} (add {n + 1}) was claimed {ms:.0f} ms after it was inserted '
              f'(want < 500 ms with a 10 s poll interval)')
        check_eq(db.row(item, 'queue, payload'), ('default', 'x'), f'row {item} (queue, payload)')
    t.note(f'20 adds: worst insert-to-claim {worst:.1f} ms')

    # Binary payload on stdin, stored byte for byte.
    data = bytes((i * 37 + 11) % 256 for i in range(998)) + b'\0\n'
    check(len(data) == 1000 and b'\0' in data[:-2] and b'\n' in data[:-2], 'test payload has NUL and newline')
    item = _added_id(_add(c, '--queue', 'default', payload=data), 'add from stdin')
    check_eq(db.row(item, 'queue, LENGTH(payload), HEX(payload)'),
             ('default', '1000', data.hex().upper()), f'row {item} (queue, length, hex payload)')
    wait_for(lambda: db.row(item, 'state')[0], 1.0, f'row {item} done', until=lambda s: s == 'done')

    # Over the 1 MiB limit: refused, nothing inserted, claimd unharmed.
    before = db.scalar('SELECT COUNT(*) FROM work_items')
    r = _add(c, payload=b'y' * (2 * MIB))
    err = r.stderr.decode('utf-8', 'replace').strip()
    check(r.returncode != 0, f'a 2 MiB payload was accepted: exit 0, stdout {r.stdout[:80]!r}')
    check(err != '', f'a 2 MiB payload was refused (exit {r.returncode}) without a message')
    check_eq(r.stdout, b'', 'stdout of the refused add')
    t.note(f'2 MiB add: exit {r.returncode}: {err.splitlines()[0]}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), before, 'rows after the refused add')
    check_eq(len(c.wait_ready(workers=2)['workers']), 2, 'workers after the refused add')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_accepts_a_payload_of_exactly_1_mib(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready(workers=1)
    data = bytes(range(256)) * (MIB // 256)
    item = _added_id(_add(c, payload=data), 'add of 1 MiB')
    check_eq(db.row(item, 'LENGTH(payload), MD5(payload)'), (str(MIB), hashlib.md5(data).hexdigest()),
             f'row {item} (length, md5 of payload)')
    wait_for(lambda: db.row(item, 'state')[0], 5, f'row {item} done', until=lambda s: s == 'done')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_polls_plain_sql_inserts(t):
    db = t.database()
    # Not following the binary log: only the poll can find the rows.
    c = t.claimd(db, '--workers', '2', '--handler', 'noop', '--wake', 'poll',
                 '--poll-interval', '100ms')
    c.wait_ready(workers=2)

    ids = []
    for n in range(20):
        ids.append(db.insert_item(f'sql-{n + 1}'))
        time.sleep(0.05)  # pacing the inserts, not waiting for claimd
    wait_for(db.states, 5, 'all 20 rows done', until=lambda s: s['done'] == 20)
    lat = [(i, _latency_ms(db, i)) for i in ids]
    t.note(f'20 SQL inserts: worst insert-to-claim {max(ms for _, ms in lat):.1f} ms')
    late = [(i, ms) for i, ms in lat if ms >= 400]
    check_eq(late, [], 'rows (id, ms) claimed 400 ms or more after their insert with a 100 ms poll')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_add_sets_the_row_options(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    r = c.ctl('add', '--queue', 'mail', '--delay', '1h', '--max-attempts', '9', '--timeout', '20s',
              '--period', '30m', 'x')
    check_eq(r.returncode, 0, f'claimctl add with options ({r.stderr.strip()})')
    row = db.row(int(r.stdout), 'queue, max_attempts, timeout_s, period_s, state, '
                                'TIMESTAMPDIFF(SECOND, created_at, run_at)')
    check_eq(row, ('mail', '9', '20', '1800', 'ready', '3600'), 'queue, max_attempts, timeout_s, '
             'period_s, state, run_at - created_at')
    r = c.ctl('add', '--run-at', '2030-01-02 03:04:05', 'y')
    check_eq(db.row(int(r.stdout), 'run_at')[0], '2030-01-02 03:04:05.000000', 'run_at')
    r = c.ctl('add', '--run-at', 'soon', 'z')
    check(r.returncode != 0 and 'run_at' in r.stderr, f'bad --run-at: {r.returncode} {r.stderr!r}')
    r = c.ctl('add', '--frobnicate', '1', 'z')
    check(r.returncode == 2 and 'frobnicate' in r.stderr, f'unknown option: {r.returncode} {r.stderr!r}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), '2', 'rows added')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def _raw_request(c, data):
    """Sends bytes on the control socket as they are (no claimctl); returns the whole reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(c.control)
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except BrokenPipeError:
            pass  # claimd answered a request too long before it was all sent
        reply = b''
        while chunk := sock.recv(65536):
            reply += chunk
    return reply


def it_control_socket_refuses_malformed_requests_and_adds_nothing(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    bad = {
        b'add queue=default payload=%zz\n': b'bad character or %-escape',
        b'add payload=x\n': b'queue is required',
        b'add queue=default priority=99 payload=x\n': b'priority must be',
        b'add queue=default payload=a b\n': b'not name=value',
        b'\x00\xff\xfe garbage\n': b'unknown request',
        b'retry id=1 queue=default dead=1\n': b'retry takes an item id',
        b'add queue=default payload=' + b'x' * (4 * MIB): b'request too long',
    }
    for request, says in bad.items():
        reply = _raw_request(c, request)
        check(reply.startswith(b'error: ') and reply.endswith(b'\n') and says in reply,
              f'reply to {request[:60]!r}: {reply[:200]!r}, want an error saying {says!r}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), '0', 'rows added by bad requests')
    # The same socket still serves good requests, written by hand to the documented grammar.
    reply = _raw_request(c, b'add queue=default payload=hand%20written\n')
    check(reply.startswith(b'ok\n') and reply[3:].strip().isdigit(), f'good request: {reply!r}')
    check_eq(db.scalar('SELECT payload FROM work_items'), 'hand written', 'payload added')
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


if __name__ == '__main__':
    harness.main()
