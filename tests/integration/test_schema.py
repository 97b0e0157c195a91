#!/usr/bin/env python3
"""The schema (sql/migrations) and the claim query: the query store.c sends (read from its source) is a
range scan of claim_prio_idx in index order (not a walk over the done rows), loading the schema
again keeps the data, and a row inserted with only a payload is ready to claim at once."""

import json
import os
import re

import harness
from harness import check, check_eq

STORE_DIR = os.path.join(harness.SOURCE_ROOT, 'src', 'store')
STORE_SOURCES = sorted(os.path.join(STORE_DIR, f) for f in os.listdir(STORE_DIR)
                       if f.endswith(('.c', '.h')))


def c_macro(name):
    """The string a '#define NAME "..." "..."' in src/store/ expands to, as a Python % format."""
    text = ''
    for path in STORE_SOURCES:
        with open(path, encoding='utf-8') as f:
            text += f.read() + '\n'
    m = re.search(r'^#define ' + name + r'\b((?:.*\\\n)*.*)$', text, re.M)
    check(m, f'#define {name} not found in {STORE_SOURCES}')
    # String literals, and names of other macros spliced between them (NOT_PAUSED).
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\b([A-Z][A-Z_]+)\b', m.group(1))
    check(parts, f'{name} is not a string literal')
    return ''.join(lit if lit else c_macro(ref).replace('%d', '%u') for lit, ref in parts) \
        .replace('%llu', '%d').replace('%u', '%d')


def fill(db):
    """A table that looks like a busy queue: many done rows (visible_at NULL, sorting first in
    claim_prio_idx), claimable rows, claimed rows with future leases, another queue. Rows are
    finished and claimed by UPDATEs, as in real use: the index entries they leave behind
    until purge are what made MariaDB 10.11 pick "ref" on (queue) for the unhinted query."""
    db.execute("INSERT INTO work_items (payload) SELECT 'x' FROM seq_1_to_50000")
    db.execute("UPDATE work_items SET state = 'done', visible_at = NULL, finished_at = NOW(6) "
               "WHERE id <= 40000")
    db.execute("UPDATE work_items SET state = 'claimed', claim_token = 1, "
               "visible_at = NOW(6) + INTERVAL 1 HOUR WHERE id > 40000 AND id <= 40100")
    db.execute("INSERT INTO work_items (queue, payload) SELECT 'other', 'x' FROM seq_1_to_5000")
    # Other priorities: due, and waiting for later (delayed rows sort after the due ones).
    db.execute("INSERT INTO work_items (payload, priority) SELECT 'x', CAST(seq % 3 AS SIGNED) - 1 FROM seq_1_to_3000")
    db.execute("INSERT INTO work_items (payload, priority, run_at) "
               "SELECT 'x', CAST(seq % 3 AS SIGNED) - 1, NOW(6) + INTERVAL 1 DAY FROM seq_1_to_3000")
    db.execute('ANALYZE TABLE work_items')


def claim_queries(db):
    """The three forms store.c sends: from the head, after a cursor, up to a cursor."""
    select, after, upto = c_macro('CLAIM_SELECT'), c_macro('CLAIM_AFTER'), c_macro('CLAIM_UPTO')
    vis, rid = db.sql('SELECT visible_at, id FROM work_items WHERE id = 45000')[0]
    q = "'default'"  # the queue, in the select list, the WHERE and the pause check
    sel = (q,) * 2  # the select list's queue settings, the WHERE's
    prios = '-1,0,1'
    every = ','.join(str(p) for p in range(-10, 11))  # a scan from the head takes them all
    return {
        'head': select % (*sel, every, '', q, 16),
        'head, one priority': select % (*sel, '0', '', q, 16),
        'after cursor': select % (*sel, prios, after % (0, vis, vis, int(rid)), q, 16),
        'up to cursor': select % (*sel, prios, upto % (0, vis, vis, int(rid)), q, 16),
    }


def table_node(plan):
    """The one table access of a single-table EXPLAIN/ANALYZE FORMAT=JSON."""
    block = plan['query_block']
    node = block.get('table') or block['nested_loop'][0]['table']
    return node


def it_claim_query_is_a_range_on_claim_prio_idx_in_index_order(t):
    db = t.database()
    fill(db)
    for form, query in claim_queries(db).items():
        text = db.scalar('EXPLAIN FORMAT=JSON ' + query)
        node = table_node(json.loads(text))
        t.note(f'{form}: access_type={node.get("access_type")} key={node.get("key")} '
               f'parts={node.get("used_key_parts")}')
        check(node.get('access_type') not in ('ALL', 'index'), f'{form}: full scan: {text}')
        check_eq(node.get('access_type'), 'range', f'{form}: access_type ("ref" walks done rows)')
        check_eq(node.get('key'), 'claim_prio_idx', f'{form}: key')
        check('visible_at' in node.get('used_key_parts', []),
              f'{form}: visible_at is not part of the range: {node.get("used_key_parts")}')
        check('filesort' not in text, f'{form}: sorts instead of reading in index order: {text}')


def it_due_priorities_and_the_idle_poll_are_ranges_per_priority(t):
    db = t.database()
    fill(db)
    q = "'default'"
    due = 'SELECT ' + ','.join(c_macro('DUE_PRIORITY') % (q, p) for p in range(-10, 11))
    # The idle poll as store_poll_any writes it for one queue.
    poll = ("SELECT 1 FROM work_items FORCE INDEX (claim_prio_idx) WHERE queue IN ('default') "
            f"AND priority IN ({','.join(str(p) for p in range(-10, 11))}) "
            "AND visible_at <= NOW(6) AND queue NOT IN (SELECT name FROM queues WHERE paused) LIMIT 1")
    for name, query in (('due priorities', due), ('idle poll', poll)):
        plan = json.loads(db.scalar('EXPLAIN FORMAT=JSON ' + query))
        nodes = [n for n in _table_nodes(plan) if n.get('table_name') == 'work_items']
        t.note(f'{name}: ' + ', '.join(f'{n.get("access_type")}/{n.get("key")}/'
                                      f'{len(n.get("used_key_parts", []))}' for n in nodes[:3]))
        check(nodes, f'{name}: no access to work_items in the plan')
        for n in nodes:
            check_eq((n.get('access_type'), n.get('key')), ('range', 'claim_prio_idx'),
                     f'{name}: access')
            check('visible_at' in n.get('used_key_parts', []),
                  f'{name}: visible_at is not part of the range: {n.get("used_key_parts")}')
    flags = db.sql(due)[0]
    check_eq([p for p, f in zip(range(-10, 11), flags) if f is not None], [-1, 0, 1],
             'priorities with due rows')


def _table_nodes(node):
    """Every table access node of an EXPLAIN FORMAT=JSON tree."""
    if isinstance(node, dict):
        if 'table_name' in node and 'access_type' in node:
            yield node
        for v in node.values():
            yield from _table_nodes(v)
    elif isinstance(node, list):
        for v in node:
            yield from _table_nodes(v)


def it_group_statements_read_no_whole_table(t):
    # The statements that lock groups, start a key's next rows and restart stuck groups:
    # lookups by primary key and group_idx, never a scan of work_items.
    db = t.database()
    fill(db)
    db.execute("INSERT INTO work_items (payload, group_key) SELECT 'x', CONCAT('g', seq % 50) "
               "FROM seq_1_to_2000")
    db.execute('ANALYZE TABLE work_items')
    ids = [r[0] for r in db.sql("SELECT id FROM work_items WHERE group_key IS NOT NULL "
                                "ORDER BY id LIMIT 3")]
    cases = ''.join(f' WHEN {i} THEN 2' for i in ids)
    for name, query in (
            ('GROUP_LOCK', c_macro('GROUP_LOCK') % f'id IN ({",".join(ids)})'),
            ('GROUP_NEXT', c_macro('GROUP_NEXT') % (c_macro('GROUP_HEADS') % (','.join(ids),
                                                                           cases))),
            ('HAND_ON', c_macro('HAND_ON') % ("'default'", c_macro('GROUP_HEADS') % (
                ','.join(ids), cases), "'default'", "'default'", 3)),
            ('KEY_FILL_MANY', c_macro('KEY_FILL_MANY') % ' UNION '.join(
                c_macro('KEY_FILL_PART') % (int(i), int(i), 5) for i in ids)),
            ('GROUP_HEAL', c_macro('GROUP_HEAL') % "queue IN ('default')"),
            ('GROUP_HEAL of HEAL_SCOPE', c_macro('HEAL_KEYS_TABLE') + '; ' +
             c_macro('HEAL_KEYS_KEEP') % f'id IN ({",".join(ids)})' + '; ' +
             c_macro('GROUP_HEAL') % c_macro('HEAL_SCOPE')),
            ('HEAL_KEYS', c_macro('HEAL_KEYS') % ("'default'", "'default'", "''", 500,
                                                  "'default'", "'default'"))):
        head, _, query = query.rpartition('; ')
        text = db.scalar((head + '; ' if head else '') + 'EXPLAIN FORMAT=JSON ' + query)
        tables = [(n['table_name'], n['access_type']) for n in _table_nodes(json.loads(text))]
        t.note(f'{name}: {tables}')
        # (claimd_heal_keys holds the keys of the rows an action changes: read whole.)
        scans = [(n, a) for n, a in tables if not n.startswith('<') and a in ('ALL', 'index')
                 and n != 'claimd_heal_keys']
        check(tables and not scans, f'{name} scans a whole table or index: {text}')
        if name in ('GROUP_NEXT', 'HAND_ON'):
            # The next row by its number, one lookup (sql/migrations/015_group_seq_idx.sql).
            keys = [(n.get('key'), n.get('access_type')) for n in _table_nodes(json.loads(text))]
            check(('group_seq_idx', 'ref') in keys, f'{name}: no lookup in group_seq_idx: {keys}')


def it_prune_statements_are_primary_key_ranges(t):
    # The sweep that deletes done rows reads a span of ids and the row after it, by primary
    # key: there is no index on finished_at.
    db = t.database()
    fill(db)
    for name, query in (('PRUNE_SPAN', c_macro('PRUNE_SPAN') % (1000, 6000, 3600, 3600)),
                        ('PRUNE_NEXT', c_macro('PRUNE_NEXT') % (3600, 6000))):
        text = db.scalar('SET @claimd_pruner = 1; EXPLAIN FORMAT=JSON ' + query)
        node = table_node(json.loads(text))
        t.note(f'{name}: {node.get("access_type")} on {node.get("key")}')
        check_eq((node.get('access_type'), node.get('key')), ('range', 'PRIMARY'),
                 f'{name} access ({text})')


def it_job_browser_statements_read_a_span_of_ids_or_look_up_by_key(t):
    # The job browser (store_browse.c): counting and chunking a bulk action read one span of
    # the primary key whatever the filter (no index on state, group_key or last_error); a job
    # page reads attempt_errors, work_deps and batches by their keys.
    db = t.database()
    fill(db)
    where = (" AND state IN ('dead') AND queue = 'default' AND group_key = 'g' AND "
             "last_error LIKE '%%disk!_full%%' ESCAPE '!'")
    for name, query in (('BULK_COUNT', c_macro('BULK_COUNT') % (1000, 6000) + where),
                        ('BULK_CHUNK', c_macro('BULK_CHUNK') % (1000, 6000) + where +
                         ' ORDER BY id DESC LIMIT 500')):
        node = table_node(json.loads(db.scalar('EXPLAIN FORMAT=JSON ' + query.replace('%%', '%'))))
        t.note(f'{name}: {node.get("access_type")} on {node.get("key")}')
        check_eq((node.get('access_type'), node.get('key')), ('range', 'PRIMARY'), f'{name} access')
    for name in ('PAGE_PARENTS', 'PAGE_CHILDREN', 'PAGE_ROW'):
        macro = c_macro(name)
        query = macro % ((45000, 101) if macro.count('%d') == 2 else 45000)
        tables = [(n['table_name'], n['access_type']) for n in
                  _table_nodes(json.loads(db.scalar('EXPLAIN FORMAT=JSON ' + query.replace('%%', '%'))))]
        t.note(f'{name}: {tables}')
        # (claimd_heal_keys holds the keys of the rows an action changes: read whole.)
        scans = [(n, a) for n, a in tables if not n.startswith('<') and a in ('ALL', 'index')
                 and n != 'claimd_heal_keys']
        check(not scans, f'{name} scans a whole table or index: {tables}')


def it_fence_update_uses_the_primary_key_for_one_and_many_rows(t):
    # The fence store.c's sql_add_fence writes; a one-element "(id, token) IN ((x, y))"
    # would be a full index scan.
    db = t.database()
    fill(db)
    for ids in ([40001], list(range(40001, 40065))):
        cases = ' '.join(f'WHEN {i} THEN 1' for i in ids)
        query = ("EXPLAIN FORMAT=JSON UPDATE work_items SET visible_at = NOW(6) "
                 f"WHERE state = 'claimed' AND id IN ({','.join(map(str, ids))}) "
                 f"AND claim_token = CASE id {cases} END")
        node = table_node(json.loads(db.scalar(query)))
        check_eq((node.get('access_type'), node.get('key')), ('range', 'PRIMARY'),
                 f'fence of {len(ids)} rows: access')


def it_loading_the_schema_twice_keeps_the_data(t):
    db = t.database()
    db.insert_items(10)
    before = db.sql('SELECT id, payload, state, visible_at FROM work_items ORDER BY id')
    create = db.sql('SHOW CREATE TABLE work_items')
    for path in harness.MIGRATIONS:
        db.server.load(db.name, path)
    check_eq(db.sql('SELECT id, payload, state, visible_at FROM work_items ORDER BY id'), before,
             'rows after loading the schema again')
    check_eq(db.sql('SHOW CREATE TABLE work_items'), create, 'table after loading the schema again')
    item = db.insert_item('after reload')
    check(db.row(item, 'visible_at')[0] is not None, 'trigger gone after reload: visible_at NULL')


def it_row_inserted_with_only_a_payload_is_ready_now(t):
    db = t.database()
    db.execute("INSERT INTO work_items (payload) VALUES ('hello')")
    row = db.sql("SELECT queue, state, attempts, max_attempts, claim_token, claimed_by, "
                 "finished_at, visible_at = run_at, visible_at <= NOW(6), "
                 "TIMESTAMPDIFF(SECOND, visible_at, NOW(6)) < 60 FROM work_items")
    check_eq(row, [('default', 'ready', '0', '5', '0', None, None, '1', '1', '1')],
             '(queue, state, attempts, max_attempts, token, claimed_by, finished_at, '
             'visible_at = run_at, visible now, visible since less than a minute)')


def it_rows_not_ready_at_insert_are_not_claimable(t):
    db = t.database()
    db.execute("INSERT INTO work_items (payload, state) VALUES ('d', 'done'), ('x', 'dead')")
    db.execute("INSERT INTO work_items (payload, run_at) VALUES ('later', NOW(6) + INTERVAL 1 HOUR)")
    rows = db.sql('SELECT payload, visible_at IS NULL, visible_at > NOW(6) FROM work_items ORDER BY id')
    check_eq(rows, [('d', '1', None), ('x', '1', None), ('later', '0', '1')],
             '(payload, invisible, visible only later)')


def it_sends_statement_batches_only_on_claiming_connections(t):
    """Multi-statements (several statements in one text) only where the claim needs them: a
    worker's connection turns them on at its first claim; the supervisor's connections
    (maintenance, claimctl's adds with a dedupe key, retries, cancels, releases, the
    supervisors table) and the binary log's never do, and their batches still work, sent one
    statement at a time. Read from the server's general log, on for this test alone (the tests
    run one at a time): what each session sent, one text a line."""
    db = t.database()
    db.server.sql("SET GLOBAL log_output = 'TABLE'; TRUNCATE TABLE mysql.general_log; "
                  'SET GLOBAL general_log = 1')
    t.defer(db.server.sql, "SET GLOBAL general_log = 0; SET GLOBAL log_output = 'FILE'; "
            'TRUNCATE TABLE mysql.general_log')
    h = t.log_handler('[ "$payload" != fail ] || rc=1')
    c = t.claimd(db, '--workers', '2', '--handler', h.spec)
    c.wait_ready(workers=2)
    for args in (['x'], ['--dedupe', 'k', 'y'], ['--dedupe', 'k', 'y again'], ['--group', 'g', 'z'],
                 ['--max-attempts', '1', 'fail'], ['--delay', '1h', 'later']):
        r = c.ctl('add', *args)
        check_eq(r.returncode, 0, f'claimctl add {args}: {r.stderr}')
    ids = [int(i) for (i,) in db.sql('SELECT id FROM work_items ORDER BY id')]
    check_eq(len(ids), 5, 'rows added (the second dedupe add found the first)')
    harness.wait_for(db.states, 15, 'every due row run', until=lambda st: st['done'] == 3 and
                     st['dead'] == 1)
    r = c.ctl('retry', str(ids[3]))
    check(r.returncode == 0 and r.stdout.strip() == '1', f'claimctl retry: {r.stdout!r} {r.stderr!r}')
    harness.wait_for(lambda: len(h.starts(ids[3])), 15, 'the retried row run', until=lambda n: n == 2)
    r = c.ctl('cancel', str(ids[4]))
    check_eq(r.returncode, 0, f'claimctl cancel: {r.stderr}')
    check_eq(db.scalar(f'SELECT COUNT(*) FROM work_items WHERE id = {ids[4]}'), '0', 'cancelled')
    check_eq(c.stop(), 0, 'claimd stops')
    db.server.sql('SET GLOBAL general_log = 0')
    sessions = db.server.sql("SELECT thread_id FROM mysql.general_log WHERE command_type = "
                             f"'Connect' AND argument LIKE '% on {db.name} %'")
    texts = {}
    for tid, text in db.server.sql("SELECT thread_id, argument FROM mysql.general_log WHERE "
                                   "command_type = 'Query' ORDER BY event_time"):
        texts.setdefault(tid, []).append(text)
    # (The supervisor's look at the schedules locks with SKIP LOCKED too, but not work_items.)
    claimers = {tid for (tid,) in sessions
                if any('SKIP LOCKED' in q and 'work_items' in q for q in texts.get(tid, []))}
    others = {tid for (tid,) in sessions} - claimers
    t.note(f'{len(sessions)} sessions: {len(claimers)} claimed, {len(others)} did not')
    check_eq(len(claimers), 2, 'sessions that claimed (the workers)')
    check(any(q.startswith('START TRANSACTION;') for tid in claimers for q in texts[tid]),
          'a claim sent as one text of several statements')
    batched = [q[:120] for tid in others for q in texts.get(tid, []) if ';' in q]
    check_eq(batched, [], 'texts of several statements from sessions that did not claim')
    alone = sum(q == 'START TRANSACTION' for tid in others for q in texts.get(tid, []))
    check(alone >= 3, f'the retry, the cancel and the dedupe adds as statements one by one: '
          f'{alone} START TRANSACTION sent alone')


if __name__ == '__main__':
    harness.main()
