"""The summary against the targets (targets.TARGETS), bench-out/report.md (the summary, the
machine, each section's table), bench-out/results.json (every figure) and bench-out/bench.png
(gnuplot: the headline's jobs/s, the machinery's curve and the latencies)."""

import json
import os
import shutil
import subprocess
import sys

from .common import log, md_table
from . import targets as T


def summary_rows(b):
    """(metric, value, target, result) rows: every target, then the lines without one."""
    rows, not_run = [], {}
    for r in T.evaluate(b.metrics, b.reasons, b.ran):
        sec = T.section_of(r['key'])
        if sec not in b.ran:   # one line per section not run, each of its targets a MISS
            if sec not in not_run:
                not_run[sec] = len(rows)
                rows.append(None)
            continue
        rows.append((r['description'], r['value'], r['target'], r['result']))
    for sec, i in not_run.items():
        n = sum(T.section_of(t.key) == sec for t in T.TARGETS)
        rows[i] = ('the %d target%s of section %s' % (n, 's' if n > 1 else '', sec),
                   'not measured: section not run', '—', 'MISS')
    rows += [(label, value, '—', '—') for label, value in b.infos]
    return rows


def noise_note(b):
    """The share of the CPUs other processes (not our server, claimd, the probe or the bench)
    used during the timed claimd runs: a shared machine gives low and noisy figures."""
    v = []

    def walk(x):
        if isinstance(x, dict):
            if 'other_cpu_pct' in x:
                v.append(x['other_cpu_pct'])
            for y in x.values():
                walk(y)
        elif isinstance(x, list):
            for y in x:
                walk(y)
    walk(b.results['sections'])
    if not v:
        return None
    b.results['other_cpu_pct_max'] = max(v)
    note = ('Other processes on the machine used %.0f%% of the CPUs at most (median %.0f%%) '
            'during the timed claimd runs.' % (max(v), sorted(v)[(len(v) - 1) // 2]))
    if max(v) > 10:
        note += ' The machine was not quiet: rates are lower and noisier than on an idle one.'
    return note


def write(b, modules):
    evaluated = T.evaluate(b.metrics, b.reasons, b.ran)
    passed, missed, unmeasured = T.tally(evaluated)
    rows = summary_rows(b)
    b.results['summary'] = [dict(zip(('metric', 'value', 'target', 'result'), r)) for r in rows]
    b.results['targets'] = evaluated
    b.results['metrics'] = b.metrics
    table = md_table(('metric', 'value', 'target', 'pass/miss'), rows)
    tally = ('%d targets: %d pass, %d MISS (%d of them not measured)'
             % (len(evaluated), passed, missed, unmeasured))
    noise = noise_note(b)
    print()
    print(table)
    print('\n' + tally)
    if noise:
        print('\n' + noise)
    m = b.results.get('machine') or {}
    machine = '\n'.join([
        '- machine: %s CPUs (`nproc`), %s, %s RAM, Linux %s' % (
            m.get('nproc'), m.get('cpu'), m.get('memory'), m.get('kernel')),
        '- MariaDB %s, innodb_flush_log_at_trx_commit=%s, buffer pool %s, %s' % (
            m.get('mariadb'), m.get('innodb_flush_log_at_trx_commit'),
            m.get('innodb_buffer_pool'), m.get('isolation')),
        '- Node.js %s; peers: %s; PostgreSQL %s' % (
            m.get('node'), ', '.join('%s %s' % kv for kv in sorted(
                (b.peers.versions if b.peers else {}).items())) or 'not run',
            (b.peers.pg_version if b.peers and b.peers.pg_version else 'not run')),
        '- commit %s, %s%s%s%s' % (
            m.get('commit'), m.get('date'), ' (--quick)' if b.a.quick else '',
            ' (--no-build: binaries as found in %s)' % b.build if b.a.no_build else '',
            '; baseline %s (%s)' % (b.baseline.rev, b.baseline.commit[:10]) if b.baseline
            else ''),
    ])
    with open(os.path.join(b.out, 'results.json'), 'w') as f:
        json.dump(b.results, f, indent=2, default=str)
    png = plot(b, modules)
    with open(os.path.join(b.out, 'report.md'), 'w') as f:
        f.write('# claimd benchmark (`tools/bench%s`)\n\n' % (
            ' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''))
        f.write(table + '\n\n' + tally + '\n\n' + (noise + '\n\n' if noise else '') + machine +
                '\n\n')
        for mod in modules:
            res = b.results['sections'].get(mod.NAME)
            if res and 'error' not in res and hasattr(mod, 'markdown'):
                f.write(mod.markdown(res))
        if png:
            f.write('![the headline, the machinery and the latencies](%s)\n'
                    % os.path.basename(png))
    log('wrote %s/report.md, results.json%s' % (b.out, ', bench.png' if png else ''))
    return missed


def has_cairo(gp):
    r = subprocess.run([gp, '-e', 'set terminal'], capture_output=True, text=True)
    return 'pngcairo' in r.stdout + r.stderr


def plot(b, modules):
    """bench.png: up to three panels, each from a section that ran."""
    gp = shutil.which('gnuplot')
    if not gp:
        log('gnuplot not found (apt-get install gnuplot-nox): no chart')
        return None
    sec = b.results['sections']
    by = {m.NAME: m for m in modules}
    panels = []
    hd = sec.get('handlers')
    if hd and hd.get('jobs_per_s'):
        with open(os.path.join(b.out, 'handlers.dat'), 'w') as f:
            for k, v in sorted(hd['jobs_per_s'].items(), key=lambda kv: -kv[1]):
                f.write('"%s" %.1f\n' % (k.replace('_', ' '), v))
        panels.append([
            "set title 'CPU-trivial jobs/s, 2 workers / 2 processes (one run, alternating)'",
            "set xlabel ''", "set ylabel 'jobs/s'", 'set yrange [0:*]', 'set style data histograms',
            'set style fill solid 0.7 border -1', 'set boxwidth 0.8', 'set xtics rotate by -30',
            "plot '%s/handlers.dat' using 2:xtic(1) notitle" % b.out,
            'set xtics norotate', 'set yrange [*:*]'])
    tp = sec.get('throughput')
    if tp and 'runs' in tp:
        with open(os.path.join(b.out, 'throughput.dat'), 'w') as f:
            for w, c, p in by['throughput'].plot_data(tp):
                f.write('%d %.1f %.1f\n' % (w, c, p))
        ws = [r['workers'] for r in tp['runs']]
        panels.append([
            "set title 'The machinery: noop jobs/s and the bare-SQL probe (%d rows)'" % tp['rows'],
            "set xlabel 'workers (claimd) / processes (probe)'", "set ylabel 'jobs/s'",
            'set style data linespoints', 'set logscale x 2',
            'set xtics (%s)' % ','.join(map(str, ws)),
            'set xrange [%g:%g]' % (min(ws) * 0.8, max(ws) * 1.25), 'set yrange [0:*]',
            "plot '%s/throughput.dat' using 1:2 with linespoints lw 2 title 'noop', "
            "'' using 1:3 with linespoints lw 2 title 'bare-SQL probe'" % b.out,
            'unset logscale x', 'set xrange [*:*]', 'set yrange [*:*]', 'set xtics autofreq'])
    lat = []
    for name in ('latency', 'claimtime'):
        if sec.get(name) and 'error' not in sec[name]:
            lat += by[name].plot_data(sec[name])
    if lat:
        with open(os.path.join(b.out, 'latency.dat'), 'w') as f:
            for label, p50, p99 in lat:
                f.write('"%s" %.4f %.4f\n' % (label, p50, p99))
        panels.append([
            "set title 'Latency percentiles'", "set xlabel ''", "set ylabel 'ms (log)'",
            'set key top right', 'set logscale y', 'set style data histograms',
            'set style histogram clustered', 'set style fill solid 0.7 border -1',
            'set boxwidth 0.9', 'set xtics rotate by -15',
            'set xrange [-0.6:%g]' % (len(lat) - 0.4),
            "plot '%s/latency.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99'" % b.out,
            'unset logscale y', 'set xrange [*:*]', 'set xtics norotate'])
    if not panels:
        return None
    png = os.path.join(b.out, 'bench.png')
    width = 700 * len(panels)
    script = ['set terminal pngcairo size %d,560 font ",10"' % width if has_cairo(gp)
              else 'set terminal png size %d,560' % width,
              "set output '%s'" % png, 'set multiplot layout 1,%d' % len(panels), 'set grid',
              'set key top left']
    for p in panels:
        script += p
    script.append('unset multiplot')
    r = subprocess.run([gp], input='\n'.join(script) + '\n', capture_output=True, text=True)
    if r.returncode != 0:
        log('gnuplot failed: ' + r.stderr.strip())
        return None
    return png
