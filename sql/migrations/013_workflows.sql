-- claimd schema, migration 13: graphs whose cost is linear in their edges, and a check of a
-- plain SQL edge whose cost is bounded.
--
-- An edge inserted with plain SQL (work_deps) is checked by its trigger as before: a row that
-- waits for itself, a missing row, a running parent, a child that is not ready, a recurring
-- or grouped row, and a cycle are refused. The cycle check walked every row below the child
-- for each edge (a graph of 1,000 rows that each wait for the next 32 took minutes), and
-- MariaDB stops a recursive query at max_recursive_iterations (1,000 by default) without an
-- error, so a chain longer than that could close a cycle unseen. Now it walks level by level
-- from both ends at once, down from the child and up from the parent, always the smaller side
-- first, and ends as soon as one side has no more rows (no cycle) or meets the other end (a
-- cycle). Each side stops after 1,000 rows: an edge whose child has more than 1,000 rows below
-- it and whose parent has more than 1,000 above it is refused as too large to check here
-- ("add the graph with POST /v1/queues/Q/jobs:batch, or each row's edges when its parents have
-- none yet"). Edges inserted parent side first, or child side first, check in a step or two.
--
-- A graph added by claimd (POST /v1/queues/Q/jobs:batch, all in one transaction) is checked
-- whole by claimd before it is written, in time linear in its edges: its rows are inserted
-- with waiting_for and has_dependents already counted, and its edges with @claimd_graph_checked
-- = 1 in the session, for which this trigger checks nothing (claimd's own session sets it for
-- those edges alone and clears it; it is not for applications).
--
-- A row inserted with waiting_for above 0 has no visible_at: it waits for that many parents.
-- Leave waiting_for out of plain SQL inserts (0): edges count it.
--
-- An edge from a dead parent on a 'cancel' edge cancels its child, and now also, down their
-- 'cancel' edges, the rows that wait for the child (an on_dead = 'run' edge counts the child off
-- like a done one), as a parent's death does. A parent that is dead is marked as waited for
-- too (has_dependents), so that a retry of it counts it off its children when it finishes.
--
-- Idempotent; the triggers are replaced in place (CREATE OR REPLACE: no moment without one).

DELIMITER //
CREATE OR REPLACE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
BEGIN
    DECLARE nth BIGINT UNSIGNED DEFAULT NULL;
    DECLARE lim INT UNSIGNED DEFAULT 1;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET nth = NULL;
    IF NEW.run_at = 0 THEN
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'work_items.run_at is out of range: a '
            'TIMESTAMP holds 1970-01-01 00:00:01 to 2038-01-19 03:14:07 UTC';
    END IF;
    SET NEW.visible_at = IF(NEW.state = 'ready' AND NEW.waiting_for = 0, NEW.run_at, NULL);
    IF NEW.group_key IS NOT NULL AND NEW.period_s IS NULL THEN
        INSERT INTO work_groups (queue, group_key, last_seq) VALUES (NEW.queue, NEW.group_key, 1)
            ON DUPLICATE KEY UPDATE last_seq = last_seq + 1;
        SET NEW.group_seq = (SELECT last_seq FROM work_groups
                             WHERE queue = NEW.queue AND group_key = NEW.group_key);
        SET lim = COALESCE((SELECT concurrency FROM key_limits
                            WHERE queue = NEW.queue AND group_key = NEW.group_key),
                           (SELECT key_concurrency FROM queues WHERE name = NEW.queue), 1);
        IF lim > 0 THEN
            SET lim = lim - 1;
            SELECT id INTO nth FROM work_items FORCE INDEX (group_idx)
                WHERE queue = NEW.queue AND group_live = NEW.group_key
                ORDER BY id LIMIT lim, 1 LOCK IN SHARE MODE;
            IF nth IS NOT NULL AND NEW.state = 'ready' THEN
                SET NEW.visible_at = NULL;
            END IF;
        END IF;
    END IF;
END//

CREATE OR REPLACE TRIGGER work_deps_bi BEFORE INSERT ON work_deps FOR EACH ROW
edge: BEGIN
    DECLARE p_state, c_state VARCHAR(16) DEFAULT NULL;
    DECLARE p_period, c_period INT UNSIGNED DEFAULT NULL;
    DECLARE c_group VARCHAR(255) DEFAULT NULL;
    DECLARE c_deps TINYINT DEFAULT 0;
    DECLARE down_front, up_front MEDIUMTEXT DEFAULT NULL;
    DECLARE down_seen, up_seen, k, hit INT UNSIGNED DEFAULT 0;
    DECLARE old_depth BIGINT UNSIGNED DEFAULT 1000;
    DECLARE msg VARCHAR(255);
    IF @claimd_graph_checked = 1 THEN
        LEAVE edge;   -- a graph claimd checked whole, its rows counted already
    END IF;
    IF NEW.parent_id = NEW.child_id THEN
        SET msg = CONCAT('work_deps: row ', NEW.child_id, ' cannot wait for itself');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    -- The parent first (its claim or finish waits for this transaction, or this for it),
    -- then the child: the order a finishing parent's transaction takes them in too.
    SELECT state, period_s INTO p_state, p_period FROM work_items WHERE id = NEW.parent_id
        FOR UPDATE;
    SELECT state, group_key, period_s, has_dependents INTO c_state, c_group, c_period, c_deps
        FROM work_items WHERE id = NEW.child_id FOR UPDATE;
    IF p_state IS NULL OR c_state IS NULL THEN
        SET msg = CONCAT('work_deps: no row ', IF(p_state IS NULL, NEW.parent_id, NEW.child_id));
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    IF p_state = 'claimed' THEN
        SET msg = CONCAT('work_deps: row ', NEW.parent_id, ' is running: a row can wait only ',
                         'for one that has not started, or has ended');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    IF c_state <> 'ready' THEN
        SET msg = CONCAT('work_deps: row ', NEW.child_id, ' is ', c_state,
                         ': only a ready row can wait for another');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    IF c_group IS NOT NULL OR c_period IS NOT NULL OR p_period IS NOT NULL THEN
        SET msg = CONCAT('work_deps: rows ', NEW.parent_id, ' and ', NEW.child_id,
                         ': a recurring row takes no part in waits, nor does a row of a FIFO ',
                         'group wait');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    -- A cycle: the parent is below the child (and so the child above the parent). One level
    -- of the smaller side at a time, each side at most 1,000 rows.
    SET down_front = NEW.child_id, up_front = NEW.parent_id;
    walk: LOOP
        IF down_front IS NULL OR up_front IS NULL THEN
            LEAVE walk;
        END IF;
        IF down_seen > 1000 AND up_seen > 1000 THEN
            SET msg = CONCAT('work_deps: rows ', NEW.parent_id, ' and ', NEW.child_id, ': over ',
                             '1000 rows above and below, too many to check for a cycle here: ',
                             'add the graph with POST jobs:batch, or edges parents first');
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
        END IF;
        IF up_seen > 1000 OR (down_seen <= 1000 AND down_seen <= up_seen) THEN
            SELECT GROUP_CONCAT(DISTINCT d.child_id), COUNT(DISTINCT d.child_id),
                   COALESCE(SUM(d.child_id = NEW.parent_id), 0)
                INTO down_front, k, hit
                FROM JSON_TABLE(CONCAT('[', down_front, ']'), '$[*]'
                                COLUMNS (id BIGINT UNSIGNED PATH '$')) AS f
                JOIN work_deps d ON d.parent_id = f.id;
            SET down_seen = down_seen + k;
        ELSE
            SELECT GROUP_CONCAT(DISTINCT d.parent_id), COUNT(DISTINCT d.parent_id),
                   COALESCE(SUM(d.parent_id = NEW.child_id), 0)
                INTO up_front, k, hit
                FROM JSON_TABLE(CONCAT('[', up_front, ']'), '$[*]'
                                COLUMNS (id BIGINT UNSIGNED PATH '$')) AS f
                JOIN work_deps d ON d.child_id = f.id;
            SET up_seen = up_seen + k;
        END IF;
        IF hit > 0 THEN
            SET msg = CONCAT('work_deps: row ', NEW.parent_id, ' waits for row ', NEW.child_id,
                             ' already: a cycle');
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
        END IF;
    END LOOP;
    IF p_state IN ('ready', 'dead') THEN
        UPDATE work_items SET has_dependents = 1 WHERE id = NEW.parent_id AND has_dependents = 0;
    END IF;
    IF p_state = 'dead' AND NEW.on_dead = 'cancel' THEN
        UPDATE work_items SET state = 'dead', visible_at = NULL, finished_at = NOW(6),
            claim_token = claim_token + 1,
            last_error = CONCAT('cancelled: row ', NEW.parent_id, ', which it waited for, is dead')
            WHERE id = NEW.child_id;
        IF c_deps THEN
            -- The rows that wait for the child, as a parent's death in claimd's own
            -- statements (store_int.h, DEAD_SET): down the 'cancel' edges the ready rows; the
            -- 'run' edges from any of them counted off, the rows that waited for nothing more
            -- released, then the set cancelled; however deep (the server stops a recursive
            -- query at max_recursive_iterations, silently).
            SET old_depth = @@SESSION.max_recursive_iterations,
                SESSION max_recursive_iterations = 4294967295;
            UPDATE work_items c JOIN (SELECT d.child_id, COUNT(*) AS n FROM work_deps d JOIN (
                WITH RECURSIVE dead_set (id) AS (SELECT NEW.child_id UNION
                    SELECT d.child_id FROM work_deps d JOIN dead_set ON d.parent_id = dead_set.id
                    JOIN work_items r ON r.id = d.child_id
                    WHERE d.on_dead = 'cancel' AND r.state = 'ready')
                SELECT id FROM dead_set) AS x ON d.parent_id = x.id WHERE d.on_dead = 'run'
                GROUP BY d.child_id) AS k ON c.id = k.child_id
                SET c.waiting_for = IF(c.waiting_for > k.n, c.waiting_for - k.n, 0)
                WHERE c.state = 'ready';
            UPDATE work_items c JOIN (SELECT DISTINCT d.child_id FROM work_deps d JOIN (
                WITH RECURSIVE dead_set (id) AS (SELECT NEW.child_id UNION
                    SELECT d.child_id FROM work_deps d JOIN dead_set ON d.parent_id = dead_set.id
                    JOIN work_items r ON r.id = d.child_id
                    WHERE d.on_dead = 'cancel' AND r.state = 'ready')
                SELECT id FROM dead_set) AS x ON d.parent_id = x.id) AS k ON c.id = k.child_id
                SET c.visible_at = GREATEST(c.run_at, NOW(6))
                WHERE c.state = 'ready' AND c.waiting_for = 0 AND c.visible_at IS NULL
                  AND c.group_key IS NULL;
            UPDATE work_items c JOIN (
                WITH RECURSIVE dead_set (id) AS (SELECT NEW.child_id UNION
                    SELECT d.child_id FROM work_deps d JOIN dead_set ON d.parent_id = dead_set.id
                    JOIN work_items r ON r.id = d.child_id
                    WHERE d.on_dead = 'cancel' AND r.state = 'ready')
                SELECT id FROM dead_set) AS k ON c.id = k.id
                SET c.state = 'dead', c.visible_at = NULL, c.finished_at = NOW(6),
                    c.claim_token = c.claim_token + 1,
                    c.last_error = CONCAT('cancelled: row ', NEW.parent_id,
                                          ', which it waited for, is dead')
                WHERE c.state = 'ready' AND c.id <> NEW.child_id;
            SET SESSION max_recursive_iterations = old_depth;
        END IF;
    ELSEIF p_state = 'ready' THEN
        UPDATE work_items SET waiting_for = waiting_for + 1, visible_at = NULL
            WHERE id = NEW.child_id;
    END IF;
END//
DELIMITER ;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (13, 'workflows');
