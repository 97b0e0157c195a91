#!/usr/bin/env python3
"""The concurrent pipe: examples (src/deploy/examples/pipe-async.py and pipe-async.mjs) speak
the protocol standalone: lines fed through a subprocess, as claimd feeds them.

    test_pipe_async.py python|node

Exits 77 (skipped) for node only when node is not installed."""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import unittest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'deploy',
                        'examples')
WAIT = 20   # seconds any one expected line may take on a loaded machine


def command(kind):
    if kind == 'python':
        return [sys.executable, os.path.join(EXAMPLES, 'pipe-async.py')]
    return [shutil.which('node'), os.path.join(EXAMPLES, 'pipe-async.mjs')]


def req(jid, payload):
    return json.dumps({'id': jid, 'queue': 'default', 'group': None, 'attempt': 1,
                       'max_attempts': 5, 'seq': 0, 'enqueued_at': None, 'deadline_ms': 300000,
                       'deadline_at': 0, 'content_type': None, 'payload': payload})


def sleeping(ms):
    return json.dumps({'sleep_ms': ms})


class CoProcess:
    """The example under test, its stdout lines read by a thread into a queue."""

    def __init__(self, kind):
        self.p = subprocess.Popen(command(kind), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines = queue.Queue()
        self.raw = []
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self.next()   # its first line, before any request: {"ready":true}

    def _read(self):
        for line in self.p.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def send(self, *lines):
        for line in lines:
            self.p.stdin.write(line + '\n')
        self.p.stdin.flush()

    def next(self, timeout=WAIT):
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise AssertionError('stdout closed; stderr: ' + self.p.stderr.read())
        return json.loads(line)

    def replies(self, n):
        """The next n final replies (ok true or false), in order, and the progress lines seen."""
        out, progress = [], []
        while len(out) < n:
            msg = self.next()
            (progress if 'progress' in msg else out).append(msg)
        return out, progress

    def nothing_for(self, seconds):
        try:
            line = self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        raise AssertionError('unexpected output: %r' % line)

    def close(self):
        """EOF on stdin; the exit status, stderr, and every stdout line it printed."""
        self.p.stdin.close()
        rc = self.p.wait(timeout=WAIT)
        err = self.p.stderr.read()
        tail = []
        while True:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                break
            tail.append(json.loads(line))
        return rc, err, tail


class PipeAsync(unittest.TestCase):
    kind = 'python'

    def setUp(self):
        self.c = CoProcess(self.kind)

    def tearDown(self):
        if self.c.p.poll() is None:
            self.c.p.kill()
            self.c.p.wait()
        for f in (self.c.p.stdin, self.c.p.stdout, self.c.p.stderr):
            try:
                f.close()
            except (OSError, ValueError):
                pass
        # its first line said it was ready; every other line it ever wrote to stdout is a
        # reply or a progress line
        self.assertEqual(self.c.hello, {'ready': True})
        for line in self.c.raw[1:]:
            msg = json.loads(line)
            self.assertIsInstance(msg.get('id'), int, line)
            self.assertTrue('progress' in msg or isinstance(msg.get('ok'), bool), line)

    def test_items_run_at_once_and_are_answered_by_id_in_any_order(self):
        self.c.send(req(1, sleeping(1500)), req(2, sleeping(700)), req(3, sleeping(100)))
        done, progress = self.c.replies(3)
        # one at a time would answer 1 first
        self.assertEqual([d['id'] for d in done], [3, 2, 1])
        for d, ms in zip(done, (100, 700, 1500)):
            self.assertEqual(d, {'id': d['id'], 'ok': True, 'result': {'echo': sleeping(ms)}})
        self.assertEqual(sorted(p['id'] for p in progress), [1, 2, 3])   # once each
        self.assertTrue(all(p['progress'] == 0.5 for p in progress))

    def test_progress_comes_before_its_reply(self):
        self.c.send(req(7, sleeping(50)))
        first, second = self.c.next(), self.c.next()
        self.assertEqual(first, {'id': 7, 'progress': 0.5})
        self.assertEqual((second['id'], second['ok']), (7, True))

    def test_a_payload_without_sleep_ms_is_echoed_at_once(self):
        self.c.send(req(1, 'plain text'), req(2, '{"n": 3}'), req(3, None), req(4, ''))
        done, progress = self.c.replies(4)
        self.assertEqual(progress, [])
        # an empty payload (or none: not UTF-8) leaves no result
        self.assertEqual({d['id']: d.get('result') for d in done},
                         {1: {'echo': 'plain text'}, 2: {'echo': '{"n": 3}'}, 3: None, 4: None})
        self.assertEqual([d['ok'] for d in done], [True] * 4)

    def test_a_bad_sleep_ms_fails_the_item_only(self):
        self.c.send(req(1, '{"sleep_ms": -5}'), req(2, '{"sleep_ms": "x"}'), req(3, 'ok'))
        done, _ = self.c.replies(3)
        by_id = {d['id']: d for d in done}
        for i in (1, 2):
            self.assertFalse(by_id[i]['ok'])
            self.assertIn('sleep_ms', by_id[i]['error'])
        self.assertTrue(by_id[3]['ok'])

    def test_cancel_stops_the_item_and_answers_it(self):
        self.c.send(req(10, sleeping(600000)), req(11, sleeping(300)))
        self.c.send(json.dumps({'id': 10, 'cancel': True, 'reason': 'timeout'}))
        msg = self.c.next()
        self.assertEqual(msg['id'], 10)
        self.assertFalse(msg['ok'])
        self.assertIn('timeout', msg['error'])
        done, _ = self.c.replies(1)   # the other one runs on
        self.assertEqual((done[0]['id'], done[0]['ok']), (11, True))

    def test_cancel_right_after_the_request_still_answers(self):
        self.c.send(req(5, sleeping(600000)),
                    json.dumps({'id': 5, 'cancel': True, 'reason': 'shutdown'}))
        msg = self.c.next()
        self.assertEqual((msg['id'], msg['ok']), (5, False))
        self.assertIn('shutdown', msg['error'])

    def test_lines_for_ids_not_outstanding_are_ignored(self):
        self.c.send(req(1, sleeping(100)))
        self.c.replies(1)
        self.c.send(json.dumps({'id': 1, 'cancel': True, 'reason': 'cancelled'}),
                    json.dumps({'id': 42, 'cancel': True, 'reason': 'timeout'}))
        self.c.nothing_for(0.5)
        self.c.send(req(2, 'after'))
        done, _ = self.c.replies(1)
        self.assertEqual(done[0]['id'], 2)

    def test_a_second_request_for_a_running_id_is_ignored(self):
        self.c.send(req(1, sleeping(300)), req(1, 'again'))
        done, _ = self.c.replies(1)
        self.assertEqual(done[0]['result']['echo'], sleeping(300))
        rc, err, tail = self.c.close()
        self.assertEqual((rc, tail), (0, []))
        self.assertIn('second request', err)

    def test_malformed_lines_are_logged_and_ignored(self):
        bad = ['not json', '[1, 2]', '{"payload": "no id"}', '{"id": "7"}', '{"id": true}',
               '{"id": 1.5}', 'null', '{']
        self.c.send(*bad)
        self.c.send('', req(9, 'still here'))
        done, _ = self.c.replies(1)
        self.assertEqual((done[0]['id'], done[0]['ok']), (9, True))
        rc, err, tail = self.c.close()
        self.assertEqual((rc, tail), (0, []))
        self.assertGreaterEqual(err.count('ignored'), len(bad), err)

    def test_end_of_input_finishes_outstanding_items_then_exits_0(self):
        self.c.send(req(1, sleeping(400)), req(2, sleeping(200)))
        rc, err, tail = self.c.close()
        self.assertEqual(rc, 0, err)
        replies = [m for m in tail if 'ok' in m]
        self.assertEqual(sorted(m['id'] for m in replies), [1, 2])
        self.assertTrue(all(m['ok'] for m in replies))


class PipeAsyncNode(PipeAsync):
    kind = 'node'


if __name__ == '__main__':
    which = sys.argv[1] if len(sys.argv) > 1 else 'python'
    del sys.argv[1:]
    if which == 'node':
        if not shutil.which('node'):
            print('node is not installed: skipped')
            sys.exit(77)
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(PipeAsyncNode)
    else:
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(PipeAsync)
    ok = unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful()
    sys.exit(0 if ok else 1)
