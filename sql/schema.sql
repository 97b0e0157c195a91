-- claimd schema. Loading it again is harmless: every statement is idempotent.
--
-- One table holds the work. Users insert rows with plain SQL:
--     INSERT INTO work_items (payload) VALUES ('...');
-- and read their progress from the same table.
--
-- The claim index: every row that may be claimed has a non-NULL visible_at, the time from
-- which a worker may take it: its run_at while it waits, the end of its lease while it is
-- claimed (so a claim whose worker vanished becomes claimable again without an OR). Finished
-- rows have visible_at NULL and so sit outside the ranges the claim query scans, one per
-- priority that has due rows:
--     WHERE queue = ? AND priority IN (..) AND visible_at <= NOW(6)
--     ORDER BY priority, visible_at, id
-- no matter how many done rows the table keeps. Which priorities have due rows is one
-- loose index scan of the same index (a few lookups per priority).

CREATE TABLE IF NOT EXISTS work_items (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue         VARCHAR(64) NOT NULL DEFAULT 'default',
    payload       MEDIUMBLOB NULL,
    state         ENUM('ready', 'claimed', 'done', 'dead') NOT NULL DEFAULT 'ready',
    attempts      INT UNSIGNED NOT NULL DEFAULT 0,
    max_attempts  INT UNSIGNED NOT NULL DEFAULT 5,
    priority      SMALLINT NOT NULL DEFAULT 0,
    run_at        DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    period_s      INT UNSIGNED NULL DEFAULT NULL,
    timeout_s     INT UNSIGNED NULL DEFAULT NULL,
    dedupe_key    VARCHAR(255) NULL DEFAULT NULL,
    dedupe_until  DATETIME(6) NULL DEFAULT NULL,
    visible_at    DATETIME(6) NULL DEFAULT NULL,
    claim_token   BIGINT UNSIGNED NOT NULL DEFAULT 0,
    claimed_by    VARCHAR(255) NULL DEFAULT NULL,
    claimed_at    DATETIME(6) NULL DEFAULT NULL,
    finished_at   DATETIME(6) NULL DEFAULT NULL,
    last_error    TEXT NULL DEFAULT NULL,
    created_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    KEY claim_prio_idx (queue, priority, visible_at, id),
    KEY finished_idx (finished_at),
    UNIQUE KEY dedupe_idx (queue, dedupe_key),
    KEY dedupe_expiry_idx (dedupe_until)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- A row inserted as 'ready' becomes visible at its run_at (a column DEFAULT cannot read
-- another column's default, hence the trigger). Rows inserted in any other state are
-- not claimable.
DROP TRIGGER IF EXISTS work_items_bi;
CREATE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
    SET NEW.visible_at = IF(NEW.state = 'ready', NEW.run_at, NULL);

-- Columns added after the first release, for tables created by an older schema.sql.
--   period_s   recurring: after each successful run the row is ready again period_s seconds
--              after it finished (0 = at once) instead of done
--   timeout_s  this row's handler time limit, overriding claimd --timeout
--   priority   smaller runs first (default 0, may be negative); ties by due time, then id
--   dedupe_key a row whose (queue, dedupe_key) another row holds is not inserted (INSERT
--              IGNORE): while that row is ready or claimed, and for a window (claimd
--              --dedupe-window, 5 min) after it finished, until dedupe_until
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS period_s INT UNSIGNED NULL DEFAULT NULL AFTER run_at,
    ADD COLUMN IF NOT EXISTS timeout_s INT UNSIGNED NULL DEFAULT NULL AFTER period_s,
    ADD COLUMN IF NOT EXISTS dedupe_key VARCHAR(255) NULL DEFAULT NULL AFTER timeout_s,
    ADD COLUMN IF NOT EXISTS dedupe_until DATETIME(6) NULL DEFAULT NULL AFTER dedupe_key,
    ADD UNIQUE KEY IF NOT EXISTS dedupe_idx (queue, dedupe_key),
    ADD KEY IF NOT EXISTS dedupe_expiry_idx (dedupe_until),
    ADD COLUMN IF NOT EXISTS priority SMALLINT NOT NULL DEFAULT 0 AFTER max_attempts,
    ADD KEY IF NOT EXISTS claim_prio_idx (queue, priority, visible_at, id);
-- The claim index before priorities: claim_prio_idx does its work.
ALTER TABLE work_items DROP KEY IF EXISTS claim_idx;

-- Per-queue settings, one row per queue that has any (a queue without a row has the defaults).
--   paused  1: no new starts on any supervisor (claimctl pause NAME, or
--           INSERT INTO queues (name, paused) VALUES ('NAME', 1) ON DUPLICATE KEY UPDATE paused = 1);
--           items already running finish
--   min_interval_ms  starts of the queue's items, across every supervisor on every host, at
--           least this far apart (claimctl limit NAME --interval MS); next_start_at is the
--           next free start slot, taken by workers with one UPDATE each
CREATE TABLE IF NOT EXISTS queues (
    name        VARCHAR(64) NOT NULL,
    paused      TINYINT(1) NOT NULL DEFAULT 0,
    min_interval_ms INT UNSIGNED NOT NULL DEFAULT 0,
    next_start_at   DATETIME(6) NULL DEFAULT NULL,
    updated_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

ALTER TABLE queues
    ADD COLUMN IF NOT EXISTS min_interval_ms INT UNSIGNED NOT NULL DEFAULT 0 AFTER paused,
    ADD COLUMN IF NOT EXISTS next_start_at DATETIME(6) NULL DEFAULT NULL AFTER min_interval_ms;
