#!/usr/bin/env python3
"""A pipe: co-process for the tests (stdlib only): reads one JSON request per line on stdin,
answers one JSON reply per line on stdout, and logs to the file named by its argument:

    boot 0 0 <time> <pid>                          when it starts
    ready 0 0 <time> <pid>                         when it wrote {"ready":true}: with a second
                                                   argument ready=MS, MS after its start
                                                   (ready=never: it never does)
    start <id> <attempt> <time> <pid> <queue> <group> <seq> <max_attempts> <deadline_ms> <hex>
    end <id> <attempt> <time> <pid> <reply>

(<hex> is the payload's bytes in hex, from "payload" or "payload_b64"; "-" when empty.)
What it does depends on the payload:
    fail     {"ok":false,"error":...}           garbage  writes a line that is not JSON
    die      exits 3, after a line on stderr    wrongid  answers for another id
    later    {"ok":false,"retry_in_ms":300} the first 3 times it sees the id, then ok
                                                huge     writes a 2 MiB line
    sleep    sleeps 10 minutes                  anything else: {"ok":true}
    nap...   sleeps 30 ms (napN: N ms), logs its end line *before* it answers (for tests of
             overlap)
    nested   {"ok":true} with a nested "result" and "progress"
    nestedfail  {"ok":false,"error":...} with nested values beside
    result   {"ok":true,"result":{"id":ID,"type":<the request's content_type>}}
    trace    {"ok":true,"result":{"traceparent":<the request's traceparent, or null>}}
    progress reports {"progress":{"n":K}} for K = 1..200 as fast as it can, sleeps 2.5 s,
             answers {"ok":true,"result":"finished"}
    bigresult  {"ok":true} with a result over 64 KiB (a bad reply)
"""

import base64
import json
import os
import sys
import time

LOG = sys.argv[1]


def log(*fields):
    line = ' '.join(str(f) for f in fields) + '\n'
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def payload_bytes(req):
    if req.get('payload_b64') is not None:
        return base64.b64decode(req['payload_b64'], validate=True)
    return req['payload'].encode('utf-8', 'surrogatepass')


def reply(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def starts_logged(item_id):
    try:
        with open(LOG) as f:
            return sum(1 for line in f if line.startswith(f'start {item_id} '))
    except FileNotFoundError:
        return 0


def handle(req):
    pid = os.getpid()
    body = payload_bytes(req)
    log('start', req['id'], req['attempt'], f'{time.time():.6f}', pid, req['queue'],
        req['group'] if req['group'] is not None else '-', req['seq'], req['max_attempts'],
        req['deadline_ms'], body.hex() or '-')
    out = {'id': req['id'], 'ok': True}
    if body == b'fail':
        out = {'id': req['id'], 'ok': False, 'error': 'pipe_echo: failing as asked'}
    elif body == b'later' and starts_logged(req['id']) <= 3:
        out = {'id': req['id'], 'ok': False, 'retry_in_ms': 300}
    elif body == b'nested':
        out = {'id': req['id'], 'ok': True, 'progress': [1, 1, {'step': 'done'}],
               'result': {'rows': [1, 2, 3], 'by': {'name': 'pipe_echo', 'ok': None}}}
    elif body == b'nestedfail':
        out = {'id': req['id'], 'ok': False, 'error': 'pipe_echo: nested failure',
               'detail': {'codes': [5, 7], 'why': {'deep': [[[]]]}}}
    elif body == b'result':
        out = {'id': req['id'], 'ok': True,
               'result': {'id': req['id'], 'type': req.get('content_type')}}
    elif body == b'trace':
        out = {'id': req['id'], 'ok': True, 'result': {'traceparent': req.get('traceparent')}}
    elif body == b'progress':
        for k in range(1, 201):
            reply({'id': req['id'], 'progress': {'n': k}})
        time.sleep(2.5)
        out = {'id': req['id'], 'ok': True, 'result': 'finished'}
    elif body == b'bigresult':
        out = {'id': req['id'], 'ok': True, 'result': 'x' * (70 * 1024)}
    elif body == b'wrongid':
        out = {'id': req['id'] + 1, 'ok': True}
    elif body == b'die':
        sys.stderr.write('pipe_echo: dying as asked\n')
        sys.stderr.flush()
        os._exit(3)
    elif body == b'sleep':
        time.sleep(600)
    elif body.startswith(b'nap'):
        time.sleep(int(body[3:]) / 1000 if body[3:].isdigit() else 0.03)
        log('end', req['id'], req['attempt'], f'{time.time():.6f}', pid, json.dumps(out))
        reply(out)
        return
    if body == b'garbage':
        sys.stdout.write('this is not json\n')
        sys.stdout.flush()
    elif body == b'huge':
        sys.stdout.write('x' * (2 * 1024 * 1024) + '\n')
        sys.stdout.flush()
    else:
        reply(out)
    log('end', req['id'], req['attempt'], f'{time.time():.6f}', pid, json.dumps(out))


def main():
    log('boot', 0, 0, f'{time.time():.6f}', os.getpid())
    ready = sys.argv[2][len('ready='):] if len(sys.argv) > 2 else None
    if ready and ready != 'never':
        time.sleep(int(ready) / 1000)
        log('ready', 0, 0, f'{time.time():.6f}', os.getpid())
        reply({'ready': True})
    for line in sys.stdin.buffer:
        req = json.loads(line)
        if not req.get('cancel'):   # one item at a time: a cancel is not acted on
            handle(req)


if __name__ == '__main__':
    main()
