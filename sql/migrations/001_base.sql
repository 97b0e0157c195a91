-- claimd schema, migration 1: the base. Every migration is idempotent (loading one again is
-- harmless) and records itself in claimd_schema; claimd refuses to start on a database whose
-- schema is older than it needs. Apply them with `claimd --migrate` (as a user allowed to
-- create and alter tables and triggers), or in order with the mariadb client:
--     cat migrations/*.sql | mariadb mydb
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
-- no matter how many done rows the table keeps. Priorities go from -10 to 10: which of
-- them have due rows is one lookup each (and the idle poll one range each).

-- Which migrations a database has had (claimd --migrate, or each file's last statement).
CREATE TABLE IF NOT EXISTS claimd_schema (
    version     INT UNSIGNED NOT NULL,
    name        VARCHAR(255) NOT NULL,
    applied_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS work_items (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    queue         VARCHAR(64) NOT NULL DEFAULT 'default',
    payload       MEDIUMBLOB NULL,
    state         ENUM('ready', 'claimed', 'done', 'dead') NOT NULL DEFAULT 'ready',
    attempts      INT UNSIGNED NOT NULL DEFAULT 0,
    max_attempts  INT UNSIGNED NOT NULL DEFAULT 5,
    priority      TINYINT NOT NULL DEFAULT 0,
    run_at        DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    period_s      INT UNSIGNED NULL DEFAULT NULL,
    timeout_s     INT UNSIGNED NULL DEFAULT NULL,
    dedupe_key    VARCHAR(255) NULL DEFAULT NULL,
    dedupe_until  DATETIME(6) NULL DEFAULT NULL,
    group_key     VARCHAR(255) NULL DEFAULT NULL,
    group_seq     BIGINT UNSIGNED NULL DEFAULT NULL,
    visible_at    DATETIME(6) NULL DEFAULT NULL,
    claim_token   BIGINT UNSIGNED NOT NULL DEFAULT 0,
    claimed_by    VARCHAR(255) NULL DEFAULT NULL,
    claimed_at    DATETIME(6) NULL DEFAULT NULL,
    finished_at   DATETIME(6) NULL DEFAULT NULL,
    last_error    TEXT NULL DEFAULT NULL,
    created_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    group_live    VARCHAR(255) AS (IF(state IN ('ready', 'claimed') AND period_s IS NULL,
                                      group_key, NULL)) STORED,
    PRIMARY KEY (id),
    KEY claim_prio_idx (queue, priority, visible_at, id),
    UNIQUE KEY dedupe_idx (queue, dedupe_key),
    KEY dedupe_expiry_idx (dedupe_until),
    KEY group_idx (queue, group_live, id),
    CONSTRAINT priority_range CHECK (priority BETWEEN -10 AND 10)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Columns added after the first release, for tables made before numbered migrations.
--   period_s   recurring: after each successful run the row is ready again period_s seconds
--              after it finished (0 = at once) instead of done
--   timeout_s  this row's handler time limit, overriding claimd --timeout
--   priority   -10..10, smaller runs first (default 0); ties by due time, then id
--   group_key  FIFO group: rows of a queue sharing it run one at a time, in id order (see
--              work_groups below); group_seq is the row's number within its group
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
    ADD COLUMN IF NOT EXISTS priority TINYINT NOT NULL DEFAULT 0 AFTER max_attempts,
    ADD KEY IF NOT EXISTS claim_prio_idx (queue, priority, visible_at, id),
    ADD CONSTRAINT IF NOT EXISTS priority_range CHECK (priority BETWEEN -10 AND 10);
-- The claim index before priorities: claim_prio_idx does its work.
ALTER TABLE work_items DROP KEY IF EXISTS claim_idx;
-- Done rows are pruned by a sweep in id order (no index on finished_at: a completion would
-- pay for one).
ALTER TABLE work_items DROP KEY IF EXISTS finished_idx;
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS group_key VARCHAR(255) NULL DEFAULT NULL AFTER dedupe_until,
    ADD COLUMN IF NOT EXISTS group_seq BIGINT UNSIGNED NULL DEFAULT NULL AFTER group_key,
    ADD COLUMN IF NOT EXISTS group_live VARCHAR(255) AS
        (IF(state IN ('ready', 'claimed') AND period_s IS NULL, group_key, NULL)) STORED,
    ADD KEY IF NOT EXISTS group_idx (queue, group_live, id);

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

-- FIFO groups. Rows of a queue with the same non-NULL group_key (and no period_s: recurring
-- rows never finish, so they take no part) run one at a time, oldest id first. Of a group's
-- live rows (ready or claimed: group_live, indexed) only the oldest has a visible_at; the
-- others wait "parked" with visible_at NULL, outside the claim index's ranges, so claiming
-- stays one index range with SKIP LOCKED. When the running row finishes (done, or dead
-- after its last attempt; a retry keeps it the head and so holds the group), claimd gives
-- the next row its visible_at in the same transaction.
-- One row per group here: its lock orders the inserts of a group against each other and
-- against the finish of its running row, and last_seq numbers the group's rows (updated_at:
-- the last insert). A group with no live rows and no insert for --keep-done is forgotten by
-- the supervisor that prunes done rows; its numbers then start again at 1.
CREATE TABLE IF NOT EXISTS work_groups (
    queue       VARCHAR(64) NOT NULL,
    group_key   VARCHAR(255) NOT NULL,
    last_seq    BIGINT UNSIGNED NOT NULL DEFAULT 0,
    updated_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    PRIMARY KEY (queue, group_key),
    KEY updated_idx (updated_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- A row inserted as 'ready' becomes visible at its run_at (a column DEFAULT cannot read
-- another column's default, hence the trigger). Rows inserted in any other state are
-- not claimable. A grouped row takes its group's lock and number, and is parked if the
-- group has a live row already (a locking read: it sees rows committed a moment ago).
-- Every supervisor sharing the database, as it last said of itself: a row each, written at
-- start, refreshed every few seconds (in place of an idle poll), deleted at a clean stop. A row
-- not refreshed for 15 s is a lost supervisor (killed, or cut off from the database); lost
-- rows older than a day are deleted by the others.
CREATE TABLE IF NOT EXISTS supervisors (
    id          VARCHAR(128) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    pid         INT UNSIGNED NOT NULL,
    version     VARCHAR(32) NOT NULL,
    queues      VARCHAR(1100) NOT NULL,
    http        VARCHAR(80) NULL DEFAULT NULL,
    started_at  DATETIME(6) NOT NULL,
    seen_at     DATETIME(6) NOT NULL,
    workers     TEXT NOT NULL,             -- JSON: the pool as claimctl status --json has it
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

DELIMITER //
CREATE OR REPLACE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
BEGIN
    DECLARE live BIGINT UNSIGNED DEFAULT NULL;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET live = NULL;
    SET NEW.visible_at = IF(NEW.state = 'ready', NEW.run_at, NULL);
    IF NEW.group_key IS NOT NULL AND NEW.period_s IS NULL THEN
        INSERT INTO work_groups (queue, group_key, last_seq) VALUES (NEW.queue, NEW.group_key, 1)
            ON DUPLICATE KEY UPDATE last_seq = last_seq + 1;
        SET NEW.group_seq = (SELECT last_seq FROM work_groups
                             WHERE queue = NEW.queue AND group_key = NEW.group_key);
        SELECT id INTO live FROM work_items FORCE INDEX (group_idx)
            WHERE queue = NEW.queue AND group_live = NEW.group_key
            ORDER BY id LIMIT 1 LOCK IN SHARE MODE;
        IF live IS NOT NULL AND NEW.state = 'ready' THEN
            SET NEW.visible_at = NULL;
        END IF;
    END IF;
END//
DELIMITER ;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (1, 'base');
