"""The bench's pipe: handler written with claimd's Python package (src/python), as its README
shows a user writing one: what the example co-process pipe-async.py does (a payload that is
JSON with "sleep_ms" waits that long without CPU; a payload is echoed back, an empty one leaves
no result), in a function. tools/bench runs it with the package from the checkout
(PYTHONPATH) beside pipe-async.py: sections handlers (CPU-trivial) and iobound."""

import asyncio
import json

import claimd


async def handle(job):
    p = job.payload
    if isinstance(p, str) and p[:1] == '{':
        ms = json.loads(p).get('sleep_ms')
        if ms:
            await asyncio.sleep(ms / 1000)
    return {'echo': p} if p else None


claimd.run(handle)
