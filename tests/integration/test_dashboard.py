#!/usr/bin/env python3
"""The dashboard in a real browser: Debian's Chromium driven by playwright-core
(tests/browser/dashboard.mjs) against the real claimd. The page takes the token claimd made
from its address (#token=..., as tools/demo prints it) and drops it from there, asks for it in
a tab opened without it, shows the workers, the chart, the cluster's history (two
supervisors' rows, from the database), the queues and the dead jobs; a queue's page sets a
key's limit and the retry back-off (checked in the database); the job browser picks rows by
state, queue and text in the error, and retries what it picked in bulk (a count, a
confirmation; checked in the database); a job's page shows its failed attempts, and a
waiting row's page the parents it still waits for; "Retry"
puts a dead row back and "Pause" pauses a queue (both checked in the database here); a job's
page shows its result; nothing is fetched from anywhere but claimd, and its
Content-Security-Policy refuses nothing the page does.

Needs node, chromium and tests/browser/node_modules (npm ci in tests/browser): .ci/run
installs them and sets CLAIMD_TEST_REQUIRE_BROWSER=1, under which their absence fails the
test instead of skipping it. CLAIMD_SCREENSHOT=PATH keeps the page's screenshot,
CLAIMD_SCREENSHOTS=DIR one of the jobs, job and queue pages too."""

import json
import os
import re
import shutil
import subprocess
import urllib.request

import harness
from harness import check, check_eq, wait_for

BROWSER_DIR = os.path.join(harness.SOURCE_ROOT, 'tests', 'browser')


def it_shows_the_pool_and_acts_on_dead_jobs_and_queues(t):
    node = shutil.which('node')
    chromium = os.environ.get('CHROMIUM') or shutil.which('chromium')
    harness.require_browser_tools('node', node)
    harness.require_browser_tools('chromium', chromium)
    harness.require_browser_tools('playwright-core', os.path.isdir(os.path.join(BROWSER_DIR, 'node_modules',
                                                        'playwright-core')))
    db = t.database()
    # For the job browser (older than the dead row the overview shows): dead rows of a queue
    # nobody serves, two errors, and another queue's with the same error; below, a row that
    # fails twice, then is dead (its attempts' errors).
    picked = db.insert_items(30, queue="'bulkq'", state="'dead'", attempts=3,
                             last_error="CONCAT('disk full on node ', seq)")
    db.insert_items(10, queue="'bulkq'", state="'dead'", attempts=3, last_error="'timed out'")
    db.insert_items(5, queue="'other2'", state="'dead'", attempts=3, last_error="'disk full'")
    dead = db.insert_item('poison', queue="'mail'", state="'dead'", attempts=5,
                          last_error="'exit status 3: it broke'")
    running = db.insert_item('sleep')   # pipe_echo sleeps on it: a worker shows it running
    c = t.claimd(db, '--workers', '2', '--handler',
                 f'pipe:{harness.PIPE_ECHO} {os.path.join(t.tmpdir, "pipe.log")}',
                 '--http', '127.0.0.1:0', '--grace', '1s', '--history-flush', '1s',
                 '--retry-base', '100ms')
    # A second supervisor, on a queue of its own: the history is the cluster's.
    other = t.claimd(db, '--workers', '1', '--handler', 'noop', '--queue', 'other',
                     '--history-flush', '1s')
    db.insert_items(7, queue="'other'")
    url = 'http://' + wait_for(lambda: re.search(r'http: listening on http://([0-9.:]+)/',
                                                 c.log()), 10, 'the http line').group(1)
    token = c.http_token()
    c.wait_ready()
    req = urllib.request.Request(url + '/v1/queues/default/jobs', data=b'result', method='POST',
                                 headers={'Authorization': f'Bearer {token}',
                                          'Content-Type': 'text/plain'})
    with urllib.request.urlopen(req, timeout=10) as r:
        job = json.loads(r.read())['id']
    wait_for(lambda: db.row(job, 'state')[0], 15, 'the job done', until=lambda s: s == 'done')
    lines = b'{"payload":"b1"}\n{"payload":"b2"}\n{"payload":"b3"}\n{"payload":"cb","callback":true}\n'
    req = urllib.request.Request(url + '/v1/queues/default/jobs:batch?batch=1&description=demo',
                                 data=lines, method='POST',
                                 headers={'Authorization': f'Bearer {token}'})
    with urllib.request.urlopen(req, timeout=10) as r:
        batch = json.loads(r.read())['batch']
    r = c.ctl('schedule', 'nightly', '--cron', '30 2 * * *', '--tz', 'Europe/Berlin', 'report')
    check_eq(r.returncode, 0, f'claimctl schedule: {r.stderr}')
    failing = db.insert_item('fail', max_attempts=2)
    wait_for(lambda: db.row(failing)[0], 15, 'the failing row dead', until=lambda s: s == 'dead')
    # Both have written their minutes: the history holds every row done so far.
    done = lambda: int(db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'done'"))
    wait_for(lambda: int(db.scalar('SELECT IFNULL(SUM(done), 0) FROM queue_history')), 15,
             'both supervisors\' minutes in queue_history', until=lambda n: n == done() >= 12)
    check_eq(db.scalar('SELECT COUNT(DISTINCT supervisor_id) FROM queue_history'), '2',
             'supervisors in the history')
    history_done = done()
    # A row of a queue nobody serves that waits for two rows, one of them done already (a
    # parent done does not hold it): its page marks the other as what it still waits for.
    wp, wq, ww = db.insert_items(3, queue="'waitq'")
    db.execute(f"UPDATE work_items SET state = 'done', visible_at = NULL, finished_at = NOW(6) "
               f"WHERE id = {wq}")
    db.execute(f'INSERT INTO work_deps (parent_id, child_id) VALUES ({wp}, {ww}), ({wq}, {ww})')
    shot = os.environ.get('CLAIMD_SCREENSHOT') or os.path.join(t.tmpdir, 'dashboard.png')
    spec = {'url': url, 'token': token, 'workers': 2, 'dead': dead, 'queue': 'mail',
            'job': job, 'result': '"type": "text/plain"', 'screenshot': shot,
            'running': running, 'schedule': 'nightly', 'cron': '30 2 * * *',
            'zone': 'Europe/Berlin', 'batch': batch, 'history_done': history_done,
            'limit_queue': 'other', 'filter': {'state': 'dead', 'queue': 'bulkq', 'error': 'DISK'},
            'picked': picked, 'failing': failing, 'waiting': ww}
    if os.environ.get('CLAIMD_SCREENSHOTS'):
        spec['shots'] = os.environ['CLAIMD_SCREENSHOTS']
    r = subprocess.run([node, os.path.join(BROWSER_DIR, 'dashboard.mjs'), json.dumps(spec)],
                       cwd=BROWSER_DIR, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CHROMIUM=chromium))
    t.note(f'dashboard.mjs: {r.stdout.strip()} {r.stderr.strip()}')
    check_eq(r.returncode, 0, f'the browser steps ({r.stderr.strip()})')
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    check(seen['shows the workers'] >= 2, f'worker rows: {seen}')
    check_eq(seen['shows the item a worker runs'], running, 'the running item shown')
    check_eq(seen['shows a job'], 'done', "the job page's state")
    check_eq(seen['shows the parents a waiting row waits for'],
             {'parents': [[wp, True], [wq, False]], 'still': '1 of its parents (marked) not finished'},
             "a waiting row's parents, the one it still waits for marked")
    check_eq(db.row(dead, 'state, attempts')[:2], ('ready', '0'), 'the retried row in the database')
    check_eq(db.scalar("SELECT paused FROM queues WHERE name = 'mail'"), '1',
             'the paused queue in the database')
    check_eq(seen['shows a batch'], '3', "the batch's done members, as the dashboard shows them")
    check_eq(db.scalar("SELECT paused FROM schedules WHERE name = 'nightly'"), '1',
             'the schedule paused from the dashboard, in the database')
    check_eq(seen['adds a schedule and deletes it'], True, 'a schedule added and deleted')
    check_eq(db.scalar("SELECT COUNT(*) FROM schedules"), '1',
             'schedules left: the paused one, not the one the page added and deleted')
    check(seen['shows the cluster history'] >= history_done,
          f"the history's done total {seen['shows the cluster history']}, want {history_done} "
          "(both supervisors' rows)")
    check_eq(db.scalar("SELECT concurrency FROM key_limits WHERE queue = 'other' AND "
                       "group_key = 'k1'"), '2', "the key limit set on the queue's page")
    check_eq(db.scalar("SELECT CONCAT(retry_base_ms, ' ', retry_max_ms) FROM queues "
                       "WHERE name = 'other'"), '750 60000', "the back-off set on the queue's page")
    check_eq(seen['filters jobs'], sorted(picked, reverse=True),
             'the rows the filters picked, newest first')
    check_eq(seen['retries the picked rows in bulk'], len(picked), 'rows the bulk retry acted on')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE queue = 'bulkq' AND state = 'ready' "
                       "AND attempts = 0"), str(len(picked)), 'the picked rows put back')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'dead' AND queue IN "
                       "('bulkq', 'other2')"), '15', 'the rows not picked still dead')
    check_eq(seen["shows a job's failed attempts"], [['1', 'pipe_echo: failing as asked'],
                                                      ['2', 'pipe_echo: failing as asked']],
             "the failed attempts on the job's page")
    check(os.path.getsize(shot) > 10000, 'a screenshot was taken')
    other.stop()
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
