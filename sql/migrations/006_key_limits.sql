-- claimd schema, migration 6: limits per key, and bursts.
--
-- A key is a row's group_key. Of a queue's rows with the same key (live: ready or claimed;
-- recurring rows take no part), at most N run at once across every supervisor, the oldest
-- first: N = 1 is the FIFO group of migration 1, in insertion order, and it stays the
-- default. The first N live rows of a key have a visible_at; the rest wait parked (visible_at
-- NULL, outside the claim index), and the transaction that finishes one of the first N gives
-- the next its visible_at, so claiming stays one index range whatever the limits. With N > 1
-- rows start in insertion order but may finish in any; N = 0 is no limit on the key (its rows
-- are never parked).
--
-- Starts may also be limited in rate, per queue and per key: a token bucket held in the
-- database as the time its next start is free (a "theoretical arrival time"): one start per
-- interval, and after a quiet spell up to burst starts at once. A worker takes a start with
-- one UPDATE of that time; a row whose start is further off than a second goes back
-- (visible again at that time, not counted as an attempt) instead of being held.
--
--   queues.min_interval_ms   the queue's rate: a start per interval (0: none), as before
--   queues.burst             starts that may go at once after a quiet spell (default 1)
--   queues.key_concurrency   N for every key of the queue (default 1: FIFO groups)
--   queues.key_interval_ms   each key's own rate: a start of the key per interval (0: none)
--   queues.key_burst         each key's burst (default 1)
--   key_limits               one key's own settings, over the queue's (NULL: the queue's)
--
-- Set them with claimctl limit (or POST /v1/queues/NAME/limit), or with SQL:
--     INSERT INTO queues (name, key_concurrency) VALUES ('mail', 5)
--         ON DUPLICATE KEY UPDATE key_concurrency = 5;
--     INSERT INTO key_limits (queue, group_key, concurrency, interval_ms, burst)
--         VALUES ('mail', 'tenant-7', 2, 1000, 10);
-- A limit raised with SQL lets more of a key's parked rows start as its running rows finish
-- (claimctl limit starts them at once); a lowered one holds new starts until fewer than N
-- run. Rows of a key whose limit is 1 and has no rate pay what FIFO groups always paid; rows
-- without a key pay nothing.

ALTER TABLE queues
    ADD COLUMN IF NOT EXISTS burst INT UNSIGNED NOT NULL DEFAULT 1 AFTER min_interval_ms,
    ADD COLUMN IF NOT EXISTS key_concurrency INT UNSIGNED NOT NULL DEFAULT 1 AFTER burst,
    ADD COLUMN IF NOT EXISTS key_interval_ms INT UNSIGNED NOT NULL DEFAULT 0
        AFTER key_concurrency,
    ADD COLUMN IF NOT EXISTS key_burst INT UNSIGNED NOT NULL DEFAULT 1 AFTER key_interval_ms,
    ALGORITHM=INSTANT;

CREATE TABLE IF NOT EXISTS key_limits (
    queue        VARCHAR(64) NOT NULL,
    group_key    VARCHAR(255) NOT NULL,
    concurrency  INT UNSIGNED NULL DEFAULT NULL,
    interval_ms  INT UNSIGNED NULL DEFAULT NULL,
    burst        INT UNSIGNED NULL DEFAULT NULL,
    updated_at   TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
        ON UPDATE CURRENT_TIMESTAMP(6),
    PRIMARY KEY (queue, group_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- A key's next free start (its rate), beside its lock and numbers.
ALTER TABLE work_groups
    ADD COLUMN IF NOT EXISTS next_start_at TIMESTAMP(6) NULL DEFAULT NULL AFTER last_seq,
    ALGORITHM=INSTANT;

-- The insert trigger as migration 3 made it, but a row is parked only when its key has N live
-- rows already (the first N of them run: a share lock on the N-th orders the insert against
-- their finish). Replaced in one statement: an insert finds the old trigger or the new one.
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
    SET NEW.visible_at = IF(NEW.state = 'ready', NEW.run_at, NULL);
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

INSERT IGNORE INTO claimd_schema (version, name) VALUES (6, 'key_limits');
