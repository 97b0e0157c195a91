#!/usr/bin/env python3
"""A pipe: co-process for the integration tests that runs many items at once (asyncio, stdlib
only): payload "sleep:N" waits N ms, anything else answers at once; each is answered
{"ok":true}. It logs, to the file named by its argument, `start` and `end` lines in the form
tests/integration/harness.py reads (`<kind> <id> <attempt> <epoch time> <pid>`), so that a
test can tell whether an item's runs overlapped. A cancel line stops its item (logged
`cancelled`) and answers it {"ok":false}."""

import asyncio
import json
import os
import sys
import time

LOG = sys.argv[1]


def log(kind, req):
    line = '%s %d %s %.6f %d\n' % (kind, req['id'], req.get('attempt', '?'), time.time(),
                                   os.getpid())
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def reply(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


async def run(req):
    log('start', req)
    payload = req.get('payload') or ''
    try:
        if payload.startswith('sleep:'):
            await asyncio.sleep(int(payload[6:]) / 1000)
    except asyncio.CancelledError:
        log('cancelled', req)
        reply({'id': req['id'], 'ok': False, 'error': 'cancelled'})
        return
    log('end', req)
    reply({'id': req['id'], 'ok': True})


async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = {}
    while True:
        raw = await reader.readline()
        if not raw:
            break
        req = json.loads(raw)
        if req.get('cancel'):
            if req['id'] in tasks:
                tasks[req['id']].cancel()
            continue
        task = asyncio.ensure_future(run(req))
        tasks[req['id']] = task
        task.add_done_callback(lambda t, i=req['id']: tasks.pop(i, None))
    await asyncio.gather(*tasks.values(), return_exceptions=True)


asyncio.run(main())
