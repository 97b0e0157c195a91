#!/usr/bin/env python3
"""claimd rejects bad command lines with exit 2 and one clear line, starting nothing;
claimctl says clearly when there is no daemon to talk to, takes its options anywhere, answers
every command in JSON with --json, exits with the codes its usage documents, and prints no
control character or escape sequence that a row, claimd or whatever answers on the socket
sent (but in --json, exact)."""

import json
import os
import socket
import subprocess
import tempfile
import threading

import harness
from harness import CLAIMD_BIN, check, check_eq, pids_where, run_claimctl, wait_for

SOCK = '/nonexistent-claimd-test/mysqld.sock'
GOOD_DSN = f'mysql://root@localhost/claimd?socket={SOCK}'

# (name, argv after claimd, substrings of which the message must contain at least one)
BAD = [
    ('dsn_with_http_scheme', ['--dsn', 'http://x', '--handler', 'noop'], ['dsn', 'http', 'scheme']),
    ('dsn_without_database', ['--dsn', f'mysql://root@localhost?socket={SOCK}', '--handler', 'noop'],
     ['database', 'db']),
    ('dsn_with_password', ['--dsn', f'mysql://root:s3cr3t-pw@localhost/claimd?socket={SOCK}',
                           '--handler', 'noop'], ['password']),
    ('dsn_missing', ['--handler', 'noop'], ['dsn']),
    ('unknown_option', ['--dsn', GOOD_DSN, '--handler', 'noop', '--frobnicate'], ['frobnicate']),
    ('workers_0', ['--dsn', GOOD_DSN, '--handler', 'noop', '--workers', '0'], ['workers']),
    ('workers_abc', ['--dsn', GOOD_DSN, '--handler', 'noop', '--workers', 'abc'], ['workers']),
    ('workers_without_value', ['--dsn', GOOD_DSN, '--handler', 'noop', '--workers'], ['workers']),
    ('handler_missing', ['--dsn', GOOD_DSN], ['handler']),
    ('handler_unknown_kind', ['--dsn', GOOD_DSN, '--handler', 'bogus:thing'], ['handler', 'bogus']),
    ('batch_over_256', ['--dsn', GOOD_DSN, '--handler', 'noop', '--batch', '257'], ['batch']),
    ('lease_bad_unit', ['--dsn', GOOD_DSN, '--handler', 'noop', '--lease', '5x'], ['lease', '5x']),
]


def run_claimd(t, args, env_extra=None, timeout=10):
    """Run claimd in its own session; return (exit code, stdout, stderr, processes left)."""
    env = {k: v for k, v in os.environ.items() if k not in ('CLAIMD_DSN', 'CLAIMD_DB_PASSWORD', 'CLAIMD_CONTROL')}
    env.update(env_extra or {})
    argv = [CLAIMD_BIN, '--control', os.path.join(t.tmpdir, 'c.sock')] + args
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for pid in pids_where(lambda st: st['session'] == p.pid):
            harness.kill_quietly(pid)
        out, err = p.communicate()
        harness.fail(f'claimd {" ".join(args)} still running after {timeout}s; stderr: {err.strip()!r}')
    left = pids_where(lambda st: st['session'] == p.pid)
    for pid in left:
        harness.kill_quietly(pid)
    return p.returncode, out, err, left


def it_rejects_bad_command_lines_with_exit_2_and_one_line(t):
    problems = []
    for name, args, words in BAD:
        rc, out, err, left = run_claimd(t, args)
        lines = err.strip().splitlines()
        msg = lines[0] if lines else ''
        why = []
        if rc != 2:
            why.append(f'exit {rc}')
        if len(lines) != 1:
            why.append(f'{len(lines)} lines on stderr')
        if not msg.startswith('claimd: '):
            why.append('message does not start with "claimd: "')
        if not any(w.lower() in msg.lower() for w in words):
            why.append(f'message mentions none of {words}')
        if 's3cr3t' in err or 's3cr3t' in out:
            why.append('the password appears in the output')
        if left:
            why.append(f'processes left: {harness.describe_pids(left)}')
        t.note(f'{name}: exit {rc}: {err.strip()!r}')
        if why:
            problems.append(f'{name} ({", ".join(why)}; stderr {err.strip()!r})')
    check(not problems, f'{len(problems)} of {len(BAD)} bad command lines mishandled: ' + '; '.join(problems))


def it_help_exits_0_and_names_the_options(t):
    rc, out, err, left = run_claimd(t, ['--help'])
    check_eq(rc, 0, 'claimd --help exit code')
    for opt in ('--dsn', '--workers', '--handler', '--control', '--grace'):
        check(opt in out, f'claimd --help does not mention {opt}: {out!r}')
    check_eq(left, [], 'processes left')


def it_takes_the_dsn_from_CLAIMD_DSN(t):
    db = t.database()
    item = db.insert_item('x')
    env = {k: v for k, v in os.environ.items() if k != 'CLAIMD_DSN'}
    env['CLAIMD_DSN'] = db.dsn
    c = t.claimd(None, '--handler', 'noop', '--workers', '1', env=env)
    wait_for(lambda: db.row(item, 'state'), 15, f'row {item} done', until=lambda r: r == ('done',))
    check_eq(c.stop(), 0, 'claimd exit code after SIGTERM')


def it_claimctl_without_daemon_exits_3_and_names_the_socket(t):
    path = os.path.join(tempfile.gettempdir(), f'claimd-test-nosuch-{os.getpid()}.sock')
    r = run_claimctl('--control', path, 'status', '--json')
    check_eq(r.returncode, 3, f'claimctl exit code (stderr {r.stderr.strip()!r})')
    check_eq(r.stdout, '', 'claimctl stdout')
    check(path in r.stderr, f'claimctl message does not name the socket {path}: {r.stderr.strip()!r}')
    env = dict(os.environ, CLAIMD_CONTROL=path)
    r = run_claimctl('status', env=env)
    check_eq(r.returncode, 3, f'claimctl (CLAIMD_CONTROL) exit code (stderr {r.stderr.strip()!r})')
    check(path in r.stderr, f'claimctl does not use/name $CLAIMD_CONTROL {path}: {r.stderr.strip()!r}')


def it_claimctl_rejects_an_unknown_command(t):
    r = run_claimctl('--control', '/nonexistent/c.sock', 'frobnicate')
    check_eq(r.returncode, 2, 'claimctl frobnicate exit code')
    check('frobnicate' in r.stderr, f'message does not name the command: {r.stderr.strip()!r}')
    for args in (['status', '--frob'], ['job'], ['job', 'x'], ['workers'], ['--control']):
        r = run_claimctl(*args)
        check(r.returncode == 2 and r.stderr.startswith('claimctl: '),
              f'claimctl {" ".join(args)}: {r.returncode} {r.stderr!r}')


def it_claimctl_says_its_version_and_usage(t):
    r = run_claimctl('--version')
    out = subprocess.run([CLAIMD_BIN, '--version'], capture_output=True, text=True).stdout
    check_eq((r.returncode, r.stdout.split()), (0, ['claimctl', out.split()[-1]]),
             'claimctl --version names claimd\'s version')
    for flag in ('-h', '--help'):
        r = run_claimctl('status', flag)
        check(r.returncode == 0 and 'Exit status: 0 done' in r.stdout and '  workers N' in r.stdout,
              f'claimctl status {flag}: {r.stdout[:200]!r}')
    r = run_claimctl()
    check(r.returncode == 2 and 'no command' in r.stderr, f'claimctl alone: {r.stderr!r}')


def it_claimctl_answers_every_command_in_json_with_options_anywhere(t):
    db = t.database()
    c = t.claimd(db, '--handler', 'noop', '--workers', '1')
    c.wait_ready()
    c.ctl('pause', 'held')
    # Its row in the supervisors table is written at its first poll.
    wait_for(lambda: c.ctl('supervisors').stdout.count(' live'), 10, 'its supervisors row',
             until=lambda n: n == 1)
    ctl = lambda *a: run_claimctl(*a, '--control', c.control)   # --control last
    r = ctl('add', '--queue', 'held', 'p1', '--json')
    check_eq(r.returncode, 0, f'add --json ({r.stderr})')
    added = json.loads(r.stdout)['id']
    db.server.sql(f"UPDATE work_items SET state = 'dead' WHERE id = {added}", db=db.name)
    answers = {
        'status': (['status'], lambda j: j['workers'] and 'held' in j['counts']),
        'status --all': (['status', '--all'], lambda j: len(j['supervisors']) == 1),
        'add': (['add', '--queue', 'held', '--dedupe', 'k', 'p2'], lambda j: j['id'] > added),
        'add duplicate': (['add', '--queue', 'held', '--dedupe', 'k', 'p3'],
                          lambda j: j['duplicate'] is True),
        'job': (['job', str(added)], lambda j: j['id'] == added and j['state'] == 'dead'),
        'jobs': (['jobs', '--queue', 'held'], lambda j: [x['id'] for x in j] == [added]),
        'retry': (['retry', str(added)], lambda j: j == {'retried': 1}),
        'cancel': (['cancel', str(added)], lambda j: j == {'id': added, 'deleted': True}),
        'pause': (['pause', 'other'], lambda j: j == {'queue': 'other', 'paused': True}),
        'resume': (['resume', 'other'], lambda j: j == {'queue': 'other', 'paused': False}),
        'limit': (['limit', 'other', '--interval', '250ms'],
                  lambda j: (j['queue'], j['min_interval_ms'], j['keys']) == ('other', 250, [])),
        'queues': (['queues'], lambda j: {q['name'] for q in j} >= {'held', 'other'}),
        'supervisors': (['supervisors'], lambda j: len(j) == 1),
        'workers': (['workers', '2'], lambda j: j['workers'] == 2),
        'reload': (['reload'], lambda j: j['reloaded'] is True and 'summary' in j),
    }
    for name, (args, ok) in answers.items():
        for where in ('first', 'last'):
            if name in ('add', 'retry', 'cancel') and where == 'last':
                continue   # not idempotent: once is enough
            argv = ['--json', *args] if where == 'first' else [*args, '--json']
            r = ctl(*argv)
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = None
            check(r.returncode == 0 and j is not None and ok(j),
                  f'claimctl {" ".join(argv)}: {r.returncode} {r.stdout!r} {r.stderr!r}')
    r = ctl('job', str(added), '--json')
    check(r.returncode == 1 and f'no row {added}' in r.stderr and r.stdout == '',
          f'a refused request exits 1: {r.returncode} {r.stderr!r}')
    r = run_claimctl('doctor', '--dsn', db.dsn, '--json', '--control', c.control)
    j = json.loads(r.stdout) if r.stdout.startswith('{') else {}
    check(r.returncode == 0 and j.get('problems') == 0 and
          any('a claimd answers on the control socket' in x['text'] for x in j['checks']),
          f'claimctl doctor --json: {r.returncode} {r.stdout!r} {r.stderr!r}')
    r = run_claimctl('migrate', '--dsn', db.dsn, '--json')
    have = len(harness.MIGRATIONS)
    check_eq((r.returncode, r.stdout and json.loads(r.stdout)), (0, {'from': have, 'applied': [],
                                                                     'version': have}),
             f'claimctl migrate --json ({r.stderr})')
    check_eq(c.stop(), 0, 'claimd exit code')


def _unsafe(data):
    """The control characters in bytes printed for a terminal: C0 but LF and TAB, DEL, C1
    (U+0080..U+009F), and bytes that are not UTF-8."""
    text = data.decode('utf-8', 'replace')
    return sorted({hex(ord(ch)) for ch in text if (ord(ch) < 0x20 and ch not in '\n\t') or
                   0x7f <= ord(ch) <= 0x9f or ch == '\ufffd'})


def _ctl_bytes(*args):
    return subprocess.run([harness.CLAIMCTL_BIN, *args], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=10)


PAYLOAD = 'before\x1b[2J\x07after\r\nline two\tend'     # clear screen, BEL, CR
QUEUE = 'q\x1b]0;pwned\x07x'                              # sets the window title
ERROR = 'err:\x1b[31mred\x1b[0m:\u009b2J:\x1b[?1049hend'    # colours, C1 CSI, alt screen


def it_claimctl_strips_control_characters_from_what_it_prints(t):
    db = t.database()
    hexed = lambda s: f"CONVERT(UNHEX('{s.encode().hex()}') USING utf8mb4)"
    db.execute(f"INSERT INTO work_items (queue, payload, state, last_error, dedupe_key) VALUES "
               f"({hexed(QUEUE)}, UNHEX('{PAYLOAD.encode().hex()}'), 'dead', {hexed(ERROR)}, "
               f"{hexed('d' + chr(27) + '[8m')})")
    item = int(db.scalar('SELECT MAX(id) FROM work_items'))
    c = t.claimd(db, '--workers', '1', '--handler', 'noop')
    c.wait_ready()
    seen = {}
    for args in (['job', str(item)], ['jobs', '--state', 'dead'], ['queues']):
        r = _ctl_bytes('--control', c.control, *args)
        check_eq((r.returncode, r.stderr), (0, b''), f'claimctl {" ".join(args)}')
        check_eq(_unsafe(r.stdout), [], f'control characters in claimctl {" ".join(args)}: '
                 f'{r.stdout!r}')
        seen[args[0]] = r.stdout.decode()
    for want in ('beforeafter\nline two\tend', 'err:red:2J:end', 'qx'):
        check(want in seen['job'], f'claimctl job shows {want!r}: {seen["job"]!r}')
    check('qx' in seen['jobs'] and 'err:red:2J:end' in seen['jobs'], f'jobs: {seen["jobs"]!r}')
    check('qx ' in seen['queues'], f'queues: {seen["queues"]!r}')
    # --json: exact (JSON escapes them)
    r = _ctl_bytes('--control', c.control, 'job', str(item), '--json')
    check(b'\x1b' not in r.stdout and b'\x07' not in r.stdout, f'raw bytes in --json: {r.stdout!r}')
    j = json.loads(r.stdout)
    check_eq((j['payload'], j['queue'], j['last_error']), (PAYLOAD, QUEUE, ERROR), 'job --json')
    check_eq(c.stop(), 0, 'claimd exit code')


def _answer_with(path, reply):
    """Something else answering on a control socket: reads a request, sends reply."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(reply)
        srv.close()
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    return th


def it_claimctl_strips_control_characters_from_errors(t):
    path = os.path.join(t.tmpdir, 'fake.sock')
    for reply, code, want in ((b'error: no\x1b[2J\x07pe\r\n', 1, b'claimctl: nope\n'),
                              (b'\x1b]0;pwned\x07junk\x9b\n', 3, b'protocol: junk?')):
        th = _answer_with(path, reply)
        r = _ctl_bytes('--control', path, 'status')
        th.join(5)
        os.unlink(path)
        check(r.returncode == code and want in r.stderr and _unsafe(r.stderr) == [],
              f'claimctl given {reply!r}: exit {r.returncode}, stderr {r.stderr!r}')


if __name__ == '__main__':
    harness.main(needs_server=False)
