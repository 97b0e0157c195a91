-- claimd schema, migration 14: a row's own retry back-off and dedupe window.
--
-- A failed row waits before its next attempt by its queue's back-off (migration 9) or
-- claimd's; a row may have its own: retry_base_ms (the first retry's wait, 1 ms .. 7 days)
-- and retry_max_ms (the longest, not below the base), NULL: its queue's. Its queue's jitter
-- applies. A finished row keeps its dedupe_key for claimd's --dedupe-window; a row may
-- say for how long itself: dedupe_for_s (0 .. 10 years; 0: free at once), NULL: the window.
-- Both are read where they act (the claim reads the back-off, the finish writes
-- dedupe_until), so every supervisor honours them.
--     INSERT INTO work_items (queue, payload, retry_base_ms, retry_max_ms, dedupe_key,
--                             dedupe_for_s)
--     VALUES ('mail', 'x', 30000, 3600000, 'welcome-7', 86400);
--
-- The columns are added in place, instantly; work_items takes no CHECK constraint without
-- being copied, so its insert trigger checks them (replaced in one statement: no moment
-- without one). Idempotent.

ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS retry_base_ms INT UNSIGNED NULL DEFAULT NULL,
    ADD COLUMN IF NOT EXISTS retry_max_ms INT UNSIGNED NULL DEFAULT NULL,
    ADD COLUMN IF NOT EXISTS dedupe_for_s INT UNSIGNED NULL DEFAULT NULL,
    ALGORITHM=INSTANT;

DELIMITER //
CREATE OR REPLACE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
BEGIN
    DECLARE nth BIGINT UNSIGNED DEFAULT NULL;
    DECLARE lim INT UNSIGNED DEFAULT 1;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET nth = NULL;
    IF NEW.retry_base_ms NOT BETWEEN 1 AND 604800000 THEN
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'work_items.retry_base_ms is out of range: '
            '1 to 604800000 (7 days), or NULL';
    END IF;
    IF NEW.retry_max_ms NOT BETWEEN GREATEST(1, IFNULL(NEW.retry_base_ms, 1)) AND 604800000 THEN
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'work_items.retry_max_ms is out of range: '
            'its retry_base_ms to 604800000 (7 days), or NULL';
    END IF;
    IF NEW.dedupe_for_s > 315360000 THEN
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = 'work_items.dedupe_for_s is out of range: '
            '0 to 315360000 (10 years), or NULL';
    END IF;
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
DELIMITER ;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (14, 'row_options');
