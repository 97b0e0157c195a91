#!/usr/bin/env python3
"""Writes tests/corpus/proto: the seed frames of the proto fuzz target (tests/fuzz_proto.c),
valid and broken, in the wire format of src/common/proto.h. Run it again when the format
changes: python3 tests/corpus/make_proto.py"""

import os
import random
import struct

VERSION = 7
PLACE = 20  # PLACE_SIZE
ACK, HELLO, PING, STATE, CLAIMED, FINISHED, WAKE, STOP, WANT, HOLDING, CANCEL = range(1, 12)


def frame(type_, body, id_=1, version=VERSION, length=None, magic=0xC1D0):
    n = len(body) if length is None else length
    return struct.pack('>HBBII', magic, version, type_, id_, n) + body


def cursor(seed=0):
    return bytes((0xA0 + seed + i) & 0xFF for i in range(PLACE))


def claimed(n, claim_us=1500, more=1, state=2):
    body = struct.pack('>H', n) + cursor(1) + struct.pack('>IBB', claim_us, more, state)
    for i in range(n):
        body += struct.pack('>QQ', 1000 + i, 0xABCD0000 + i)
    return frame(CLAIMED, body, id_=7)


def holding(n):
    body = struct.pack('>H', n)
    for i in range(n):
        body += struct.pack('>QQ', 1000 + i, 0xABCD0001 + i)
    return frame(HOLDING, body, id_=9)


def cancel(n):
    body = struct.pack('>H', n)
    for i in range(n):
        body += struct.pack('>QQ', 2000 + i, 0xABCD0002 + i)
    return frame(CANCEL, body, id_=11)


def finished(outcomes, queues=None):
    body = struct.pack('>H', len(outcomes))
    for i, o in enumerate(outcomes):
        q = queues[i] if queues else i % 16
        body += struct.pack('>QQBBII', 1000 + i, 0xABCD0000 + i, o, q, 250 * i, 1000 + i)
    return frame(FINISHED, body, id_=8)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'proto')
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    hello = frame(HELLO, struct.pack('>II', 4242, 3))
    ping = frame(PING, struct.pack('>Q', 1795000000123), id_=2)
    fin = finished([0, 1, 2])
    seeds = {
        'ack': frame(ACK, struct.pack('>I', 5), id_=3),
        'ack_wrong_size': frame(ACK, b'\x00\x00\x05', id_=3),
        'bad_magic': frame(PING, struct.pack('>Q', 1), magic=0xC1D1),
        'bad_version': frame(PING, struct.pack('>Q', 1), version=VERSION - 1),
        'claimed_0': claimed(0),
        'claimed_3': claimed(3),
        'claimed_256': claimed(256),
        'claimed_count_mismatch': claimed(3)[:-16],
        'holding_3': holding(3),
        'holding_256': holding(256),
        'holding_count_mismatch': holding(3)[:-8],
        'cancel_1': cancel(1),
        'cancel_256': cancel(256),
        'cancel_count_mismatch': cancel(2)[:-8],
        'finished_0': finished([]),
        'finished_256': finished([i % 6 for i in range(256)]),
        'finished_all_outcomes': finished([0, 1, 2, 3, 4, 5]),
        'finished_bad_outcome': finished([0, 6]),
        'finished_bad_queue': finished([0, 0], queues=[3, 16]),
        'hello': hello,
        'id_zero': frame(PING, struct.pack('>Q', 1), id_=0),
        'oversized_length': frame(CLAIMED, b'', length=8193),
        'oversized_length_4g': frame(WAKE, b'', length=0xFFFFFFFF),
        'ping': ping,
        'state_busy': frame(STATE, struct.pack('>B', 2)),
        'state_idle': frame(STATE, struct.pack('>B', 1)),
        'state_out_of_range': frame(STATE, struct.pack('>B', 9)),
        'state_v4_body': frame(STATE, struct.pack('>BQI', 1, 0, 0)),
        'stop': frame(STOP, struct.pack('>I', 30000)),
        'stream_all_types': frame(ACK, struct.pack('>I', 5)) + hello + ping +
                            frame(STATE, struct.pack('>B', 2)) + claimed(2) + fin +
                            frame(WAKE, cursor(2)) + frame(STOP, struct.pack('>I', 1)) +
                            frame(WANT, b''),
        'stream_then_partial': hello + ping[:7],
        'truncated_finished_body': fin[:-5],
        'truncated_header': hello[:9],
        'unknown_type': frame(CANCEL + 1, b''),
        'valid_then_garbage': ping + b'garbage, not a frame',
        'wake': frame(WAKE, cursor(3)),
        'want': frame(WANT, b''),
    }
    rnd = random.Random(7)
    seeds['garbage_random'] = bytes(rnd.randrange(256) for _ in range(300))
    for name, data in seeds.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print(f'{len(seeds)} frames in {out}')


if __name__ == '__main__':
    main()
