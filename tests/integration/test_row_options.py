#!/usr/bin/env python3
"""A row's own retry back-off and dedupe window (sql/migrations/014_row_options.sql), set with
SQL, claimctl add and the HTTP API: a row's back-off goes before its queue's and claimd's, a
row's dedupe window before --dedupe-window, and values out of range are refused with what is
wrong."""

import time

import harness
from harness import check, check_eq, wait_for


def gap_s(h, item):
    """Seconds between the starts of its first two attempts."""
    starts = wait_for(lambda: h.starts(item), 15, f'row {item} started twice',
                      until=lambda s: len(s) >= 2)
    return starts[1].time - starts[0].time


def it_retries_a_row_after_its_own_back_off(t):
    db = t.database()
    h = t.log_handler('rc=1')
    c = t.claimd(db, '--workers', '1', '--concurrency', '8', '--handler', h.spec,
                 '--retry-base', '100ms', '--queue', 'default', '--queue', 'slow')
    c.wait_ready()
    r = c.ctl('backoff', 'slow', '--base', '20s', '--jitter', '0')
    check_eq(r.returncode, 0, f'claimctl backoff: {r.stderr}')
    own = db.insert_item('own', retry_base_ms=3000, max_attempts=2)
    plain = db.insert_item('plain', max_attempts=2)
    r = c.ctl('add', '--retry-base', '2s', '--retry-max', '2s', '--max-attempts', '2', 'cli')
    check_eq(r.returncode, 0, f'claimctl add: {r.stderr}')
    cli = int(r.stdout.split()[0])
    own_slow = db.insert_item('own, slow queue', queue="'slow'", retry_base_ms=3000,
                              max_attempts=2)
    slow = db.insert_item('slow queue', queue="'slow'", max_attempts=2)
    gaps = {k: round(gap_s(h, i), 3) for k, i in
            (('own', own), ('plain', plain), ('cli', cli), ('own_slow', own_slow))}
    wait_for(lambda: h.starts(slow), 15, 'the slow row ran once')
    left = int(db.scalar(f'SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), visible_at) DIV 1000 '
                         f'FROM work_items WHERE id = {slow}'))
    t.note(f's between the first two attempts: {gaps}; the slow row waits {left} ms')
    # claimd's jitter is +-25 %; the queue's back-off here has none.
    check(2.2 <= gaps['own'] <= 3.9, f"its own 3 s base, not claimd's 100 ms: {gaps['own']}")
    check(gaps['plain'] <= 0.6, f"a row without one: claimd's 100 ms: {gaps['plain']}")
    check(1.4 <= gaps['cli'] <= 2.6, f"claimctl add --retry-base 2s --retry-max 2s: {gaps['cli']}")
    check(2.2 <= gaps['own_slow'] <= 3.9, f"its own before its queue's 20 s: {gaps['own_slow']}")
    check(left >= 15000, f"its queue's 20 s without one of its own: {left} ms")


def _add(c, *args):
    r = c.ctl('add', *args)
    check_eq(r.returncode, 0, f'claimctl add {args}: {r.stderr}')
    return int(r.stdout.split()[0])


def it_keeps_a_dedupe_key_for_the_rows_own_window(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--http', '127.0.0.1:0')
    c.wait_ready()
    short = _add(c, '--dedupe', 'short', '--dedupe-for', '1s', 'a')
    status, answer = c.api('POST', '/v1/queues/default/jobs?dedupe=http&dedupe_for=1s', b'b')
    check_eq(status, 202, f'POST with dedupe_for: {answer}')
    http = answer['id']
    long = _add(c, '--dedupe', 'long', 'c')
    wait_for(db.states, 10, 'the rows done', until=lambda s: s['done'] == 3)
    check_eq(_add(c, '--dedupe', 'short', '--dedupe-for', '1s', 'a'), short,
             'within its window the key is still held')
    time.sleep(1.5)
    again = _add(c, '--dedupe', 'short', 'a')
    check(again != short, f'after its own window of 1 s the key is free: {again} vs {short}')
    status, answer = c.api('POST', '/v1/queues/default/jobs?dedupe=http', b'b')
    check(answer['id'] != http, f'the same through HTTP: {answer}')
    check_eq(_add(c, '--dedupe', 'long', 'c'), long, "a key with claimd's window (5 min) is held")
    check_eq(db.scalar(f'SELECT dedupe_for_s FROM work_items WHERE id = {short}'), '1',
             'the row says its window')


def it_refuses_options_out_of_range(t):
    db = t.database()
    for column, value, want in (('retry_base_ms', 0, 'retry_base_ms is out of range'),
                                ('retry_base_ms', 604800001, 'retry_base_ms is out of range'),
                                ('dedupe_for_s', 315360001, 'dedupe_for_s is out of range')):
        try:
            db.execute(f"INSERT INTO work_items (payload, {column}) VALUES ('x', {value})")
            harness.fail(f'{column} = {value} was inserted')
        except RuntimeError as e:
            check(want in str(e), f'{column} = {value}: {e}')
    try:
        db.execute("INSERT INTO work_items (payload, retry_base_ms, retry_max_ms) "
                   "VALUES ('x', 5000, 4000)")
        harness.fail('a max below the base was inserted')
    except RuntimeError as e:
        check('retry_max_ms is out of range' in str(e), f'max below base: {e}')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items'), '0', 'nothing was inserted')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    for args, want in ((('--retry-base', '2s', '--retry-max', '1s'), 'retry_max is below'),
                       (('--dedupe-for', '1s'), 'give dedupe'),
                       (('--retry-base', '8d'), 'retry')):
        r = c.ctl('add', *args, 'x')
        check(r.returncode != 0 and want in r.stderr, f'add {args}: {r.returncode} {r.stderr}')


if __name__ == '__main__':
    harness.main()
