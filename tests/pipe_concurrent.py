#!/usr/bin/env python3
"""A pipe: co-process for test_handler_kinds that has many items outstanding at once and
answers them out of order (stdlib only). It logs to the file named by its argument, a line
per event:

    boot <pid> <pgid> <time>  when it starts (unix seconds)
    req <id>                  a request read
    cancel <id> <reason>      a cancel line read
    reply <id>                a reply written

What it does with an item is its payload, words apart:
    delay MS     {"ok":true,"result":{"id":ID}} after MS ms
    gather K     holds the item until it holds K, then sends {"id":ID,"progress":{"id":ID}}
                 for each, then answers each as delay does, newest first
    hang         never answers by itself
    fail         {"ok":false,"error":"pipe_concurrent: failing as asked"}
    garbage      a line that is not JSON          wrongid  a reply for id + 1000
    huge         a line of 2 MiB                  die      exits 3 after a line on stderr
    extra        answers, then answers again (a reply with nothing outstanding)
and with one more word:
    deaf         a cancel line for it is ignored
    cancel-ok    a cancel is answered {"ok":true} (the work was done)
    stubborn     from now on SIGTERM is ignored (only SIGKILL stops it)
Otherwise a cancel line is answered at once: {"ok":false,"error":"cancelled: <reason>"}.
"""

import json
import os
import signal
import sys
import threading
import time

LOG = sys.argv[1]
out_lock = threading.Lock()
items = {}       # id -> {'words': [...], 'timer': Timer or None}
held = []        # gathered ids, oldest first


def log(*fields):
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (' '.join(str(f) for f in fields) + '\n').encode())
    finally:
        os.close(fd)


def write_line(text):
    with out_lock:
        sys.stdout.write(text + '\n')
        sys.stdout.flush()


def answer(item_id, obj):
    """The reply for item_id, once: a second answer (after a cancel) is not sent."""
    if items.pop(item_id, None) is None:
        return
    write_line(json.dumps({'id': item_id, **obj}))
    log('reply', item_id)


def ok(item_id):
    answer(item_id, {'ok': True, 'result': {'id': item_id}})


def later(item_id, ms):
    t = threading.Timer(ms / 1000.0, ok, args=(item_id,))
    items[item_id]['timer'] = t
    t.start()


def request(req):
    item_id, words = req['id'], req['payload'].split()
    log('req', item_id)
    items[item_id] = {'words': words, 'timer': None}
    if 'stubborn' in words:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    what = words[0] if words else ''
    if what == 'delay':
        later(item_id, int(words[1]))
    elif what == 'gather':
        held.append(item_id)
        if len(held) >= int(words[1]):
            ids = held[::-1]
            held.clear()
            for i in ids:
                write_line(json.dumps({'id': i, 'progress': {'id': i}}))
            for i in ids:
                ok(i)
    elif what == 'fail':
        answer(item_id, {'ok': False, 'error': 'pipe_concurrent: failing as asked'})
    elif what == 'garbage':
        write_line('this is not json')
    elif what == 'wrongid':
        write_line(json.dumps({'id': item_id + 1000, 'ok': True}))
    elif what == 'huge':
        write_line('x' * (2 * 1024 * 1024))
    elif what == 'die':
        sys.stderr.write('pipe_concurrent: dying as asked\n')
        sys.stderr.flush()
        os._exit(3)
    elif what == 'extra':
        # Both lines in one write: claimd reads them together, so the second is one with
        # nothing outstanding however fast the next item comes.
        items.pop(item_id, None)
        line = json.dumps({'id': item_id, 'ok': True, 'result': {'id': item_id}})
        write_line(line + '\n' + line)
        log('reply', item_id)


def cancel(req):
    item_id, reason = req['id'], req.get('reason')
    log('cancel', item_id, reason)
    item = items.get(item_id)
    if item is None or 'deaf' in item['words']:
        return
    if item['timer']:
        item['timer'].cancel()
    if 'cancel-ok' in item['words']:
        answer(item_id, {'ok': True})
    else:
        answer(item_id, {'ok': False, 'error': f'cancelled: {reason}'})


def main():
    log('boot', os.getpid(), os.getpgid(0), f'{time.time():.6f}')
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get('cancel'):
            cancel(req)
        else:
            request(req)


if __name__ == '__main__':
    main()
