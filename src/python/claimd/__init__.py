"""claimd for Python: handlers run by claimd's pipe: workers, and work added through the
application's own database connection (in its own transaction).

    claimd.run(handle)                       # claimd.handler: serve items with handle(job)
    claimd.enqueue(conn, 'mail', payload)    # claimd.enqueue: one row, in conn's transaction
    claimd.graph()                           # rows that wait for each other
    claimd.Client(url, token).add('mail', payload)   # claimd.http: the HTTP API

Standard library only; a DB-API driver of the application's choice for enqueue.
"""

from .enqueue import Graph, enqueue, graph
from .handler import Job, RetryLater, run
from .http import Client, HTTPError

__version__ = '0.1.0'   # claimd's own (meson.build); tests/check_packages.py holds them equal

__all__ = ['Client', 'Graph', 'HTTPError', 'Job', 'RetryLater', 'enqueue', 'graph', 'run',
           '__version__']
