#!/usr/bin/env python3
"""Follow-up jobs: the jobs a handler adds while it runs (pipe: "enqueue" on the reply, the
Python package's job.enqueue, so:'s job->enqueue) are committed in the same transaction as
the run's outcome, fenced like it. Shown here through the real claimd and MariaDB: the jobs
and their options land with a success (a graph too, waiting as any child); jobs that are not
valid fail the run with a clear error and add nothing; a run whose claim was taken away adds
nothing; a worker killed after the reply and before the commit (its transaction held open on
a lock the test holds) adds nothing, and the retry adds them once; and a kill storm over 300
runs leaves exactly one follow-up per run."""

import json
import os
import random
import subprocess
import time

import harness
from harness import check, check_eq, wait_for
from test_python_package import venv

HANDLER = r'''
import asyncio, os, sys
import claimd

MARK = sys.argv[1]

def mark(name):
    open(os.path.join(MARK, name), 'w').close()

async def handle(job):
    p = job.payload
    kind = p['kind']
    with open(os.path.join(MARK, 'runs'), 'a') as f:   # a line a run (one write, appended)
        f.write('%s %d\n' % (kind, job.id))
    if kind == 'plain':
        job.enqueue('fu', {'parent': job.id, 'n': 1}, group='g-%d' % job.id)
        job.enqueue('fu', 'text of %d' % job.id, dedupe='d-%d' % job.id, priority=-2,
                    delay=0.2)
    elif kind == 'graph':
        job.enqueue('fu', {'parent': job.id, 'step': 'a'}, ref='a')
        job.enqueue('fu', {'parent': job.id, 'step': 'b'}, ref='b', after=['a'])
    elif kind == 'refused':      # a row of a graph in a FIFO group: the database's rules
        job.enqueue('fu', {'parent': job.id}, ref='a', group='g')
        job.enqueue('fu', {'parent': job.id}, after=['a'])
    elif kind in ('held', 'held-fu'):   # a group is locked by the test before it replies
        if not os.path.exists(os.path.join(MARK, 'held-%d' % job.id)):
            mark('held-%d' % job.id)
            await asyncio.sleep(1)
        job.enqueue('fu', {'parent': job.id}, group='held' if kind == 'held-fu' else None)
    elif kind == 'slow':         # its claim is taken away while it sleeps
        mark('slow-%d' % job.id)
        await asyncio.sleep(p['s'])
        job.enqueue('fu', {'parent': job.id})
        mark('slow-done-%d' % job.id)
    elif kind == 'storm':
        await asyncio.sleep(0.2)
        job.enqueue('fu', {'parent': job.id})
    return {'kind': kind}

claimd.run(handle)
'''

# A co-process written by hand: replies with follow-ups claimd must refuse.
RAW = r'''
import json, sys
print('{"ready":true}', flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req.get('cancel'):
        continue
    kind = req['payload']
    if kind == 'unknown-key':
        reply = {'id': req['id'], 'ok': True, 'enqueue': [{'queue': 'fu', 'bogus': 1}]}
    elif kind == 'not-objects':
        reply = {'id': req['id'], 'ok': True, 'enqueue': [1, 2]}
    elif kind == 'with-failure':
        reply = {'id': req['id'], 'ok': False, 'error': 'x', 'enqueue': [{'queue': 'fu'}]}
    elif kind == 'queue-too-long':
        reply = {'id': req['id'], 'ok': True, 'enqueue': [{'queue': 'q' * 65}]}
    elif kind == 'fine':
        reply = {'id': req['id'], 'ok': True,
                 'enqueue': [{'payload': 'own queue'}, {'queue': 'fu', 'payload': 'fu'}]}
    else:
        reply = {'id': req['id'], 'ok': True}
    print(json.dumps(reply), flush=True)
'''


def followups(db, parent=None):
    """The rows of queue fu (of one parent: payload's parent, or the number its text ends
    with), in order; test_node_package reads them too."""
    rows = db.sql("SELECT id, payload, group_key, dedupe_key, priority, content_type, "
                  "state, waiting_for, visible_at IS NULL, max_attempts, timeout_s, "
                  "traceparent, run_at > created_at FROM work_items WHERE queue = 'fu' "
                  "ORDER BY id")
    out = []
    for r in rows:
        try:
            p = json.loads(r[1])
        except ValueError:
            p = r[1]
        of = p.get('parent') if isinstance(p, dict) else (int(p.split()[-1]) if p.split()[-1]
                                                           .isdigit() else None)
        if parent is None or of == parent:
            out.append({'id': int(r[0]), 'payload': p, 'group': r[2], 'dedupe': r[3],
                        'priority': int(r[4]), 'type': r[5], 'state': r[6],
                        'waiting_for': int(r[7]), 'no_visible': r[8] == '1',
                        'max_attempts': int(r[9]), 'timeout': r[10], 'traceparent': r[11],
                        'later': r[12] == '1'})
    return out


def runs_of(marks, kind):
    """{item: how many times the handler ran it} for the runs of kind."""
    out = {}
    with open(os.path.join(marks, 'runs')) as f:
        for line in f:
            k, i = line.split()
            if k == kind:
                out[int(i)] = out.get(int(i), 0) + 1
    return out


def parent_states(db):
    """The states of queue default's rows (the runs; their jobs go to fu)."""
    counts = {'ready': 0, 'claimed': 0, 'done': 0, 'dead': 0}
    for state, n in db.sql("SELECT state, COUNT(*) FROM work_items WHERE queue = 'default' "
                           "GROUP BY state"):
        counts[state] = int(n)
    return counts


def start(t, db, *extra, workers='1', concurrency='8'):
    py = venv()
    marks = os.path.join(t.tmpdir, 'marks')
    os.makedirs(marks, exist_ok=True)
    handler = t.script(HANDLER, lang='python', name='handler.py')
    c = t.claimd(db, '--workers', workers, '--concurrency', concurrency, '--pipe-ready',
                 '--handler', f'pipe:{py} {handler} {marks}', '--retry-base', '100ms', *extra)
    c.wait_ready()
    return c, marks


def json_item(db, **payload):
    return db.insert_item(json.dumps(payload), content_type="'application/json'")


def done(db, ids, timeout=30):
    wait_for(lambda: [db.row(i, 'state')[0] for i in ids], timeout, f'rows {ids} finished',
             until=lambda s: all(x in ('done', 'dead') for x in s))


def it_commits_follow_up_jobs_with_the_outcome(t):
    db = t.database()
    c, _ = start(t, db)
    plain = json_item(db, kind='plain')
    graph = json_item(db, kind='graph')
    refused = db.insert_item(json.dumps({'kind': 'refused'}), content_type="'application/json'",
                             max_attempts=1)
    done(db, [plain, graph, refused])
    check_eq(db.row(plain, 'state')[0], 'done', 'the run that adds jobs is done')
    fu = followups(db, plain)
    check_eq(len(fu), 2, f'its two jobs are added: {fu}')
    check_eq((fu[0]['payload'], fu[0]['group'], fu[0]['type']),
             ({'parent': plain, 'n': 1}, f'g-{plain}', 'application/json'),
             'a JSON payload, its group, its content type')
    check_eq((fu[1]['payload'], fu[1]['dedupe'], fu[1]['priority']),
             (f'text of {plain}', f'd-{plain}', -2), 'a text payload, its dedupe key, priority')
    g = followups(db, graph)
    check_eq([(x['payload']['step'], x['waiting_for'], x['no_visible']) for x in g],
             [('a', 0, False), ('b', 1, True)], 'a graph: b waits for a, as any child')
    check_eq(db.scalar(f"SELECT COUNT(*) FROM work_deps WHERE parent_id = {g[0]['id']} AND "
                       f"child_id = {g[1]['id']}"), '1', 'the edge is written')
    state, attempts, err = db.row(refused)
    check_eq(state, 'dead', 'jobs the database refuses fail the run')
    check('the jobs it adds were refused' in (err or '') and 'FIFO group' in (err or ''),
          f'the error says which rule: {err!r}')
    check_eq(followups(db, refused), [], 'and add nothing')


def it_refuses_follow_ups_that_are_not_jobs(t):
    db = t.database()
    raw = t.script(RAW, lang='python', name='raw.py')
    c = t.claimd(db, '--workers', '1', '--pipe-ready', '--handler',
                 f'pipe:/usr/bin/python3 {raw}')
    c.wait_ready()
    ids = {k: db.insert_item(k, max_attempts=1) for k in
           ('unknown-key', 'not-objects', 'with-failure', 'queue-too-long', 'fine')}
    done(db, list(ids.values()))
    for kind, want in (('unknown-key', "unknown key 'bogus'"),
                       ('not-objects', 'is not a JSON object'),
                       ('with-failure', '"enqueue" with "ok":false'),
                       ('queue-too-long', 'queue')):
        state, _, err = db.row(ids[kind])
        check(state == 'dead' and want in (err or ''), f'{kind}: dead, saying {want!r}: '
              f'{state} {err!r}')
    check_eq(db.row(ids['fine'], 'state')[0], 'done', 'a reply with valid jobs is done')
    check_eq(db.scalar("SELECT COUNT(*) FROM work_items WHERE payload = 'own queue' AND "
                       "queue = 'default'"), '1', 'a job without a queue goes to its own')
    check_eq([x['payload'] for x in followups(db)], ['fu'], 'only the valid ones were added')


def it_adds_follow_ups_from_a_c_plugin(t):
    db = t.database()
    c = t.claimd(db, '--workers', '1', '--handler', t.plugin('ok')[1])
    c.wait_ready()
    item = db.insert_item('enqueue')
    done(db, [item])
    state, _, err = db.row(item)
    check_eq((state, err), ('done', None), 'the plugin ran and its enqueue answered as told')
    check_eq([x['payload'] for x in followups(db)], [{'parent': item, 'n': 1}, f'2 of {item}'],
             'its two jobs, in order')


def it_adds_nothing_when_the_claim_was_lost(t):
    db = t.database()
    c, marks = start(t, db)
    item = json_item(db, kind='slow', s=2)
    wait_for(lambda: os.path.exists(os.path.join(marks, f'slow-{item}')), 15, 'the run started')
    # Another holder's claim, as a lease that ran out and a claim elsewhere would leave it.
    db.execute(f'UPDATE work_items SET claim_token = claim_token + 1000 WHERE id = {item}')
    wait_for(lambda: os.path.exists(os.path.join(marks, f'slow-done-{item}')), 15,
             'the run ended with its reply')
    wait_for(lambda: 'had lost their claim' in c.log() or followups(db, item), 10,
             'the outcome written or refused')
    check_eq(followups(db, item), [], 'a run whose claim was lost adds no job')
    check('had lost their claim' in c.log(), 'the worker says the claim was lost')
    check_eq(db.row(item, 'state')[0], 'claimed', 'and its outcome is not written')


# Holds the row of FIFO group 'held' of a queue locked (a transaction of its own, through the
# virtualenv's PyMySQL) from "held" on its stdout until a line on its stdin: a transaction that
# finishes a row of that group, or adds one, waits for it.
HOLD = r'''
import sys, pymysql
conn = pymysql.connect(unix_socket=sys.argv[1], user='root', database=sys.argv[2],
                       autocommit=False)
with conn.cursor() as cur:
    cur.execute("INSERT IGNORE INTO work_groups (queue, group_key, last_seq) "
                "VALUES (%s, 'held', 0)", (sys.argv[3],))
    conn.commit()
    cur.execute("SELECT * FROM work_groups WHERE queue = %s AND group_key = 'held' FOR UPDATE",
                (sys.argv[3],))
    print('held', flush=True)
    sys.stdin.readline()
    conn.rollback()
'''


def _waiting(db, statement):
    """Sessions of db's claimd stuck (200 ms or more) in a statement that starts so."""
    return int(db.scalar("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '%s' "
                         "AND INFO LIKE '%s%%' AND TIME_MS > 200" % (db.name, statement)))


def _kill_while_held(t, queue, statement):
    """A run (its own FIFO group 'held' when queue is default) that adds a job (to group
    'held' of fu when queue is fu); the test holds that group's lock from after the run
    starts, so that the transaction that writes the outcome and the job waits in statement;
    then kills the worker, and lets go of the lock. Returns (item, its runs)."""
    db = t.database()
    c, marks = start(t, db)
    kind = 'held' if queue == 'default' else 'held-fu'
    item = db.insert_item(json.dumps({'kind': kind}), content_type="'application/json'",
                          **({'group_key': "'held'"} if queue == 'default' else {}))
    wait_for(lambda: os.path.exists(os.path.join(marks, f'held-{item}')), 15, 'the run started')
    hold = subprocess.Popen([venv(), '-c', HOLD, db.server.socket, db.name, queue], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    t.defer(hold.kill)
    check_eq(hold.stdout.readline().strip(), 'held', 'the test holds the group locked')
    # The run replied with its job, and the transaction that writes both waits: the reply is
    # in, the commit is not.
    wait_for(lambda: _waiting(db, statement), 15, f'the outcome waits in {statement!r}',
             until=lambda n: n > 0)
    w = harness.worker_with_item(c.status(), item)
    pid = w['pid'] if w else c.status()['workers'][0]['pid']
    check_eq(db.row(item, 'state')[0], 'claimed', 'nothing is committed before the kill')
    harness.kill_quietly(pid)
    time.sleep(0.3)
    hold.communicate('\n', timeout=30)
    done(db, [item])
    check_eq(db.row(item, 'state')[0], 'done', 'the row ends done')
    check_eq(len(followups(db, item)), 1, 'its job is added once')
    return item, runs_of(marks, kind).get(item)


def it_adds_follow_ups_once_when_the_worker_dies_before_the_commit(t):
    # Waiting to lock its own group, before the row is completed: the kill leaves nothing
    # written, and the run is made again.
    _, runs = _kill_while_held(t, 'default', 'INSERT INTO work_groups (queue, group_key) SELECT')
    check_eq(runs, 2, 'its handler ran twice (its worker killed after the first reply)')


def it_adds_follow_ups_once_when_the_worker_dies_while_they_are_written(t):
    # Waiting to add the job (its group's lock), the row completed in the same transaction:
    # the server had the commit too, so either both are written or neither (then it runs
    # again), never one.
    # (the statement of the insert trigger of work_items that numbers a group's rows)
    _, runs = _kill_while_held(t, 'fu', 'INSERT INTO work_groups (queue, group_key, last_seq)')
    check(runs in (1, 2), f'its handler ran once or twice ({runs})')
    t.note(f'the handler ran {runs} time(s)')


def it_adds_each_follow_up_exactly_once_through_a_kill_storm(t):
    db = t.database()
    c, marks = start(t, db, workers='2', concurrency='8')
    n = 300
    ids = db.insert_items(n, payload="'{\"kind\":\"storm\"}'", content_type="'application/json'",
                          max_attempts=50)
    rng = random.Random(7)
    kills = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        s = parent_states(db)
        if s['ready'] == 0 and s['claimed'] == 0:
            break
        if kills < 25:
            ws = [w['pid'] for w in c.status().get('workers', []) if w.get('pid')]
            if ws:
                harness.kill_quietly(rng.choice(ws))
                kills += 1
        time.sleep(rng.uniform(0.05, 0.4))
    wait_for(lambda: parent_states(db), 60, 'every run done', until=lambda s: s['ready'] == 0
             and s['claimed'] == 0 and s['dead'] == 0)
    check(kills >= 5, f'workers were killed while the runs went on ({kills})')
    runs = runs_of(marks, 'storm')
    again = sum(1 for k in runs.values() if k > 1)
    rows = db.sql("SELECT JSON_VALUE(payload, '$.parent'), COUNT(*) FROM work_items "
                  "WHERE queue = 'fu' GROUP BY 1")
    per = {int(p): int(k) for p, k in rows}
    t.note(f'{kills} kills, {again} runs made again, {sum(per.values())} follow-ups')
    check(again > 0, 'some runs were made again after a kill')
    check_eq(sorted(per), sorted(ids), 'every run added its job')
    check_eq([p for p, k in per.items() if k != 1], [], 'none twice')


# An exec: handler: its follow-ups are lines on its descriptor 3 (CLAIMD_ENQUEUE_FD), the
# last one here without its newline; "fail" writes one and exits 1.
EXEC_FOLLOWUPS = r'''
read -r what
echo "{\"queue\":\"fu\",\"payload\":{\"parent\":$CLAIMD_ITEM_ID,\"n\":1}}" >&"$CLAIMD_ENQUEUE_FD"
printf '{"queue":"fu","payload":{"parent":%s,"n":2}}' "$CLAIMD_ITEM_ID" >&3
if [ "$what" = fail ]; then echo "failing as asked" >&2; exit 1; fi
'''


def it_adds_follow_ups_from_an_exec_handler(t):
    db = t.database()
    path = t.script(EXEC_FOLLOWUPS, lang='bash', name='exec.sh')
    # Both rows before claimd runs: insert_item reads the new id as the rows after the
    # highest, and follow-ups added meanwhile would be among them.
    ok = db.insert_item('ok')
    failing = db.insert_item('fail', max_attempts=1)
    c = t.claimd(db, '--workers', '1', '--handler', f'exec:{path}')
    c.wait_ready()
    done(db, [ok, failing])
    state, _, err = db.row(ok)
    check_eq((state, err), ('done', None), 'the run that writes its jobs to fd 3 is done')
    check_eq([x['payload'] for x in followups(db, ok)], [{'parent': ok, 'n': 1},
                                                         {'parent': ok, 'n': 2}],
             'its two jobs, in order (the last line without its newline too)')
    state, _, err = db.row(failing)
    check(state == 'dead' and 'exit status 1' in (err or ''),
          f'one that writes its jobs and exits 1 fails: {state} {err!r}')
    check_eq(followups(db, failing), [], 'and adds nothing')


if __name__ == '__main__':
    harness.main()
