#!/usr/bin/env python3
"""meson install into a DESTDIR holds what an operator deploys claimd with, and it works: the
installed claimd migrates a new database and runs each installed example handler (exec:,
pipe:, and the so: plugin built against the installed header through pkg-config) with the
installed example config file; the man pages document every option and command; the unit
passes systemd-analyze verify inside the DESTDIR."""

import atexit
import filecmp
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import CLAIMD_BIN, CLAIMCTL_BIN, check, check_eq, wait_for

BUILD = os.path.dirname(CLAIMD_BIN)
_installed = {}


def installed(t):
    """The DESTDIR (made once per run) and where its prefix is inside it."""
    if not _installed:
        # Shared by this file's tests (each test's tmpdir goes when it ends).
        dest = tempfile.mkdtemp(prefix='claimd-install-')
        atexit.register(shutil.rmtree, dest, True)
        r = subprocess.run(['meson', 'install', '-C', BUILD, '--no-rebuild', '--quiet',
                            '--destdir', dest], capture_output=True, text=True, timeout=300)
        check_eq(r.returncode, 0, f'meson install: {r.stdout[-2000:]} {r.stderr[-2000:]}')
        bins = glob.glob(os.path.join(dest, '**', 'bin', 'claimd'), recursive=True)
        check_eq(len(bins), 1, f'one installed claimd: {bins}')
        _installed['dest'] = dest
        _installed['prefix'] = os.path.dirname(os.path.dirname(bins[0]))
    return _installed['dest'], _installed['prefix']


def it_installs_what_an_operator_needs(t):
    dest, prefix = installed(t)
    share = os.path.join(prefix, 'share', 'claimd')
    want = ['bin/claimd', 'bin/claimctl', 'include/claimd/handler.h',
            'share/claimd/examples/exec-handler.sh', 'share/claimd/examples/pipe-handler.py',
            'share/claimd/examples/pipe-async.py', 'share/claimd/examples/pipe-async.mjs',
            'share/claimd/examples/app.py', 'share/claimd/examples/app.mjs',
            'share/claimd/examples/plugin.c', 'share/claimd/examples/claimd.conf',
            'share/claimd/examples/claimd.env', 'lib/systemd/system/claimd.service',
            'share/claimd/openapi.json']
    # every page of src/deploy/man, scdoc's or Markdown, installed in its section
    for f in os.listdir(os.path.join(harness.SOURCE_ROOT, 'src', 'deploy', 'man')):
        m = re.match(r'^(.+\.(\d))\.(scd|md)$', f)
        if m:
            want.append(f'share/man/man{m.group(2)}/{m.group(1)}')
    check(len([w for w in want if '/man/' in w]) >= 11, f'the man pages: {want}')
    missing = [w for w in want if not os.path.exists(os.path.join(prefix, w))]
    check_eq(missing, [], f'installed under {prefix}')
    check(glob.glob(os.path.join(prefix, 'lib', '**', 'claimd-handler.pc'), recursive=True),
          'claimd-handler.pc installed')
    for f in ('exec-handler.sh', 'pipe-handler.py', 'pipe-async.py', 'pipe-async.mjs'):
        check(os.access(os.path.join(share, 'examples', f), os.X_OK), f'{f} is executable')
    src = sorted(os.listdir(os.path.join(harness.SOURCE_ROOT, 'sql', 'migrations')))
    check_eq(sorted(os.listdir(os.path.join(share, 'migrations'))), src, 'the migrations')
    for f in src:
        check(filecmp.cmp(os.path.join(share, 'migrations', f),
                          os.path.join(harness.SOURCE_ROOT, 'sql', 'migrations', f), shallow=False),
              f'{f} as in sql/migrations')
    for tool in ('claimd', 'claimctl'):
        r = subprocess.run([os.path.join(prefix, 'bin', tool), '--version'], capture_output=True,
                           text=True, timeout=10)
        check(r.returncode == 0 and r.stdout.startswith(tool + ' '), f'{tool} --version: {r}')
    unit = open(os.path.join(prefix, 'lib/systemd/system/claimd.service')).read()
    exec_start = re.search(r'^ExecStart=(\S+) --config (\S+)', unit, re.M)
    check(exec_start and exec_start.group(1) == prefix[len(dest):] + '/bin/claimd',
          f'the unit runs the installed claimd: {exec_start and exec_start.group(0)}')


def _man_text(prefix, page, section):
    path = os.path.join(prefix, 'share', 'man', f'man{section}', f'{page}.{section}')
    with open(path, encoding='utf-8') as f:
        roff = f.read()
    check(roff.startswith('.\\"') or '.TH' in roff[:2000], f'{page}.{section} is a man page')
    return roff.replace('\\-', '-').replace('\\fB', '').replace('\\fR', '').replace('\\fI', '')


def it_documents_every_option_and_command_in_the_man_pages(t):
    dest, prefix = installed(t)
    claimd8 = _man_text(prefix, 'claimd', 8)
    helptext = subprocess.run([CLAIMD_BIN, '--help'], capture_output=True, text=True).stdout
    options = re.findall(r'^  (--[a-z-]+)', helptext, re.M)
    check(len(options) > 30, f'claimd --help lists its options: {options}')
    check_eq([o for o in options if o not in claimd8], [], 'options of claimd --help not in claimd(8)')
    claimctl1 = _man_text(prefix, 'claimctl', 1)
    helptext = subprocess.run([CLAIMCTL_BIN, '--help'], capture_output=True, text=True).stdout
    commands = re.findall(r'^  ([a-z]+)', helptext, re.M)
    check(len(commands) >= 15, f'claimctl --help lists its commands: {commands}')
    check_eq([c for c in commands if f'claimctl {c}' not in claimctl1], [],
             'commands of claimctl --help not in claimctl(1)')
    handlers7 = _man_text(prefix, 'claimd-handlers', 7)
    for want in ('exec:', 'pipe:', 'so:', 'retry_in_ms', 'claimd-table',
                 'SELECT, INSERT, UPDATE and DELETE'):
        check(want in handlers7, f'claimd-handlers(7) tells of {want}')
    # The pages written in Markdown: the reference the README points to.
    table5 = _man_text(prefix, 'claimd-table', 5)
    for want in ('work_items', 'visible_at', 'group_key', 'key_limits', 'min_interval_ms',
                 'TIMESTAMP', 'supervisors'):
        check(want in table5, f'claimd-table(5) tells of {want}')
    conf5 = _man_text(prefix, 'claimd.conf', 5)
    check(all(f'--{o}' in conf5 for o in ('dsn', 'handler', 'workers', 'http-max-streams')),
          'claimd.conf(5) tells of the options')
    # man-db renders every page without warnings (tools/setup-debian --test installs it).
    man = shutil.which('man')
    check(man, 'man is not installed (Debian: man-db; tools/setup-debian --test installs it)')
    pages = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(prefix, 'share/man'))
                   for f in fs)
    check(len(pages) >= 5, f'the man pages installed: {pages}')
    for page in pages:
        r = subprocess.run([man, '--warnings', '-l', page], capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH='100'))
        check(r.returncode == 0 and r.stdout.strip() and not r.stderr.strip(),
              f'man -l {os.path.basename(page)}: {r.returncode} {r.stderr[:500]!r}')


def _config(t, prefix, handler, extra=''):
    """The installed example config, with dsn-less settings set (the DSN comes as a flag)."""
    with open(os.path.join(prefix, 'share/claimd/examples/claimd.conf')) as f:
        text = f.read()
    text = re.sub(r'^#workers = .*$', 'workers = 2', text, flags=re.M)
    text = re.sub(r'^#handler = .*$', f'handler = {handler}', text, flags=re.M)
    text = re.sub(r'^#retry-base = .*$', 'retry-base = 100ms', text, flags=re.M)
    path = os.path.join(t.tmpdir, f'claimd-{abs(hash(handler))}.conf')
    with open(path, 'w') as f:
        f.write(text + extra)
    return path


def _run_example(t, prefix, handler, rows, extra=''):
    """Run the installed claimd with handler on a new database; rows: [(payload, check of
    (state, last_error, result))]."""
    claimd = os.path.join(prefix, 'bin', 'claimd')
    server = harness.shared_server()
    name = f't_install_{os.getpid()}_{os.urandom(3).hex()}'
    server.sql(f'CREATE DATABASE `{name}`')
    t.defer(server.sql, f'DROP DATABASE IF EXISTS `{name}`')
    dsn = server.dsn(name)
    r = subprocess.run([claimd, '--migrate', '--dsn', dsn], capture_output=True, text=True,
                       timeout=60)
    check_eq(r.returncode, 0, f'installed claimd --migrate: {r.stderr}')
    ids = []
    for payload, _ in rows:
        server.sql("INSERT INTO work_items (payload, max_attempts) VALUES "
                   f"('{payload}', 1)", db=name)
        ids.append(int(server.sql('SELECT MAX(id) FROM work_items', db=name)[0][0]))
    conf = _config(t, prefix, handler, extra)
    c = t.claimd(None, '--config', conf, dsn=dsn, binary=claimd)
    wait_for(lambda: server.sql("SELECT COUNT(*) FROM work_items WHERE state IN ('done', 'dead')",
                                db=name)[0][0], 30, f'the rows run by {handler}',
             until=lambda n: int(n) == len(rows))
    for i, (payload, ok) in zip(ids, rows):
        state, err, result = server.sql(
            f'SELECT state, last_error, result FROM work_items WHERE id = {i}', db=name)[0]
        check(ok(state, err, result), f'{handler}: row {payload!r}: {state} {err!r} {result!r}')
    check_eq(c.stop(), 0, f'installed claimd ({handler}) exit code')
    return c


def it_runs_the_installed_exec_example(t):
    dest, prefix = installed(t)
    script = os.path.join(prefix, 'share/claimd/examples/exec-handler.sh')

    def counted(state, err, result):
        j = json.loads(result)
        return state == 'done' and j['words'] == 3 and j['bytes'] == 14 and j['lines'] == 1 and len(j['sha256']) == 64
    _run_example(t, prefix, f'exec:{script}', [
        ('one two three\\n', counted),
        ('', lambda s, e, r: s == 'dead' and 'the payload is empty' in (e or '')),
    ], extra='\nexec-result = true\n')


def it_runs_the_installed_pipe_example(t):
    dest, prefix = installed(t)
    script = os.path.join(prefix, 'share/claimd/examples/pipe-handler.py')
    _run_example(t, prefix, f'pipe:{shutil.which("python3")} {script}', [
        ('{"n": 10}', lambda s, e, r: s == 'done' and json.loads(r) ==
         {'n': 10, 'sum_of_squares': 385}),
        ('not json', lambda s, e, r: s == 'dead' and 'is not {"n": N}' in (e or '')),
    ])


def it_runs_the_installed_concurrent_pipe_examples(t):
    dest, prefix = installed(t)
    node = shutil.which('node')
    if not node and os.environ.get('CLAIMD_TEST_REQUIRE_BROWSER') == '1':
        harness.fail('node is not installed (Debian: nodejs)')
    kinds = [('pipe-async.py', shutil.which('python3'))] + ([('pipe-async.mjs', node)]
                                                             if node else [])
    for name, interpreter in kinds:
        script = os.path.join(prefix, 'share/claimd/examples', name)
        _run_example(t, prefix, f'pipe:{interpreter} {script}', [
            ('{"sleep_ms": 20}', lambda s, e, r: s == 'done' and json.loads(r) ==
             {'echo': '{"sleep_ms": 20}'}),
            ('hello', lambda s, e, r: s == 'done' and json.loads(r) == {'echo': 'hello'}),
            ('{"sleep_ms": -1}', lambda s, e, r: s == 'dead' and 'sleep_ms must be' in (e or '')),
        ])
    if not node:
        raise harness.Skip('node is not installed: pipe-async.mjs not run (pipe-async.py was)')


def it_builds_and_runs_the_example_plugin_with_pkg_config(t):
    dest, prefix = installed(t)
    pcdir = os.path.dirname(glob.glob(os.path.join(prefix, 'lib', '**', 'claimd-handler.pc'),
                                      recursive=True)[0])
    env = dict(os.environ, PKG_CONFIG_PATH=pcdir, PKG_CONFIG_SYSROOT_DIR=dest)
    r = subprocess.run(['pkg-config', '--cflags', 'claimd-handler'], capture_output=True,
                       text=True, env=env)
    check(r.returncode == 0 and dest in r.stdout, f'pkg-config --cflags claimd-handler: {r}')
    so = os.path.join(t.tmpdir, 'example.so')
    r = subprocess.run(['cc', '-Wall', '-Wextra', '-Werror', '-shared', '-fPIC',
                        *r.stdout.split(), '-o', so,
                        os.path.join(prefix, 'share/claimd/examples/plugin.c')],
                       capture_output=True, text=True)
    check_eq(r.returncode, 0, f'the example plugin builds against the installed header: {r.stderr}')
    _run_example(t, prefix, f'so:{so} greeting=hello', [
        ('a\\nb\\n', lambda s, e, r: s == 'done' and json.loads(r) ==
         {'greeting': 'hello', 'bytes': 4, 'lines': 2}),
        ('', lambda s, e, r: s == 'dead' and 'empty payload' in (e or '')),
    ])


def it_ships_a_unit_systemd_accepts_in_the_destdir(t):
    analyze = shutil.which('systemd-analyze')
    if not analyze:
        if os.environ.get('CLAIMD_TEST_REQUIRE_DB') == '1':
            harness.fail('systemd-analyze is not installed (Debian: systemd)')
        raise harness.Skip('systemd-analyze is not installed (Debian: systemd)')
    dest, prefix = installed(t)
    # ExecReload's kill, inside the root systemd-analyze checks.
    os.makedirs(os.path.join(dest, 'bin'), exist_ok=True)
    shutil.copy('/bin/kill', os.path.join(dest, 'bin', 'kill'))
    unit = prefix[len(dest):] + '/lib/systemd/system/claimd.service'
    r = subprocess.run([analyze, 'verify', '--man=no', f'--root={dest}', unit],
                       capture_output=True, text=True, timeout=60)
    about = [ln for ln in (r.stdout + r.stderr).splitlines()
             if 'claimd.service' in ln and 'not found' not in ln]
    check_eq(about, [], 'systemd-analyze verify --root=DESTDIR says nothing about claimd.service')


if __name__ == '__main__':
    harness.main()
