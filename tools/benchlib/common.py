"""What every part of the bench uses: the paths, the error, logging, tables, and readings of
processes from /proc."""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
TOOLS = os.path.join(ROOT, 'tools')


class BenchError(Exception):
    pass


def log(msg):
    print('bench: ' + msg, file=sys.stderr, flush=True)


# ---- formatting ----------------------------------------------------------------------------

def fmt_int(v):
    return '{:,.0f}'.format(v) if v is not None else '-'


def fmt_count(n):
    return '%gM' % (n / 1e6) if n >= 1_000_000 else '%gk' % (n / 1e3)


def fmt_mib(m):
    return '%.2f / %s' % (m['rss_mib'], '%.2f' % m['pss_mib'] if m['pss_mib'] is not None else '-')


def fmt_runs(runs, key='jobs_per_s'):
    return ', '.join(fmt_int(r.get(key)) for r in runs)


def md_table(header, rows):
    lines = ['| ' + ' | '.join(map(str, header)) + ' |',
             '|' + '|'.join(' --- ' for _ in header) + '|']
    lines += ['| ' + ' | '.join(map(str, r)) + ' |' for r in rows]
    return '\n'.join(lines)


def print_table(title, header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print('\n' + title)
    for r in (header, *rows):
        print('  ' + '  '.join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    sys.stdout.flush()


# ---- processes -------------------------------------------------------------------------------

def proc_cpu(pid):
    """user + system CPU seconds of pid (all its threads), 0 if it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            v = f.read().rsplit(')', 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(v[11]) + int(v[12])) / os.sysconf('SC_CLK_TCK')


def comm_of(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def parents():
    """pid -> its parent's pid, for every process (one pass over /proc)."""
    out = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                out[int(d)] = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def children_of(pid, ppids=None):
    ppids = ppids if ppids is not None else parents()
    return sorted(p for p, pp in ppids.items() if pp == pid)


def memory_mib(pid):
    """VmRSS and Pss of pid, in MiB (None for a process that is gone)."""
    rss = pss = None
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    rss = int(line.split()[1]) / 1024
    except OSError:
        return {'pid': pid, 'rss_mib': None, 'pss_mib': None}
    try:
        with open('/proc/%d/smaps_rollup' % pid) as f:
            for line in f:
                if line.startswith('Pss:'):
                    pss = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {'pid': pid, 'rss_mib': rss, 'pss_mib': pss}


def claimd_processes(pid):
    """claimd's own processes: the supervisor pid, its fork server and its workers (by their
    names, claimd-fork and claimd), not the handlers' processes below the workers."""
    ppids, kids, todo = parents(), [], [pid]
    while todo:
        for k in children_of(todo.pop(), ppids):
            if comm_of(k) in ('claimd', 'claimd-fork'):
                kids.append(k)
                todo.append(k)
    return {'supervisor': pid,
            'fork_server': [p for p in kids if comm_of(p) == 'claimd-fork'],
            'workers': [p for p in kids if comm_of(p) == 'claimd']}
