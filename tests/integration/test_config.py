#!/usr/bin/env python3
"""The config file (--config, $CLAIMD_CONFIG): every option is a key; flags beat CLAIMD_*
variables, which beat the file; a typo or a bad value stops claimd with exit 2 naming the
file and the line; the example file claimd prints is a valid config."""

import json
import os

import harness
from harness import check, check_eq, wait_for
from test_cli import GOOD_DSN, run_claimd


def _write(t, name, text):
    path = os.path.join(t.tmpdir, name)
    with open(path, 'w') as f:
        f.write(text)
    return path


def it_refuses_a_typo_or_a_bad_value_naming_file_and_line(t):
    cases = [
        ('[claimd]\nhandler = noop\nwrokers = 3\n', 3, "unknown key 'wrokers'"),
        ('handler = noop\n\n# a comment\nworkers = many\n', 4,
         "'many' is not a number from 1 to 1024"),
        ('handler = noop\nlease = 5x\n', 2, "'5x' is not a duration"),
        ('handler = noop\nthis line has no equals sign\n', 2, 'not a key = value line'),
        ('handler = noop\nhelp = 1\n', 2, "unknown key 'help'"),
        ('queue = a, b, a\nhandler = noop\n', 1, "queue 'a' given twice"),
        ('handler = noop\nexec-result = perhaps\n', 2, "'perhaps' is not true or false"),
    ]
    for i, (text, line, words) in enumerate(cases):
        path = _write(t, f'bad{i}.conf', f'dsn = {GOOD_DSN}\n' + text)
        rc, _, err, left = run_claimd(t, ['--config', path])
        want = f'{path}:{line + 1}: '
        check_eq(rc, 2, f'exit code for {text!r}: {err!r}')
        check(err.startswith('claimd: ' + want) and words in err,
              f'message for {text!r}: {err!r} (want {want!r} and {words!r})')
        check_eq(left, [], 'processes left')
    rc, _, err, _ = run_claimd(t, ['--config', os.path.join(t.tmpdir, 'missing.conf')])
    check(rc == 2 and 'missing.conf' in err and 'No such file' in err, f'a missing file: {err!r}')
    rc, _, err, _ = run_claimd(t, ['--handler', 'noop'], env_extra={
        'CLAIMD_DSN': GOOD_DSN, 'CLAIMD_WORKERS': '0'})
    check(rc == 2 and err.startswith('claimd: CLAIMD_WORKERS: '), f'a bad variable: {err!r}')


def it_takes_flags_over_the_environment_over_the_file(t):
    db = t.database()
    conf = _write(t, 'claimd.conf', f'[claimd]\ndsn = {db.dsn}\nhandler = noop\nworkers = 3\n'
                  'queue = mail, sms\nhang_timeout = 20s\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CLAIMD_')}
    for extra_env, flags, workers in [({}, [], 3), ({'CLAIMD_WORKERS': '2'}, [], 2),
                                      ({'CLAIMD_WORKERS': '2'}, ['--workers', '1'], 1)]:
        c = t.claimd(None, '--config', conf, *flags, env=dict(env, **extra_env),
                     name=f'w{workers}')
        st = c.wait_ready(workers=workers)
        check_eq((len(st['workers']), st['queue']), (workers, 'mail,sms'),
                 f'workers and queues with {extra_env} {flags}')
        check_eq(c.stop(), 0, 'exit code')
    # The queues: a later source replaces the file's list; $CLAIMD_CONFIG names the file.
    c = t.claimd(None, env=dict(env, CLAIMD_CONFIG=conf, CLAIMD_QUEUES='jobs'), name='env')
    check_eq(c.wait_ready(workers=3)['queue'], 'jobs', 'CLAIMD_QUEUES over the file')
    check_eq(c.stop(), 0, 'exit code')


def it_prints_an_example_config_that_parses(t):
    db = t.database()
    r = harness.subprocess.run([harness.CLAIMD_BIN, '--example-config'], capture_output=True,
                               text=True, timeout=10)
    check_eq(r.returncode, 0, 'exit code of --example-config')
    keys = [line[1:].split(' = ')[0] for line in r.stdout.splitlines()
            if line.startswith('#') and ' = ' in line and not line.startswith('# ')]
    for want in ('dsn', 'handler', 'workers', 'queue', 'http', 'lease', 'log-level'):
        check(want in keys, f'key {want} in the example: {keys}')
    conf = _write(t, 'example.conf', r.stdout + f'\ndsn = {db.dsn}\nhandler = noop\n')
    c = t.claimd(None, '--config', conf,
                 env={k: v for k, v in os.environ.items() if not k.startswith('CLAIMD_')})
    check_eq(len(c.wait_ready()['workers']), 4, 'the defaults')
    check_eq(c.stop(), 0, 'exit code')


if __name__ == '__main__':
    harness.main()
