#!/usr/bin/env python3
"""A pipe: co-process for claimd in Python 3 (standard library, asyncio) that runs many items
at once: one co-process per worker, up to --concurrency items of it outstanding.

    claimd --handler 'pipe:/usr/bin/python3 /usr/local/share/claimd/examples/pipe-async.py' \\
           --concurrency 50 --pipe-ready ...

Replace handle() below with your work; the rest is the protocol, which you can keep as it is.

The protocol (JSON lines; claimd's side is described in claimd-handlers(7)):
  out, once, when it can take items (with --pipe-ready claimd sends, and its worker claims,
  nothing before; without, the line is ignored): {"ready":true}
  in, one line per item as it starts, many outstanding at once:
    {"id":1,"queue":"default","group":null,"attempt":1,"max_attempts":5,"seq":0,
     "enqueued_at":"...","deadline_ms":299998,"deadline_at":1795...,"content_type":null,
     "payload":"..."}                 (bytes that are not UTF-8: "payload_b64" instead)
  in, to stop an item: {"id":1,"cancel":true,"reason":"timeout"|"shutdown"|"cancelled"}
  out, answering each item by id, in any order, after any number of progress lines:
    {"id":1,"progress":0.5}
    {"id":1,"ok":true,"result":{...}}        done (the result is kept in the row)
    {"id":1,"ok":false,"error":"why"}        failed: retried with back-off, dead after max_attempts
    {"id":1,"ok":false,"retry_in_ms":5000}   run it again later, not counted as a failure
A cancelled item is stopped as soon as it can be (its task is cancelled) and answered: failed,
or done if it finished after all. A line for an id that is not outstanding is ignored, and so
is a line that is not such JSON (logged). At the end of stdin the outstanding items are
finished and answered, then the co-process exits 0. Nothing but replies goes to stdout: log to
stderr.
"""

import asyncio
import json
import sys


class RetryLater(Exception):
    """Raise RetryLater(ms) in handle() to run the item again in ms, not counted as a failure."""

    def __init__(self, ms):
        super().__init__('retry in %d ms' % ms)
        self.ms = int(ms)


# ---- your work: replace handle() ----------------------------------------------------------

async def handle(job, progress):
    """Runs one item. job is the request (job['payload'] the payload as text). Return the
    result (any JSON value, or None for none); raise an exception to fail the item, or
    RetryLater(ms). progress(value) reports progress (any JSON value). Await, never block:
    every item of this co-process shares its one thread.

    The example: a payload that is JSON with "sleep_ms" waits that long (without using the
    CPU), reporting its progress once half-way; a payload is echoed back as the result (an
    empty one leaves none)."""
    payload = job.get('payload')
    data = None
    if payload and payload[0] == '{':
        try:
            data = json.loads(payload)
        except ValueError:
            pass
    if isinstance(data, dict) and 'sleep_ms' in data:
        ms = data['sleep_ms']
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not 0 <= ms <= 3_600_000:
            raise ValueError('sleep_ms must be a number of milliseconds, 0..3600000: %r' % (ms,))
        half = asyncio.get_running_loop().call_later(ms / 2000, progress, 0.5)
        try:
            await asyncio.sleep(ms / 1000)
        finally:
            half.cancel()
    return {'echo': payload} if payload else None

# ---- the protocol --------------------------------------------------------------------------


def log(msg):
    print('pipe-async.py: ' + msg, file=sys.stderr, flush=True)


_flush_soon = False


def _flush():
    global _flush_soon
    _flush_soon = False
    sys.stdout.flush()


def reply(obj):
    """Replies made in one turn of the event loop go out in one write (a flush is a system
    call: many items at once would pay one per reply)."""
    global _flush_soon
    sys.stdout.write(json.dumps(obj, separators=(',', ':')) + '\n')
    if not _flush_soon:
        _flush_soon = True
        asyncio.get_running_loop().call_soon(_flush)


class CoProcess:
    def __init__(self):
        self.running = {}     # id -> the task running handle() for it, until it is answered
        self.cancelled = {}   # id -> why claimd cancelled it

    def start(self, job):
        jid = job['id']

        def progress(value):
            if jid in self.running:
                reply({'id': jid, 'progress': value})
        # handle() in a task of its own, cancelled by a cancel line even before it has
        # started, and answered when it ends, however it ended.
        task = asyncio.ensure_future(handle(job, progress))
        self.running[jid] = task
        task.add_done_callback(lambda t: self.answer(jid, t))

    def answer(self, jid, task):
        try:
            result = task.result()
            answer = {'ok': True} if result is None else {'ok': True, 'result': result}
        except asyncio.CancelledError:
            answer = {'ok': False, 'error': 'cancelled (%s)' % self.cancelled.get(jid, 'unknown')}
        except RetryLater as e:
            answer = {'ok': False, 'retry_in_ms': max(0, e.ms)}
        except Exception as e:  # a bug in handle() fails the item, not the co-process
            answer = {'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}
        del self.running[jid]
        self.cancelled.pop(jid, None)
        reply({'id': jid, **answer})

    def line(self, text):
        """One line from claimd: a request starts a task, a cancel cancels one."""
        if not text.strip():
            return
        try:
            msg = json.loads(text)
        except ValueError as e:
            log('ignored a line that is not JSON (%s): %.200r' % (e, text))
            return
        jid = msg.get('id') if isinstance(msg, dict) else None
        if isinstance(jid, bool) or not isinstance(jid, int):
            log('ignored a line without a numeric "id": %.200r' % text)
            return
        if msg.get('cancel') is True:
            task = self.running.get(jid)
            if task:   # else: not outstanding (answered already): nothing to do
                self.cancelled[jid] = str(msg.get('reason', 'cancelled'))
                task.cancel()
            return
        if jid in self.running:
            log('ignored a second request for item %d while it runs' % jid)
            return
        self.start(msg)

    async def main(self):
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        reply({'ready': True})   # load what handle() needs before this line
        while True:
            try:
                raw = await reader.readline()
            except ValueError as e:   # a line over the limit: dropped
                log('ignored an over-long line: %s' % e)
                continue
            if not raw:
                break
            self.line(raw.decode('utf-8', 'replace'))
        # stdin closed: finish what is outstanding, answer it (each task's answer runs as it
        # ends, before gather's), exit 0
        while self.running:
            await asyncio.gather(*self.running.values(), return_exceptions=True)
        sys.stdout.flush()


if __name__ == '__main__':
    asyncio.run(CoProcess().main())
