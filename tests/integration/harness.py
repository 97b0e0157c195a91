"""Fixtures for claimd's integration tests (python3, standard library only).

A test module defines functions named it_<behaviour>(t) and ends with

    if __name__ == '__main__':
        harness.main()

main() starts (or reuses) one MariaDB server, runs the it_ functions in the order they are
defined, prints TAP lines (`ok - name`, `not ok - name: reason`, `ok - name # SKIP reason` for
one that raised Skip; `1..0 # SKIP reason` when the MariaDB server is not installed at all),
and exits 1 if any failed, 77 if any was skipped (and none failed), 0 when all passed; tools/test
counts the lines, skipped ones apart. Each function gets a Test `t`:

    db = t.database()                      fresh database t_<name>_<pid> with the schema loaded
    db.sql("SELECT state, count(*) ...")   -> [('done', '200'), ...]  (str or None per column)
    h = t.log_handler('sleep 2')           executable bash handler logging start/end lines
    c = t.claimd(db, '--workers', '4', '--handler', 'exec:' + h.path)
    c.wait_ready(); c.status(); c.stop()   claimd lifecycle; c.status() is claimctl's JSON
    wait_for(probe, timeout, what)         poll; never sleep to synchronise

Everything a test creates (claimd process trees, databases, private servers, temp dirs) is
torn down after it, pass or fail; on failure the claimd and handler logs are printed.

Environment:
    CLAIMD_BIN, CLAIMCTL_BIN   the binaries (meson sets them; default <root>/build/claimd ...)
    CLAIMD_SOURCE_ROOT         the source tree (default: two levels above this file)
    CLAIMD_TEST_DB_DIR         reuse the server running in this tools/db directory
    CLAIMD_TEST_REQUIRE_DB=1   a missing MariaDB server is a failure, not a skip (CI)
"""

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

SKIP_EXIT = 77

SOURCE_ROOT = os.environ.get('CLAIMD_SOURCE_ROOT') or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
TOOLS_DB = os.path.join(SOURCE_ROOT, 'tools', 'db')
# The schema: its migrations, in order (each records itself in claimd_schema).
MIGRATIONS = sorted(os.path.join(SOURCE_ROOT, 'sql', 'migrations', f)
                    for f in os.listdir(os.path.join(SOURCE_ROOT, 'sql', 'migrations'))
                    if f.endswith('.sql'))
PIPE_ECHO = os.path.join(SOURCE_ROOT, 'tests', 'pipe_echo.py')
PIPE_SLEEPER = os.path.join(SOURCE_ROOT, 'tests', 'pipe_sleeper.py')
PLUGIN_DIR = os.environ.get('CLAIMD_TEST_PLUGIN_DIR') or os.path.join(SOURCE_ROOT, 'build', 'tests')


def _binary(env, name):
    path = os.environ.get(env)
    if path:
        return path
    build = os.environ.get('CLAIMD_BUILD_DIR', os.path.join(SOURCE_ROOT, 'build'))
    return os.path.join(build, name)


CLAIMD_BIN = _binary('CLAIMD_BIN', 'claimd')
CLAIMCTL_BIN = _binary('CLAIMCTL_BIN', 'claimctl')


class Skip(Exception):
    """What a test needs is not there (the MariaDB server is not installed, not root, ...):
    raised in a test, that test is reported skipped (and its module exits 77 if no test
    failed); raised while starting the shared server, the whole module is skipped."""


class Interrupted(BaseException):
    """SIGTERM/SIGINT (e.g. meson's timeout): clean up, then exit."""


class ClaimdExited(Exception):
    """claimd exited while a test expected it to run; wait_for does not retry on it."""


class WaitTimeout(AssertionError):
    pass


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def check_eq(got, want, what):
    if got != want:
        raise AssertionError(f'{what}: got {got!r}, want {want!r}')


# ---------------------------------------------------------------------------------------------
# Polling

def wait_for(probe, timeout=10.0, what='condition', until=bool, interval=0.05):
    """Call probe() every `interval` s until until(value) is true; return that value.

    Exceptions from probe count as "not yet" (their repr becomes the last value), except
    ClaimdExited, which ends the wait at once. On timeout raise WaitTimeout naming `what` and
    the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = probe()
            if until(last):
                return last
        except ClaimdExited:
            raise
        except Exception as e:  # noqa: BLE001 - a probe failing is "not yet"
            last = e
        if time.monotonic() >= deadline:
            raise WaitTimeout(f'timed out after {timeout:g}s waiting for {what}; last value: {last!r}')
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
# Processes (read from /proc; a zombie counts as gone)

_CLK_TCK = os.sysconf('SC_CLK_TCK')


def proc_stat(pid):
    """{'state', 'ppid', 'pgrp', 'session', 'start'} for pid, or None if there is no such process."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            data = f.read().decode('ascii', 'replace')
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = data[data.rindex(')') + 2:].split()
    return {'state': fields[0], 'ppid': int(fields[1]), 'pgrp': int(fields[2]),
            'session': int(fields[3]), 'start': int(fields[19]),
            'comm': data[data.index('(') + 1:data.rindex(')')]}


def pid_running(pid):
    st = proc_stat(pid)
    return st is not None and st['state'] not in ('Z', 'X')


def pids_where(pred):
    out = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            st = proc_stat(int(name))
            if st is not None and st['state'] not in ('Z', 'X') and pred(st):
                out.append(int(name))
    return sorted(out)


def describe_pids(pids):
    parts = []
    for pid in pids:
        st = proc_stat(pid)
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmd = f.read().replace(b'\0', b' ').decode('utf-8', 'replace').strip()
        except OSError:
            cmd = '?'
        parts.append(f'{pid} [{st["state"] if st else "gone"}] {cmd}')
    return '; '.join(parts)


def _boot_ticks_now():
    with open('/proc/uptime') as f:
        return int(float(f.read().split()[0]) * _CLK_TCK)


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# MariaDB

def _client_bin():
    for name in ('mariadb', 'mysql'):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError('no mariadb/mysql client found (apt-get install mariadb-client)')


_UNESCAPE = re.compile(r'\\(.)', re.S)
_UNESCAPE_MAP = {'0': '\0', 't': '\t', 'n': '\n', '\\': '\\'}


def _field(text):
    # --batch prints NULL as NULL (so a string 'NULL' reads as None too) and escapes
    # NUL, tab, newline and backslash with a backslash.
    if text == 'NULL':
        return None
    return _UNESCAPE.sub(lambda m: _UNESCAPE_MAP.get(m.group(1), m.group(0)), text)


def parse_batch(out):
    if out == '':
        return []
    if out.endswith('\n'):
        out = out[:-1]
    return [tuple(_field(f) for f in line.split('\t')) for line in out.split('\n')]


class Server:
    """A MariaDB server in a tools/db directory."""

    def __init__(self, dir, owned):
        self.dir = os.path.abspath(dir)
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.owned = owned

    @classmethod
    def start(cls, dir, env=None):
        """env: more variables for tools/db (CLAIMD_DB_PORT, CLAIMD_DB_EXTRA)."""
        r = subprocess.run([TOOLS_DB, 'start', dir], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120,
                           env=dict(os.environ, **(env or {})))
        if r.returncode == SKIP_EXIT:
            msg = r.stderr.strip() or 'mariadbd not installed'
            if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
                raise RuntimeError(f'{msg} (and CLAIMD_TEST_REQUIRE_DB=1: no skipping)')
            raise Skip(msg)
        if r.returncode != 0:
            raise RuntimeError(f'tools/db start {dir} failed ({r.returncode}): {r.stderr.strip()}')
        return cls(dir, owned=True)

    def _tool(self, cmd, timeout=120):
        r = subprocess.run([TOOLS_DB, cmd, self.dir], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f'tools/db {cmd} {self.dir} failed ({r.returncode}): {r.stderr.strip()}')

    def stop(self):
        self._tool('stop')

    def restart(self):
        self._tool('restart')

    def alive(self):
        if not os.path.exists(self.socket):
            return False
        try:
            self.sql('SELECT 1', timeout=10)
            return True
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def dsn(self, db):
        return f'mysql://root@localhost/{db}?socket={self.socket}'

    def sql(self, query, db=None, timeout=60):
        """Run query (one or more statements); return the rows as tuples of str/None."""
        argv = [_client_bin(), '--no-defaults', '--protocol=socket', '-S', self.socket, '-uroot',
                '--batch', '--skip-column-names', '-e', query]
        if db:
            argv.append(db)
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f'SQL failed: {query[:200]!r}: {r.stderr.decode("utf-8", "replace").strip()}')
        return parse_batch(r.stdout.decode('utf-8', 'replace'))

    def load(self, db, path):
        argv = [_client_bin(), '--no-defaults', '--protocol=socket', '-S', self.socket, '-uroot', db]
        with open(path, 'rb') as f:
            r = subprocess.run(argv, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f'loading {path} into {db} failed: {r.stderr.decode("utf-8", "replace").strip()}')


_shared = None


def shared_server():
    """The server all tests of this process share: $CLAIMD_TEST_DB_DIR's if one runs there,
    else a new one in a temporary directory, stopped and removed at exit."""
    global _shared
    if _shared is not None:
        return _shared
    env_dir = os.environ.get('CLAIMD_TEST_DB_DIR')
    if env_dir:
        s = Server(env_dir, owned=False)
        if s.alive():
            _shared = s
            return s
    tmp = tempfile.mkdtemp(prefix='claimd-db-')
    try:
        s = Server.start(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    atexit.register(_stop_and_remove, s)
    _shared = s
    return s


def _stop_and_remove(server):
    try:
        server.stop()
    except Exception as e:  # noqa: BLE001
        print(f'# stopping MariaDB in {server.dir} failed: {e}', flush=True)
    shutil.rmtree(server.dir, ignore_errors=True)


_db_serial = 0


class Database:
    """A fresh database on `server` with the schema's migrations loaded; drop() removes it."""

    def __init__(self, server, name):
        global _db_serial
        _db_serial += 1
        base = re.sub(r'[^a-z0-9_]', '_', name.lower())
        suffix = f'_{os.getpid()}_{_db_serial}'
        self.name = ('t_' + base)[:64 - len(suffix)] + suffix
        self.server = server
        server.sql(f'DROP DATABASE IF EXISTS `{self.name}`; CREATE DATABASE `{self.name}`')
        for path in MIGRATIONS:
            server.load(self.name, path)

    @property
    def dsn(self):
        return self.server.dsn(self.name)

    def sql(self, query, timeout=60):
        return self.server.sql(query, db=self.name, timeout=timeout)

    def execute(self, query, timeout=60):
        self.server.sql(query, db=self.name, timeout=timeout)

    def scalar(self, query):
        rows = self.sql(query)
        check(len(rows) == 1 and len(rows[0]) == 1, f'{query!r} returned {rows!r}, want one value')
        return rows[0][0]

    def insert_items(self, n, payload="CONCAT('item-', seq)", **columns):
        """Insert n rows; payload and columns are SQL expressions (`seq` counts 1..n).
        Returns the new ids in order."""
        cols = ['payload'] + list(columns)
        exprs = [payload] + [str(v) for v in columns.values()]
        # RETURNING: the ids of these rows alone (rows another writer, a claimd adding
        # follow-ups say, inserted meanwhile are not among them).
        rows = self.sql(f'INSERT INTO work_items ({", ".join(cols)}) '
                        f'SELECT {", ".join(exprs)} FROM seq_1_to_{int(n)} ORDER BY seq RETURNING id')
        return sorted(int(r[0]) for r in rows)

    def insert_item(self, payload, **columns):
        lit = 'NULL' if payload is None else "'" + payload.replace('\\', '\\\\').replace("'", "''") + "'"
        return self.insert_items(1, payload=lit, **columns)[0]

    def states(self):
        """{'ready': n, 'claimed': n, 'done': n, 'dead': n} over all rows."""
        counts = {'ready': 0, 'claimed': 0, 'done': 0, 'dead': 0}
        for state, n in self.sql('SELECT state, COUNT(*) FROM work_items GROUP BY state'):
            counts[state] = int(n)
        return counts

    def row(self, item_id, columns='state, attempts, last_error'):
        rows = self.sql(f'SELECT {columns} FROM work_items WHERE id = {int(item_id)}')
        check(len(rows) == 1, f'row {item_id} not found')
        return rows[0]

    def drop(self):
        self.server.sql(f'DROP DATABASE IF EXISTS `{self.name}`')


# ---------------------------------------------------------------------------------------------
# claimd and claimctl

def run_claimctl(*args, env=None, timeout=10):
    return subprocess.run([CLAIMCTL_BIN, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)


class Claimd:
    """A claimd process, started in its own session (so its process group and session hold its
    workers and handlers), with its own control socket and its stdout+stderr in a log file."""

    def __init__(self, dsn, args, dir, env=None, name='claimd', binary=None):
        self.name = name
        self.dir = dir
        self.control = os.path.join(dir, f'{name}.sock')
        self.log_path = os.path.join(dir, f'{name}.log')
        self.argv = [binary or CLAIMD_BIN]
        if dsn is not None:
            self.argv += ['--dsn', dsn]
        self.argv += ['--control', self.control] + [str(a) for a in args]
        # Tests run as root in CI: let their handlers run as root, unless the test says
        # which user to be (tests/integration/test_privileges.py).
        if os.geteuid() == 0 and '--user' not in self.argv:
            self.argv.append('--allow-root')
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, env=env, start_new_session=True)
        self.pid = self.proc.pid
        self.started = time.monotonic()

    # -- process
    def running(self):
        return self.proc.poll() is None

    def _exited(self):
        return ClaimdExited(f'{self.name} exited with code {self.proc.returncode}; '
                            f'log tail: {self.log_tail(5)!r}')

    def send(self, sig):
        if self.running():
            os.kill(self.pid, sig)

    def wait_exit(self, timeout):
        """Exit code (negative: killed by that signal); WaitTimeout if still running."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise WaitTimeout(f'{self.name} (pid {self.pid}) still running {timeout:g}s later') from None

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        """Send sig and return the exit code, or raise WaitTimeout."""
        self.send(sig)
        return self.wait_exit(timeout)

    def group_processes(self):
        """Running processes (not zombies) left in claimd's session or process group, claimd
        itself included while it runs."""
        return pids_where(lambda st: st['session'] == self.pid or st['pgrp'] == self.pid)

    def kill_all(self):
        """SIGKILL claimd (by pid), its process group and anything else in its session."""
        if self.running():
            kill_quietly(self.pid)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in self.group_processes():
            kill_quietly(pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    # -- logs
    def log(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', 'replace')
        except FileNotFoundError:
            return ''

    def log_tail(self, n=20):
        return self.log().splitlines()[-n:]

    # -- control socket
    def ctl(self, *args, timeout=10):
        return run_claimctl('--control', self.control, *args, timeout=timeout)

    def status(self):
        """claimctl status --json, parsed. Raises ClaimdExited if claimd is not running."""
        if not self.running():
            raise self._exited()
        r = self.ctl('status', '--json')
        if r.returncode != 0:
            if not self.running():
                raise self._exited()
            raise RuntimeError(f'claimctl status --json exited {r.returncode}: {r.stderr.strip()}')
        try:
            return json.loads(r.stdout)
        except ValueError as e:
            raise AssertionError(f'claimctl status --json printed invalid JSON ({e}): {r.stdout!r}') from None

    def wait_status(self, pred, timeout=10.0, what='status'):
        """Poll status() until pred(status) is true; return that status."""
        return wait_for(self.status, timeout=timeout, what=what, until=pred)

    # -- HTTP (--http)
    def http_token(self, timeout=10.0):
        """The token claimd made for its HTTP API (--http without --http-token-file): the first
        line of the file beside the control socket, .http-token for its extension."""
        path = os.path.splitext(self.control)[0] + '.http-token'

        def read():
            if not self.running():
                raise self._exited()
            with open(path) as f:
                return f.readline().strip()
        return wait_for(read, timeout, f'{self.name}: its token in {path}')

    def http_url(self, timeout=10.0):
        """The base URL of its HTTP API (started with --http 127.0.0.1:0), from its log."""
        m = wait_for(lambda: re.search(r'http: listening on (https?://[0-9.:]+)/', self.log()),
                     timeout, f'{self.name}: the http listening line')
        return m.group(1)

    def api(self, method, path, body=None, timeout=20, headers=None, answer_headers=None):
        """One request to its HTTP API with its token (and headers): (status, the JSON
        answer, or the text when it is not JSON); the answer's headers into the dict
        answer_headers, if given."""
        req = urllib.request.Request(self.http_url() + path, data=body, method=method,
                                     headers=dict(headers or {}, Authorization=f'Bearer '
                                                  f'{self.http_token()}'))
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw, got = r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            status, raw, got = e.code, e.read(), e.headers
        if answer_headers is not None:
            answer_headers.update(got.items())
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode()

    def wait_ready(self, workers=None, timeout=15.0):
        """Wait until every worker (and `workers` of them, if given) has a pid and is idle/busy."""
        def ready(st):
            ws = st.get('workers') or []
            if workers is not None and len(ws) != workers:
                return False
            return bool(ws) and all(w.get('pid') and w.get('state') in ('idle', 'busy') for w in ws)
        return self.wait_status(ready, timeout, f'{self.name}: all workers ready')


def worker_in_slot(status, slot):
    for w in status.get('workers', []):
        if w.get('slot') == slot:
            return w
    return None


def worker_with_item(status, item_id):
    for w in status.get('workers', []):
        if w.get('item') == item_id:
            return w
    return None


# ---------------------------------------------------------------------------------------------
# Handlers

class HandlerEvent:
    """One line of a handler log: `<kind> <id> <attempt> <epoch time> <pid> [rest]`."""

    def __init__(self, line):
        parts = line.split(' ', 5)
        self.kind = parts[0]
        self.id = int(parts[1])
        self.attempt = int(parts[2]) if parts[2].isdigit() else None
        self.time = float(parts[3].replace(',', '.'))
        self.pid = int(parts[4])
        self.rest = parts[5] if len(parts) > 5 else ''

    def __repr__(self):
        return f'<{self.kind} id={self.id} attempt={self.attempt} t={self.time:.3f} pid={self.pid} {self.rest}>'


class Handler:
    """An executable handler script and the log it appends to."""

    def __init__(self, path, log_path):
        self.path = path
        self.log_path = log_path

    @property
    def spec(self):
        return 'exec:' + self.path

    def events(self, kind=None, item=None):
        try:
            with open(self.log_path, encoding='utf-8', errors='replace') as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        evs = [HandlerEvent(line) for line in lines if line]
        return [e for e in evs if (kind is None or e.kind == kind) and (item is None or e.id == item)]

    def starts(self, item=None):
        return self.events('start', item)

    def ends(self, item=None):
        return self.events('end', item)

    def pids(self):
        """Every pid the handler logged (its own and children it started)."""
        return sorted({e.pid for e in self.events()})


def runs_of(h):
    """{item: [(start, end or None, pid), ...]} from a handler's log (start and end lines of
    one run share the item, attempt and pid), each item's runs in start order."""
    runs, open_by = {}, {}
    for e in h.events():
        if e.kind == 'start':
            open_by[(e.id, e.pid, e.attempt)] = e.time
            runs.setdefault(e.id, [])
        elif e.kind == 'end':
            t0 = open_by.pop((e.id, e.pid, e.attempt), None)
            if t0 is not None:
                runs[e.id].append((t0, e.time, e.pid))
    for (item, pid, _), t0 in open_by.items():
        runs[item].append((t0, None, pid))
    for v in runs.values():
        v.sort()
    return runs


def most_at_once(intervals):
    """The most intervals (start, end) open at one moment (an end before a start at the same
    moment)."""
    points = sorted([(s, 1) for s, e in intervals] + [(e, -1) for s, e in intervals],
                    key=lambda p: (p[0], p[1]))
    most = cur = 0
    for _, d in points:
        cur += d
        most = max(most, cur)
    return most


def require_browser_tools(what, ok):
    """A tool a browser or npm test needs: fails under CLAIMD_TEST_REQUIRE_BROWSER=1 (CI),
    else skips the test, naming what is missing."""
    if ok:
        return
    msg = (f'{what} is not installed (tools/setup-debian --test: node, chromium, and npm ci '
           f'in tests/browser)')
    if os.environ.get('CLAIMD_TEST_REQUIRE_BROWSER') == '1':
        fail(msg)
    raise Skip(msg)


def check_runs_apart(runs):
    """Each row's runs one after the other. A run that never logged its end was cut short by
    its process's death: the next run must be another process's, and that one gone."""
    for item, rs in runs.items():
        for a, b in zip(rs, rs[1:]):
            if a[1] is None:
                check(a[2] != b[2] and not pid_running(a[2]),
                      f'row {item} ran again while its cut-short run may go on: {a} and {b}')
            else:
                check(a[1] <= b[0], f'row {item} ran twice at once: {a} and {b}')


# The prelude every log_handler shares. Lines: start/end/child <id> <attempt> <time> <pid> ...
_BASH_PRELUDE = r'''#!/bin/bash
set -u
log=__LOG__
payload=$(cat)
ev() { printf '%s %s %s %s %s\n' "$1" "${CLAIMD_ITEM_ID:-0}" "${CLAIMD_ATTEMPT:-?}" "$EPOCHREALTIME" "$2" >>"$log"; }
# run "$@" in the background, log its pid as a `child` line, wait for it; returns its status
spawn_logged() { "$@" & local c=$!; ev child "$c"; wait "$c"; }
ev start "$$ ${CLAIMD_QUEUE:-?} $payload"
rc=0
'''

_BASH_EPILOGUE = r'''
ev end "$$ rc=$rc"
exit $rc
'''


def write_secret(path, text):
    """Write a secret file (a password, a token) as claimd takes one: mode 0600, whatever the
    umask. Returns path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def write_script(dir, name, text, lang='bash'):
    """Write an executable script; text is the body (without shebang for bash/python)."""
    path = os.path.join(dir, name)
    if lang == 'bash':
        head = '' if text.startswith('#!') else '#!/bin/bash\n'
    elif lang == 'python':
        head = '' if text.startswith('#!') else f'#!{sys.executable}\n'
    else:
        raise ValueError(f'unknown handler language {lang!r}')
    with open(path, 'w') as f:
        f.write(head + text)
    os.chmod(path, 0o755)
    return path


# ---------------------------------------------------------------------------------------------
# The runner

class Test:
    """What one it_ function gets: factories whose products are cleaned up after it."""

    def __init__(self, name):
        self.name = name
        self._tmp = None
        self._cleanups = []      # run in reverse order
        self._claimds = []
        self._handlers = []
        self._start_ticks = _boot_ticks_now()
        self._sanitizer_allowed = ()

    def allow_sanitizer_report(self, *kinds):
        """In a sanitized build (CLAIMD_TEST_SANITIZED=1) a claimd log holding a sanitizer report
        fails the test; a test that crashes a process on purpose names the reports it expects,
        e.g. 'AddressSanitizer: SEGV'."""
        self._sanitizer_allowed = kinds

    @property
    def tmpdir(self):
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix='claimd-t-')
        return self._tmp

    def defer(self, fn, *args):
        self._cleanups.append((fn, args))

    def note(self, msg):
        for line in str(msg).splitlines() or ['']:
            print(f'# {line}', flush=True)

    def server(self):
        return shared_server()

    def private_server(self, env=None):
        """A server of this test's own (for tests that stop or restart it, or that need it
        set up otherwise: env for tools/db)."""
        dir = tempfile.mkdtemp(prefix='claimd-db-')
        try:
            s = Server.start(dir, env)
        except BaseException:
            shutil.rmtree(dir, ignore_errors=True)
            raise
        self.defer(_stop_and_remove, s)
        return s

    def database(self, server=None):
        db = Database(server or shared_server(), self.name)
        self.defer(db.drop)
        return db

    def claimd(self, db, *args, dsn=None, env=None, name=None, binary=None):
        """Start claimd (this build's, or binary) with --dsn db.dsn (or dsn=...; db=None and
        dsn=None: no --dsn) and --control in a temp dir, plus args."""
        name = name or f'claimd{len(self._claimds) + 1}'
        if dsn is None and db is not None:
            dsn = db.dsn
        c = Claimd(dsn, args, self.tmpdir, env=env, name=name, binary=binary)
        self._claimds.append(c)
        self.defer(c.kill_all)
        return c

    def script(self, body, lang='bash', name=None):
        name = name or f'script{len(os.listdir(self.tmpdir))}'
        return write_script(self.tmpdir, name, body, lang)

    def pipe_echo(self, name='pipe_echo'):
        """tests/pipe_echo.py as a `pipe:` handler logging to <name>.log (printed on failure,
        its pids cleaned up): returns (Handler, handler spec)."""
        h = Handler(None, os.path.join(self.tmpdir, name + '.log'))
        self._handlers.append(h)
        return h, f'pipe:{sys.executable} {PIPE_ECHO} {h.log_path}'

    def plugin(self, name):
        """tests/plugins/<name>.c (built as claimd_test_<name>.so) as a so: handler logging
        to <name>.log (printed on failure): returns (Handler, handler spec)."""
        path = os.path.join(PLUGIN_DIR, f'claimd_test_{name}.so')
        h = Handler(None, os.path.join(self.tmpdir, name + '.log'))
        self._handlers.append(h)
        return h, f'so:{path} {h.log_path}'

    def pipe_sleeper(self, name='pipe_sleeper'):
        """tests/pipe_sleeper.py (many items at once; payload sleep:N) as a `pipe:` handler
        logging start and end lines to <name>.log: returns (Handler, handler spec)."""
        h = Handler(None, os.path.join(self.tmpdir, name + '.log'))
        self._handlers.append(h)
        return h, f'pipe:{sys.executable} {PIPE_SLEEPER} {h.log_path}'

    def log_handler(self, body='', name=None):
        """A bash handler that reads the payload (as $payload) from stdin, appends
        `start <id> <attempt> <time> <pid> <queue> <payload>` to its log, runs body (which may
        set rc, use $payload, $CLAIMD_ITEM_ID, $CLAIMD_ATTEMPT, `spawn_logged cmd...`), appends
        `end <id> <attempt> <time> <pid> rc=<rc>` and exits rc."""
        name = name or f'handler{len(self._handlers) + 1}'
        log_path = os.path.join(self.tmpdir, name + '.log')
        text = _BASH_PRELUDE.replace('__LOG__', _sh_quote(log_path)) + body + '\n' + _BASH_EPILOGUE
        h = Handler(write_script(self.tmpdir, name + '.sh', text), log_path)
        self._handlers.append(h)
        return h

    # -- runner internals
    def _dump_logs(self):
        for c in self._claimds:
            self.note(f'--- {c.name} (pid {c.pid}) log {c.log_path}; argv: {" ".join(c.argv)}')
            lines = c.log().splitlines()
            if len(lines) > 200:
                self.note(f'... {len(lines) - 200} earlier lines omitted')
            self.note('\n'.join(lines[-200:]) or '(empty)')
        for h in self._handlers:
            try:
                with open(h.log_path, encoding='utf-8', errors='replace') as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                continue
            self.note(f'--- handler log {h.log_path} ({len(lines)} lines, last 40)')
            self.note('\n'.join(lines[-40:]))

    def _kill_stray_handlers(self):
        # Handler processes that escaped claimd's session (setsid) would not be found by
        # Claimd.kill_all; kill the ones the handler logs name if they started during this test.
        for h in self._handlers:
            try:
                pids = h.pids()
            except Exception:  # noqa: BLE001
                continue
            for pid in pids:
                st = proc_stat(pid)
                if st and st['state'] not in ('Z', 'X') and st['start'] >= self._start_ticks:
                    kill_quietly(pid)

    def _cleanup(self):
        errors = []
        for fn, args in reversed(self._cleanups):
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                errors.append(f'{getattr(fn, "__qualname__", fn)}: {e}')
        self._kill_stray_handlers()
        errors += self._sanitizer_reports()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
        return errors

    def _sanitizer_reports(self):
        # Read after every process is stopped, so that reports written at exit (leaks) are in.
        if os.environ.get('CLAIMD_TEST_SANITIZED') != '1':
            return []
        found = []
        for c in self._claimds:
            lines = c.log().splitlines()
            for i, line in enumerate(lines):
                if not any(m in line for m in _SANITIZER_MARKS):
                    continue
                if any(k in line for k in self._sanitizer_allowed):
                    continue
                self.note(f'--- sanitizer report in {c.name} log, line {i + 1}:')
                self.note('\n'.join(lines[i:i + 40]))
                found.append(f'sanitizer report in {c.name} log: {line.strip()[:120]}')
                break
        return found


# What AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer print when they find something.
_SANITIZER_MARKS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:')


def _sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def _on_signal(signum, frame):
    raise Interrupted(f'signal {signum}')


def main(needs_server=True):
    """Run the it_ functions of __main__ in definition order; exit 0, 1 or 77."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    module = sys.modules['__main__']
    tests = [(n, f) for n, f in vars(module).items() if n.startswith('it_') and callable(f)]
    only = os.environ.get('CLAIMD_TEST_ONLY')
    if only:
        tests = [(n, f) for n, f in tests if only in n]
    try:
        if needs_server:
            shared_server()
    except Skip as e:
        print(f'1..0 # SKIP {e}', flush=True)
        sys.exit(SKIP_EXIT)
    except RuntimeError as e:
        print(f'Bail out! {e}', flush=True)
        sys.exit(1)
    print(f'1..{len(tests)}', flush=True)
    failed = skipped = 0
    for name, fn in tests:
        t = Test(name)
        t0 = time.monotonic()
        interrupted = None
        try:
            fn(t)
            ok, reason = True, ''
        except Skip as e:
            t._cleanup()
            skipped += 1
            print(f'ok - {name} # SKIP {e}', flush=True)
            continue
        except Interrupted as e:
            ok, reason, interrupted = False, f'interrupted by {e}', e
        except Exception as e:  # noqa: BLE001
            ok, reason = False, f'{type(e).__name__}: {e}' if not isinstance(e, AssertionError) else str(e)
            t.note(traceback.format_exc().rstrip())
        if not ok:
            t._dump_logs()
        errors = t._cleanup()
        dt = time.monotonic() - t0
        if ok and errors:
            ok, reason = False, 'cleanup failed: ' + '; '.join(errors)
        if ok:
            print(f'ok - {name} ({dt:.1f}s)', flush=True)
        else:
            failed += 1
            reason = ' '.join(reason.split('\n')[0:1]) if reason else 'failed'
            print(f'not ok - {name}: {reason}', flush=True)
        if interrupted:
            sys.exit(1)
    if failed:
        sys.exit(1)
    if skipped:
        print(f'# {skipped} of {len(tests)} skipped', flush=True)
    sys.exit(SKIP_EXIT if skipped else 0)
