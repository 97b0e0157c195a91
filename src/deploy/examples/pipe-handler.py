#!/usr/bin/env python3
"""A pipe: handler for claimd: one long-lived co-process per worker, handling one item at a
time (claimd may send it more requests meanwhile: they wait in its stdin).

    claimd --handler 'pipe:/usr/bin/python3 /usr/local/share/claimd/examples/pipe-handler.py' ...

Each item comes as one line of JSON on stdin:
    {"id":1,"queue":"default","group":null,"attempt":1,"max_attempts":5,"seq":0,
     "enqueued_at":"...","deadline_ms":299998,"deadline_at":1795...,"content_type":null,
     "payload":"..."}                 (bytes that are not UTF-8: "payload_b64" instead)
and gets one line back on stdout, after any number of progress lines:
    {"id":1,"progress":0.5}
    {"id":1,"ok":true,"result":{...}}   done (the result is kept in the row)
    {"id":1,"ok":false,"error":"why"}   failed: retried with back-off, dead after max_attempts
    {"id":1,"ok":false,"retry_in_ms":5000}   run it again later, not counted as a failure
Nothing else may go to stdout: log to stderr.

An item past its timeout, or still outstanding when the worker stops, gets a cancel line:
    {"id":1,"cancel":true,"reason":"timeout"}     ("timeout", "shutdown" or "cancelled")
This handler works on one item at a time and cannot stop one halfway, so it ignores cancels:
an item it is working on is answered when it is done (within the kill grace, or the
co-process is stopped), and a cancel for an item already answered needs nothing.

This one takes a payload {"n": N} and sums the squares of 1..N, reporting its progress;
a payload that is not such an object fails.
"""

import json
import sys


def handle(item):
    try:
        job = json.loads(item.get('payload') or '')
        n = int(job['n'])
    except (ValueError, TypeError, KeyError) as e:
        return {'ok': False, 'error': f'the payload is not {{"n": N}}: {e}'}
    if n < 0 or n > 10_000_000:
        return {'ok': False, 'error': f'n = {n} is out of range (0..10000000)'}
    total, step = 0, max(n // 4, 1)
    for i in range(1, n + 1):
        total += i * i
        if i % step == 0 and i < n:
            reply({'id': item['id'], 'progress': round(i / n, 2)})
    return {'ok': True, 'result': {'n': n, 'sum_of_squares': total}}


def reply(obj):
    sys.stdout.write(json.dumps(obj, separators=(',', ':')) + '\n')
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        item = json.loads(line)
        if item.get('cancel'):
            continue
        try:
            answer = handle(item)
        except Exception as e:  # a bug here fails the item, not the co-process
            answer = {'ok': False, 'error': f'{type(e).__name__}: {e}'}
        reply({'id': item['id'], **answer})


if __name__ == '__main__':
    main()
