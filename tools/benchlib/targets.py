"""The bench's targets: one declarative table. Each target names a metric key (SECTION.NAME,
set by that section's module through Bench.metric), a comparison, a threshold and what it
means. evaluate() is pure: a target whose metric was not measured (its section not run, a
peer that could not be had, a flag this claimd refuses) is a MISS with the reason, never a
pass. Unit-tested by tests/test_bench_targets.py."""

import collections
import operator

Target = collections.namedtuple('Target', 'key cmp threshold unit description')

COMPARE = {'>=': operator.ge, '<=': operator.le, '==': operator.eq}
SHOW_CMP = {'>=': '≥', '<=': '≤', '==': '='}

# unit: how the value and the threshold are shown ('x' a ratio, '' a plain count).
TARGETS = (
    # -- the headline: real handlers against the peers, CPU-trivial jobs (section handlers) --
    Target('handlers.so_vs_baseline_noop', '>=', 0.9, 'x',
           'so: no-op, 2 workers at defaults / noop of the --baseline build, same rounds'),
    Target('handlers.so_vs_bullmq', '>=', 2.0, 'x',
           'so: no-op, 2 workers at defaults / BullMQ 2 x concurrency 10'),
    Target('handlers.so_vs_pgboss', '>=', 2.0, 'x',
           'so: no-op, 2 workers at defaults / pg-boss, 2 x batch 10'),
    Target('handlers.pipe_node_vs_bullmq', '>=', 1.8, 'x',
           'pipe: Node co-process no-op, 2 workers x --concurrency 10 / BullMQ 2 x '
           'concurrency 10 (the same items at once)'),
    Target('handlers.pipe_python_pkg_vs_pipe_python', '>=', 0.9, 'x',
           "pipe: the Python package's runtime (claimd.run) / the bare co-process "
           '(pipe-async.py), no-op, 2 workers at defaults, same rounds'),
    Target('handlers.pipe_node_pkg_vs_pipe_node', '>=', 0.9, 'x',
           "pipe: the Node.js package's runtime (run) / the bare co-process (pipe-async.mjs), "
           'no-op, 2 workers at defaults, same rounds'),
    # -- I/O-bound: 4,000 jobs of 50 ms, 2 workers, --concurrency 50 (section iobound) --
    Target('iobound.so_jobs_per_s', '>=', 1900, 'jobs/s',
           'so: sleep_ms=50, 2 workers x --concurrency 50'),
    Target('iobound.pipe_python_jobs_per_s', '>=', 1900, 'jobs/s',
           'pipe: Python asyncio co-process, 2 workers x --concurrency 50'),
    Target('iobound.pipe_node_jobs_per_s', '>=', 1900, 'jobs/s',
           'pipe: Node co-process, 2 workers x --concurrency 50'),
    Target('iobound.pipe_python_pkg_jobs_per_s', '>=', 1900, 'jobs/s',
           "pipe: the Python package's runtime, 2 workers x --concurrency 50"),
    Target('iobound.pipe_node_pkg_jobs_per_s', '>=', 1900, 'jobs/s',
           "pipe: the Node.js package's runtime, 2 workers x --concurrency 50"),
    Target('iobound.so_vs_bullmq', '>=', 1.0, 'x', 'so: / BullMQ 2 x concurrency 50, I/O-bound'),
    Target('iobound.pipe_python_vs_bullmq', '>=', 1.0, 'x',
           'pipe: Python asyncio / BullMQ 2 x concurrency 50, I/O-bound'),
    Target('iobound.pipe_node_vs_bullmq', '>=', 1.0, 'x',
           'pipe: Node / BullMQ 2 x concurrency 50, I/O-bound'),
    Target('iobound.claimd_rss_mib', '<=', 64, 'MiB',
           "claimd's own processes (supervisor, fork server, workers; not co-processes) "
           'together, the most sampled during the I/O-bound runs, VmRSS'),
    Target('iobound.connections_per_worker', '<=', 2, '',
           "claimd's database connections (the server's processlist, by its user) / workers, "
           'the most sampled during the I/O-bound runs'),
    # -- latency: plain SQL INSERT -> start, idle workers (section latency) --
    Target('latency.sql_p50_ms', '<=', 2, 'ms',
           'plain SQL INSERT -> start p50 (claimed_at - created_at, a row every 30 ms)'),
    Target('latency.sql_p99_ms', '<=', 5, 'ms', 'plain SQL INSERT -> start p99'),
    Target('latency.sql_after_return_p50_ms', '<=', 0.5, 'ms',
           "claimd's share: the start after the INSERT returned to its client, p50"),
    Target('latency.lone_job_messages', '<=', 4, '',
           'messages between supervisor and workers per lone job (plain SQL, a row every '
           '30 ms, acknowledgements aside)'),
    Target('latency.add_p50_ms', '<=', 2, 'ms', 'claimctl add -> start p50'),
    Target('latency.add_p99_ms', '<=', 10, 'ms', 'claimctl add -> start p99'),
    Target('latency.delayed_p50_ms', '<=', 5, 'ms', 'a delayed row: run_at -> start p50'),
    # -- idle database load (section idle) --
    Target('idle.qps_2w', '<=', 0.2, 'q/s', 'idle statements/s, 2 workers, woken by the binlog'),
    Target('idle.qps_16w', '<=', 0.2, 'q/s', 'idle statements/s, 16 workers'),
    Target('idle.qps_poll', '<=', 10, 'q/s', 'idle statements/s, 2 workers, --wake poll'),
    Target('idle.qps_2w_minus_baseline', '<=', 0.05, 'q/s',
           'idle statements/s, 2 workers: this build - the --baseline build (no regression)'),
    # -- the machinery: noop throughput (section throughput) --
    Target('throughput.probe_ratio_min', '>=', 0.9, 'x',
           'noop at defaults / bare-SQL probe at batch 500, the lowest over the worker counts'),
    Target('throughput.defaults_vs_best_fixed', '>=', 0.95, 'x',
           'noop, 2 workers: --batch auto / the best fixed batch'),
    Target('throughput.pushed_vs_poll', '>=', 0.95, 'x',
           'noop, 2 workers: woken by the binary log / --wake poll'),
    Target('throughput.vs_baseline_1w', '>=', 0.9, 'x',
           'noop, 1 worker / the --baseline build (no regression)'),
    Target('throughput.vs_baseline_8w', '>=', 0.9, 'x',
           'noop, 8 workers / the --baseline build (no regression)'),
    # -- memory of an idle pool (section rss) --
    Target('rss.worker_mib', '<=', 4, 'MiB', 'worker VmRSS (the largest), 2 idle workers'),
    Target('rss.supervisor_mib', '<=', 8, 'MiB', 'supervisor VmRSS, 2 idle workers'),
    # -- the rest --
    Target('claimtime.ratio_p50', '<=', 1.5, 'x', 'claim time p50, 1M ready + 5M done / 10k'),
    Target('claimtime.ratio_mean', '<=', 1.5, 'x', 'claim time mean, the same'),
    Target('http.enqueues_per_s_64', '>=', 10000, '/s', 'HTTP enqueues/s, 64 connections'),
    Target('http.p99_ms_64', '<=', 50, 'ms', 'HTTP enqueue p99, 64 connections'),
    Target('dashboard.ratio', '>=', 0.98, 'x', 'noop jobs/s with the dashboard polled / without'),
    Target('binlog.pushed_vs_poll', '>=', 0.95, 'x',
           'noop jobs/s following the binary log / polling, with the log on'),
    # -- rows with keys (section keyed), the worst round --
    Target('keyed.distinct_vs_none', '>=', 0.9, 'x',
           'noop, 2 workers: rows under a key each / the same rows without keys'),
    Target('keyed.n1_vs_none', '>=', 0.5, 'x',
           'noop, 2 workers: rows over 100 keys run one at a time (FIFO) / without keys'),
    Target('keyed.n5_vs_none', '>=', 0.8, 'x',
           'noop, 2 workers: rows over 100 keys run five at a time / without keys'),
    Target('killstorm.ratio', '>=', 0.3, 'x', 'noop jobs/s under a SIGKILL every 100 ms / calm'),
    Target('killstorm.not_done', '==', 0, '', 'rows not done after the kill storms'),
)


def section_of(key):
    return key.split('.', 1)[0]


def fmt_value(v, unit):
    """A figure as the summary shows it."""
    if v is None:
        return '-'
    if unit == 'x':
        return '%.2f' % v
    if unit in ('ms', 'q/s', 'MiB'):
        return '%.2f %s' % (v, unit)
    if isinstance(v, float) and abs(v) < 100:
        return '%.2f%s' % (v, ' ' + unit if unit else '')
    return '{:,.0f}'.format(v) + (' ' + unit if unit else '')


def fmt_target(t):
    th = ('%g' % t.threshold) if t.unit in ('x', 'ms', 'q/s', 'MiB', '') else \
        '{:,.0f}'.format(t.threshold)
    return '%s %s%s' % (SHOW_CMP[t.cmp], th, ' ' + t.unit if t.unit and t.unit != 'x' else '')


def check(t, value):
    """True if value meets target t; False if not or if there is no value."""
    if value is None:
        return False
    return COMPARE[t.cmp](value, t.threshold)


def evaluate(metrics, reasons, sections_run, targets=TARGETS):
    """One row per target: {'key', 'description', 'value', 'target', 'result', 'why'}.
    metrics: key -> number as measured; reasons: key -> why it was not measured;
    sections_run: the sections that ran. result is 'pass' or 'MISS'; why says what kept a
    target from being measured."""
    rows = []
    for t in targets:
        v = metrics.get(t.key)
        if v is not None:
            ok, why = check(t, v), ''
        else:
            ok = False
            if t.key in reasons:
                why = 'not measured: ' + reasons[t.key]
            elif section_of(t.key) not in sections_run:
                why = 'not measured: section %s not run' % section_of(t.key)
            else:
                why = 'not measured'
        rows.append({'key': t.key, 'description': t.description,
                     'value': fmt_value(v, t.unit) if v is not None else why,
                     'target': fmt_target(t), 'result': 'pass' if ok else 'MISS', 'why': why})
    return rows


def tally(rows):
    """(passed, missed, not measured) counts of evaluate()'s rows."""
    passed = sum(r['result'] == 'pass' for r in rows)
    unmeasured = sum(bool(r['why']) for r in rows)
    return passed, len(rows) - passed, unmeasured
