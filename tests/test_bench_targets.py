#!/usr/bin/env python3
"""tools/benchlib/targets.py: the targets table, and that what was not measured is a MISS."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from benchlib import targets as T  # noqa: E402

SMALL = (T.Target('a.ratio', '>=', 2.0, 'x', 'a ratio'),
         T.Target('a.ms', '<=', 10, 'ms', 'a latency'),
         T.Target('b.lost', '==', 0, '', 'lost rows'))


class Table(unittest.TestCase):
    def test_every_target_is_well_formed_and_unique(self):
        keys = [t.key for t in T.TARGETS]
        self.assertEqual(len(keys), len(set(keys)), 'duplicate keys')
        for t in T.TARGETS:
            self.assertIn(t.cmp, T.COMPARE, t.key)
            self.assertIsInstance(t.threshold, (int, float), t.key)
            self.assertRegex(t.key, r'^[a-z]+\.[a-z0-9_]+$')
            self.assertTrue(t.description, t.key)

    def test_the_headline_targets_are_there(self):
        keys = {t.key: t for t in T.TARGETS}
        self.assertEqual(keys['handlers.so_vs_bullmq'].threshold, 2.0)
        self.assertEqual(keys['handlers.so_vs_baseline_noop'].threshold, 0.9)
        self.assertEqual(keys['handlers.pipe_node_vs_bullmq'].threshold, 1.8)
        self.assertEqual(keys['iobound.so_jobs_per_s'].threshold, 1900)
        self.assertEqual(keys['iobound.claimd_rss_mib'].cmp, '<=')
        self.assertEqual(keys['latency.sql_p99_ms'].threshold, 5)
        self.assertEqual(keys['latency.lone_job_messages'].threshold, 4)


    def test_the_benchmark_page_lists_every_target(self):
        page = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools',
                            'BENCHMARK.md')
        with open(page, encoding='utf-8') as f:
            text = f.read()
        section = text[text.index('## Targets'):]
        section = section[:section.index('\n## ', 1)]
        self.assertEqual([t.key for t in T.TARGETS if '`%s`' % t.key not in section], [])


class Evaluate(unittest.TestCase):
    def rows(self, metrics, reasons=None, run=('a', 'b')):
        return {r['key']: r for r in T.evaluate(metrics, reasons or {}, set(run), SMALL)}

    def test_met_and_missed(self):
        r = self.rows({'a.ratio': 2.0, 'a.ms': 10.5, 'b.lost': 0})
        self.assertEqual(r['a.ratio']['result'], 'pass')   # the threshold itself meets >=
        self.assertEqual(r['a.ms']['result'], 'MISS')
        self.assertEqual(r['b.lost']['result'], 'pass')
        self.assertEqual(r['b.lost']['why'], '')

    def test_unmeasured_is_a_miss_with_its_reason(self):
        r = self.rows({'a.ms': 1}, {'a.ratio': 'BullMQ: npm install failed'})
        self.assertEqual(r['a.ratio']['result'], 'MISS')
        self.assertIn('npm install failed', r['a.ratio']['why'])
        self.assertIn('npm install failed', r['a.ratio']['value'])

    def test_a_section_not_run_is_a_miss(self):
        r = self.rows({'a.ratio': 3, 'a.ms': 1}, run=('a',))
        self.assertEqual(r['b.lost']['result'], 'MISS')
        self.assertIn('section b not run', r['b.lost']['why'])

    def test_a_run_section_without_the_figure_is_a_miss(self):
        r = self.rows({'a.ratio': 3})
        self.assertEqual((r['a.ms']['result'], r['a.ms']['why']), ('MISS', 'not measured'))

    def test_none_is_not_a_value(self):
        r = self.rows({'a.ratio': None, 'a.ms': 0, 'b.lost': 1})
        self.assertEqual(r['a.ratio']['result'], 'MISS')
        self.assertEqual(r['a.ms']['result'], 'pass')
        self.assertEqual(r['b.lost']['result'], 'MISS')

    def test_tally(self):
        rows = T.evaluate({'a.ratio': 3, 'a.ms': 20}, {}, {'a'}, SMALL)
        self.assertEqual(T.tally(rows), (1, 2, 1))

    def test_formatting(self):
        self.assertEqual(T.fmt_target(SMALL[0]), '≥ 2')
        self.assertEqual(T.fmt_target(SMALL[1]), '≤ 10 ms')
        self.assertEqual(T.fmt_value(1.234, 'x'), '1.23')
        self.assertEqual(T.fmt_value(1800.4, 'jobs/s'), '1,800 jobs/s')


if __name__ == '__main__':
    unittest.main()
