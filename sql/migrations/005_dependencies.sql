-- claimd schema, migration 5: dependencies and batches.
--
-- A row may wait for other rows: an edge in work_deps, inserted with plain SQL, in the same
-- transaction as the rows if you like (the child must be 'ready', not in a FIFO group, not
-- recurring):
--     INSERT INTO work_items (payload) VALUES ('extract');     -- id 1
--     INSERT INTO work_items (payload) VALUES ('transform');   -- id 2
--     INSERT INTO work_deps (parent_id, child_id) VALUES (1, 2);
-- The edge's trigger counts the parent in the child's waiting_for (and takes the child out of
-- the claim index: visible_at NULL) unless the parent is done already. The transaction that
-- finishes a parent as done counts it off its children, and gives a child whose count reaches
-- 0 its visible_at: it becomes claimable in the same commit, with no scan. A parent that goes
-- dead (its last attempt failed, or it is deleted while ready or dead) cancels its children
-- whose edge says on_dead = 'cancel' (the default): they go dead with "cancelled: row N, which
-- it waited for, is dead", and so on down; an edge with on_dead = 'run' counts the dead parent
-- off like a done one. A dead row put back (claimctl retry, a bulk retry) brings back the rows
-- its death cancelled and counts its parents again (migration 13, claimd-workflows(7)).
-- Refused with an error: a row waiting for itself, a cycle, an
-- edge to a missing row, an edge to a running row (its worker would not know), an INSERT ... SELECT that reads work_items (a trigger cannot change a
-- table its statement reads: insert the ids as VALUES).
--
-- A batch groups rows (their batch_id) and names a callback row that waits for all of them
-- with on_dead = 'run' edges: it runs once every member finished, done or dead, and can read
-- how many of each: SELECT state, COUNT(*) FROM work_items WHERE batch_id = B AND id <> the
-- callback GROUP BY state, or GET /v1/batches/B. POST /v1/queues/Q/jobs:batch?batch=1 makes
-- one in a transaction.
CREATE TABLE IF NOT EXISTS work_deps (
    parent_id   BIGINT UNSIGNED NOT NULL,
    child_id    BIGINT UNSIGNED NOT NULL,
    on_dead     ENUM('cancel', 'run') NOT NULL DEFAULT 'cancel',
    created_at  TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (parent_id, child_id),
    KEY child_idx (child_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS batches (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue        VARCHAR(64) NOT NULL,
    description  VARCHAR(255) NULL DEFAULT NULL,
    size         INT UNSIGNED NOT NULL DEFAULT 0,   -- member rows, the callback not counted
    callback_id  BIGINT UNSIGNED NULL DEFAULT NULL,
    created_at   TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

--   waiting_for  how many of the rows it waits for (work_deps) have not finished; while it is
--                above 0 the row has no visible_at
--   batch_id     the batch the row belongs to (batches.id), or NULL. Indexed alone: it never
--                changes, so claims and completions do not touch the index.
--   has_dependents  1 once a row waits for this one: a claim reads it, and only the finish
--                of such a row carries the statements that count it off its children (rows
--                without edges pay nothing). So a row that is running cannot get a new
--                child: its worker read 0 (the edge is refused; wait until it ended).
-- The columns are instant; the index is built online (inserts and updates go on meanwhile).
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS waiting_for INT UNSIGNED NOT NULL DEFAULT 0 AFTER group_seq,
    ADD COLUMN IF NOT EXISTS batch_id BIGINT UNSIGNED NULL DEFAULT NULL AFTER waiting_for,
    ADD COLUMN IF NOT EXISTS has_dependents TINYINT(1) NOT NULL DEFAULT 0 AFTER batch_id,
    ALGORITHM=INSTANT;
ALTER TABLE work_items ADD KEY IF NOT EXISTS batch_idx (batch_id), ALGORITHM=INPLACE, LOCK=NONE;

DELIMITER //
CREATE OR REPLACE TRIGGER work_deps_bi BEFORE INSERT ON work_deps FOR EACH ROW
BEGIN
    DECLARE p_state, c_state VARCHAR(16) DEFAULT NULL;
    DECLARE p_period, c_period INT UNSIGNED DEFAULT NULL;
    DECLARE c_group VARCHAR(255) DEFAULT NULL;
    DECLARE loop_found INT DEFAULT 0;
    DECLARE msg VARCHAR(255);
    IF NEW.parent_id = NEW.child_id THEN
        SET msg = CONCAT('work_deps: row ', NEW.child_id, ' cannot wait for itself');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    -- The parent first (its claim or finish waits for this transaction, or this for it),
    -- then the child: the order a finishing parent's transaction takes them in too.
    SELECT state, period_s INTO p_state, p_period FROM work_items WHERE id = NEW.parent_id
        FOR UPDATE;
    SELECT state, group_key, period_s INTO c_state, c_group, c_period FROM work_items
        WHERE id = NEW.child_id FOR UPDATE;
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
    -- A cycle: the parent is among the rows that wait for the child.
    WITH RECURSIVE down (id) AS (
        SELECT child_id FROM work_deps WHERE parent_id = NEW.child_id
        UNION
        SELECT d.child_id FROM work_deps d JOIN down ON d.parent_id = down.id)
    SELECT COUNT(*) INTO loop_found FROM down WHERE id = NEW.parent_id;
    IF loop_found > 0 THEN
        SET msg = CONCAT('work_deps: row ', NEW.parent_id, ' waits for row ', NEW.child_id,
                         ' already: a cycle');
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
    END IF;
    IF p_state = 'dead' AND NEW.on_dead = 'cancel' THEN
        UPDATE work_items SET state = 'dead', visible_at = NULL, finished_at = NOW(6),
            claim_token = claim_token + 1,
            last_error = CONCAT('cancelled: row ', NEW.parent_id, ', which it waited for, is dead')
            WHERE id = NEW.child_id;
    ELSEIF p_state = 'ready' THEN
        UPDATE work_items SET has_dependents = 1 WHERE id = NEW.parent_id AND has_dependents = 0;
        UPDATE work_items SET waiting_for = waiting_for + 1, visible_at = NULL
            WHERE id = NEW.child_id;
    END IF;
END//
DELIMITER ;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (5, 'dependencies');
