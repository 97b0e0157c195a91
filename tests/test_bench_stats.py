#!/usr/bin/env python3
"""tools/benchlib/stats.py: the bench's rate, percentile, median and ratio arithmetic."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tools'))
from benchlib import stats  # noqa: E402


class Percentile(unittest.TestCase):
    def test_nearest_rank_over_a_hundred_values(self):
        v = list(range(1, 101))
        for p, want in ((50, 50), (99, 99), (100, 100), (1, 1), (0.5, 1), (99.5, 100)):
            self.assertEqual(stats.percentile(v, p), want, p)

    def test_order_of_the_input_does_not_matter(self):
        self.assertEqual(stats.percentile([9, 1, 5, 3, 7], 50), 5)
        self.assertEqual(stats.percentile([9, 1, 5, 3, 7], 99), 9)

    def test_small_samples_round_up_not_down(self):
        # 4 values: p50 is the 2nd, p99 the 4th, p25 the 1st, p26 the 2nd
        v = [10, 20, 30, 40]
        self.assertEqual([stats.percentile(v, p) for p in (25, 26, 50, 51, 99)],
                         [10, 20, 20, 30, 40])

    def test_one_value_is_every_percentile(self):
        self.assertEqual([stats.percentile([2.5], p) for p in (1, 50, 99, 100)], [2.5] * 4)

    def test_empty_is_none(self):
        self.assertIsNone(stats.percentile([], 50))

    def test_p_outside_0_100_is_refused(self):
        for p in (0, -1, 101):
            with self.assertRaises(ValueError):
                stats.percentile([1, 2], p)

    def test_p99_of_1000_skips_the_ten_worst(self):
        v = [1.0] * 990 + [50.0] * 10
        self.assertEqual(stats.percentile(v, 99), 1.0)
        self.assertEqual(stats.percentile(v + [50.0], 99), 50.0)


class Rate(unittest.TestCase):
    def test_rate(self):
        self.assertEqual(stats.rate(4000, 2.0), 2000)
        self.assertEqual(stats.span_rate(100, 10.0, 10.5), 200)

    def test_no_span_is_no_rate(self):
        for args in ((10, 0), (10, -1), (None, 1), (10, None)):
            self.assertIsNone(stats.rate(*args), args)
        self.assertIsNone(stats.span_rate(10, None, 3))
        self.assertIsNone(stats.span_rate(10, 5, 5))


class Medians(unittest.TestCase):
    def test_median_is_a_measured_value(self):
        self.assertEqual(stats.median([3, 1, 2]), 2)
        self.assertEqual(stats.median([4, 1, 3, 2]), 2)   # the lower middle, not 2.5
        self.assertIsNone(stats.median([]))
        self.assertEqual(stats.median([None, 5, None]), 5)

    def test_median_run_picks_the_run(self):
        runs = [{'jobs_per_s': 30, 'n': 'a'}, {'jobs_per_s': 10, 'n': 'b'},
                {'jobs_per_s': 20, 'n': 'c'}, {'jobs_per_s': None, 'n': 'd'}, {'n': 'e'}]
        self.assertEqual(stats.median_run(runs)['n'], 'c')
        self.assertEqual(stats.median_run(runs[:2])['n'], 'b')
        self.assertIsNone(stats.median_run([{'n': 1}]))
        self.assertEqual(stats.median_run([{'p50': 5, 'n': 1}], key='p50')['n'], 1)


class Ratios(unittest.TestCase):
    def test_ratio(self):
        self.assertEqual(stats.ratio(3, 2), 1.5)
        for a, b in ((1, 0), (1, -2), (None, 1), (1, None)):
            self.assertIsNone(stats.ratio(a, b))

    def test_paired_ratios_are_per_round(self):
        a = [{'jobs_per_s': 20}, {'jobs_per_s': None}, {'jobs_per_s': 30}]
        b = [{'jobs_per_s': 10}, {'jobs_per_s': 10}, {'jobs_per_s': 60}, {'jobs_per_s': 1}]
        self.assertEqual(stats.paired_ratios(a, b), [2.0, 0.5])

    def test_spread_and_per(self):
        self.assertEqual(stats.spread([3, None, 1, 2]), (1, 3))
        self.assertIsNone(stats.spread([None]))
        self.assertEqual(stats.per(6, 2), 3)
        self.assertIsNone(stats.per(6, 0))

    def test_within_window(self):
        s = [(0.5, 'a'), (1.0, 'b'), (2.0, 'c'), (3.5, 'd')]
        self.assertEqual(stats.within_window(s, 1.0, 3.0), ['b', 'c'])


class RunCosts(unittest.TestCase):
    def snap(self, **kw):
        base = dict(wall=0.0, busy=0.0, mariadbd=0.0, children=0.0, bench=0.0, page_reads=0,
                    binlog_bytes=0)
        base.update(kw)
        return base

    def test_per_job_and_the_others_share(self):
        before = self.snap(wall=100.0, busy=50.0, mariadbd=10.0, children=1.0, bench=2.0,
                           page_reads=1000, binlog_bytes=500)
        # 10 s on 2 CPUs: 12 s busy, of which the server 4, claimd 3, the bench 1: others 4
        after = self.snap(wall=110.0, busy=62.0, mariadbd=14.0, children=4.0, bench=3.0,
                          page_reads=3000, binlog_bytes=1500)
        c = stats.run_costs(before, after, 1000, 2)
        self.assertAlmostEqual(c['mariadbd_us_per_job'], 4000)
        self.assertAlmostEqual(c['client_us_per_job'], 3000)
        self.assertAlmostEqual(c['page_reads_per_job'], 2)
        self.assertAlmostEqual(c['binlog_bytes_per_job'], 1)
        self.assertAlmostEqual(c['cpu_busy_pct'], 60)
        self.assertAlmostEqual(c['other_cpu_pct'], 20)

    def test_others_never_below_zero_and_no_time_no_share(self):
        s = self.snap(busy=1.0)
        c = stats.run_costs(self.snap(), self.snap(busy=1.0, mariadbd=2.0, wall=1.0), 0, 1)
        self.assertEqual(c['other_cpu_pct'], 0)
        self.assertIsNone(stats.run_costs(s, s, 10, 2)['other_cpu_pct'])


if __name__ == '__main__':
    unittest.main()
