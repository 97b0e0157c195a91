"""claimd.http: claimd's HTTP API (claimd-api(7)) for programs without database access.

    client = claimd.Client('http://127.0.0.1:8080', token=open('/run/claimd/token').read())
    job_id = client.add('mail', {'to': 'a@example.com'}, delay='30s', dedupe='welcome-7')
    job = client.job(job_id, wait='20s')         # the row, once done or dead (or after 20 s)
    ids = client.add_batch('etl', [{'ref': 'a', 'payload': 'extract'},
                                   {'after': ['a'], 'payload': 'load'}])

Every operation of claimd's openapi.json is in OPERATIONS (method, path, query parameters),
from which call() builds each request: tests/integration/test_python_package.py holds the two
equal, so the client cannot drift from the server it talks to. Standard library only
(urllib). An answer other than 2xx raises HTTPError with the status and claimd's message.
"""

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterable, List, Optional, Tuple

__all__ = ['Client', 'HTTPError', 'OPERATIONS']

# operationId -> (method, path, query parameters): claimd's openapi.json, operation by operation.
OPERATIONS: Dict[str, Tuple[str, str, Tuple[str, ...]]] = {
    'healthz': ('GET', '/healthz', ()),
    'metrics': ('GET', '/metrics', ()),
    'openapi': ('GET', '/v1/openapi.json', ()),
    'status': ('GET', '/v1/status', ()),
    'supervisors': ('GET', '/v1/supervisors', ()),
    'stats': ('GET', '/v1/stats', ('seconds', 'queue', 'from', 'to', 'since', 'step')),
    'queues': ('GET', '/v1/queues', ()),
    'addJob': ('POST', '/v1/queues/{queue}/jobs',
               ('run_at', 'delay', 'period', 'max_attempts', 'timeout', 'dedupe', 'priority',
                'group', 'content_type', 'retry_base', 'retry_max', 'dedupe_for')),
    'addJobs': ('POST', '/v1/queues/{queue}/jobs:batch', ('batch', 'description')),
    'pauseQueue': ('POST', '/v1/queues/{queue}/pause', ()),
    'resumeQueue': ('POST', '/v1/queues/{queue}/resume', ()),
    'limitQueue': ('POST', '/v1/queues/{queue}/limit',
                   ('interval', 'burst', 'concurrency', 'group', 'each_group')),
    'queueLimits': ('GET', '/v1/queues/{queue}/limits', ()),
    'backoffQueue': ('POST', '/v1/queues/{queue}/backoff', ('base', 'max', 'jitter', 'reset')),
    'jobs': ('GET', '/v1/jobs',
             ('state', 'queue', 'id', 'group', 'dedupe', 'error', 'limit', 'before')),
    'job': ('GET', '/v1/jobs/{id}', ('wait',)),
    'cancelJob': ('DELETE', '/v1/jobs/{id}', ()),
    'jobEvents': ('GET', '/v1/jobs/{id}/events', ()),
    'retryJob': ('POST', '/v1/jobs/{id}/retry', ()),
    'schedules': ('GET', '/v1/schedules', ('limit', 'after')),
    'schedule': ('GET', '/v1/schedules/{name}', ()),
    'putSchedule': ('PUT', '/v1/schedules/{name}',
                    ('cron', 'tz', 'queue', 'catch_up', 'paused', 'max_attempts', 'timeout',
                     'priority', 'group', 'content_type')),
    'deleteSchedule': ('DELETE', '/v1/schedules/{name}', ()),
    'pauseSchedule': ('POST', '/v1/schedules/{name}/pause', ()),
    'resumeSchedule': ('POST', '/v1/schedules/{name}/resume', ()),
    'batches': ('GET', '/v1/batches', ('limit', 'before')),
    'batch': ('GET', '/v1/batches/{id}', ()),
    'batchEvents': ('GET', '/v1/batches/{id}/events', ()),
    'jobs.bulk': ('POST', '/v1/jobs/bulk',
                  ('action', 'state', 'queue', 'id', 'group', 'dedupe', 'error', 'confirm')),
}


class HTTPError(Exception):
    """claimd answered status (not 2xx) with message (its JSON error, or the body)."""

    def __init__(self, status: int, message: str, operation: str):
        super().__init__('%s: HTTP %d: %s' % (operation, status, message))
        self.status = status
        self.message = message


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return '1' if v else '0'
    return str(v)


class Client:
    """One claimd's HTTP API at base_url (http://host:port or https://...), with its token.
    timeout: seconds a request may take (a job(wait=...) is given its wait on top)."""

    def __init__(self, base_url: str, token: Optional[str] = None, *, timeout: float = 30.0,
                 ssl_context=None):
        self.base = base_url.rstrip('/')
        self.token = token.strip() if token else None
        self.timeout = timeout
        self.ssl_context = ssl_context

    def call(self, operation: str, body: Optional[bytes] = None,
             headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = None,
             **params: Any) -> Tuple[int, Any]:
        """Any operation of OPERATIONS by its openapi.json operationId: path parameters and
        query parameters by name (None: left out); returns (status, the JSON answer, or the
        text when it is not JSON)."""
        if operation not in OPERATIONS:
            raise ValueError('no operation %r in claimd\'s API' % operation)
        method, path, names = OPERATIONS[operation]
        for part in [p[1:-1] for p in path.split('/') if p.startswith('{')]:
            if params.get(part) is None:
                raise ValueError('%s: %s is required' % (operation, part))
            path = path.replace('{%s}' % part, urllib.parse.quote(str(params.pop(part)), safe=''))
        unknown = set(k for k, v in params.items() if v is not None) - set(names)
        if unknown:
            raise ValueError('%s takes no %s' % (operation, ', '.join(sorted(unknown))))
        query = urllib.parse.urlencode([(k, _value(v)) for k, v in params.items()
                                        if v is not None])
        req = urllib.request.Request(self.base + path + ('?' + query if query else ''),
                                     data=body, method=method, headers=dict(headers or {}))
        if self.token:
            req.add_header('Authorization', 'Bearer ' + self.token)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout,
                                        context=self.ssl_context) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = raw.decode('utf-8', 'replace')
        if not 200 <= status < 300:
            message = answer.get('error') if isinstance(answer, dict) else answer
            raise HTTPError(status, str(message), operation)
        return status, answer

    # -- jobs

    def add(self, queue: str, payload: Any = b'', *, content_type: Optional[str] = None,
            traceparent: Optional[str] = None, **options: Any) -> int:
        """Add one job; returns its id (with dedupe, the id of the row holding the key).
        payload: bytes, text, or any other JSON value (sent as application/json). Options:
        addJob's query parameters (delay='30s', priority=-1, group=..., dedupe=...,
        dedupe_for=..., max_attempts=..., timeout=..., period=..., run_at=..., retry_base=...,
        retry_max=...)."""
        if isinstance(payload, str):
            body, ctype = payload.encode('utf-8'), 'text/plain; charset=utf-8'
        elif isinstance(payload, (bytes, bytearray, memoryview)):
            body, ctype = bytes(payload), 'application/octet-stream'
        else:
            body, ctype = json.dumps(payload, separators=(',', ':')).encode('utf-8'), \
                'application/json'
        headers = {'Content-Type': content_type or ctype}
        if traceparent:
            headers['traceparent'] = traceparent
        _, answer = self.call('addJob', body, headers, queue=queue, **options)
        return int(answer['id'])

    def add_batch(self, queue: str, jobs: Iterable[Dict[str, Any]], *, batch: bool = False,
                  description: Optional[str] = None) -> Dict[str, Any]:
        """Add many jobs in one transaction: each a dict as a jobs:batch line ({'payload': ...,
        'delay': '30s', 'ref': 'a', 'after': ['b']}, claimd-workflows(7)). Returns claimd's
        answer: {'jobs': [{'id': ...}, ...]} (with 'batch' for a graph or batch)."""
        body = ''.join(json.dumps(j, separators=(',', ':')) + '\n' for j in jobs)
        _, answer = self.call('addJobs', body.encode('utf-8'),
                              {'Content-Type': 'application/x-ndjson'}, queue=queue,
                              batch='1' if batch else None, description=description)
        return answer

    def job(self, job_id: int, *, wait: Optional[str] = None) -> Dict[str, Any]:
        """The row (claimd-api(7)'s Job); with wait ('20s', at most 60 s), once it is done or
        dead, or after that long."""
        extra = 0.0
        if wait:
            extra = 61.0
        _, answer = self.call('job', timeout=self.timeout + extra, id=job_id, wait=wait)
        return answer

    def cancel(self, job_id: int) -> Dict[str, Any]:
        """Delete a ready or dead row; a running one is cancelled where it runs (202)."""
        return self.call('cancelJob', id=job_id)[1]

    def retry(self, job_id: int) -> Dict[str, Any]:
        return self.call('retryJob', id=job_id)[1]

    def jobs(self, **filters: Any) -> Dict[str, Any]:
        return self.call('jobs', **filters)[1]

    # -- queues and the rest

    def queues(self) -> List[Dict[str, Any]]:
        return self.call('queues')[1]

    def pause(self, queue: str) -> Dict[str, Any]:
        return self.call('pauseQueue', queue=queue)[1]

    def resume(self, queue: str) -> Dict[str, Any]:
        return self.call('resumeQueue', queue=queue)[1]

    def batch(self, batch_id: int) -> Dict[str, Any]:
        return self.call('batch', id=batch_id)[1]

    def status(self) -> Dict[str, Any]:
        return self.call('status')[1]
