#!/usr/bin/env python3
"""Logs: --log-format json and logfmt give one parseable line per event from every process;
with $JOURNAL_STREAM naming stderr each line starts with its priority; --log-items adds a line
per finished item (id, queue, attempt, outcome, times) and never shows the payload."""

import json
import os
import re

import harness
from harness import check, check_eq, wait_for

SECRET = 'payload-s3cret-do-not-log'


def _run(t, db, *args, env=None, name=None, rows=()):
    for payload in rows:
        db.insert_item(payload)
    c = t.claimd(db, '--workers', '2', *args, env=env, name=name)
    c.wait_ready()
    if rows:
        wait_for(db.states, 20, 'the rows finished',
                 until=lambda s: s['done'] + s['dead'] == len(rows) and s['ready'] == 0)
    check_eq(c.stop(), 0, 'exit code')
    return [ln for ln in c.log().splitlines() if ln]


def it_writes_json_and_logfmt_lines(t):
    db = t.database()
    h = t.log_handler('')
    lines = _run(t, db, '--handler', h.spec, '--log-format', 'json', name='json',
                 rows=['a', 'b'])
    roles = set()
    for ln in lines:
        obj = json.loads(ln)
        check_eq(sorted(obj), ['level', 'msg', 'pid', 'role', 'ts'], f'keys of {ln!r}')
        check(obj['level'] in ('error', 'warn', 'info', 'debug'), f'level of {ln!r}')
        roles.add(re.sub(r'\d+$', 'N', obj['role']))
    check({'sup', 'wN'} <= roles, f'lines from the supervisor and the workers: {roles}')
    db2 = t.database()
    lines = _run(t, db2, '--handler', 'noop', '--log-format', 'logfmt', name='logfmt')
    pattern = re.compile(r'^ts=\S+Z level=(error|warn|info|debug) role=\S+ pid=\d+ '
                         r'msg="([^"\\]|\\.)*"$')
    bad = [ln for ln in lines if not pattern.match(ln)]
    check_eq(bad, [], 'logfmt lines that do not parse')


def it_prefixes_priorities_for_the_journal(t):
    db = t.database()
    # The harness writes claimd's stderr to <name>.log: point JOURNAL_STREAM at that file.
    name = 'journal'
    path = os.path.join(t.tmpdir, f'{name}.log')
    open(path, 'w').close()
    st = os.stat(path)
    env = dict(os.environ, JOURNAL_STREAM=f'{st.st_dev}:{st.st_ino}')
    c = t.claimd(db, '--workers', '1', '--handler', 'noop', env=env, name=name)
    c.wait_ready()
    check_eq(c.stop(), 0, 'exit code')
    lines = [ln for ln in c.log().splitlines() if ln]
    check(lines and all(re.match(r'^<[3467]>claimd\[\w+\] pid=\d+ \w+: ', ln) for ln in lines),
          f'journal lines: {lines[:3]}')
    check(any(ln.startswith('<6>') for ln in lines), 'info lines are <6>')


def it_logs_each_finished_item_without_its_payload(t):
    db = t.database()
    h = t.log_handler('[ "$payload" = fail ] && rc=1; true')
    lines = _run(t, db, '--handler', h.spec, '--log-items', '--retry-base', '100ms',
                 rows=[SECRET, 'fail'])
    items = [ln for ln in lines if ' item id=' in ln and ' outcome=' in ln]
    check(any(re.search(r'item id=\d+ queue=default attempt=1 outcome=done run_ms=[\d.]+ '
                        r'wait_ms=[\d.]+', ln) for ln in items), f'a done line: {items}')
    check(any('outcome=retried' in ln or 'outcome=dead' in ln for ln in items),
          f'a failure line: {items}')
    check(SECRET not in '\n'.join(lines), 'the payload is not in the log')


if __name__ == '__main__':
    harness.main()
