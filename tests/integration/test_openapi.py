#!/usr/bin/env python3
"""The HTTP API as src/console/openapi.json describes it: the document claimd serves at
/v1/openapi.json (and installs) is valid OpenAPI 3.1, and every operation in it answers, through
the real claimd against MariaDB, what the document says for its status and content type
(tests/browser/openapi.mjs: a validator of OpenAPI documents and Ajv, from npm). An operation
the document lists that the test did not answer with a 2xx fails it, so a new route needs its
description and a call here.

Needs node and tests/browser/node_modules (npm ci in tests/browser): .ci/run installs them and
sets CLAIMD_TEST_REQUIRE_BROWSER=1, under which their absence fails the test."""

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request

import harness
from harness import check, check_eq, wait_for

BROWSER_DIR = os.path.join(harness.SOURCE_ROOT, 'tests', 'browser')
DOC = os.path.join(harness.SOURCE_ROOT, 'src', 'console', 'openapi.json')


class Recorder:
    """Requests to claimd's API, each answer kept with the operation it is an answer of."""

    def __init__(self, c):
        self.url, self.token, self.samples = c.http_url(), c.http_token(), []

    def __call__(self, method, path, template, body=None, token=True, stream=False, headers=None):
        headers = dict(headers or {}, **({'Authorization': f'Bearer {self.token}'} if token else {}))
        req = urllib.request.Request(self.url + path, data=body, method=method.upper(),
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                status, ctype = r.status, r.headers.get('Content-Type', '')
                raw = r.readline() if stream else r.read()
        except urllib.error.HTTPError as e:
            status, ctype, raw = e.code, e.headers.get('Content-Type', ''), e.read()
        text = raw.decode()
        body = json.loads(text) if ctype.startswith('application/json') else text
        self.samples.append({'method': method, 'path': template, 'status': status,
                             'type': ctype, 'body': body})
        return status, body


def it_serves_a_valid_description_that_every_answer_follows(t):
    node = shutil.which('node')
    harness.require_browser_tools('node', node)
    for m in ('ajv', 'ajv-formats', '@seriousme/openapi-schema-validator'):
        harness.require_browser_tools(m, os.path.isdir(os.path.join(BROWSER_DIR, 'node_modules', m)))
    db = t.database()
    h, spec = t.pipe_echo('api')
    c = t.claimd(db, '--workers', '1', '--handler', spec, '--http', '127.0.0.1:0')
    c.wait_ready()
    api = Recorder(c)

    st, served = api('get', '/v1/openapi.json', '/v1/openapi.json')
    with open(DOC) as f:
        check_eq((st, served), (200, json.load(f)), 'the document served is the one in the tree')
    api('get', '/healthz', '/healthz', token=False)
    api('get', '/metrics', '/metrics')
    api('get', '/v1/status', '/v1/status', token=False)           # 401
    api('get', '/v1/status', '/v1/status')
    api('get', '/v1/supervisors', '/v1/supervisors')
    api('get', '/v1/stats?seconds=5', '/v1/stats')
    api('get', '/v1/stats?seconds=0', '/v1/stats')                 # 400
    api('get', '/v1/stats?queue=default&since=2h&step=300', '/v1/stats')   # the history
    api('get', '/v1/stats?step=90', '/v1/stats')                   # 400

    jobs = '/v1/queues/{queue}/jobs'
    st, added = api('post', '/v1/queues/default/jobs?group=u7&priority=-2', jobs, b'{"to":"a@b"}')
    check_eq(st, 202, f'add: {added}')
    api('post', '/v1/queues/default/jobs?dedupe=k&delay=1h', jobs, b'later')
    api('post', '/v1/queues/default/jobs?dedupe=k&delay=1h', jobs, b'later')      # 200, duplicate
    api('post', '/v1/queues/default/jobs?priority=99', jobs, b'x')               # 400
    key = {'Idempotency-Key': 'order-7-charge'}
    st1, one = api('post', '/v1/queues/default/jobs?delay=1h', jobs, b'charge', headers=key)
    st2, two = api('post', '/v1/queues/default/jobs?delay=1h', jobs, b'charge', headers=key)
    check_eq((st1, st2, two), (202, 200, {'id': one['id'], 'duplicate': True}),
             'an Idempotency-Key again answers the row it made')
    check_eq(db.row(one['id'], 'dedupe_key')[0], 'order-7-charge', 'kept as the dedupe key')
    st, dead = api('post', '/v1/queues/default/jobs?max_attempts=1', jobs, b'fail')
    lines = b'{"payload":"a","ref":"a"}\n{"payload":"b","after":["a"]}\n'
    st, graph = api('post', '/v1/queues/default/jobs:batch?batch=1&description=d',
                    '/v1/queues/{queue}/jobs:batch', lines)
    check_eq(st, 202, f'batch: {graph}')
    wait_for(lambda: db.row(dead['id'], 'state')[0], 20, 'the failing row dead',
             until=lambda s: s == 'dead')
    wait_for(lambda: db.row(added['id'], 'state')[0], 20, 'the row done',
             until=lambda s: s == 'done')

    job = '/v1/jobs/{id}'
    api('get', f"/v1/jobs/{added['id']}", job)
    api('get', f"/v1/jobs/{added['id']}?wait=1s", job)
    api('get', '/v1/jobs/99999999', job)                                        # 404
    api('get', '/v1/jobs/0', job)                                               # 400
    api('get', f"/v1/jobs/{added['id']}/events", '/v1/jobs/{id}/events', stream=True)
    api('get', '/v1/jobs?state=dead&limit=5', '/v1/jobs')
    # A full page links the next one (Link: <...before=ID>; rel="next"), the last none.
    dead3 = db.insert_items(3, payload="'gone'", queue="'old q'", state="'dead'")
    pages, path = [], '/v1/jobs?state=dead&queue=old%20q&limit=2'
    while path and len(pages) < 5:
        req = urllib.request.Request(api.url + path, headers={'Authorization': f'Bearer {api.token}'})
        with urllib.request.urlopen(req, timeout=20) as r:
            pages.append([j['id'] for j in json.loads(r.read())])
            link = r.headers.get('Link')
        path = link[1:link.index('>')] if link else None
        check(not link or link.endswith('>; rel="next"'), f'the Link header: {link}')
    check_eq(pages, [dead3[:0:-1], dead3[:1]], 'two pages, newest first, through the Link')
    api('get', '/v1/jobs?state=nonsense', '/v1/jobs')                          # 400
    # The job browser: filters, the job page with its errors, dependencies and batch.
    api('get', '/v1/jobs?group=u7&state=any', '/v1/jobs')
    api('get', '/v1/jobs?error=failing&limit=5', '/v1/jobs')
    api('get', f"/v1/jobs?id={added['id']}", '/v1/jobs')
    api('get', '/v1/jobs?error=', '/v1/jobs')                                  # 400
    st, page = api('get', f"/v1/jobs/{dead['id']}", job)
    check_eq(len(page['attempt_errors']), 1, f'the dead row\'s page: {page}')
    st, page = api('get', f"/v1/jobs/{graph['jobs'][1]['id']}", job)
    check(page['parents'] and page['batch'], f'a batch member\'s page: {page}')
    bulk = '/v1/jobs/bulk'
    st, counted = api('post', '/v1/jobs/bulk?action=discard&queue=old%20q', bulk)
    check_eq((st, counted['count']), (200, 3), f'bulk: the count {counted}')
    api('post', '/v1/jobs/bulk?action=discard&queue=old%20q&confirm=4', bulk)   # 409
    st, done = api('post', '/v1/jobs/bulk?action=discard&queue=old%20q&confirm=3', bulk)
    check_eq((st, done.get('acted')), (200, 3), f'bulk: discarded {done}')
    api('post', '/v1/jobs/bulk?action=retry&state=ready', bulk)                 # 400
    api('post', f"/v1/jobs/{added['id']}/retry", '/v1/jobs/{id}/retry')         # 409: done
    api('post', f"/v1/jobs/{dead['id']}/retry", '/v1/jobs/{id}/retry')
    st, later = api('post', '/v1/queues/default/jobs?delay=1h', jobs, b'cancel me')
    api('delete', f"/v1/jobs/{later['id']}", job)
    api('delete', f"/v1/jobs/{added['id']}", job)                               # 409: done
    st, running = api('post', '/v1/queues/default/jobs', jobs, b'sleep')
    wait_for(lambda: db.row(running['id'], 'state')[0], 20, 'the sleeping row running',
             until=lambda s: s == 'claimed')
    st, _ = api('delete', f"/v1/jobs/{running['id']}", job)                      # 202
    check_eq(st, 202, 'cancelling a running row')
    wait_for(lambda: db.row(running['id'], 'state')[0], 20, 'the cancelled row dead',
             until=lambda s: s == 'dead')

    api('get', '/v1/queues', '/v1/queues')
    api('post', '/v1/queues/default/pause', '/v1/queues/{queue}/pause')
    api('post', '/v1/queues/default/resume', '/v1/queues/{queue}/resume')
    api('post', '/v1/queues/default/limit?group=u7&concurrency=2&interval=1s&burst=3',
        '/v1/queues/{queue}/limit')
    api('post', '/v1/queues/default/limit?concurrency=2', '/v1/queues/{queue}/limit')   # 400
    api('get', '/v1/queues/default/limits', '/v1/queues/{queue}/limits')
    api('post', '/v1/queues/default/backoff?base=2s&max=1m&jitter=10', '/v1/queues/{queue}/backoff')
    api('post', '/v1/queues/default/backoff?jitter=150', '/v1/queues/{queue}/backoff')    # 400
    api('post', '/v1/queues/default/backoff?reset=1', '/v1/queues/{queue}/backoff')

    sched = '/v1/schedules/{name}'
    api('put', '/v1/schedules/nightly?cron=30%202%20*%20*%20*&tz=Europe/Berlin', sched, b'p')
    api('put', '/v1/schedules/nightly?cron=30%203%20*%20*%20*', sched, b'p')   # replaced: 200
    api('put', '/v1/schedules/bad?cron=nope', sched, b'')                      # 400
    api('get', '/v1/schedules/nightly', sched)
    api('get', '/v1/schedules/none', sched)                                    # 404
    api('get', '/v1/schedules', '/v1/schedules')
    api('get', '/v1/schedules?limit=1&after=a', '/v1/schedules')
    api('post', '/v1/schedules/nightly/pause', '/v1/schedules/{name}/pause')
    api('post', '/v1/schedules/nightly/resume', '/v1/schedules/{name}/resume')
    api('delete', '/v1/schedules/nightly', sched)

    api('get', '/v1/batches', '/v1/batches')
    api('get', f"/v1/batches/{graph['batch']}", '/v1/batches/{id}')
    api('get', '/v1/batches/99999999', '/v1/batches/{id}')                     # 404
    api('get', f"/v1/batches/{graph['batch']}/events", '/v1/batches/{id}/events', stream=True)

    samples = os.path.join(t.tmpdir, 'samples.json')
    doc = os.path.join(t.tmpdir, 'openapi.json')
    with open(samples, 'w') as f:
        json.dump(api.samples, f)
    with open(doc, 'w') as f:
        json.dump(served, f)
    r = subprocess.run([node, os.path.join(BROWSER_DIR, 'openapi.mjs'), doc, samples],
                       cwd=BROWSER_DIR, capture_output=True, text=True, timeout=120)
    check_eq(r.returncode, 0, f'openapi.mjs ran ({r.stderr.strip()[-2000:]})')
    out = json.loads(r.stdout)
    check(out['valid'], 'answers that do not follow the document: ' +
          json.dumps(out['errors'])[:4000])
    missed = sorted(set(out['operations']) - set(out['answered']))
    check_eq(missed, [], 'operations of the document this test did not see answer')
    t.note(f"{len(api.samples)} answers of {len(out['operations'])} operations checked")


if __name__ == '__main__':
    harness.main()
