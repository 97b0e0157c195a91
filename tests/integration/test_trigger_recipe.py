#!/usr/bin/env python3
"""The recipe of claimd-table(5) "Starting work from a trigger", run as it is written there: an
application's row that changes state starts a job in the same transaction (a rollback starts
none), the job is started by the binary log's news like any insert (not by a poll), paying
twice adds one job, and a trigger's insert that work_items refuses fails the application's
statement."""

import os
import re
import time

import harness
from harness import check, check_eq, wait_for

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'src', 'deploy',
                    'man', 'claimd-table.5.md')


def recipe():
    """The SQL block after the recipe's heading in the page."""
    with open(PAGE) as f:
        text = f.read()
    m = re.search(r'\*\*Starting work from a trigger\.\*\*.*?```sql\n(.*?)```', text, re.S)
    check(m is not None, f'{PAGE} has the recipe and its SQL')
    return m.group(1).strip()


def jobs(db):
    return db.sql("SELECT id, queue, payload, state, dedupe_key, "
                  "TIMESTAMPDIFF(MICROSECOND, created_at, finished_at) FROM work_items ORDER BY id")


def it_starts_a_job_in_the_transaction_that_changes_a_row(t):
    db = t.database()
    db.execute("CREATE TABLE orders (id INT PRIMARY KEY, state VARCHAR(16) NOT NULL); "
               "INSERT INTO orders VALUES (1, 'new'), (2, 'new')")
    db.execute('DELIMITER //\n' + recipe() + '//\nDELIMITER ;')
    # Woken by the binary log: a poll every 30 s would not start it within the 2 s below.
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', '--queue', 'mail',
                 '--poll-interval', '30s')
    c.wait_ready()
    db.execute("START TRANSACTION; UPDATE orders SET state = 'paid' WHERE id = 1; ROLLBACK")
    check_eq(jobs(db), [], 'a change rolled back starts no job')
    db.execute("UPDATE orders SET state = 'paid' WHERE id = 1")
    rows = wait_for(lambda: jobs(db), 10, 'the job is done',
                    until=lambda r: len(r) == 1 and r[0][3] == 'done')
    _, queue, payload, _, key, us = rows[0]
    check_eq((queue, payload.replace(' ', ''), key), ('mail', '{"order":1}', 'paid-1'),
             "the job: queue mail, the order's id, its dedupe key")
    check(int(us) < 2_000_000, f'started by the binary log, not a poll: done {int(us)} us after '
          'its insert')
    db.execute("UPDATE orders SET state = 'refunded' WHERE id = 1; "
               "UPDATE orders SET state = 'paid' WHERE id = 1")
    time.sleep(0.5)
    check_eq(len(jobs(db)), 1, 'paid twice: one job')
    # A value work_items refuses fails the application's own statement, which changes nothing.
    db.execute("DELIMITER //\nCREATE TRIGGER orders_bad AFTER UPDATE ON orders FOR EACH ROW "
               "IF NEW.state = 'broken' THEN INSERT INTO work_items (queue, payload, priority) "
               "VALUES ('mail', 'x', 99); END IF//\nDELIMITER ;")
    try:
        db.execute("UPDATE orders SET state = 'broken' WHERE id = 2")
        harness.fail('an insert work_items refuses did not fail the update')
    except RuntimeError as e:
        check('priority' in str(e), f"the error names what work_items refused: {e}")
    check_eq(db.scalar('SELECT state FROM orders WHERE id = 2'), 'new', 'the update did not happen')
    check_eq(len(jobs(db)), 1, 'and added no job')


if __name__ == '__main__':
    harness.main()
