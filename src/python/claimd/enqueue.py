"""claimd.enqueue: add work through the application's own database connection, in its own
transaction, with the plain SQL of claimd-table(5).

    import claimd, pymysql

    conn = pymysql.connect(...)
    with conn.cursor() as cur:
        cur.execute('INSERT INTO orders ...')
    claimd.enqueue(conn, 'mail', {'order': 7, 'to': 'a@example.com'})   # JSON: content_type set
    conn.commit()     # the order and its mail job commit together, or neither does

Any DB-API 2 connection to the claimd database works (PyMySQL, mysqlclient, MariaDB
Connector/Python): the module's paramstyle is read from the connection's driver. Nothing is
committed here. Options are checked before any SQL, with the limits the table enforces, and a
ValueError names the one that is wrong; the server's own refusals (a cycle in `after`, a
parent that is running) come as the driver's error, with the trigger's message.
"""

import datetime
import json
import math
import sys
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

__all__ = ['enqueue', 'graph', 'Graph']

QUEUE_MAX = 64          # work_items.queue VARCHAR(64)
KEY_MAX = 255           # group_key, dedupe_key, content_type
TRACEPARENT_MAX = 55    # the W3C version-00 traceparent
PAYLOAD_MAX = 16 * 1024 * 1024 - 1   # MEDIUMBLOB
PRIORITY_MIN, PRIORITY_MAX = -10, 10
UINT_MAX = 2**32 - 1    # INT UNSIGNED: max_attempts, timeout_s, period_s
BACKOFF_MAX_S = 7 * 86400       # a row's retry_base_ms and retry_max_ms: 1 ms to 7 days
DEDUPE_FOR_MAX_S = 30 * 86400   # how long a row keeps its dedupe key: what claimd's add takes
ON_DEAD = ('cancel', 'run')

Payload = Union[str, bytes, bytearray, memoryview, dict, list, int, float, bool, None]


def _seconds(name: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or \
            not lo <= v <= hi:
        raise ValueError('%s: seconds (or a timedelta) from %g to %g, not %r' % (name, lo, hi, v))
    return float(v)


def _uint(name: str, v: Any, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= UINT_MAX:
        raise ValueError('%s: a whole number from %d to %d, not %r' % (name, lo, UINT_MAX, v))
    return v


def _text(name: str, v: Any, most: int) -> str:
    if not isinstance(v, str) or not v or len(v.encode('utf-8')) > most:
        raise ValueError('%s: text of 1 to %d bytes, not %r' % (name, most, v))
    return v


def _payload(payload: Payload, content_type: Optional[str]):
    if isinstance(payload, str):
        body = payload.encode('utf-8')
    elif isinstance(payload, (bytes, bytearray, memoryview)):
        body = bytes(payload)
    else:
        try:
            body = json.dumps(payload, separators=(',', ':'), allow_nan=False).encode('utf-8')
        except (TypeError, ValueError) as e:
            raise ValueError('payload: not text, bytes, or JSON: %s' % e) from None
        content_type = content_type or 'application/json'
    if len(body) > PAYLOAD_MAX:
        raise ValueError('payload: %d bytes, at most %d' % (len(body), PAYLOAD_MAX))
    return body, content_type


def _row(queue: str, payload: Payload, *, waits: bool = False,
         run_at: Optional[datetime.datetime] = None,
         delay: Any = None, priority: int = 0, group: Optional[str] = None,
         dedupe: Optional[str] = None, max_attempts: Optional[int] = None,
         timeout: Any = None, every: Any = None, content_type: Optional[str] = None,
         traceparent: Optional[str] = None, retry_base: Any = None, retry_max: Any = None,
         dedupe_for: Any = None) -> Dict[str, Any]:
    """The checked columns of one row: {column: (sql expression, parameter or None)};
    waits: it has rows to wait for."""
    cols: Dict[str, Any] = {'queue': ('%s', _text('queue', queue, QUEUE_MAX))}
    body, content_type = _payload(payload, content_type)
    cols['payload'] = ('%s', body)
    if run_at is not None and delay is not None:
        raise ValueError('run_at and delay: one or the other')
    if run_at is not None:
        if not isinstance(run_at, datetime.datetime) or run_at.tzinfo is None:
            raise ValueError('run_at: an aware datetime (with its time zone), not %r' % (run_at,))
        # A point in time whatever the session's time zone: FROM_UNIXTIME reads it in the
        # session's zone and the TIMESTAMP column stores the instant.
        cols['run_at'] = ('FROM_UNIXTIME(%s)', '%.6f' % run_at.timestamp())
    elif delay is not None:
        us = int(round(_seconds('delay', delay, 0, 10 * 365 * 86400) * 1e6))
        cols['run_at'] = ('NOW(6) + INTERVAL %s MICROSECOND', us)
    if isinstance(priority, bool) or not isinstance(priority, int) or \
            not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise ValueError('priority: a whole number from %d to %d (smaller runs first), not %r'
                         % (PRIORITY_MIN, PRIORITY_MAX, priority))
    if priority:
        cols['priority'] = ('%s', priority)
    if group is not None:
        if waits:
            raise ValueError('after: a row in a FIFO group cannot wait for others')
        cols['group_key'] = ('%s', _text('group', group, KEY_MAX))
    if dedupe is not None:
        cols['dedupe_key'] = ('%s', _text('dedupe', dedupe, KEY_MAX))
    if max_attempts is not None:
        cols['max_attempts'] = ('%s', _uint('max_attempts', max_attempts, 1))
    if timeout is not None:
        s = _seconds('timeout', timeout, 1, UINT_MAX)
        if s != int(s):
            raise ValueError('timeout: whole seconds, not %r' % (timeout,))
        cols['timeout_s'] = ('%s', int(s))
    if every is not None:
        s = _seconds('every', every, 0, UINT_MAX)
        if s != int(s):
            raise ValueError('every: whole seconds, not %r' % (every,))
        if group is not None:
            raise ValueError('every: a recurring row takes no part in groups: not with group')
        cols['period_s'] = ('%s', int(s))
    base_ms = max_ms = None
    if retry_base is not None:
        base_ms = int(round(_seconds('retry_base', retry_base, 0.001, BACKOFF_MAX_S) * 1000))
        cols['retry_base_ms'] = ('%s', base_ms)
    if retry_max is not None:
        max_ms = int(round(_seconds('retry_max', retry_max, 0.001, BACKOFF_MAX_S) * 1000))
        if base_ms is not None and max_ms < base_ms:
            raise ValueError('retry_max: not below retry_base (%r < %r)' % (retry_max, retry_base))
        cols['retry_max_ms'] = ('%s', max_ms)
    if dedupe_for is not None:
        if dedupe is None:
            raise ValueError('dedupe_for: the window of a dedupe key: give dedupe too')
        cols['dedupe_for_s'] = ('%s', int(math.ceil(_seconds('dedupe_for', dedupe_for, 0,
                                                              DEDUPE_FOR_MAX_S))))
    if content_type is not None:
        cols['content_type'] = ('%s', _text('content_type', content_type, KEY_MAX))
    if traceparent is not None:
        tp = _text('traceparent', traceparent, TRACEPARENT_MAX)
        parts = tp.split('-')
        if len(parts) != 4 or [len(p) for p in parts] != [2, 32, 16, 2] or \
                any(c not in '0123456789abcdef' for c in tp.replace('-', '')):
            raise ValueError('traceparent: a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), '
                             'not %r' % tp)
        cols['traceparent'] = ('%s', tp)
    return cols


def _after(after: Optional[Iterable[int]], on_dead: str) -> List[int]:
    if on_dead not in ON_DEAD:
        raise ValueError('on_dead: %s, not %r' % (' or '.join(ON_DEAD), on_dead))
    ids = list(after or ())
    for p in ids:
        if isinstance(p, bool) or not isinstance(p, int) or p < 1:
            raise ValueError('after: row ids (whole numbers from 1), not %r' % (p,))
    if len(set(ids)) != len(ids):
        raise ValueError('after: an id given twice')
    return ids


class _Sql:
    """The driver's paramstyle: %s (format, pyformat) or ? (qmark)."""

    def __init__(self, conn):
        mod = sys.modules.get(type(conn).__module__.split('.')[0])
        self.qmark = getattr(mod, 'paramstyle', 'format') == 'qmark'

    def __call__(self, cur, sql: str, params: Sequence[Any]) -> None:
        if self.qmark:
            sql = sql.replace('%s', '?')
        cur.execute(sql, tuple(params))


def _insert(conn, sql: _Sql, cols: Dict[str, Any], after: List[int], on_dead: str) -> int:
    names = list(cols)
    exprs = [cols[n][0] for n in names]
    params = [cols[n][1] for n in names]
    dedupe = 'dedupe_key' in cols
    cur = conn.cursor()
    try:
        sql(cur, 'INSERT %sINTO work_items (%s) VALUES (%s)'
            % ('IGNORE ' if dedupe else '', ', '.join(names), ', '.join(exprs)), params)
        if dedupe and cur.rowcount == 0:
            # Held by another row (live, or finished within the dedupe window): its id.
            sql(cur, 'SELECT id FROM work_items WHERE queue = %s AND dedupe_key = %s',
                [cols['queue'][1], cols['dedupe_key'][1]])
            row = cur.fetchone()
            if row is None:   # the holder went meanwhile: not added, no id to give
                raise RuntimeError('enqueue: the dedupe key %r was held, and its row is gone'
                                   % cols['dedupe_key'][1])
            return int(row[0])
        rid = int(cur.lastrowid)
        if after:
            sql(cur, 'INSERT INTO work_deps (parent_id, child_id, on_dead) VALUES %s'
                % ', '.join(['(%s, %s, %s)'] * len(after)),
                [v for p in after for v in (p, rid, on_dead)])
        return rid
    finally:
        cur.close()


OPTIONS = {'run_at', 'delay', 'priority', 'group', 'dedupe', 'dedupe_for', 'max_attempts',
           'timeout', 'every', 'content_type', 'traceparent', 'retry_base', 'retry_max'}


def enqueue(conn, queue: str, payload: Payload, *, after: Optional[Iterable[int]] = None,
            on_dead: str = 'cancel', **options: Any) -> int:
    """Add one row to queue in conn's current transaction (not committed here); returns its
    id, or with dedupe, the id of the row that already holds the key.

    payload: text, bytes, or any JSON value (then content_type 'application/json').
    Options: run_at (an aware datetime) or delay (seconds or a timedelta); priority (-10..10,
    smaller first); group (a FIFO group / key); dedupe (a key: not added while another row of
    the queue holds it) and dedupe_for (seconds it keeps the key once finished, instead of
    --dedupe-window); max_attempts; timeout (whole seconds, instead of --timeout); every
    (whole seconds: a recurring row); retry_base and retry_max (seconds: its own retry
    back-off, instead of its queue's); content_type; traceparent; after (ids of rows it waits
    for) with on_dead ('cancel': a dead parent cancels it; 'run': counts as done)."""
    unknown = set(options) - OPTIONS
    if unknown:
        raise TypeError('enqueue: no such option: %s' % ', '.join(sorted(unknown)))
    parents = _after(after, on_dead)
    cols = _row(queue, payload, waits=bool(parents), **options)
    return _insert(conn, _Sql(conn), cols, parents, on_dead)


class Graph:
    """Rows that wait for each other, added together:

        g = claimd.graph()
        fetch = g.add('etl', 'fetch')
        parse = g.add('etl', 'parse', after=[fetch])
        g.add('etl', 'report', after=[parse, fetch])
        ids = g.enqueue(conn)          # [id of fetch, id of parse, id of report]

    A node is a handle returned by add (or an existing row's id); since a node can only wait
    for nodes added before it, a graph cannot hold a cycle."""

    class Node:
        __slots__ = ('graph', 'index')

        def __init__(self, graph: 'Graph', index: int):
            self.graph = graph
            self.index = index

    def __init__(self):
        self._rows: List[Any] = []

    def add(self, queue: str, payload: Payload, *, after: Iterable[Any] = (),
            on_dead: str = 'cancel', **options: Any) -> 'Graph.Node':
        parents = []
        for p in after:
            if isinstance(p, Graph.Node):
                if p.graph is not self:
                    raise ValueError('after: a node of another graph')
                parents.append(p)
            else:
                parents.extend(_after([p], on_dead))
        if on_dead not in ON_DEAD:
            raise ValueError('on_dead: %s, not %r' % (' or '.join(ON_DEAD), on_dead))
        if 'dedupe' in options:
            raise ValueError('dedupe: not in a graph (a row not added would leave its '
                             'edges without a row)')
        cols = _row(queue, payload, waits=bool(parents), **options)
        self._rows.append((cols, parents, on_dead))
        return Graph.Node(self, len(self._rows) - 1)

    def enqueue(self, conn) -> List[int]:
        """Insert every row, then its edges, in conn's transaction (not committed here);
        returns the ids in the order the nodes were added."""
        sql = _Sql(conn)
        ids: List[int] = []
        for cols, parents, on_dead in self._rows:
            resolved = [ids[p.index] if isinstance(p, Graph.Node) else p for p in parents]
            ids.append(_insert(conn, sql, cols, resolved, on_dead))
        return ids


def graph() -> Graph:
    return Graph()
