#!/usr/bin/env python3
"""The migrations (sql/migrations/NNN_name.sql) change a database that is in use without
stopping it (sql/migrations/003_utc_times.sql says how). The rules that keep them so, read
from their text:

  - Every ALTER TABLE (also one in a string that EXECUTE IMMEDIATE or PREPARE runs) names its
    ALGORITHM, so that the server refuses what it cannot do that way instead of copying the
    table under a lock: INSTANT; INPLACE or NOCOPY with LOCK=NONE; COPY only on the tables of
    a row per queue, per claimd or per migration (SMALL), with LOCK=SHARED.
  - A statement that updates or deletes rows of a table that grows with the work (not SMALL)
    goes in batches: a '-- claimd-batches: TABLE COLUMN' line before it (store_migrate), and
    @claimd_lo and @claimd_hi in it. Not a trigger's body (one row at a time).
  - No SET @v = (SELECT ... FROM a table): MariaDB reads for it with shared locks, holding up
    the rows claimd works on; SELECT ... INTO @v reads without.
  - A trigger is replaced in one statement, CREATE OR REPLACE TRIGGER: never CREATE TRIGGER,
    and never a DROP TRIGGER of a name the file creates after it (an insert in between would
    run without it).

001_base.sql made the first released schema: its ALTERs act only on tables from before
numbered migrations, and are not held to the first two rules.

    check_migrations.py [ROOT]          the tree's migrations (and the rules' own examples)
    check_migrations.py --file PATH...  those files
Prints each problem (file:line: what) and exits 1; exits 0 when all hold."""

import os
import re
import sys

SMALL = {'queues', 'supervisors', 'claimd_schema', 'key_limits', 'schedules'}
DIRECTIVE = '-- claimd-batches:'


def split(text):
    """The statements as the mariadb client reads them (DELIMITER lines, quotes, comments):
    (line, statement text, the text between the last statement and this one)."""
    out, delim, i, n, line = [], ';', 0, len(text), 1
    start = gap_start = 0
    first = None
    while i < n:
        at_line_start = i == 0 or text[i - 1] == '\n'
        if at_line_start and first is None:
            m = re.match(r'[ \t]*DELIMITER[ \t]+(\S+)[^\n]*', text[i:], re.I)
            if m:
                delim = m.group(1)
                i += m.end()
                continue
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
            continue
        if c == '#' or text.startswith('-- ', i) or text.startswith('--\n', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            line += text.count('\n', i, j)
            i = j
            continue
        if c.isspace():
            i += 1
            continue
        if first is None:
            first, first_line = i, line
        if text.startswith(delim, i):
            out.append((first_line, text[first:i].strip(), text[gap_start:first]))
            i += len(delim)
            gap_start, first = i, None
            continue
        if c in '\'"`':
            j = i + 1
            while j < n:
                if text[j] == '\\' and c != '`':
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            line += text.count('\n', i, j)
            i = j + 1
            continue
        i += 1
    if first is not None and text[first:].strip():
        out.append((first_line, text[first:].strip(), text[gap_start:first]))
    del start
    return out


def pieces(stmt):
    """The statement's code with its strings emptied, then each string's text: where an ALTER
    or an UPDATE may be (a string for EXECUTE IMMEDIATE holds a statement of its own)."""
    code, strings, i = [], [], 0
    for m in re.finditer(r"'((?:[^'\\]|\\.|'')*)'|\"((?:[^\"\\]|\\.|\"\")*)\"|--[^\n]*|/\*.*?\*/",
                         stmt, re.S):
        code.append(stmt[i:m.start()])
        if m.group(0).startswith(("'", '"')):
            code.append("''")
            body = m.group(1) if m.group(1) is not None else m.group(2)
            strings.append(body.replace("''", "'").replace('\\\'', "'"))
        i = m.end()
    code.append(stmt[i:])
    return [''.join(code)] + strings


def problems(name, text):
    """What in migration file name (its text) breaks the rules: a list of 'name:line: why'."""
    found = []
    m = re.match(r'(\d+)_', name)
    version = int(m.group(1)) if m else 0
    dropped = {}
    for line, stmt, gap in split(text):
        where = f'{name}:{line}'
        batched = DIRECTIVE in gap
        uses_vars = '@claimd_lo' in stmt.lower()
        if batched and not (uses_vars and '@claimd_hi' in stmt.lower()):
            found.append(f'{where}: a statement in batches uses @claimd_lo and @claimd_hi')
        if uses_vars and not batched:
            found.append(f"{where}: @claimd_lo without a '{DIRECTIVE} TABLE COLUMN' line before it")
        for text_part in pieces(stmt):
            flat = ' '.join(text_part.split())
            trigger_body = re.match(r'(CREATE\s+(OR\s+REPLACE\s+)?(DEFINER\s*=\s*\S+\s+)?TRIGGER)',
                                    flat, re.I)
            for tm in re.finditer(r'\bCREATE\s+(OR\s+REPLACE\s+)?(?:DEFINER\s*=\s*\S+\s+)?'
                                  r'TRIGGER\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)', flat, re.I):
                if not tm.group(1):
                    found.append(f'{where}: CREATE TRIGGER {tm.group(2)}: replace a trigger in '
                                 'one statement, CREATE OR REPLACE TRIGGER')
                if tm.group(2).lower() in dropped:
                    found.append(f'{where}: trigger {tm.group(2)} created after its DROP TRIGGER '
                                 f'(line {dropped[tm.group(2).lower()]}): an insert between the '
                                 'two runs without it; CREATE OR REPLACE TRIGGER alone')
            for tm in re.finditer(r'\bDROP\s+TRIGGER\s+(?:IF\s+EXISTS\s+)?`?(\w+)', flat, re.I):
                dropped.setdefault(tm.group(1).lower(), line)
            if trigger_body:
                continue   # a trigger's body changes one row at a time
            for sub in flat.split(';'):
                sub = sub.strip()
                am = re.search(r'\bALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE\s+`?(\w+)`?(.*)', sub,
                               re.I | re.S)
                if am and version >= 2:
                    found += alter_problems(where, am.group(1).lower(), am.group(2))
                um = re.search(r'^(?:IF\b.*?\bTHEN\s+)?(?:UPDATE|DELETE\s+FROM)\s+`?(\w+)', sub,
                               re.I | re.S)
                if um and version >= 3 and um.group(1).lower() not in SMALL and not batched:
                    found.append(f'{where}: rows of {um.group(1)} changed in one statement: in '
                                 f"batches ('{DIRECTIVE} TABLE COLUMN'), which hold few row locks "
                                 'at a time')
                sm = re.search(r'\bSET\s+@\w+\s*=\s*\(?\s*\(\s*SELECT\b.*?\bFROM\s+`?(\w+)', sub,
                               re.I | re.S)
                if sm and sm.group(1).lower() != 'information_schema':
                    found.append(f'{where}: SET @v = (SELECT ... FROM {sm.group(1)}) reads with '
                                 'shared locks: SELECT ... INTO @v')
    return found


def alter_problems(where, table, rest):
    alg = re.search(r'\bALGORITHM\s*=?\s*(\w+)', rest, re.I)
    lock = re.search(r'\bLOCK\s*=?\s*(\w+)', rest, re.I)
    alg = alg.group(1).upper() if alg else None
    lock = lock.group(1).upper() if lock else None
    if alg is None or alg == 'DEFAULT':
        return [f'{where}: ALTER TABLE {table} without ALGORITHM=: the server picks it, COPY '
                'where nothing else will do (a type change), copying the table under a lock']
    if alg == 'INSTANT':
        return []
    if alg in ('INPLACE', 'NOCOPY'):
        return [] if lock == 'NONE' else [f'{where}: ALTER TABLE {table} ALGORITHM={alg} '
                                          'without LOCK=NONE']
    if alg == 'COPY':
        if table not in SMALL:
            return [f'{where}: ALTER TABLE {table} ALGORITHM=COPY: {table} grows with the work '
                    '(copy it with a new column, a trigger and batches, as 003_utc_times does)']
        return [] if lock == 'SHARED' else [f'{where}: ALTER TABLE {table} ALGORITHM=COPY '
                                            'without LOCK=SHARED']
    return [f'{where}: ALTER TABLE {table} ALGORITHM={alg}: unknown']


# Each of these breaks one rule: the check must say so (it would pass anything otherwise).
EXAMPLES = [
    ('a type change without ALGORITHM',
     'ALTER TABLE work_items MODIFY COLUMN run_at TIMESTAMP(6) NOT NULL;'),
    ('INPLACE without LOCK=NONE',
     'ALTER TABLE work_items ADD KEY k (queue), ALGORITHM=INPLACE;'),
    ('COPY of work_items', 'ALTER TABLE work_items ADD COLUMN x INT, ALGORITHM=COPY, LOCK=SHARED;'),
    ('an ALTER in a string',
     "SET @q = IF(1, 'ALTER TABLE work_items DROP COLUMN a', 'DO 0');"),
    ('DROP then CREATE TRIGGER',
     'DROP TRIGGER IF EXISTS t_bi;\nCREATE OR REPLACE TRIGGER t_bi BEFORE INSERT ON t FOR EACH '
     'ROW SET NEW.a = 1;'),
    ('CREATE TRIGGER', 'CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1;'),
    ('an UPDATE of every row', 'UPDATE work_items SET claim_time = claimed_at;'),
    ('a locking read', 'SET @b = (SELECT GROUP_CONCAT(id) FROM work_items);'),
    ('batches without the variables',
     '-- claimd-batches: work_items id\nUPDATE work_items SET a = 1 WHERE id < 5;'),
]


def main(argv):
    if argv[1:2] == ['--file']:
        paths = argv[2:]
        examples = []
    else:
        root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
        d = os.path.join(root, 'sql', 'migrations')
        paths = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith('.sql')]
        examples = EXAMPLES
    bad = []
    for what, text in examples:
        if not problems('099_example.sql', text):
            bad.append(f'check_migrations.py: its example "{what}" passes the rules')
    for path in paths:
        with open(path, encoding='utf-8') as f:
            bad += problems(os.path.basename(path), f.read())
    for b in bad:
        print(b)
    if not bad:
        print(f'{len(paths)} migrations keep the rules')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
