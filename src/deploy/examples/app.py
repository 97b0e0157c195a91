#!/usr/bin/env python3
"""claimd from Python with its package (pip install --no-build-isolation
/path/to/claimd/src/python): a handler claimd runs, and work added by the application in its
own transaction.

    claimd --handler 'pipe:/usr/bin/python3 /path/to/app.py' --pipe-ready --concurrency 50
"""
import claimd


async def handle(job):                            # many at once; job.payload: JSON decoded
    order = job.payload
    job.progress({'order': order['id']})
    if order.get('gift'):                         # committed with this job's outcome, once
        job.enqueue('wrap', {'order': order['id']}, priority=-1)
    return {'mailed': order['to']}                # the row's result


def order_paid(conn, order_id, to):               # conn: the application's (PyMySQL, ...)
    with conn.cursor() as cur:
        cur.execute("UPDATE orders SET state = 'paid' WHERE id = %s", (order_id,))
    claimd.enqueue(conn, 'mail', {'id': order_id, 'to': to}, dedupe=f'mail-{order_id}')
    conn.commit()                                 # the order and its mail, or neither


if __name__ == '__main__':
    claimd.run(handle)
