"""The bench's arithmetic: rates, percentiles, medians and ratios. Pure functions of numbers
(no I/O), unit-tested by tests/test_bench_stats.py. A figure that could not be computed is
None, never 0 or a guess: every function here returns None rather than dividing by nothing."""


def percentile(values, p):
    """The nearest-rank p-th percentile (0 < p <= 100) of values, as claim_probe computes it:
    the smallest value with at least p % of the values at or below it. None when empty."""
    v = sorted(values)
    if not v:
        return None
    if not 0 < p <= 100:
        raise ValueError('percentile: p must be in (0, 100], not %r' % (p,))
    rank = max(1, min(len(v), int(-(-p * len(v) // 100))))
    return v[rank - 1]


def rate(count, seconds):
    """count per second over seconds; None when the span is not positive (one row, or a clock
    that did not move) or the count is unknown."""
    if count is None or seconds is None or seconds <= 0:
        return None
    return count / seconds


def span_rate(count, first, last):
    """The rate of count events from the first one's start to the last one's end (the same
    unit as first and last, seconds)."""
    if first is None or last is None:
        return None
    return rate(count, last - first)


def median(values):
    """The lower middle value (an actual measurement, not an average of two); None if empty."""
    v = sorted(x for x in values if x is not None)
    return v[(len(v) - 1) // 2] if v else None


def median_run(runs, key='jobs_per_s'):
    """The run (a dict) whose key is the median of runs' (lower middle for an even count),
    ignoring runs without that figure; None if none has it."""
    have = [r for r in runs if r.get(key) is not None]
    if not have:
        return None
    return sorted(have, key=lambda r: r[key])[(len(have) - 1) // 2]


def ratio(a, b):
    """a / b; None when either is unknown or b is not positive."""
    if a is None or b is None or b <= 0:
        return None
    return a / b


def paired_ratios(a_runs, b_runs, key='jobs_per_s'):
    """The ratio a/b of each round, from two lists of runs made in the same rounds (index i of
    each is round i); rounds where either side has no figure are left out."""
    out = []
    for a, b in zip(a_runs, b_runs):
        r = ratio(a.get(key), b.get(key))
        if r is not None:
            out.append(r)
    return out


def spread(values):
    """(min, max) of the values that are known; None if none is."""
    v = [x for x in values if x is not None]
    return (min(v), max(v)) if v else None


def per(total, n):
    """total / n for a count of things (workers, jobs); None for n <= 0."""
    return ratio(total, n)


def within_window(samples, start, end):
    """The values of (time, value) samples taken in [start, end]."""
    return [v for t, v in samples if start <= t <= end]


def run_costs(before, after, rows, ncpu):
    """Per-job costs of one run from two snapshots of counters (CPU seconds of the whole
    machine's busy time, of the database server, of the finished children (claimd or the
    probe, reaped by then) and of the bench; the server's page reads and binary log bytes;
    the wall clock). 'other' is every other process on the machine (other users, builds):
    it makes the figures noisy. ncpu: the machine's CPUs."""
    d = {k: after[k] - before[k] for k in before}
    other = max(0.0, d['busy'] - d['mariadbd'] - d['children'] - d['bench'])
    rows = max(rows, 1)
    wall = d['wall'] * ncpu
    return {
        'mariadbd_us_per_job': d['mariadbd'] / rows * 1e6,
        'client_us_per_job': d['children'] / rows * 1e6,
        'page_reads_per_job': d['page_reads'] / rows,
        'binlog_bytes_per_job': d['binlog_bytes'] / rows,
        'cpu_busy_pct': 100 * d['busy'] / wall if wall > 0 else None,
        'other_cpu_pct': 100 * other / wall if wall > 0 else None,
    }
