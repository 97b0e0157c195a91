-- claimd schema, migration 4: schedules. A schedule adds a row to work_items at each time its
-- cron expression names, in its time zone:
--     INSERT INTO schedules (name, cron, time_zone, queue, payload)
--     VALUES ('nightly-report', '30 2 * * *', 'Europe/Berlin', 'reports', '{"kind":"daily"}');
-- (or claimctl schedule, or PUT /v1/schedules/NAME). Exactly one row per tick, whichever
-- supervisors share the database: the supervisor that adds a tick's row moves next_tick_at on
-- in the same transaction, on the schedule's row locked (FOR UPDATE SKIP LOCKED); another
-- supervisor skips the locked row, and then finds the tick gone. No leader is elected.
--
--   cron         5 fields (minute hour day-of-month month day-of-week) or @hourly, @daily,
--                @weekly, @monthly, @yearly; claimd-schedules(7) has the rules, among them
--                what a change of the zone's clock does: a time in an hour the clock skips
--                runs at the jump, a time in an hour the clock repeats runs once
--   time_zone    an IANA name (Europe/Berlin), read from the system's tzdata; 'UTC' default
--   queue .. group_key, content_type: the columns of the rows it adds (as in work_items)
--   catch_up     ticks missed while no supervisor ran (or all were cut off from the
--                database): 'one' (default) adds one row for all of them, 'all' one per
--                missed tick (at most 1000 at a time), 'none' none (a tick more than 60 s
--                late is missed)
--   paused       1: no rows are added; on resume the schedule goes on from the next tick
--                (the ticks of the pause are not caught up)
--   next_tick_at the next tick (UTC), NULL until a supervisor has read the expression (and
--                again after cron, time_zone or paused change: the trigger below)
--   last_tick_at, last_item_id, ticks: the last tick a row was added for, that row, how many
--   error        why the schedule cannot run (an expression or zone claimd refuses, one that
--                never fires again); NULL when it runs. Cleared by a change of cron or zone.
CREATE TABLE IF NOT EXISTS schedules (
    name          VARCHAR(128) NOT NULL,
    cron          VARCHAR(255) NOT NULL,
    time_zone     VARCHAR(64) NOT NULL DEFAULT 'UTC',
    queue         VARCHAR(64) NOT NULL DEFAULT 'default',
    payload       MEDIUMBLOB NULL,
    content_type  VARCHAR(255) NULL DEFAULT NULL,
    priority      TINYINT NOT NULL DEFAULT 0,
    max_attempts  INT UNSIGNED NOT NULL DEFAULT 5,
    timeout_s     INT UNSIGNED NULL DEFAULT NULL,
    group_key     VARCHAR(255) NULL DEFAULT NULL,
    catch_up      ENUM('one', 'all', 'none') NOT NULL DEFAULT 'one',
    paused        TINYINT(1) NOT NULL DEFAULT 0,
    next_tick_at  TIMESTAMP(6) NULL DEFAULT NULL,
    last_tick_at  TIMESTAMP(6) NULL DEFAULT NULL,
    last_item_id  BIGINT UNSIGNED NULL DEFAULT NULL,
    ticks         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    error         VARCHAR(255) NULL DEFAULT NULL,
    created_at    TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at    TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                  ON UPDATE CURRENT_TIMESTAMP(6),
    PRIMARY KEY (name),
    KEY due_idx (next_tick_at),
    CONSTRAINT schedules_priority_range CHECK (priority BETWEEN -10 AND 10)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- A change of what a schedule's times are (or its resume) has them read again from now.
CREATE OR REPLACE TRIGGER schedules_changed BEFORE UPDATE ON schedules FOR EACH ROW
    SET NEW.next_tick_at = IF(NOT (NEW.cron <=> OLD.cron) OR NOT (NEW.time_zone <=> OLD.time_zone)
                              OR (OLD.paused = 1 AND NEW.paused = 0), NULL, NEW.next_tick_at),
        NEW.error = IF(NOT (NEW.cron <=> OLD.cron) OR NOT (NEW.time_zone <=> OLD.time_zone),
                       NULL, NEW.error);

INSERT IGNORE INTO claimd_schema (version, name) VALUES (4, 'schedules');
