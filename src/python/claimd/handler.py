"""claimd.handler: a function run as claimd's pipe: co-process.

    # handler.py
    import claimd

    async def handle(job):           # or a plain def: it runs on a thread of its own
        order = job.payload           # JSON decoded when the row's content_type says JSON
        await send_mail(order['to'])
        return {'sent': 1}            # kept in the row's result

    claimd.run(handle)

    claimd --handler 'pipe:/usr/bin/python3 /srv/app/handler.py' --pipe-ready --concurrency 50

or, without the last line, --handler 'pipe:/usr/bin/python3 -m claimd app.handler:handle'.

The protocol is claimd-handlers(7)'s: one JSON line in per item, many outstanding at once;
one reply line out per item, by id, in any order. What the runtime does with it:

- a request becomes a Job and a task running handle(job); an async handle runs on the one
  event loop, a plain function on a thread pool (one thread per item running);
- the return value is the result (None: none); an exception fails the attempt with its
  message, its traceback goes to standard error (claimd's log), not into the row;
  RetryLater(seconds) runs the item again later without counting an attempt; the jobs
  job.enqueue() added go on the reply of a success, and claimd commits them with its outcome;
- a cancel line (timeout, shutdown, an operator's cancel) cancels the task: an async handle
  sees asyncio.CancelledError where it awaits; a thread cannot be stopped, so a plain
  function reads job.cancelled and returns early;
- standard output carries the replies alone: sys.stdout and file descriptor 1 are pointed at
  standard error before the handler's module runs anything, so a stray print() (or a child
  process's output) goes to the log and cannot break the protocol;
- {"ready":true} is written once the handler is loaded (run claimd with --pipe-ready);
- at the end of standard input the items still running are finished and answered, then the
  process exits 0.
"""

import asyncio
import base64
import concurrent.futures
import datetime
import importlib
import inspect
import json
import math
import os
import sys
import time
import traceback
from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Union

from .enqueue import ON_DEAD, UINT_MAX, _row, _seconds, _text

__all__ = ['Job', 'RetryLater', 'run', 'main']

# The reply line claimd accepts is at most 1 MiB; a result at most 64 KiB, progress 1 KiB
# (claimd-handlers(7)). Checked here so that the handler's author reads which one was over.
RESULT_MAX = 64 * 1024
PROGRESS_MAX = 1024
ENQUEUE_MAX = 1000  # follow-up jobs of one item (a graph's rows)
LINE_DURATION_MAX_S = UINT_MAX // 1000   # a job line's durations: ms in 32 bits
REF_MAX = 64
AFTER_MAX = 32
THREADS_MAX = 256   # claimd's --concurrency is at most 256: never more items at once

Handler = Callable[['Job'], Union[Any, Awaitable[Any]]]


class RetryLater(Exception):
    """Raise RetryLater(seconds) in a handler to run the item again after that long, without
    counting an attempt (a rate limit hit, a dependency not ready)."""

    def __init__(self, seconds: float):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
                not math.isfinite(seconds) or seconds < 0:
            raise ValueError('RetryLater: seconds must be a number >= 0, not %r' % (seconds,))
        super().__init__('retry in %g s' % seconds)
        self.seconds = float(seconds)


def _is_json_type(content_type: Optional[str]) -> bool:
    if not content_type:
        return False
    kind = content_type.split(';', 1)[0].strip().lower()
    return kind == 'application/json' or kind.endswith('+json')


class Job:
    """One item, as its request line gave it.

    id, queue, group (None), attempt (1 for the first run), max_attempts, seq (its number in
    its group, 0 without one), enqueued_at and deadline (aware datetimes in UTC; enqueued_at
    None when unknown), content_type (None), traceparent (None), body (the payload's bytes),
    and payload: the payload decoded as JSON when content_type says JSON, else text (str), or
    bytes when it is not UTF-8."""

    __slots__ = ('id', 'queue', 'group', 'attempt', 'max_attempts', 'seq', 'content_type',
                 'traceparent', 'payload', '_req', '_runtime', '_deadline_mono', '_cancelled',
                 '_enqueued')

    def __init__(self, req: Dict[str, Any], runtime: Optional['_Runtime'] = None):
        # What every item needs is read here; the rest (times, the bytes) when asked for: a
        # quick item's cost is mostly this constructor.
        self._req = req
        self.id = req['id']
        self.queue = req.get('queue')
        self.group = req.get('group')
        self.attempt = req.get('attempt', 1)
        self.max_attempts = req.get('max_attempts', 1)
        self.seq = req.get('seq', 0)
        left = req.get('deadline_ms')
        self._deadline_mono = (time.monotonic() + left / 1000
                               if isinstance(left, (int, float)) else None)
        self.content_type = req.get('content_type')
        self.traceparent = req.get('traceparent')
        if req.get('payload_b64') is not None:
            self.payload = base64.b64decode(req['payload_b64'])
        else:
            text = req.get('payload') or ''
            self.payload = json.loads(text) if _is_json_type(self.content_type) else text
        self._runtime = runtime
        self._cancelled = None
        self._enqueued: List[Dict[str, Any]] = []

    @property
    def body(self) -> bytes:
        """The payload's bytes."""
        if self._req.get('payload_b64') is not None:
            return self.payload
        return (self._req.get('payload') or '').encode('utf-8')

    @property
    def enqueued_at(self) -> Optional[datetime.datetime]:
        """When the row was added (UTC), or None when not told."""
        return _parse_time(self._req.get('enqueued_at'))

    @property
    def deadline(self) -> Optional[datetime.datetime]:
        """When the item's timeout ends (UTC), or None when not told."""
        at = self._req.get('deadline_at')
        return (datetime.datetime.fromtimestamp(at / 1000, datetime.timezone.utc)
                if isinstance(at, (int, float)) and not isinstance(at, bool) else None)

    @property
    def cancelled(self) -> Optional[str]:
        """Why claimd asked to stop this item ('timeout', 'shutdown' or 'cancelled'), or
        None. A plain (thread) handler reads it to return early."""
        return self._cancelled

    def time_left(self) -> Optional[float]:
        """Seconds until the item's timeout (0 when past), or None when not told."""
        if self._deadline_mono is None:
            return None
        return max(0.0, self._deadline_mono - time.monotonic())

    def progress(self, value: Any) -> None:
        """Report progress (any JSON value but None, at most 1 KiB as JSON); claimd keeps the
        last in the row's progress, at most once a second. Callable from the handler's
        thread or from the event loop."""
        if value is None:
            raise ValueError('progress: None is not a progress value')
        text = json.dumps(value, separators=(',', ':'), allow_nan=False)
        if len(text.encode('utf-8')) > PROGRESS_MAX:
            raise ValueError('progress: %d bytes of JSON, at most %d' % (len(text), PROGRESS_MAX))
        if self._runtime is not None:
            self._runtime.progress(self.id, text)

    def enqueue(self, queue: str, payload: Any = None, *, ref: Optional[str] = None,
                after: Iterable[str] = (), on_dead: str = 'cancel', **options: Any) -> None:
        """Add a job that claimd commits in the same transaction as this item's outcome (a
        follow-up job): written only if the item ends done, never if its claim was lost or its
        worker died first (its retry adds it again, once). Options as claimd.enqueue's
        (run_at, delay, priority, group, dedupe, dedupe_for, max_attempts, timeout, every,
        retry_base, retry_max, content_type, traceparent: this item's unless given); ref names it for the after=[refs] of the
        other jobs this item adds (a graph: no group, dedupe or every then). Checked here: a
        ValueError names what is wrong. A payload is text or JSON (bytes that are UTF-8)."""
        after = list(after)
        if ref is not None:
            _text('ref', ref, REF_MAX)
        for a in after:
            _text('after', a, REF_MAX)
        if len(after) > AFTER_MAX:
            raise ValueError('after: at most %d refs, not %d' % (AFTER_MAX, len(after)))
        if on_dead not in ON_DEAD:
            raise ValueError('on_dead: %s, not %r' % (' or '.join(ON_DEAD), on_dead))
        if isinstance(payload, (bytes, bytearray, memoryview)):
            try:
                payload = bytes(payload).decode('utf-8')
            except UnicodeDecodeError:
                raise ValueError('payload: bytes that are not UTF-8 (a follow-up job\'s '
                                 'payload travels as JSON text)') from None
        if 'traceparent' not in options and self.traceparent:
            options['traceparent'] = self.traceparent
        cols = _row(queue, payload, waits=bool(after), **options)
        line: Dict[str, Any] = {'queue': queue}
        body = cols['payload'][1].decode('utf-8')
        if isinstance(payload, str) or payload is None:
            line['payload'] = body
        else:
            line['payload'] = payload    # JSON: claimd writes it compact, content_type JSON
        for name, opt in (('run_at', 'run_at'), ('priority', 'priority'), ('group', 'group'),
                          ('dedupe', 'dedupe'), ('max_attempts', 'max_attempts'),
                          ('content_type', 'content_type'), ('traceparent', 'traceparent')):
            v = options.get(opt)
            if v is None:
                continue
            line[name] = v.isoformat() if isinstance(v, datetime.datetime) else v
        # A job line's durations are milliseconds in 32 bits (about 49.7 days): a longer
        # one is refused here, not by claimd after the run (run_at reaches further).
        for name, opt in (('delay', 'delay'), ('timeout', 'timeout'), ('period', 'every'),
                          ('retry_base', 'retry_base'), ('retry_max', 'retry_max'),
                          ('dedupe_for', 'dedupe_for')):
            if options.get(opt) is not None:
                line[name] = '%dms' % int(round(_seconds(opt, options[opt], 0,
                                                         LINE_DURATION_MAX_S) * 1000))
        if ref is not None:
            line['ref'] = ref
        if after:
            line['after'] = after
            line['on_dead'] = on_dead
        if len(self._enqueued) >= ENQUEUE_MAX:
            raise ValueError('enqueue: at most %d jobs per item' % ENQUEUE_MAX)
        self._enqueued.append(line)

    def __repr__(self) -> str:
        return 'Job(id=%r, queue=%r, attempt=%r)' % (self.id, self.queue, self.attempt)


def _parse_time(s: Any) -> Optional[datetime.datetime]:
    if not isinstance(s, str):
        return None
    try:
        return datetime.datetime.strptime(s.replace('Z', '+0000'), '%Y-%m-%dT%H:%M:%S.%f%z')
    except ValueError:
        return None


def _log(msg: str) -> None:
    sys.stderr.write('claimd.handler: %s\n' % msg)
    sys.stderr.flush()


class _Runtime:
    """The co-process: reads requests, runs tasks, writes replies."""

    def __init__(self, handle: Handler, out, threads: int):
        self.handle = handle
        self.is_async = inspect.iscoroutinefunction(handle) or \
            inspect.iscoroutinefunction(getattr(handle, '__call__', None))
        self.out = out
        self.pending = []            # reply lines of this turn of the loop
        self.running = {}            # id -> (task, job)
        self.loop = None
        self.pool = None if self.is_async else concurrent.futures.ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix='claimd-item')

    # -- out

    def write(self, line: str) -> None:
        """Lines written in one turn of the loop go out in one write."""
        if not self.pending:
            self.loop.call_soon(self.flush)
        self.pending.append(line)

    def flush(self) -> None:
        if self.pending:
            data = ''.join(self.pending).encode('utf-8')
            self.pending = []
            self.out.write(data)
            self.out.flush()

    def progress(self, jid: int, text: str) -> None:
        line = '{"id":%d,"progress":%s}\n' % (jid, text)
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            if jid in self.running:
                self.write(line)
        else:
            self.loop.call_soon_threadsafe(
                lambda: self.write(line) if jid in self.running else None)

    # -- items

    async def call(self, job: Job) -> Any:
        if self.is_async:
            return await self.handle(job)
        return await self.loop.run_in_executor(self.pool, self.handle, job)

    def start(self, req: Dict[str, Any]) -> None:
        try:
            job = Job(req, self)
        except (ValueError, TypeError, KeyError) as e:
            # A payload its content_type calls JSON that is not: the attempt fails, clearly.
            self.write(json.dumps({'id': req['id'], 'ok': False,
                                   'error': 'payload: %s: %s' % (type(e).__name__, e)}) + '\n')
            return
        task = self.loop.create_task(self.handle(job) if self.is_async else self.call(job))
        self.running[job.id] = (task, job)
        task.add_done_callback(lambda t: self.answer(job, t))

    def answer(self, job: Job, task: 'asyncio.Task') -> None:
        reply: Dict[str, Any] = {'id': job.id}
        try:
            result = task.result()
            text = None if result is None else json.dumps(result, separators=(',', ':'),
                                                          allow_nan=False)
            if text is not None and len(text) * 4 > RESULT_MAX and \
                    len(text.encode('utf-8')) > RESULT_MAX:
                raise ValueError('the result is %d bytes of JSON, at most %d'
                                 % (len(text.encode('utf-8')), RESULT_MAX))
            if not job._enqueued:   # the common answer, written without a second dump
                del self.running[job.id]
                self.write('{"id":%d,"ok":true%s}\n' % (
                    job.id, '' if text is None else ',"result":' + text))
                return
            reply['ok'] = True
            if result is not None:
                reply['result'] = result
            reply['enqueue'] = job._enqueued
        except asyncio.CancelledError:
            reply = {'id': job.id, 'ok': False,
                     'error': 'cancelled (%s)' % (job.cancelled or 'unknown')}
        except RetryLater as e:
            reply = {'id': job.id, 'ok': False, 'retry_in_ms': int(round(e.seconds * 1000))}
        except Exception as e:   # the handler's failure fails the attempt, not the process
            _log('item %d (attempt %s) failed:\n%s' % (job.id, job.attempt,
                                                       traceback.format_exc().rstrip()))
            reply = {'id': job.id, 'ok': False, 'error': '%s: %s' % (type(e).__name__, e)}
        del self.running[job.id]
        self.write(json.dumps(reply, separators=(',', ':'), default=str) + '\n')

    def line(self, raw: bytes) -> None:
        text = raw.decode('utf-8', 'replace')
        if not text.strip():
            return
        try:
            msg = json.loads(text)
        except ValueError as e:
            _log('ignored a line that is not JSON (%s): %.200r' % (e, text))
            return
        jid = msg.get('id') if isinstance(msg, dict) else None
        if isinstance(jid, bool) or not isinstance(jid, int):
            _log('ignored a line without a numeric "id": %.200r' % text)
            return
        if msg.get('cancel') is True:
            entry = self.running.get(jid)
            if entry:   # else answered already: nothing to do
                entry[1]._cancelled = str(msg.get('reason', 'cancelled'))
                if self.is_async:
                    entry[0].cancel()
            return
        if jid in self.running:
            _log('ignored a second request for item %d while it runs' % jid)
            return
        self.start(msg)

    async def main(self, stdin) -> None:
        self.loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        self.write('{"ready":true}\n')
        while True:
            try:
                raw = await reader.readline()
            except ValueError as e:
                _log('ignored an over-long line: %s' % e)
                continue
            if not raw:
                break
            self.line(raw)
        while self.running:
            await asyncio.gather(*(t for t, _ in self.running.values()),
                                 return_exceptions=True)
        await asyncio.sleep(0)   # the answers' flush
        self.flush()
        if self.pool:
            self.pool.shutdown(wait=True)


def _protocol_out():
    """A private writer on the real standard output; fd 1 and sys.stdout then go to standard
    error, so that nothing but replies reaches claimd."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), 'wb', buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def run(handle: Handler, *, threads: int = THREADS_MAX) -> None:
    """Serve claimd's items with handle(job) until standard input ends, then exit 0. handle
    may be async (run on the event loop) or a plain function (run on up to threads threads).
    Call it once, at the end of the handler's module."""
    if not callable(handle):
        raise TypeError('claimd.run: handle must be callable, not %r' % (handle,))
    out = _protocol_out()
    rt = _Runtime(handle, out, threads)
    asyncio.run(rt.main(sys.stdin))
    sys.exit(0)


def load(spec: str) -> Handler:
    """'package.module:function' -> the function."""
    mod, sep, name = spec.partition(':')
    if not sep or not mod or not name:
        raise ValueError('a handler is named module:function, not %r' % spec)
    obj: Any = importlib.import_module(mod)
    for part in name.split('.'):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError('%s is not callable' % spec)
    return obj


def main(argv=None) -> None:
    """python3 -m claimd MODULE:FUNCTION (the current directory is on the path)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ('-h', '--help'):
        sys.stderr.write('usage: python3 -m claimd MODULE:FUNCTION\n'
                         '  serves claimd pipe: items with that function '
                         "(claimd --handler 'pipe:python3 -m claimd app.jobs:handle' "
                         '--pipe-ready)\n')
        sys.exit(0 if argv and argv[0] in ('-h', '--help') else 2)
    out = _protocol_out()   # before the module runs anything
    sys.path.insert(0, os.getcwd())
    try:
        handle = load(argv[0])
    except Exception as e:
        _log('cannot load %s: %s: %s' % (argv[0], type(e).__name__, e))
        sys.exit(2)
    rt = _Runtime(handle, out, THREADS_MAX)
    asyncio.run(rt.main(sys.stdin))
    sys.exit(0)
