/* store_int — the store module's insides, shared by its files: store_conn.c (connections,
 * running statements, retries, and the helpers below), store_sql.c (statement pieces),
 * store_claim.c (claims), store_rows.c (what a claimed row goes through), store_cursor.c
 * (where claims go on) and store_admin.c (adds, queue settings, counts, maintenance). Each
 * calls only into store_conn.c and store_sql.c. Only these include it, and with it mysql.h.
 * Not an interface. */
#ifndef CLAIMD_STORE_INT_H
#define CLAIMD_STORE_INT_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "store/store.h"

#define QUOTED_QUEUE_MAX (2 * STORE_QUEUE_MAX + 3)
#define RUN_MAX_STMTS 24
/* The first words of a statement that cannot make a row claimable (a claim, a completion, a
 * lease extension, progress): its rows' binary log events wake nobody (store_binlog.c). */
#define QUIET "/*claimd:quiet*/ "
#define MAX_REFS 65536u         /* rows in one call: keeps statements small */
#define PRUNE_LOCK "CONCAT('claimd.prune.', MD5(DATABASE()))"
/* Pruning finished rows, one span of ids at a time (see store_prune): the election into
 * @claimd_pruner, the span (from, to, then PRUNE_DONE and/or PRUNE_DEAD joined by OR, then
 * the shorter window), and the row after it (the shorter window, to). Both are primary-key
 * ranges whatever the table holds. */
#define PRUNE_ELECT \
	"SET @claimd_pruner = IF(IS_USED_LOCK(" PRUNE_LOCK ") = CONNECTION_ID(), 1, " \
	"GET_LOCK(" PRUNE_LOCK ", 0))"
#define PRUNE_SPAN \
	QUIET "DELETE FROM work_items WHERE @claimd_pruner = 1 AND id >= %llu AND id < %llu " \
	"AND (%s) AND created_at < NOW(6) - INTERVAL %u SECOND"
#define PRUNE_DONE "state = 'done' AND finished_at < NOW(6) - INTERVAL %u SECOND"
#define PRUNE_DEAD "state = 'dead' AND finished_at < NOW(6) - INTERVAL %u SECOND"
/* The edges (work_deps) whose parent that span deleted: its children finished after it. */
#define PRUNE_EDGES \
	QUIET "DELETE d FROM work_deps d LEFT JOIN work_items p ON p.id = d.parent_id " \
	"WHERE @claimd_pruner = 1 AND d.parent_id >= %llu AND d.parent_id < %llu AND p.id IS NULL"
/* The errors of the rows that span deleted (sql/migrations/011_job_browser.sql), and of rows
 * deleted there with plain SQL: by attempt_errors' primary key. */
#define PRUNE_ERRORS \
	QUIET "DELETE e FROM attempt_errors e LEFT JOIN work_items w ON w.id = e.item_id " \
	"WHERE @claimd_pruner = 1 AND e.item_id >= %llu AND e.item_id < %llu AND w.id IS NULL"
#define PRUNE_NEXT \
	"SELECT id, created_at < NOW(6) - INTERVAL %u SECOND FROM work_items " \
	"WHERE @claimd_pruner = 1 AND id >= %llu ORDER BY id LIMIT 1"

/* The last moment a TIMESTAMP holds (MariaDB before 11.5), as a literal of claimd's UTC
 * sessions: a time claimd computes from a row's own numbers (a recurring row's next run) is
 * held to it rather than refused, which would fail the claim that completes the row. */
#define TS_MAX "TIMESTAMP'2038-01-19 03:14:07.999999'"

/* A time column as RFC 3339 text in UTC, "2026-03-29T01:00:00.123456Z" (claimd's sessions
 * are UTC); NULL stays NULL. For the format of sql_add (hence the doubled '%'). */
#define UTC_TEXT(col) "DATE_FORMAT(" col ", '%%Y-%%m-%%dT%%H:%%i:%%s.%%fZ')"

/* A paused queue's rows are not claimed (nor polled for). The subqueries name the queue
 * itself, not work_items.queue: uncorrelated, each runs once per statement. */
/* A live cancel request (sql/migrations/007_cancel.sql): asked for, and the row did not
 * finish since. Its last_error when the row goes dead for it. */
#define CANCEL_LIVE "(cancel_requested_at IS NOT NULL AND (finished_at IS NULL OR " \
	"finished_at < cancel_requested_at))"
#define CANCEL_ERROR "COALESCE(cancel_reason, 'cancelled')"
#define NOT_PAUSED "NOT EXISTS (SELECT 1 FROM queues WHERE name = %s AND paused)"
/* FIFO groups (see sql/migrations/001_base.sql). Before a transaction finishes grouped rows it locks
 * their groups' work_groups rows, in key order, as an insert into the group does (in the
 * trigger): so an insert either sees the finished row gone or is seen by GROUP_NEXT, and
 * the two never wait for each other's row locks the other way round. The %s is a WHERE
 * condition on work_items. */
#define GROUP_LOCK \
	"INSERT INTO work_groups (queue, group_key) SELECT queue, group_key FROM work_items " \
	"WHERE %s AND group_key IS NOT NULL AND period_s IS NULL ORDER BY queue, group_key " \
	"ON DUPLICATE KEY UPDATE last_seq = work_groups.last_seq"
/* After rows finished: the next live row of each of their groups gets its visible_at, if
 * it was parked. Only rows that this transaction finished count (GROUP_HEADS, %s: their
 * ids, then a CASE of their new tokens): a row some other claimer finished earlier had its
 * next row started then. The finished row was its group's oldest live row (one runs at a
 * time; a retry keeps it live), so the next is the row numbered one more
 * (GROUP_SEQ_NEXT: one lookup in group_seq_idx, sql/migrations/015_group_seq_idx.sql).
 * The oldest live row of the group instead (a walk of group_idx, through the finished
 * rows' delete-marked entries) where that one is not live (cancelled or deleted while it
 * waited) and the finished row was not the last one added to its group
 * (work_groups.last_seq, read under the GROUP_LOCK this transaction holds: no insert can
 * come between), and always in a group that had a dead row put back (put_back: that row
 * is older than the one it waited behind). One exception to "oldest": a key whose limit
 * was lowered to 1 while more of its rows ran; a row claimed since that finishes first
 * starts the next while an older one still runs, until the older ones are done. */
#define GROUP_SEQ_NEXT \
	"(SELECT n.id FROM work_items n FORCE INDEX (group_seq_idx) WHERE n.queue = f.queue " \
	"AND n.group_key = f.group_key AND n.group_seq = f.group_seq + 1 AND n.group_live IS " \
	"NOT NULL LIMIT 1)"
#define GROUP_WALK_HEAD \
	"(SELECT p.id FROM work_items p FORCE INDEX (group_idx) WHERE p.queue = f.queue AND " \
	"p.group_live = f.group_key ORDER BY p.id LIMIT 1)"
#define GROUP_HEADS \
	"SELECT IF(g.put_back, " GROUP_WALK_HEAD ", IF(g.last_seq <=> f.group_seq, NULL, " \
	"COALESCE(" GROUP_SEQ_NEXT ", " GROUP_WALK_HEAD "))) AS hid FROM work_items f " \
	"LEFT JOIN work_groups g ON g.queue = f.queue AND g.group_key = f.group_key " \
	"WHERE f.id IN (%s) AND f.claim_token = CASE f.id%s END " \
	"AND f.state IN ('done', 'dead') AND f.group_key IS NOT NULL AND f.period_s IS NULL"
#define GROUP_NEXT \
	"UPDATE work_items w JOIN (%s) AS h ON w.id = h.hid SET w.visible_at = " \
	"GREATEST(w.run_at, NOW(6)) WHERE w.visible_at IS NULL AND w.state = 'ready'"
/* The same for a key whose limit is not 1 (sql/migrations/006_key_limits.sql): the first N
 * live rows of the key get their visible_at where they were parked, N read fresh from
 * key_limits and queues. N differs per key and LIMIT takes no expression, so it is a
 * statement prepared in the session (KEY_FILL_PREPARE) and run per finished row with its
 * queue and key read from the row (KEY_FILL_ROW, %llu: its id). Filling up to N is right
 * whatever the row's fate (a retry leaves it live: nothing to fill), so it needs no fence. */
#define KEY_FILL_PREPARE \
	"PREPARE claimd_key_fill FROM 'UPDATE work_items w JOIN (SELECT id FROM work_items " \
	"FORCE INDEX (group_idx) WHERE queue = ? AND group_live = ? ORDER BY id LIMIT ?) AS h " \
	"ON w.id = h.id SET w.visible_at = GREATEST(w.run_at, NOW(6)) " \
	"WHERE w.visible_at IS NULL AND w.state = ''ready'''"
#define KEY_FILL_ROW \
	"SELECT queue, group_key INTO @claimd_kq, @claimd_kk FROM work_items WHERE id = %llu"
#define KEY_FILL_LIMIT \
	"SET @claimd_kn = IF(@claimd_kk IS NULL, 0, COALESCE((SELECT concurrency FROM " \
	"key_limits WHERE queue = @claimd_kq AND group_key = @claimd_kk), (SELECT " \
	"key_concurrency FROM queues WHERE name = @claimd_kq), 1))"
#define KEY_FILL "EXECUTE claimd_key_fill USING @claimd_kq, @claimd_kk, @claimd_kn"
/* The same for many finished rows in one statement, where each row's limit when it was
 * claimed is known: a part a row, KEY_FILL_PART (its id twice, that limit; the key read
 * first, as constants, so that the part walks group_idx in order), the first
 * rows of its key as LIMIT allows, joined by UNION (rows of one key give the same rows); of
 * those, each key's first N, N read fresh as KEY_FILL_LIMIT does (a limit lowered since
 * fills fewer; one raised fills no more than the claim knew: the next finish, or the heal,
 * fills the rest). %s: the parts. */
#define KEY_FILL_PART \
	"(SELECT p.id, p.queue, p.group_live FROM work_items p FORCE INDEX (group_idx) WHERE " \
	"p.queue = (SELECT queue FROM work_items WHERE id = %llu) AND p.group_live = (SELECT " \
	"group_key FROM work_items WHERE id = %llu) ORDER BY p.id LIMIT %u)"
#define KEY_FILL_MANY \
	"UPDATE work_items w JOIN (SELECT r.id FROM (SELECT u.id, u.queue, u.group_live, " \
	"ROW_NUMBER() OVER (PARTITION BY u.queue, u.group_live ORDER BY u.id) AS rn FROM (%s) " \
	"AS u) AS r WHERE r.rn <= COALESCE((SELECT concurrency FROM key_limits l WHERE " \
	"l.queue = r.queue AND l.group_key = r.group_live), (SELECT key_concurrency FROM " \
	"queues q WHERE q.name = r.queue), 1)) AS h ON w.id = h.id " \
	"SET w.visible_at = GREATEST(w.run_at, NOW(6)) WHERE w.visible_at IS NULL AND " \
	"w.state = 'ready'"
/* Keys with fewer rows visible than their limit allows (the running row was deleted by
 * hand, dead rows were put back, a limit was raised): their oldest parked rows get their
 * visible_at, as many as the limit leaves room for (with a limit of 1: the oldest live row
 * of a key that has none visible). %s: a condition on queue (and group_live). Reads the live
 * rows of the queues' keys (group_idx), so it runs with maintenance and changes of limits,
 * not per row. */
#define GROUP_HEAL \
	"UPDATE work_items w JOIN (SELECT r.id FROM (SELECT queue, group_live, id, " \
	"visible_at IS NULL AS parked, COUNT(visible_at) OVER (PARTITION BY queue, group_live) " \
	"AS active, ROW_NUMBER() OVER (PARTITION BY queue, group_live, visible_at IS NULL " \
	"ORDER BY id) AS rk FROM work_items FORCE INDEX (group_idx) WHERE %s AND group_live " \
	"IS NOT NULL) AS r LEFT JOIN key_limits k ON k.queue = r.queue AND " \
	"k.group_key = r.group_live LEFT JOIN queues q ON q.name = r.queue WHERE r.parked AND " \
	"(COALESCE(k.concurrency, q.key_concurrency, 1) = 0 OR " \
	"r.rk + r.active <= COALESCE(k.concurrency, q.key_concurrency, 1))) AS h ON w.id = h.id " \
	"SET w.visible_at = GREATEST(w.run_at, NOW(6)) WHERE w.visible_at IS NULL AND " \
	"w.state = 'ready'"

/* The keys of the rows an operator's action changes (%s: a condition on work_items), kept
 * before it changes them, so that GROUP_HEAL (with HEAL_SCOPE) reads those keys' rows alone,
 * not every key of the queue. */
#define HEAL_KEYS_TABLE \
	"CREATE OR REPLACE TEMPORARY TABLE claimd_heal_keys (queue VARCHAR(64) NOT NULL, " \
	"group_key VARCHAR(255) NOT NULL, PRIMARY KEY (queue, group_key))"
#define HEAL_KEYS_KEEP \
	"INSERT IGNORE INTO claimd_heal_keys (queue, group_key) SELECT queue, group_key FROM " \
	"work_items WHERE %s AND group_key IS NOT NULL"
#define HEAL_SCOPE "(queue, group_live) IN (SELECT queue, group_key FROM claimd_heal_keys)"

/* The keys GROUP_HEAL goes through a chunk at a time (store_group_heal): a queue's keys
 * after one, at most so many, from group_idx alone, each with whether it may need healing:
 * its limit is not 1 (a limit raised, or lowered), or its oldest live row is parked (one
 * lookup: with a limit of 1 that row runs, unless the running one was deleted or older rows
 * were put back behind it). Arguments: the queue twice, the key after which, how many, the
 * queue twice. */
#define HEAL_KEYS \
	"SELECT k.g, COALESCE(l.concurrency, q.key_concurrency, 1) <> 1 OR (SELECT p.visible_at " \
	"IS NULL FROM work_items p FORCE INDEX (group_idx) WHERE p.queue = %s AND " \
	"p.group_live = k.g ORDER BY p.id LIMIT 1) FROM (SELECT DISTINCT group_live AS g FROM " \
	"work_items FORCE INDEX (group_idx) WHERE queue = %s AND group_live > %s ORDER BY " \
	"group_live LIMIT %u) AS k LEFT JOIN key_limits l ON l.queue = %s AND l.group_key = k.g " \
	"LEFT JOIN queues q ON q.name = %s ORDER BY k.g"

/* Dependencies (sql/migrations/005_dependencies.sql). The parents this transaction finished
 * as done (the first %s: their ids; the second: a CASE of their new tokens) are counted off
 * their children's waiting_for; the current value is read under the row's lock, so two
 * parents finishing at once both count. Then the children of those ids (%s) that wait for
 * nothing more get their visible_at. Both read work_deps by its primary key: with no edges,
 * an index probe per id. */
#define DEPS_DONE \
	"UPDATE work_items c JOIN (SELECT d.child_id, COUNT(*) AS n FROM work_deps d " \
	"JOIN work_items p ON p.id = d.parent_id WHERE d.parent_id IN (%s) " \
	"AND p.claim_token = CASE p.id%s END AND p.state = 'done' AND @claimd_fin > 0 " \
	"AND p.finished_at >= @claimd_t0 " \
	"GROUP BY d.child_id) AS k " \
	"ON c.id = k.child_id SET c.waiting_for = IF(c.waiting_for > k.n, c.waiting_for - k.n, 0) " \
	"WHERE c.state = 'ready'"
#define DEPS_RELEASE \
	"UPDATE work_items c JOIN (SELECT DISTINCT child_id FROM work_deps WHERE parent_id IN (%s)) " \
	"AS k ON c.id = k.child_id SET c.visible_at = GREATEST(c.run_at, NOW(6)) " \
	"WHERE c.state = 'ready' AND c.waiting_for = 0 AND c.visible_at IS NULL " \
	"AND c.group_key IS NULL"
/* The rows that go dead with a dead parent: the parents (the anchor: %s, a SELECT of (id,
 * root) pairs, rows that this transaction made dead or deleted while ready), then down the
 * edges that say on_dead = 'cancel' the rows that are ready, which go dead now. Not through
 * rows that were dead already: theirs went with them when they died, and counting their
 * 'run' edges off again would release a child early. */
#define DEAD_SET \
	"WITH RECURSIVE dead_set (id, root) AS (%s UNION SELECT d.child_id, dead_set.root " \
	"FROM work_deps d JOIN dead_set ON d.parent_id = dead_set.id JOIN work_items r " \
	"ON r.id = d.child_id WHERE d.on_dead = 'cancel' AND r.state = 'ready') "
/* In this order, each reading the set as it was (the rows still ready): edges that say
 * on_dead = 'run' from any of them count as done (%s: DEAD_SET); the children that waited
 * for nothing more start; then the set goes dead (%s: DEAD_SET; %s the anchor's ids, which
 * are dead or gone already). */
#define DEPS_DEAD_RUN \
	"UPDATE work_items c JOIN (SELECT d.child_id, COUNT(*) AS n FROM work_deps d JOIN " \
	"(%sSELECT DISTINCT id FROM dead_set) AS x ON d.parent_id = x.id WHERE d.on_dead = 'run' " \
	"GROUP BY d.child_id) AS k ON c.id = k.child_id " \
	"SET c.waiting_for = IF(c.waiting_for > k.n, c.waiting_for - k.n, 0) WHERE c.state = 'ready'"
#define DEPS_DEAD_RELEASE \
	"UPDATE work_items c JOIN (SELECT DISTINCT d.child_id FROM work_deps d JOIN " \
	"(%sSELECT DISTINCT id FROM dead_set) AS x ON d.parent_id = x.id) AS k " \
	"ON c.id = k.child_id SET c.visible_at = GREATEST(c.run_at, NOW(6)) " \
	"WHERE c.state = 'ready' AND c.waiting_for = 0 AND c.visible_at IS NULL " \
	"AND c.group_key IS NULL"
#define DEPS_CANCEL \
	"UPDATE work_items c JOIN (%sSELECT id, MIN(root) AS root FROM dead_set GROUP BY id) AS k " \
	"ON c.id = k.id SET c.state = 'dead', c.visible_at = NULL, c.finished_at = NOW(6), " \
	"c.claim_token = c.claim_token + 1, c.last_error = CONCAT('cancelled: row ', k.root, " \
	"', which it waited for, is dead') WHERE c.state = 'ready' AND c.id NOT IN (%s)"

/* Putting dead rows back (claimd-workflows(7), RETRYING): every path that does (a retry of
 * one row, of a queue's dead rows, a bulk retry) runs these in its transaction, after
 * GROUP_LOCK of the rows. The rows asked for (%s: a condition on work_items) and, down the
 * on_dead = 'cancel' edges, the dead rows their death cancelled, into claimd_put_back; then
 * locked, and those no longer dead dropped. */
#define PUT_BACK_TABLE \
	"CREATE OR REPLACE TEMPORARY TABLE claimd_put_back (id BIGINT UNSIGNED NOT NULL " \
	"PRIMARY KEY)"
#define DOOMED_TABLE \
	"CREATE OR REPLACE TEMPORARY TABLE claimd_doomed (id BIGINT UNSIGNED NOT NULL " \
	"PRIMARY KEY, root BIGINT UNSIGNED NOT NULL)"
#define PUT_BACK_FIND \
	"INSERT IGNORE INTO claimd_put_back (id) WITH RECURSIVE back (id) AS (SELECT id FROM " \
	"work_items WHERE %s AND state = 'dead' UNION SELECT d.child_id FROM work_deps d " \
	"JOIN back ON d.parent_id = back.id JOIN work_items c ON c.id = d.child_id " \
	"WHERE d.on_dead = 'cancel' AND c.state = 'dead') SELECT id FROM back"
#define PUT_BACK_LOCK \
	"SELECT COUNT(*) INTO @claimd_locked FROM work_items w JOIN claimd_put_back b " \
	"ON w.id = b.id FOR UPDATE"
#define PUT_BACK_PRUNE \
	"DELETE b FROM claimd_put_back b JOIN work_items w ON w.id = b.id WHERE w.state <> 'dead'"
/* Their FIFO groups marked: the rows put back are older than those waiting in them, which
 * the next row's lookup by number (GROUP_HEADS) would pass over. */
#define PUT_BACK_GROUPS \
	"UPDATE work_groups g JOIN (SELECT DISTINCT w.queue, w.group_key FROM work_items w " \
	"JOIN claimd_put_back b ON w.id = b.id WHERE w.group_key IS NOT NULL AND w.period_s " \
	"IS NULL) AS r ON g.queue = r.queue AND g.group_key = r.group_key SET g.put_back = 1"
/* They are ready again, waiting for nothing yet (visible_at NULL), marked as waited for if
 * they are (has_dependents: their finish then counts them off). */
#define PUT_BACK_ROWS \
	"UPDATE work_items w JOIN claimd_put_back b ON w.id = b.id SET w.state = 'ready', " \
	"w.attempts = 0, w.visible_at = NULL, w.waiting_for = 0, w.finished_at = NULL, " \
	"w.cancel_requested_at = NULL, w.has_dependents = w.has_dependents OR EXISTS " \
	"(SELECT 1 FROM work_deps x WHERE x.parent_id = w.id) WHERE w.state = 'dead'"
/* Their parents counted again, and their children's that have not used an attempt yet
 * (a child that counted a dead parent off on a 'run' edge waits for it again): a parent
 * holds a row unless it is done, or dead on a 'run' edge, or gone on a 'run' edge. A row
 * that waits for something has no visible_at. */
#define PUT_BACK_COUNT \
	"UPDATE work_items c JOIN (SELECT d.child_id, SUM(p.id IS NOT NULL AND p.state <> " \
	"'done' AND NOT (p.state = 'dead' AND d.on_dead = 'run')) AS n FROM work_deps d " \
	"LEFT JOIN work_items p ON p.id = d.parent_id WHERE d.child_id IN (SELECT id FROM " \
	"claimd_put_back UNION SELECT e.child_id FROM work_deps e JOIN claimd_put_back f ON " \
	"e.parent_id = f.id) GROUP BY d.child_id) AS k ON c.id = k.child_id " \
	"SET c.waiting_for = k.n, c.visible_at = IF(k.n > 0, NULL, c.visible_at) " \
	"WHERE c.state = 'ready' AND c.attempts = 0"
/* Rows put back that wait on an 'cancel' edge for a row that is dead (not put back) or gone
 * cannot run: they are cancelled again, naming it (the lowest such id), and DEAD_SET's
 * statements take it from there (their anchor: DOOMED_ANCHOR). */
#define DOOMED_FIND \
	"INSERT INTO claimd_doomed (id, root) SELECT b.id, MIN(d.parent_id) FROM claimd_put_back b " \
	"JOIN work_deps d ON d.child_id = b.id AND d.on_dead = 'cancel' LEFT JOIN work_items p " \
	"ON p.id = d.parent_id WHERE p.id IS NULL OR p.state = 'dead' GROUP BY b.id"
#define DOOMED_ROWS \
	"UPDATE work_items w JOIN claimd_doomed x ON w.id = x.id SET w.state = 'dead', " \
	"w.visible_at = NULL, w.finished_at = NOW(6), w.claim_token = w.claim_token + 1, " \
	"w.last_error = CONCAT('cancelled: row ', x.root, ', which it waited for, is dead') " \
	"WHERE w.state = 'ready'"
#define DOOMED_ANCHOR "SELECT id, root FROM claimd_doomed"
#define DOOMED_IDS "SELECT id FROM claimd_doomed"
/* The rows put back that wait for nothing start (a row of a FIFO group is parked: the
 * caller's GROUP_HEAL starts its group's oldest). */
#define PUT_BACK_RELEASE \
	"UPDATE work_items w JOIN claimd_put_back b ON w.id = b.id SET w.visible_at = " \
	"IF(w.group_key IS NULL OR w.period_s IS NOT NULL, NOW(6), NULL) WHERE w.state = " \
	"'ready' AND w.waiting_for = 0 AND w.visible_at IS NULL"
/* How many rows went back and stay ready, how many were cancelled again, and the first of
 * those with the row it waits for ("12 11"). */
#define PUT_BACK_RESULT \
	"SELECT (SELECT COUNT(*) FROM claimd_put_back b JOIN work_items w ON w.id = b.id WHERE " \
	"w.state = 'ready'), (SELECT COUNT(*) FROM claimd_doomed), (SELECT CONCAT(id, ' ', root) " \
	"FROM claimd_doomed ORDER BY id LIMIT 1)"

/* ---- adds (store_admin.c) ---- */

/* The columns an add writes (without the closing parenthesis: a dedupe key or a batch may
 * follow), and one row's values for them, "(queue, payload, ..., traceparent" (DEFAULT
 * where an option is not given). */
#define ADD_COLUMNS "(queue, payload, run_at, period_s, max_attempts, timeout_s, priority, " \
	"group_key, content_type, traceparent, retry_base_ms, retry_max_ms, dedupe_for_s"
void sq_add_values(struct store *s, const char *queue, const unsigned char *payload,
		   size_t len, const struct store_add_opts *o);
/* What an add must be (the queue's name, the payload's size, the options). Returns 0, or
 * -EINVAL / -EMSGSIZE with err filled. */
int sq_check_add(const char *queue, size_t len, const struct store_add_opts *o, char *err,
		 size_t errlen);

/* A place in claim order (priority, visible_at, id); visible_at as the server printed it. */
struct claim_pos {
	int priority;
	char visible_at[32];
	uint64_t id;
};

/* Why a cursor: a claim moves its rows' claim_prio_idx entries from the head of the range to
 * the end of their lease, and the old entries stay at the head, delete-marked, until purge
 * removes them. A locking scan from the head looks at every one (a clustered index lookup
 * apiece): thousands of entries and milliseconds per claim at 15,000 claims/s, more as the
 * rate grows. Starting after the row this store claimed last skips them (2-3x the claims/s
 * at batch 16..64). Rows that become due behind the cursor (a lease that ran out, a
 * backdated run_at, a claim rolled back) are found by the scan from the head, which runs
 * whenever the part after the cursor comes back short and at least every
 * CLAIM_HEAD_SCAN_MS. */
struct claim_cursor {
	char queue[STORE_QUEUE_MAX + 1];
	struct claim_pos pos;
	bool set;
	uint64_t head_scan_ms;
};

/* The priorities of one queue that had due rows when last asked, smallest first. A claim
 * after the cursor scans one range of claim_prio_idx per priority in it (rows waiting for
 * later in one priority are never walked on the way to the next in any case; an empty
 * priority costs a lookup or two). A scan from the head takes every priority and, when the
 * claim before it was full, asks again in the same round trip (otherwise the set is the
 * priorities it found rows in, if it came back short); a claim after the cursor that comes
 * back short also looks at the priorities not in the set, and adds those it found rows in. */
#define PRIO_SET_MAX (STORE_PRIORITY_MAX - STORE_PRIORITY_MIN + 1)
struct prio_set {
	char queue[STORE_QUEUE_MAX + 1];
	int p[PRIO_SET_MAX];
	unsigned n;
	bool known;
};

struct store {
	MYSQL *conn;                 /* NULL when not connected */
	/* Multi-statements (one text of several statements, one round trip) are on only on a
	 * connection that claimed (sq_need_multi): the claim needs them to stay at its two round
	 * trips. Elsewhere a batch is sent statement by statement, at the cuts sq_end made, and
	 * a text with a stray ';' is a syntax error, never a second statement. */
	bool multi;
	size_t *cuts;                /* where sq_end ended each statement of s->sql */
	size_t ncuts, cuts_cap;
	struct dsn dsn;
	unsigned host;               /* the index in dsn.hosts connected to (or last tried) */
	char claimer[256];
	char claimer_sql[2 * 255 + 3]; /* quoted for the current connection */
	struct buf sql;              /* the statement(s) being built */
	unsigned dedupe_window_s;    /* a finished row keeps its dedupe_key this long */
	struct store_item *scratch;  /* rows of a claim until its COMMIT succeeded */
	size_t scratch_cap;
	struct claim_cursor cursor;
	struct prio_set prios;
	/* The last claim got all it asked for: only then does the next go on after the cursor,
	 * and a scan from the head asks which priorities have due rows (in its round trip, ~0.4
	 * ms of the server's time); after a short one the next scans from the head, the rows it
	 * finds tell, and a worker woken for a new row is not kept waiting for either. */
	bool last_full;
	/* When the last claim that looked for rows to hand on found none (0: it found some):
	 * the next ones look again only later (store_claim.c, CLAIM_HAND_RETRY_MS). */
	uint64_t hand_empty_ms;
	/* The last claim made rows of the keys it finished visible where its scan did not look
	 * (store_claim_left_next). */
	bool left_next;
	unsigned seed;
	bool migrating;              /* store_set_migrating: no read timeout, keepalive */
	/* store_set_claim_hook */
	void (*locked)(void *arg, const struct store_item *items, size_t n);
	void *locked_arg;
};

/* What sq_run() read: rows affected (or returned) per statement, and up to four result sets. */
struct run {
	uint64_t rows[RUN_MAX_STMTS];
	MYSQL_RES *res, *res2, *res3, *res4;
};

/* Fills err (if any) with the formatted message and returns code. */
int sq_fail_msg(int code, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Start a new statement text; sql_add appends to it (printf-like). */
static inline void sq_reset(struct store *s)
{
	buf_reset(&s->sql);
	s->ncuts = 0;
}

/* Ends a statement of a batch in s->sql: sq_run sends the batch as one text where the
 * connection takes multi-statements, else one statement at a time. Write every ';' between
 * statements with it, never in a literal. */
void sq_end(struct store *s);

/* Turns multi-statements on for this connection, once (a round trip the first time): only
 * the claim asks, which must stay one text per round trip. Returns 0 or a negative error. */
int sq_need_multi(struct store *s, char *err, size_t errlen);

#define sql_add(s, ...) buf_printf(&(s)->sql, __VA_ARGS__)

/* Writes str quoted and escaped to out (2 * len + 3 bytes); returns its length. */
size_t sq_quote(MYSQL *c, char *out, const char *str, size_t len);

/* Sends the statement text (one or more statements, ended by sq_end) and reads every result:
 * the row count of each statement into rr->rows, the first two result sets into rr->res and
 * rr->res2. Without multi-statements on the connection, each statement is sent on its own,
 * up to the first that fails.
 * Returns 0, or -ENOTCONN (connection dropped), -EDEADLK/-ETIMEDOUT (1213/1205), -EDOM (a
 * value refused), -EIO. */
int sq_run(struct store *s, const char *op, struct run *rr, char *err, size_t errlen);

/* After a failed statement inside a transaction: leave none open. */
void sq_abort(struct store *s);

/* Whether MySQL error e means the session is gone (or in an unknown state): the connection
 * is to be dropped (sq_drop) and made again. */
bool sq_conn_lost(unsigned e);
/* Close s's connection (if any); store_connected says false after it. */
void sq_drop(struct store *s);

/* After r from sq_run: whether to run the statements again (1213 deadlock, 1205 lock wait
 * timeout, a few times, with a short randomised sleep first; the transaction is rolled back). */
bool sq_retry(struct store *s, int r, unsigned *attempt);

/* Checks the names queues[0..n) (at least one) and appends "queue IN ('a','b')" to b.
 * Returns 0 or a negative error with err filled. */
int sq_add_queue_in(struct store *s, const char *op, struct buf *b, const char *const *queues,
		    size_t n, char *err, size_t errlen);

/* sq_run, run again (the same text) while sq_retry says so; no transaction stays open after
 * a failure. Returns 0 or the error as sq_final gives it. */
int sq_run_retry(struct store *s, const char *op, struct run *rr, char *err, size_t errlen);

/* What callers see: retryable errors that ran out of tries are plain SQL errors. */
int sq_final(int r);

/* Common argument checks: a store, a sane row list, a queue name if queue is not NULL, a
 * connection. Returns 0 or a negative error with err filled. */
int sq_check(struct store *s, const char *op, const struct store_ref *refs, size_t n,
	     const char *queue, char *err, size_t errlen);

/* Copies src to dst (max bytes + NUL) with invalid UTF-8 replaced by '?', cut on a character
 * boundary. Returns the bytes written. */
size_t sq_utf8_sanitize(const char *src, char *dst, size_t max);

/* ---- statement pieces (store_sql.c) ---- */

/* "state = 'claimed' AND (ids) AND claim_token = (each row's)": the ids as sq_add_id_runs
 * writes them; the token "= T" for one row, else by the row's place in an ELT list when the
 * ids are close together, else "CASE id WHEN .. THEN .. END". */
void sq_add_fence(struct store *s, const struct store_ref *refs, size_t n);
/* "(id BETWEEN a AND b OR .. OR id IN (c, ..))" for ids[0..n) (sorted, distinct): each run of
 * consecutive ids one range, the rest in the list. The range optimiser takes a run as one
 * range where an IN list costs it one per id (measured: 150 ids in a run, ~0.5 ms of the
 * server's time less a statement). "(FALSE)" for none. */
void sq_add_id_runs(struct store *s, const uint64_t *ids, size_t n);
/* qsort's comparison of uint64_t. */
int sq_cmp_u64(const void *a, const void *b);
/* Inside a transaction: "COMPLETE;" for done[0..n), with its groups locked before and their
 * next rows started after if any is grouped, and, if any has dependents, the rows that
 * waited for them counted off (and released when they wait for nothing more). Returns the
 * index of the COMPLETE among the statements of the text (its rows: the rows completed).
 * heads_later: the next rows of keys run one at a time, and of keys run N at once whose
 * rows know their key (sq_ref_handed_by_key), are left to the caller (sq_add_group_heads
 * and sq_add_key_next_rest later in the transaction: the claim hands them on first). */
int sq_add_complete(struct store *s, const struct store_ref *done, size_t n, bool heads_later);
/* A row with a dedupe key: "SET @claimd_dup = 0; INSERT ... ON DUPLICATE KEY UPDATE ...;":
 * a row holding the key is left as it is, and its id is LAST_INSERT_ID(). Not INSERT
 * IGNORE, which would turn a bad value into a warning. */
void sq_add_dedupe_row(struct store *s, const char *queue, const unsigned char *payload,
		       size_t len, const struct store_add_opts *o);
/* "GROUP_LOCK;" for the rows refs[0..n). */
void sq_add_group_lock(struct store *s, const struct store_ref *refs, size_t n);
/* "GROUP_NEXT;" for the rows refs[0..n), finished by this transaction with token + 1, whose
 * key runs one at a time (sq_add_group_heads); the KEY_FILL statements for those with
 * key_fill set (for all of them when all is true: refs that do not know their key's limit). */
void sq_add_group_next(struct store *s, const struct store_ref *refs, size_t n, bool all);
/* "KEY_FILL_MANY;" for the refs r of refs[0..n) that know their key's limit and take(r, arg)
 * chooses (nothing when none). */
void sq_add_key_fill_many(struct store *s, const struct store_ref *refs, size_t n,
			  bool (*take)(const struct store_ref *r, const void *arg), const void *arg);
void sq_add_group_heads(struct store *s, const struct store_ref *refs, size_t n);
/* Appends to b the GROUP_HEADS of the refs whose key runs one at a time (grouped, not
 * key_fill); returns how many refs it names (0: b unchanged). */
size_t sq_group_heads(struct buf *b, const struct store_ref *refs, size_t n);
/* ---- the claim's hand-on of keys run N at once (store_handon.c) ---- */

/* The rows of one key among a claim's done[] (sq_ref_handed_by_key), as they spell it. */
struct key_run {
	const char *group;
	uint64_t max_seq;            /* the highest number of it finished */
	unsigned cnt;                /* its rows finished */
	bool ok;                     /* KEY_NEXT_OK named it: its next rows go by number */
	unsigned taken;              /* rows of its key (spelled as it is) HAND_ON took */
};
struct key_runs {
	struct key_run *run;         /* malloc'd */
	size_t n;
	size_t nhanded;              /* rows HAND_ON took (heads and keys' rows) */
	char q[QUOTED_QUEUE_MAX];    /* the claim's queue, quoted */
};
/* Whether ref's finish hands on its key's next rows by number (a key run N > 1 at once,
 * its key and number known). */
static inline bool sq_ref_handed_by_key(const struct store_ref *r)
{
	return r->grouped && r->key_fill && r->key_limit >= 2 && r->group != NULL;
}
/* The claim's counts of done[0..n): finished rows of keys run one at a time (their next
 * rows: GROUP_HEADS); whether any of a key run N at once fills its key without the hand-on
 * (KEY_FILL); the finished rows whose next rows it hands on (of keys run one or N at once);
 * how many rows it may be handed on, at most half of max. */
unsigned sq_head_refs(const struct store_ref *done, size_t n);
bool sq_has_key_fills(const struct store_ref *done, size_t n);
unsigned sq_hand_on_refs(const struct store_ref *done, size_t n);
unsigned sq_hand_on_room(const struct store_ref *done, size_t n, unsigned max);
void key_runs_free(struct key_runs *kr);
/* Appends to b what HAND_ON takes rows from (a derived table of hid): GROUP_HEADS of the
 * refs whose key runs one at a time, and the rows the keys of refs run N at once let start
 * in queue (kr: those keys, which key_runs_free frees, and the queue quoted, kr->q). Returns
 * how many rows it may name. */
size_t sq_hand_on_sources(struct store *s, struct buf *b, struct key_runs *kr,
			  const char *queue, const struct store_ref *refs, size_t n);
/* In the same round trip, a SELECT of the keys of kr whose rows go by number (KEY_NEXT_OK);
 * key_runs_take reads its answer. */
void sq_add_key_next_ok(struct store *s, const struct key_runs *kr,
			const struct store_ref *refs, size_t n);
int key_runs_take(struct key_runs *kr, MYSQL_RES *res, const struct store_item *handed,
		  size_t h);
/* In the commit's round trip, when HAND_ON took fewer rows than it named (handed[0..h):
 * those it took): the rows of the keys that go by number not taken made visible
 * (KEY_NEXT_SHOW), and KEY_FILL_MANY for the others. Each statement's rows: rows made
 * visible. */
void sq_add_key_next_rest(struct store *s, const struct key_runs *kr,
			  const struct store_item *handed, size_t h, const struct store_ref *refs,
			  size_t n);

/* Before the first fenced UPDATE of a transaction that finishes rows with dependents, "SET
 * @claimd_t0 = NOW(6);": a row this transaction finishes has a finished_at from then on, and
 * one that an earlier transaction finished (its outcome written again, below) an older one.
 * The DEPS_* anchors ask for both this and @claimd_fin: a transaction that finishes two rows,
 * one of them the second time, counts the children of the other alone. */
void sq_add_finish_begin(struct store *s);
/* After a fenced UPDATE that finishes rows, "SET @claimd_fin = [@claimd_fin +] ROW_COUNT();"
 * (first: the transaction's first such UPDATE): the rows this transaction finished, which
 * the DEPS_* statements below ask to be above 0. A transaction run again because its answer
 * was lost (the connection dropped after its COMMIT went through: the worker sends the same
 * outcomes with its next claim) finishes nothing the second time, and the rows its first
 * run finished, with the same tokens, must not count their children off again. */
void sq_add_finished(struct store *s, bool first);
/* "DEPS_DONE; DEPS_RELEASE;" for the rows refs[0..n), finished by this transaction with
 * token + 1 (those that went done count), after sq_add_finish_begin, the UPDATE and
 * sq_add_finished. */
void sq_add_deps_done(struct store *s, const struct store_ref *refs, size_t n);
/* "DEPS_DEAD_RUN; DEPS_DEAD_RELEASE; DEPS_CANCEL;" for the rows refs[0..n) that this
 * transaction made dead (token + 1), as sq_add_deps_done. */
void sq_add_deps_dead(struct store *s, const struct store_ref *refs, size_t n);
/* The same for row id, if this transaction deleted it while it was ready (@claimd_deleted
 * > 0 and @claimd_was_ready = 1: a dead row's children were seen to when it died). */
void sq_add_deps_gone(struct store *s, uint64_t id);
/* The same for the rows of ids ("1,2,3") that this transaction deleted while they were
 * ready, named in @claimd_gone_ready (a GROUP_CONCAT of their ids). */
void sq_add_deps_gone_ids(struct store *s, const char *ids);
/* "HEAL_KEYS_TABLE; HEAL_KEYS_KEEP;": the keys of the rows which says (a condition on
 * work_items), for a GROUP_HEAL of HEAL_SCOPE after they changed. */
void sq_add_heal_keys(struct store *s, const char *which);
/* The statements that put back the dead rows which says (a condition on work_items) and the
 * rows their death cancelled, counting their parents again (PUT_BACK_*, DOOMED_*), in a
 * transaction the caller began (with GROUP_LOCK) and ends; PUT_BACK_RESULT then says what
 * they did. */
void sq_add_put_back(struct store *s, const char *which);
/* str[0..len) quoted (any bytes), or NULL when str is NULL. */
void sq_add_text(struct store *s, const char *str, size_t len);
/* A last_error text: cut to 4000 bytes on a character boundary, quoted; NULL stays NULL. */
void sq_add_error_text(struct store *s, const char *text);

/* ", result = .., result_type = .., progress = .." (for an UPDATE's SET; each row's value
 * by its place in an ELT list when the ids are close together, else a CASE of them) over
 * the refs that have them; nothing when none has. */
void sq_add_results(struct store *s, const struct store_ref *refs, size_t n);
/* ", progress = <refs[i].progress, or progress>" (as sq_add_results) for the refs that have
 * one. */
void sq_add_progress(struct store *s, const struct store_ref *refs, size_t n);

/* A decimal column value. */
bool sq_parse_u64(const char *p, unsigned long len, uint64_t *ret);

/* The monotonic clock, in ms. */
uint64_t sq_mono_ms(void);

/* ---- the job browser (store_sql.c; sql/migrations/011_job_browser.sql) ---- */

/* Each failed attempt's error: for the rows this transaction failed (the first %s: the
 * error, an expression on the row; then their ids, and a CASE of their new tokens), their
 * attempts and that error, cut to the column's 1000 characters, into the row's ring of
 * ATTEMPT_ERRORS_KEEP slots (the slot of the attempt ATTEMPT_ERRORS_KEEP before is taken
 * over): one statement, by primary key, bounded without a trim. */
#define ATTEMPT_ERRORS_KEEP 20
#define ATTEMPT_ERROR_ADD \
	"INSERT INTO attempt_errors (item_id, slot, attempt, failed_at, error) " \
	"SELECT id, attempts %% 20, attempts, NOW(6), LEFT(%s, 1000) FROM work_items " \
	"WHERE id IN (%s) AND claim_token = CASE id%s END AND state <> 'claimed' " \
	"ON DUPLICATE KEY UPDATE " \
	"attempt = VALUES(attempt), failed_at = VALUES(failed_at), error = VALUES(error)"
_Static_assert(ATTEMPT_ERRORS_KEEP == 20, "ATTEMPT_ERROR_ADD's ring");

/* "ATTEMPT_ERROR_ADD;" for the rows refs[0..n) that this transaction failed (token + 1,
 * and no longer claimed: a row another worker claimed again after this one's lease ran out
 * has that token too, and its attempt has not failed); error: the SQL expression of the
 * error to keep (a column, or a quoted text). */
void sq_add_attempt_errors(struct store *s, const struct store_ref *refs, size_t n,
			   const char *error);
/* " AND <condition>" for each of f's (store_filter) conditions, on work_items' columns.
 * Returns 0, or -EINVAL with err filled (op names the caller) when f is not a valid filter. */
struct store_filter;   /* store_browse.h */
int sq_add_filter(struct store *s, const char *op, const struct store_filter *f, char *err,
		  size_t errlen);

#endif
