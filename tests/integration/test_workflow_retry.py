#!/usr/bin/env python3
"""Retrying rows of a graph (claimd-workflows(7), RETRYING): whichever path puts a dead row back
(POST /v1/jobs/ID/retry, bulk retry, claimctl retry ID, claimctl retry --queue Q --dead), it
counts the row's parents again and waits for those not finished; a retried parent brings back
the rows its death cancelled, waiting for it again; a child whose parent is still dead is not
put back (it would run before its parent, or never); a waiting child that had counted off a
dead parent on an on_dead = 'run' edge waits for it again when it is retried. A whole queue's
dead rows go back 500 to a transaction. And a dead row's children are seen to once: deleting
it later, or a death whose cancels reach it, does not count it off them again."""

import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, runs_of, wait_for


def _http(t, db, h, *args, name='claimd'):
    c = t.claimd(db, '--workers', '2', '--handler', h.spec, '--http', '127.0.0.1:0', *args,
                 name=name)
    c.url, c.token = c.http_url(), c.http_token()
    return c


def _post(c, path):
    req = urllib.request.Request(f'{c.url}{path}', data=b'', method='POST',
                                 headers={'Authorization': f'Bearer {c.token}'})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b'{}')
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b'{}')


def _graph(c, *lines):
    st, body = c.api('POST', '/v1/queues/default/jobs:batch',
                     ''.join(json.dumps(o) + '\n' for o in lines).encode())
    check_eq(st, 202, f'the graph: {body}')
    return [j['id'] for j in body['jobs']]


def _state(db, i):
    return db.row(i, 'state, COALESCE(last_error, \'\')')


def _final(db, ids, what, timeout=30):
    return wait_for(lambda: [db.row(i, 'state')[0] for i in ids], timeout, what,
                    until=lambda s: all(x in ('done', 'dead') for x in s))


def it_bulk_retry_of_a_dead_parent_and_its_cancelled_child_never_runs_the_child(t):
    """The reported case: a fails for good, b (after a) is cancelled; a bulk retry of both
    (what the dependencies' docs advise) runs a again, and when a fails again b is cancelled
    again: b never runs."""
    db = t.database()
    h = t.log_handler('[ "$payload" = fail ] && rc=3')
    c = _http(t, db, h)
    a, b = _graph(c, {'ref': 'a', 'payload': 'fail', 'max_attempts': 1},
                  {'ref': 'b', 'payload': 'child', 'after': ['a']})
    _final(db, [a, b], 'a dead and b cancelled')
    check_eq(_state(db, b)[0], 'dead', 'b')
    st, body = _post(c, '/v1/jobs/bulk?action=retry&state=dead&confirm=2')
    check_eq((st, body.get('acted')), (200, 2), f'bulk retry: {body}')
    wait_for(lambda: len(h.starts(a)), 20, 'a run again', until=lambda n: n >= 2)
    _final(db, [a, b], 'a and b final again')
    check_eq(_state(db, a)[0], 'dead', 'a, failed again')
    check_eq(_state(db, b), ('dead', f'cancelled: row {a}, which it waited for, is dead'),
             'b, cancelled again')
    check_eq(h.starts(b), [], 'runs of b, whose parent never finished')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_retrying_a_dead_parent_brings_back_the_rows_it_cancelled_waiting_for_it(t):
    db = t.database()
    # a fails on its first run only; b and c wait for it (c through b), d waits for a on a
    # run edge and ran when a died.
    marker = t.tmpdir + '/a-failed-once'
    h = t.log_handler(f'if [ "$payload" = a ] && [ ! -e {marker} ]; then touch {marker}; rc=3; '
                      'fi; sleep 0.05')
    c = _http(t, db, h)
    a, b, cc, d = _graph(c, {'ref': 'a', 'payload': 'a', 'max_attempts': 1},
                         {'ref': 'b', 'payload': 'b', 'after': ['a']},
                         {'ref': 'c', 'payload': 'c', 'after': ['b']},
                         {'ref': 'd', 'payload': 'd', 'after': ['a'], 'on_dead': 'run'})
    _final(db, [a, b, cc, d], 'the graph final')
    check_eq([_state(db, i)[0] for i in (a, b, cc, d)], ['dead', 'dead', 'dead', 'done'],
             'a dead, b and c cancelled, d ran')
    st, body = _post(c, f'/v1/jobs/{a}/retry')
    check_eq((st, body.get('retried')), (200, 3), f'retry a: {body}')
    _final(db, [a, b, cc], 'a, b and c final again')
    check_eq([_state(db, i)[0] for i in (a, b, cc, d)], ['done'] * 4, 'every row done')
    runs = runs_of(h)
    check(runs[b][0][0] >= runs[a][-1][1], f'b started before a ended: {runs[a]} {runs[b]}')
    check(runs[cc][0][0] >= runs[b][0][1], 'c started before b ended')
    check_eq(len(runs[d]), 1, 'd ran once (its row was done: not retried)')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_does_not_put_back_a_child_whose_parent_is_still_dead(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = fail ] && rc=3')
    c = _http(t, db, h)
    a, b = _graph(c, {'ref': 'a', 'payload': 'fail', 'max_attempts': 1},
                  {'ref': 'b', 'payload': 'child', 'after': ['a']})
    _final(db, [a, b], 'a dead and b cancelled')
    r = c.ctl('retry', str(b))
    check(r.returncode != 0 and f'row {b} waits for row {a}, which is dead' in r.stderr,
          f'claimctl retry of the child: rc {r.returncode} {r.stderr!r}')
    st, body = _post(c, f'/v1/jobs/{b}/retry')
    check(st == 409 and f'row {a}' in json.dumps(body), f'POST retry of the child: {st} {body}')
    check_eq(_state(db, b), ('dead', f'cancelled: row {a}, which it waited for, is dead'),
             'b after the refused retries')
    # In a bulk retry of b alone it is counted but stays dead.
    st, body = _post(c, f'/v1/jobs/bulk?action=retry&id={b}&confirm=1')
    check_eq((st, body.get('acted')), (200, 0), f'bulk retry of b alone: {body}')
    check_eq(_state(db, b)[0], 'dead', 'b after the bulk retry')
    check_eq(h.starts(b), [], 'runs of b')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_a_waiting_child_waits_again_for_a_retried_run_edge_parent(t):
    db = t.database()
    gate = t.tmpdir + '/open'
    # x fails for good, then (put back) waits for the gate and succeeds; y waits for the
    # gate; z waits for x (run) and y.
    h = t.log_handler(f'case "$payload" in x) if [ -e {gate}.x ]; then while [ ! -e {gate} ]; '
                      f'do sleep 0.05; done; else rc=3; fi;; '
                      f'y) while [ ! -e {gate} ]; do sleep 0.05; done;; esac')
    c = _http(t, db, h)
    x, y, z = _graph(c, {'ref': 'x', 'payload': 'x', 'max_attempts': 1},
                     {'ref': 'y', 'payload': 'y'},
                     {'ref': 'z', 'payload': 'z', 'after': ['x', 'y'], 'on_dead': 'run'})
    _final(db, [x], 'x dead')
    wait_for(lambda: db.row(z, 'waiting_for')[0], 10, 'z counted x off', until=lambda w: w == '1')
    open(gate + '.x', 'w').close()   # x waits for the gate when it runs again
    st, body = _post(c, f'/v1/jobs/{x}/retry')
    check_eq((st, body.get('retried')), (200, 1), f'retry x: {body}')
    check_eq(db.row(z, 'waiting_for, visible_at IS NULL'), ('2', '1'),
             'z waits for x again (and for y)')
    open(gate, 'w').close()
    _final(db, [x, y, z], 'x, y and z final')
    runs = runs_of(h)
    check(runs[z][0][0] >= max(runs[x][-1][1], runs[y][0][1]),
          f'z started before x or y ended: {runs}')
    check_eq([_state(db, i)[0] for i in (x, y, z)], ['done'] * 3, 'every row done')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_retries_a_whole_queue_of_dead_rows_in_chunks(t):
    db = t.database()
    n = 20000
    db.insert_items(n, state="'dead'", attempts=5, finished_at='NOW(6)', last_error="'boom'")
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready(workers=1)
    check_eq(c.ctl('pause', 'default').returncode, 0, 'pause')
    r = c.ctl('retry', '--queue', 'default', '--dead', '--json', timeout=120)
    check_eq(r.returncode, 0, f'claimctl retry --dead: {r.stderr}')
    body = json.loads(r.stdout)
    check_eq(body['retried'], n, 'rows retried')
    check(body.get('transactions', 0) >= n // 500,
          f'{n} rows in {body.get("transactions")} transactions: not in chunks of 500')
    check_eq(db.states()['ready'], n, 'rows ready')
    check_eq(c.ctl('resume', 'default').returncode, 0, 'resume')
    wait_for(db.states, 120, 'every row done', until=lambda s: s['done'] == n)
    check_eq(c.stop(), 0, 'claimd exit code')


def it_discarding_a_dead_parent_does_not_release_its_child_again(t):
    """p died (its run edge counted off c); deleting p later (a discard of a dead row) must not
    count it off c again: c still waits for q."""
    db = t.database()
    gate = t.tmpdir + '/open'
    h = t.log_handler(f'case "$payload" in p) rc=3;; q) while [ ! -e {gate} ]; do sleep 0.05; '
                      'done;; esac')
    c = _http(t, db, h)
    p, q, cc = _graph(c, {'ref': 'p', 'payload': 'p', 'max_attempts': 1},
                      {'ref': 'q', 'payload': 'q'},
                      {'ref': 'c', 'payload': 'c', 'after': ['p', 'q'], 'on_dead': 'run'})
    _final(db, [p], 'p dead')
    wait_for(lambda: db.row(cc, 'waiting_for')[0], 10, 'c counted p off', until=lambda w: w == '1')
    st, body = _post(c, f'/v1/jobs/bulk?action=discard&id={p}&confirm=1')
    check_eq((st, body.get('acted')), (200, 1), f'discard p: {body}')
    check_eq(db.row(cc, 'state, waiting_for, visible_at IS NULL'), ('ready', '1', '1'),
             'c after p was discarded: still waiting for q')
    open(gate, 'w').close()
    _final(db, [q, cc], 'q and c done')
    runs = runs_of(h)
    check(runs[cc][0][0] >= runs[q][0][1], f'c started before q ended: {runs}')
    check_eq(c.stop(), 0, 'claimd exit code')


def it_a_death_does_not_count_off_again_through_a_row_dead_already(t):
    """a dies: b (after a and x) is cancelled, and counted off c on its run edge. When x dies
    later, b is dead already: its run edge to c must not be counted off again (c still waits
    for d)."""
    db = t.database()
    gate, xgate = t.tmpdir + '/open', t.tmpdir + '/x'
    h = t.log_handler(f'case "$payload" in a) rc=3;; x) while [ ! -e {xgate} ]; do sleep 0.05; '
                      f'done; rc=3;; d) while [ ! -e {gate} ]; do sleep 0.05; done;; esac')
    c = _http(t, db, h, '--workers', '3')
    a, x, b, d, cc = _graph(c, {'ref': 'a', 'payload': 'a', 'max_attempts': 1},
                            {'ref': 'x', 'payload': 'x', 'max_attempts': 1},
                            {'ref': 'b', 'payload': 'b', 'after': ['a', 'x']},
                            {'ref': 'd', 'payload': 'd'},
                            {'ref': 'c', 'payload': 'c', 'after': ['b', 'd'], 'on_dead': 'run'})
    _final(db, [a, b], 'a dead, b cancelled')
    check_eq(db.row(cc, 'waiting_for')[0], '1', 'c, after b was cancelled: waits for d')
    open(xgate, 'w').close()
    _final(db, [x], 'x dead')
    check_eq(db.row(cc, 'state, waiting_for, visible_at IS NULL'), ('ready', '1', '1'),
             'c after x died too: still waiting for d')
    open(gate, 'w').close()
    _final(db, [d, cc], 'd and c done')
    runs = runs_of(h)
    check(runs[cc][0][0] >= runs[d][0][1], f'c started before d ended: {runs}')
    check_eq(c.stop(), 0, 'claimd exit code')


# A co-process that runs its items at once: "p" replies after a second with a job for group
# 'held' of queue fu (its outcome's transaction then waits on the test's lock, its parent's
# count-off done), "q" fails its first run, anything else is done.
RACER = r'''
import asyncio, json, os, sys
MARK = sys.argv[1]

async def one(req):
    p = req['payload']
    reply = {'id': req['id'], 'ok': True}
    if p == 'p':
        await asyncio.sleep(1)
        reply['enqueue'] = [{'queue': 'fu', 'group': 'held', 'payload': 'x'}]
    elif p == 'q' and not os.path.exists(os.path.join(MARK, 'q')):
        open(os.path.join(MARK, 'q'), 'w').close()
        reply = {'id': req['id'], 'ok': False, 'error': 'the first run of q fails'}
    sys.stdout.write(json.dumps(reply) + '\n')
    sys.stdout.flush()

async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print('{"ready":true}', flush=True)
    tasks = set()
    while line := await reader.readline():
        req = json.loads(line)
        if not req.get('cancel'):
            t = asyncio.ensure_future(one(req))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)

asyncio.run(main())
'''


def it_a_retry_waits_for_a_parent_finishing_meanwhile(t):
    # A parent p finishing while its cancelled child x is put back (by the retry of x's other
    # parent q): p's finish counted off the rows that were ready then (not x, dead then), so
    # the retry must read p as it is once p's finish commits (it waits for it), not as it was:
    # else x waits for p for ever (until the maintenance check, 10 min here, finds it).
    db = t.database()
    marks = os.path.join(t.tmpdir, 'marks')
    os.mkdir(marks)
    racer = harness.write_script(t.tmpdir, 'racer.py', RACER, lang='python')
    hold = subprocess.Popen([harness._client_bin(), '--no-defaults', '-S', db.server.socket,
                             '-uroot', '--unbuffered', '--batch', '--skip-column-names',
                             db.name], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    t.defer(hold.kill)
    hold.stdin.write("INSERT IGNORE INTO work_groups (queue, group_key, last_seq) VALUES "
                     "('fu', 'held', 0); START TRANSACTION; SELECT COUNT(*) FROM work_groups "
                     "WHERE queue = 'fu' AND group_key = 'held' FOR UPDATE; SELECT 'held';\n")
    hold.stdin.flush()
    check_eq([hold.stdout.readline().strip() for _ in range(2)], ['1', 'held'],
             "the test holds group 'held' of fu")
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--pipe-ready', '--handler',
                 f'pipe:/usr/bin/python3 {racer} {marks}', '--http', '127.0.0.1:0',
                 '--maintenance-interval', '10m')
    c.wait_ready()
    p, q, x = _graph(c, {'ref': 'p', 'payload': 'p'},
                     {'ref': 'q', 'payload': 'q', 'max_attempts': 1},
                     {'payload': 'x', 'after': ['p', 'q']})
    wait_for(lambda: (db.row(q, 'state')[0], db.row(x, 'state')[0]), 15,
             'q dead, x cancelled with it', until=lambda s: s == ('dead', 'dead'))
    wait_for(lambda: int(db.scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '%s' AND INFO LIKE "
        "'INSERT INTO work_groups (queue, group_key, last_seq)%%' AND TIME_MS > 200" % db.name)),
        15, "p's finish waits to commit", until=lambda n: n > 0)
    check_eq(db.row(p, 'state')[0], 'claimed', "p's finish is not committed yet")
    answer = {}
    retry = threading.Thread(target=lambda: answer.update(r=c.ctl('retry', str(q))))
    retry.start()
    time.sleep(1)
    t.note(f'the retry of q had answered before p committed: {not retry.is_alive()}')
    hold.communicate('ROLLBACK;\n', timeout=30)
    retry.join(30)
    check(answer.get('r') is not None and answer['r'].returncode == 0,
          f"claimctl retry q: {answer.get('r') and answer['r'].stderr}")
    wait_for(lambda: db.row(x, 'state, waiting_for'), 15, 'x runs once p and q are done',
             until=lambda r: r[0] == 'done')
    check_eq([db.row(i, 'state')[0] for i in (p, q)], ['done', 'done'], 'p and q done')


if __name__ == '__main__':
    harness.main()
