#!/usr/bin/env python3
"""One supervisor serving several queues (--queue, repeatable), next to one serving another."""

import collections

import harness
from harness import check, check_eq, wait_for


def it_serves_every_queue_it_is_given_and_no_other(t):
    db = t.database()
    a = db.insert_items(30, queue="'mail'")
    b = db.insert_items(30, queue="'sms'")
    c = db.insert_items(10, queue="'push'")
    sup = t.claimd(db, '--workers', '2', '--handler', 'noop', '--batch', '4',
                   '--queue', 'mail', '--queue', 'sms', '--poll-interval', '50ms')
    other = t.claimd(db, '--workers', '1', '--handler', 'noop', '--queue', 'push')
    wait_for(db.states, 15, 'all rows done', until=lambda s: s['done'] == len(a + b + c))
    pids = {name: {w['pid'] for w in c.status()['workers']} for name, c in
            (('mail+sms', sup), ('push', other))}
    claimers = collections.defaultdict(set)
    for queue, by in db.sql('SELECT queue, claimed_by FROM work_items'):
        claimers[queue].add(int(by.rsplit(':', 1)[1]))
    check(claimers['mail'] <= pids['mail+sms'] and claimers['sms'] <= pids['mail+sms'],
          f'mail and sms claimed by {claimers["mail"] | claimers["sms"]}, not only by the '
          f'supervisor serving them ({pids["mail+sms"]})')
    check(claimers['push'] <= pids['push'], f'push claimed by {claimers["push"]}, not only by '
          f'its own supervisor ({pids["push"]})')
    st = sup.status()
    check_eq(st['queue'], 'mail,sms', 'status queue field')
    # Later work in the second queue is found by the one idle poll for both.
    late = db.insert_items(5, queue="'sms'")
    wait_for(lambda: db.scalar(f'SELECT COUNT(*) FROM work_items WHERE state = "done" '
                               f'AND id >= {late[0]}'), 5, 'late sms rows done',
             until=lambda v: v == '5')
    for p in (sup, other):
        check_eq(p.stop(), 0, 'claimd exit code after SIGTERM')


def it_refuses_a_queue_given_twice(t):
    db = t.database()
    r = harness.subprocess.run([harness.CLAIMD_BIN, '--dsn', db.dsn, '--handler', 'noop',
                                '--queue', 'a', '--queue', 'a'], capture_output=True, text=True,
                               timeout=10)
    check_eq(r.returncode, 2, 'exit code')
    check("'a' given twice" in r.stderr, f'message: {r.stderr!r}')


if __name__ == '__main__':
    harness.main()
