#!/usr/bin/env python3
"""Limits per key (a row's group_key) and bursts, through two supervisors sharing the
database: at most N of a key's rows run at once, started in insertion order (N = 1 stays the
FIFO group); a raised limit starts waiting rows at once; a key's rate (a start per interval,
up to a burst at once) and a queue's burst; set with claimctl, HTTP and SQL; keys healed a
chunk at a time."""

import json
import re
import time

import harness
from harness import check, check_eq, runs_of, wait_for


def _at_once(runs):
    return harness.most_at_once([(a, b) for a, b, _ in runs])


def _runs(h, ids):
    rs = runs_of(h)
    return [r for i in ids for r in rs.get(i, [])]


def _two(t, db, h, spec, workers=3, http=False, more=()):
    """Two supervisors of workers each, every worker's co-process started (a pipe: co-process
    starts with its worker's first row: its interpreter's start-up would lie between a row's
    start and the start it logs), and every worker taught that rows take 100 ms: it then
    claims one at a time (a worker that saw quick rows claims a few ahead, and its second
    row waits for its first while counting against its key's limit)."""
    extra = ['--http', '127.0.0.1:0'] if http else []
    sups = [t.claimd(db, '--workers', str(workers), '--handler', spec, *more,
                     *(extra if i == 1 else []), name=f'claimd{i}') for i in (1, 2)]
    for c in sups:
        c.wait_ready()
    for n in range(1, 11):
        db.insert_items(2 * workers, payload="'nap100'")
        wait_for(db.states, 20, 'warm-up rows done',
                 until=lambda s: s.get('done') == 2 * workers * n)
        if len({e.pid for e in h.starts()}) >= 2 * workers:
            db.execute('DELETE FROM work_items')
            return sups
    harness.fail(f'co-processes that ran a warm-up row: {len({e.pid for e in h.starts()})}')


def _check_fifo(h, ids, n):
    """Rows of a key of limit n start in insertion order: when row k (by id) starts, at most
    n - 1 older rows of its key are live (started and not ended, or not started yet). An end
    is logged before the reply, so before the finish that lets the next row start."""
    rs = runs_of(h)
    for k, row in enumerate(ids):
        start = rs[row][0][0]
        live = [o for o in ids[:k] if rs[o][-1][1] > start]
        check(len(live) <= n - 1, f'row {row} started while {live} of its key were live')


def _started_by_finishes(h, ids, n, within):
    """Each row of a key of limit n past its first n starts as an older row of its key ends
    (the finish fills the key), within `within` s of that end, not at a maintenance pass,
    and the finish fills the key up to n: many start beside n - 1 of its rows still running.
    Returns the longest wait."""
    rs = runs_of(h)
    worst, beside = 0.0, []
    for k in range(n, len(ids)):
        start = rs[ids[k]][0][0]
        ended = [rs[o][-1][1] for o in ids[:k] if rs[o][-1][1] <= start]
        check(ended, f'row {ids[k]} started before any older row of its key ended')
        worst = max(worst, start - max(ended))
        beside.append(sum(1 for o in ids[:k] if rs[o][0][0] <= start < rs[o][-1][1]))
    check(worst <= within, f'a row of the key started {worst * 1000:.0f} ms after the end '
          f'that let it (at most {within * 1000:.0f} ms)')
    # A fill one short never lets a start see n - 1 others running; a loaded machine's
    # timing makes some starts see fewer (CI: 10 of 21 saw n - 1).
    check(sum(b == n - 1 for b in beside) >= len(beside) // 4,
          f'rows of the key running beside each start: {beside} (n - 1 in a quarter at least)')
    return worst


def _limits(c, queue):
    r = c.ctl('limits', queue, '--json')
    check_eq(r.returncode, 0, f'claimctl limits: {r.stderr.strip()}')
    return json.loads(r.stdout)


def it_a_keys_rows_run_n_at_once_in_order_across_supervisors(t):
    db = t.database()
    h, spec = t.pipe_echo('keys')
    sups = _two(t, db, h, spec)
    r = sups[0].ctl('limit', 'default', '--group', 'a', '--concurrency', '3')
    check_eq(r.returncode, 0, f'claimctl limit --group: {r.stderr.strip()}')
    check('concurrency' in r.stdout and 'a' in r.stdout.split(), f'the answer: {r.stdout!r}')
    a = db.insert_items(24, payload="'nap150'", group_key="'a'")
    b = db.insert_items(6, payload="'nap100'", group_key="'b'")
    free = db.insert_items(6, payload="'nap100'")
    wait_for(db.states, 30, 'every row done', until=lambda s: s.get('done') == 36)
    ra, rb = _runs(h, a), _runs(h, b)
    check_eq(len(ra), 24, "key a's runs")
    check_eq(_at_once(ra), 3, "key a's rows at once at most (and reached)")
    check_eq(_at_once(rb), 1, "key b's rows at once (a FIFO group)")
    _check_fifo(h, a, 3)
    _check_fifo(h, b, 1)
    t.note(f"key a's longest wait for a finish: "
           f"{_started_by_finishes(h, a, 3, 1.0) * 1000:.0f} ms")
    # A co-process's supervisor: up its parents (its guard, its worker).
    mine = {c.pid for c in sups}

    def sup_of(pid):
        for _ in range(4):
            pid = (harness.proc_stat(pid) or {}).get('ppid')
            if pid in mine or not pid:
                return pid
        return None
    ran = {p: sup_of(p) for _, _, p in ra}
    check(len(ran) >= 2 and set(ran.values()) == mine,
          f'key a ran on several workers of both supervisors: {ran}')
    check_eq(len(_runs(h, free)), 6, 'rows without a key ran')
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1', 'attempts')
    lim = _limits(sups[1], 'default')
    check_eq([(k['key'], k['concurrency'], k['interval_ms'], k['running'], k['waiting'])
              for k in lim['keys']], [('a', 3, None, 0, 0)], 'limits as the other one reads them')
    check_eq((lim['key_concurrency'], lim['min_interval_ms'], lim['burst']), (1, 0, 1),
             "the queue's own")


def it_a_raised_limit_starts_waiting_rows_at_once_and_zero_is_none(t):
    db = t.database()
    h, spec = t.pipe_echo('raise')
    sups = _two(t, db, h, spec, http=True)
    ids = db.insert_items(5, payload="'nap1500'", group_key="'c'")
    wait_for(lambda: db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'claimed'"), 10,
             'the first row running', until=lambda n: n == '1')
    check_eq(db.scalar('SELECT COUNT(*) FROM work_items WHERE visible_at IS NULL'), '4',
             'the others wait their turn (a FIFO group by default)')
    st, body = sups[0].api('POST', '/v1/queues/default/limit?group=c&concurrency=4')
    check_eq(st, 200, f'POST limit: {body}')
    check_eq([(k['key'], k['concurrency']) for k in body['keys']], [('c', 4)], 'the answer')
    wait_for(lambda: db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'claimed'"), 1.0,
             'four running within a second of the change', until=lambda n: n == '4')
    st, body = sups[0].api('GET', '/v1/queues/default/limits')
    check_eq((st, body['keys'][0]['running'], body['keys'][0]['waiting']), (200, 4, 1),
             'GET limits while they run')
    wait_for(db.states, 20, 'done', until=lambda s: s.get('done') == 5)
    # Four claimed (above); a worker may hold a second row it claimed with its first and run
    # them one after the other, so fewer may run in the handler at one moment.
    most = _at_once(_runs(h, ids))
    check(2 <= most <= 4, f'{most} rows of the key at once after the change, want 2..4')
    # Every key of the queue without a limit (0), set on the other supervisor.
    r = sups[1].ctl('limit', 'default', '--each-group', '--concurrency', '0')
    check_eq(r.returncode, 0, f'claimctl limit --each-group: {r.stderr.strip()}')
    more = db.insert_items(6, payload="'nap600'", group_key="'d'")
    wait_for(db.states, 20, 'done', until=lambda s: s.get('done') == 11)
    # (A worker may take two rows in one claim and run them one after the other.)
    check(_at_once(_runs(h, more)) >= 5, f'no limit: {_at_once(_runs(h, more))} of '
          'a key of six rows at once on six workers')


def it_a_keys_rate_allows_a_burst_then_one_start_per_interval(t):
    db = t.database()
    h, spec = t.pipe_echo('rate')
    sups = _two(t, db, h, spec)
    # With SQL, as an application would: 3 at once, then one per 300 ms, no concurrency limit.
    db.execute("INSERT INTO key_limits (queue, group_key, concurrency, interval_ms, burst) "
               "VALUES ('default', 'r', 0, 300, 3)")
    ids = db.insert_items(9, payload="'nap10'", group_key="'r'")
    wait_for(db.states, 30, 'done', until=lambda s: s.get('done') == 9)
    starts = sorted(r[0] for r in _runs(h, ids))
    check_eq(len(starts), 9, 'runs')
    t0 = starts[0]
    at = [round((s - t0) * 1000) for s in starts]
    # The burst: never more than three before the first interval is over; on a loaded
    # machine one of the three may be late (a worker slow to start it), so two at least.
    check(at[3] >= 200 and at[1] < 150, f'three at once, the fourth an interval later: {at} ms')
    # Then one per 300 ms. What is seen is when a handler started, a little after its start
    # was taken (and the first one's too, by up to a few hundred ms on a loaded machine):
    # no start comes earlier than the rate allows less that latency, and the last comes six
    # intervals after the first (the burst's own third may be late: not the anchor).
    check(all(s - starts[0] >= (k - 2) * 0.3 - 0.35 for k, s in enumerate(starts) if k >= 3),
          f'then one per 300 ms, never sooner: {at} ms')
    check(-0.35 < (starts[-1] - starts[0]) - 6 * 0.3 < 0.25,
          f'six intervals after the burst: {at}')
    # Rows whose start was over a second off went back until then: not counted as attempts.
    check_eq(db.scalar('SELECT MAX(attempts) FROM work_items'), '1', 'attempts')
    check(len({p for s, e, p in _runs(h, ids)}) >= 3, 'run by several workers')


def it_a_queues_burst_and_bad_limits(t):
    db = t.database()
    h, spec = t.pipe_echo('burst')
    sups = _two(t, db, h, spec, workers=2)
    r = sups[0].ctl('limit', 'default', '--interval', '250', '--burst', '4')
    check_eq(r.returncode, 0, f'claimctl limit --burst: {r.stderr.strip()}')
    check('min_interval_ms: 250' in r.stdout and 'burst: 4' in r.stdout, f'answer: {r.stdout!r}')
    ids = db.insert_items(8, payload="'nap10'")
    wait_for(db.states, 20, 'done', until=lambda s: s.get('done') == 8)
    starts = sorted(r[0] for r in _runs(h, ids))
    at = [round((s - starts[0]) * 1000) for s in starts]
    # Never a fifth start before the first interval is over; the burst itself is four at
    # once, but on a loaded machine one of the four may be late (a worker slow to wake:
    # seen in CI at 247 ms), so three at least.
    check(at[2] < 125 and at[4] >= 150, f'four at once, then an interval: {at} ms')
    # Then one per 250 ms: the last start four intervals after the first.
    check(abs((starts[-1] - starts[0]) - 4 * 0.25) < 0.2, f'then one per 250 ms: {at} ms')
    for args, why in ((('--concurrency', '3'), 'one key'), (('--burst', '0'), 'burst'),
                      (('--group', 'x', '--each-group', '--concurrency', '2'), 'not both'),
                      ((), 'needs')):
        r = sups[1].ctl('limit', 'default', *args)
        check(r.returncode != 0 and why in r.stderr, f'limit {args} refused: {r.stderr.strip()}')


def it_keys_are_healed_a_chunk_at_a_time_reading_only_the_keys_that_need_it(t):
    """1,200 keys (more than one chunk of 500): a key whose running row was deleted by hand is
    found by maintenance in its chunk, and its next row starts; claimctl limit --each-group
    raises every key's limit at once, chunk by chunk; and a pass over healthy keys reads one
    row a key (its statement is quick whatever the rows behind)."""
    db = t.database()
    nkeys = 1200
    db.execute("INSERT INTO queues (name, paused) VALUES ('many', 1)")
    db.execute(f"INSERT INTO work_items (queue, payload, group_key) SELECT 'many', 'x', "
               f"CONCAT('k', LPAD(seq MOD {nkeys}, 4, '0')) FROM seq_1_to_{3 * nkeys}")
    visible = lambda: int(db.scalar("SELECT COUNT(*) FROM work_items WHERE queue = 'many' "  # noqa: E731
                                    "AND visible_at IS NOT NULL"))
    check_eq(visible(), nkeys, 'rows visible: the oldest of each key')
    # Nobody serves 'many': rows stay as they are, but maintenance runs each second.
    c = t.claimd(db, '--workers', '1', '--queue', 'many', '--queue', 'elsewhere', '--handler',
                 'noop', '--maintenance-interval', '1s')
    c.wait_ready()
    gone = int(db.scalar("SELECT MIN(id) FROM work_items WHERE group_key = 'k1100'"))
    db.execute(f'DELETE FROM work_items WHERE id = {gone}')
    wait_for(visible, 20, 'the deleted row\'s key healed by maintenance',
             until=lambda n: n == nkeys)
    wait_for(lambda: re.search(r'maintenance: 1 rows of keys with fewer running', c.log()), 10,
             'the maintenance line, at the end of its pass over the keys')
    r = c.ctl('limit', 'many', '--each-group', '--concurrency', '2', timeout=60)
    check_eq(r.returncode, 0, f'claimctl limit: {r.stderr}')
    check_eq(visible(), 2 * nkeys, 'rows visible once every key may run two')
    check_eq(c.stop(), 0, 'claimd exit code')


def _at_once_since(runs, t0):
    """The most runs at once among those that started at t0 or later."""
    return _at_once([r for r in runs if r[0] >= t0])


def it_a_finish_hands_on_its_keys_next_rows_by_number_and_falls_back_where_it_cannot(t):
    """Keys run three at once, their rows quick, on two supervisors of workers running four
    items at once: a claim that finishes
    rows of a key takes the key's next parked rows by number (store_handon.c). Its rows
    still start in insertion order, never more than three at once, and every row runs once,
    through what the lookup by number cannot tell and leaves to the walk of the key's rows:
    a gap of deleted rows wider than its range (key p), a limit lowered while rows run (key
    q, then one at a time), dead rows put back behind parked ones (key r)."""
    db = t.database()
    h, spec = t.pipe_echo('handon')
    # Claims of four rows: a claim that finishes rows asks for several, and hands on up to
    # half of them (a claim of one hands nothing on).
    sups = _two(t, db, h, spec, more=('--batch', '4'))
    db.execute("INSERT INTO queues (name, key_concurrency) VALUES ('default', 3) "
               "ON DUPLICATE KEY UPDATE key_concurrency = 3")
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1) "
               "ON DUPLICATE KEY UPDATE paused = 1")
    keys = {k: db.insert_items(40, payload="'nap10'", group_key=f"'{k}'") for k in 'pqrs'}
    # Key p: 80 rows deleted while parked (the range looks 2 x 3 + 64 past the last finish).
    gap = db.insert_items(80, payload="'nap10'", group_key="'p'")
    keys['p'] += db.insert_items(10, payload="'nap10'", group_key="'p'")
    db.execute(f'DELETE FROM work_items WHERE id BETWEEN {gap[0]} AND {gap[-1]}')
    # Key r: its first three fail for good; put back once rows behind them wait parked.
    db.execute(f"UPDATE work_items SET payload = 'fail', max_attempts = 1 WHERE id IN "
               f"({', '.join(str(i) for i in keys['r'][:3])})")
    db.execute("UPDATE queues SET paused = 0 WHERE name = 'default'")
    wait_for(lambda: db.scalar("SELECT COUNT(*) FROM work_items WHERE state = 'dead'"), 20,
             "key r's first three dead", until=lambda n: n == '3')
    r = sups[0].ctl('retry', '--queue', 'default', '--dead', '--json', timeout=60)
    check_eq(r.returncode, 0, f'claimctl retry: {r.stderr.strip()}')
    # Key q: one at a time from now on, set with SQL while its rows run.
    db.execute("INSERT INTO key_limits (queue, group_key, concurrency) VALUES "
               "('default', 'q', 1)")
    lowered = time.time()   # the handler logs wall-clock times
    # Rows claimed under the old limit run as claimed (a worker may hold some not started).
    held = [int(r[0]) for r in db.sql("SELECT id FROM work_items WHERE group_key = 'q' "
                                      "AND state = 'claimed'")]
    wait_for(db.states, 60, 'every row done or dead',
             until=lambda st: st.get('ready', 0) + st.get('claimed', 0) == 0)
    check_eq(db.states().get('dead', 0), 3, "key r's three dead again (put back, failed)")
    every = runs_of(h)
    for k, ids in keys.items():
        runs = _runs(h, ids)
        check_eq([i for i in ids if not every.get(i)], [], f'rows of key {k} that never ran')
        check(_at_once(runs) <= 3, f'key {k}: {_at_once(runs)} rows at once, at most 3')
        check_eq(max(len(every[i]) for i in ids), 1 if k != 'r' else 2,
                 f'runs of a row of key {k}')
    _check_fifo(h, keys['s'], 3)
    _check_fifo(h, keys['p'], 3)
    # Key q: once the rows running at the change ended, one at a time.
    qruns = _runs(h, keys['q'])
    after = max([e for s_, e, _ in qruns if s_ <= lowered] + [lowered] +
                [e for i in held for _, e, _ in every.get(i, [])])
    check(_at_once_since(qruns, after) <= 1, f'key q after its limit was lowered: '
          f'{_at_once_since(qruns, after)} at once')


def it_a_keys_next_row_not_due_is_shown_for_its_time_and_the_one_after_handed_on(t):
    """Key t runs two at once; its third row is due 1.5 s after it was added. The finish of
    its first row cannot start that row (not due): it is made visible for its time (by the
    claim's commit, KEY_NEXT_SHOW, when the finish rides on a claim; by the walk of the
    key's rows when it is written alone), and the finish of the second starts the fourth
    past it. Maintenance, which would heal a key left short, does not run here."""
    db = t.database()
    # A so: handler running four at once: a finish leaves room, so the claim that writes it
    # asks for rows (and hands on), where a worker with no room would write it alone.
    h, spec = t.plugin('ok')
    c = t.claimd(db, '--workers', '1', '--concurrency', '4', '--handler', spec,
                 '--maintenance-interval', '1h')
    c.wait_ready()
    db.execute("INSERT INTO key_limits (queue, group_key, concurrency) VALUES "
               "('default', 't', 2)")
    db.execute("INSERT INTO queues (name, paused) VALUES ('default', 1) "
               "ON DUPLICATE KEY UPDATE paused = 1")
    first = db.insert_items(2, payload="'sleep:200'", group_key="'t'")
    late = db.insert_items(1, payload="'sleep:10'", group_key="'t'",
                           run_at='NOW(6) + INTERVAL 1500000 MICROSECOND')
    last = db.insert_items(1, payload="'sleep:10'", group_key="'t'")
    # Rows without a key keep the worker claiming: the finishes ride on its claims (a worker
    # with nothing to claim writes them alone, and the walk of the key's rows fills it).
    db.insert_items(60, payload="'sleep:50'")
    due = float(db.scalar(f'SELECT UNIX_TIMESTAMP(run_at) FROM work_items WHERE id = {late[0]}'))
    db.execute("UPDATE queues SET paused = 0 WHERE name = 'default'")
    wait_for(db.states, 10, 'the rows done', until=lambda st: st.get('done') == 64)
    rs = runs_of(h)
    start = {i: rs[i][0][0] for i in first + late + last}
    check(due <= start[late[0]] < due + 1.0, f'the row due later started '
          f'{start[late[0]] - due:+.2f} s from its time')
    check(start[last[0]] < due, 'the fourth row started before the third was due (handed '
          f'on past it): {start[last[0]] - due:+.2f} s')
    check(_at_once(_runs(h, first + late + last)) <= 2, 'at most two at once')
    check_eq(c.stop(), 0, 'claimd exit code')


if __name__ == '__main__':
    harness.main()
