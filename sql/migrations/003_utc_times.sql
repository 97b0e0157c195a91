-- claimd schema, migration 3: every time is a TIMESTAMP(6), a point in time, not a wall-clock
-- reading. Before it the times were DATETIME(6) written by NOW(6) in the server's time zone:
-- where that zone has daylight saving time, the clock jumps an hour forward in spring (every
-- lease looked expired at once, and running rows were claimed again) and back in autumn (every
-- lease, delay and back-off written in the hour before held an hour too long). A TIMESTAMP is
-- stored in UTC and shown in each session's time zone: claimd's sessions run in UTC ('+00:00',
-- no jumps), and an application that writes run_at = NOW() + INTERVAL 5 MINUTE in its own zone
-- still gets five minutes (an interval that spans a change of that zone's clock, added to its
-- wall-clock reading, is an hour off: write it in UTC, or as claimctl add --delay).
--
-- The range: MariaDB's TIMESTAMP (before 11.5) holds 1970-01-01 00:00:01 to 2038-01-19
-- 03:14:07.999999 UTC. The insert trigger refuses a run_at outside it with an error (SQLSTATE
-- 22003), also where sql_mode is not strict and the server would store a zero instead;
-- claimctl add and the HTTP API refuse it before asking. A recurring row whose next run would
-- fall beyond it runs at the range's last second.
--
-- Existing values are read in the zone they were written in: the server's, @@GLOBAL.time_zone
-- when this migration runs (set @claimd_old_time_zone first, in the same session, if claimd
-- ran in another: SET @claimd_old_time_zone = 'Europe/Berlin'; then the migration). A value
-- inside an hour the clock skipped becomes the moment of the change; one inside an hour the
-- clock repeated is taken as its first pass. A row of work_items with a time outside the range
-- stops the migration with an error naming it, before anything is changed: fix or delete it,
-- then run the migration again. The claim index (queue, priority, visible_at, id) gets 1 byte
-- smaller per entry (a TIMESTAMP(6) takes 7 bytes, a DATETIME(6) 8).
--
-- Online: MariaDB changes a column's type only by copying the table, under a lock that stops
-- its writes for as long (minutes for millions of rows). work_items and work_groups are not
-- copied. Each time column gets a new TIMESTAMP(6) column beside it (<name>_m3, INVISIBLE:
-- SELECT * and an INSERT without a column list do not see it; an instant ADD COLUMN); triggers
-- keep it equal to the old one in every row inserted or updated from then on, in the zone of
-- the session that writes (claimd's and, as a rule, the application's: the server's); the rows
-- there were are copied in batches of ids (claimd --migrate says how far it got); the indexes
-- that hold a time are built again on the new columns (online: inserts and updates go on);
-- then one instant ALTER swaps the names of the old and the new columns and of the old and the
-- new indexes, and the old ones are dropped. claimd (of any version) goes on claiming and
-- finishing rows meanwhile, and the application inserting them. queues, supervisors and
-- claimd_schema, a row per queue, per running claimd and per migration, are copied (a
-- handful of rows, milliseconds under a shared lock).
--
-- Idempotent and resumable: what each table needs is read from its columns' types. Stopped
-- anywhere, run again it goes on: the new columns, triggers and indexes that are there are
-- kept, the batches skip rows copied already (a new column still at its first value,
-- FROM_UNIXTIME(1)), and after the swap only the clean-up is left. Loaded again once done, it
-- changes nothing. Loaded with the mariadb client, each batched statement runs once over the
-- whole table.

SET @claimd_sql_mode = @@SESSION.sql_mode,
    @claimd_time_zone = @@SESSION.time_zone,
    SESSION time_zone = COALESCE(@claimd_old_time_zone, @@GLOBAL.time_zone);

-- What is left to do: a table whose time columns are still DATETIMEs.
SET @claimd_m3_items = IFNULL((SELECT DATA_TYPE = 'datetime' FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'work_items' AND COLUMN_NAME = 'run_at'), 0),
    @claimd_m3_groups = IFNULL((SELECT DATA_TYPE = 'datetime' FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'work_groups'
          AND COLUMN_NAME = 'updated_at'), 0);

DELIMITER //
IF @claimd_m3_items THEN
    -- SELECT ... INTO, a plain read: SET @v = (SELECT ...) would lock every row it reads.
    SELECT GROUP_CONCAT(id ORDER BY id SEPARATOR ', ') INTO @claimd_bad FROM (
        SELECT id FROM work_items
        WHERE (run_at IS NOT NULL AND UNIX_TIMESTAMP(run_at) IS NULL)
           OR (dedupe_until IS NOT NULL AND UNIX_TIMESTAMP(dedupe_until) IS NULL)
           OR (visible_at IS NOT NULL AND UNIX_TIMESTAMP(visible_at) IS NULL)
           OR (claimed_at IS NOT NULL AND UNIX_TIMESTAMP(claimed_at) IS NULL)
           OR (finished_at IS NOT NULL AND UNIX_TIMESTAMP(finished_at) IS NULL)
           OR (created_at IS NOT NULL AND UNIX_TIMESTAMP(created_at) IS NULL)
        ORDER BY id LIMIT 20) AS bad;
    IF @claimd_bad IS NOT NULL THEN
        SET @claimd_bad = CONCAT('claimd migration 3: work_items rows with a time outside ',
            '1970-01-01 00:00:01 .. 2038-01-19 03:14:07 UTC, which a TIMESTAMP cannot hold ',
            '(ids ', @claimd_bad, '): change or delete them, then migrate again');
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = @claimd_bad;
    END IF;
END IF//
DELIMITER ;

-- Not strict: a value inside a skipped hour becomes the moment of the change (a warning), not
-- an error, in the batches and, as the triggers keep the sql_mode they were made in, in the
-- triggers too. Values out of range were refused above.
SET SESSION sql_mode = '';

-- work_items. 1: the new columns.
DELIMITER //
IF @claimd_m3_items THEN
    ALTER TABLE work_items
        ADD COLUMN IF NOT EXISTS run_at_m3 TIMESTAMP(6) NOT NULL DEFAULT FROM_UNIXTIME(1)
            INVISIBLE AFTER run_at,
        ADD COLUMN IF NOT EXISTS dedupe_until_m3 TIMESTAMP(6) NULL DEFAULT NULL
            INVISIBLE AFTER dedupe_until,
        ADD COLUMN IF NOT EXISTS visible_at_m3 TIMESTAMP(6) NULL DEFAULT NULL
            INVISIBLE AFTER visible_at,
        ADD COLUMN IF NOT EXISTS claimed_at_m3 TIMESTAMP(6) NULL DEFAULT NULL
            INVISIBLE AFTER claimed_at,
        ADD COLUMN IF NOT EXISTS finished_at_m3 TIMESTAMP(6) NULL DEFAULT NULL
            INVISIBLE AFTER finished_at,
        ADD COLUMN IF NOT EXISTS created_at_m3 TIMESTAMP(6) NOT NULL DEFAULT FROM_UNIXTIME(1)
            INVISIBLE AFTER created_at,
        ALGORITHM=INSTANT;
END IF//

-- 2: the triggers that keep them equal to the old ones in every row written from now on (the
-- insert trigger after work_items_bi, which sets visible_at).
IF @claimd_m3_items THEN
    EXECUTE IMMEDIATE 'CREATE OR REPLACE TRIGGER work_items_m3_bi BEFORE INSERT ON work_items
        FOR EACH ROW FOLLOWS work_items_bi
        SET NEW.run_at_m3 = NEW.run_at, NEW.dedupe_until_m3 = NEW.dedupe_until,
            NEW.visible_at_m3 = NEW.visible_at, NEW.claimed_at_m3 = NEW.claimed_at,
            NEW.finished_at_m3 = NEW.finished_at, NEW.created_at_m3 = NEW.created_at';
    EXECUTE IMMEDIATE 'CREATE OR REPLACE TRIGGER work_items_m3_bu BEFORE UPDATE ON work_items
        FOR EACH ROW
        SET NEW.run_at_m3 = NEW.run_at, NEW.dedupe_until_m3 = NEW.dedupe_until,
            NEW.visible_at_m3 = NEW.visible_at, NEW.claimed_at_m3 = NEW.claimed_at,
            NEW.finished_at_m3 = NEW.finished_at, NEW.created_at_m3 = NEW.created_at';
END IF//

-- 3: the rows there were, in batches (a row not copied yet has created_at_m3 at its first
-- value; an update copies a row itself).
-- claimd-batches: work_items id if @claimd_m3_items
IF @claimd_m3_items THEN
    UPDATE work_items
       SET run_at_m3 = run_at, dedupe_until_m3 = dedupe_until, visible_at_m3 = visible_at,
           claimed_at_m3 = claimed_at, finished_at_m3 = finished_at, created_at_m3 = created_at
     WHERE id BETWEEN IFNULL(@claimd_lo, 0) AND IFNULL(@claimd_hi, 18446744073709551615)
       AND created_at_m3 = FROM_UNIXTIME(1);
END IF//

-- 4: the indexes on the new columns, built online.
IF @claimd_m3_items THEN
    ALTER TABLE work_items
        ADD KEY IF NOT EXISTS claim_prio_idx_m3 (queue, priority, visible_at_m3, id),
        ADD KEY IF NOT EXISTS dedupe_expiry_idx_m3 (dedupe_until_m3),
        ALGORITHM=INPLACE, LOCK=NONE;
END IF//

-- 5: the swap, instant: the new columns and indexes take the names (and the old ones the
-- _m3 names, where the triggers go on writing them until they are dropped below).
IF @claimd_m3_items THEN
    ALTER TABLE work_items
        CHANGE COLUMN run_at run_at_m3 DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
            INVISIBLE,
        CHANGE COLUMN run_at_m3 run_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        CHANGE COLUMN dedupe_until dedupe_until_m3 DATETIME(6) NULL DEFAULT NULL INVISIBLE,
        CHANGE COLUMN dedupe_until_m3 dedupe_until TIMESTAMP(6) NULL DEFAULT NULL,
        CHANGE COLUMN visible_at visible_at_m3 DATETIME(6) NULL DEFAULT NULL INVISIBLE,
        CHANGE COLUMN visible_at_m3 visible_at TIMESTAMP(6) NULL DEFAULT NULL,
        CHANGE COLUMN claimed_at claimed_at_m3 DATETIME(6) NULL DEFAULT NULL INVISIBLE,
        CHANGE COLUMN claimed_at_m3 claimed_at TIMESTAMP(6) NULL DEFAULT NULL,
        CHANGE COLUMN finished_at finished_at_m3 DATETIME(6) NULL DEFAULT NULL INVISIBLE,
        CHANGE COLUMN finished_at_m3 finished_at TIMESTAMP(6) NULL DEFAULT NULL,
        CHANGE COLUMN created_at created_at_m3 DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
            INVISIBLE,
        CHANGE COLUMN created_at_m3 created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        RENAME KEY claim_prio_idx TO claim_prio_idx_m3,
        RENAME KEY claim_prio_idx_m3 TO claim_prio_idx,
        RENAME KEY dedupe_expiry_idx TO dedupe_expiry_idx_m3,
        RENAME KEY dedupe_expiry_idx_m3 TO dedupe_expiry_idx,
        ALGORITHM=INSTANT;
END IF//
DELIMITER ;

-- 6: the old columns, their indexes and the triggers go.
DROP TRIGGER IF EXISTS work_items_m3_bi;
DROP TRIGGER IF EXISTS work_items_m3_bu;
ALTER TABLE work_items
    DROP KEY IF EXISTS claim_prio_idx_m3,
    DROP KEY IF EXISTS dedupe_expiry_idx_m3,
    ALGORITHM=NOCOPY, LOCK=NONE;
ALTER TABLE work_items
    DROP COLUMN IF EXISTS run_at_m3,
    DROP COLUMN IF EXISTS dedupe_until_m3,
    DROP COLUMN IF EXISTS visible_at_m3,
    DROP COLUMN IF EXISTS claimed_at_m3,
    DROP COLUMN IF EXISTS finished_at_m3,
    DROP COLUMN IF EXISTS created_at_m3,
    ALGORITHM=INSTANT;

-- work_groups (a row per FIFO group and key: as many as work_items, for some), the same way,
-- in batches of updated_at (its index: the table has no single-column key), which a row keeps
-- as it is copied.
DELIMITER //
IF @claimd_m3_groups THEN
    ALTER TABLE work_groups
        ADD COLUMN IF NOT EXISTS updated_at_m3 TIMESTAMP(6) NOT NULL DEFAULT FROM_UNIXTIME(1)
            INVISIBLE AFTER updated_at,
        ALGORITHM=INSTANT;
END IF//
IF @claimd_m3_groups THEN
    EXECUTE IMMEDIATE 'CREATE OR REPLACE TRIGGER work_groups_m3_bi BEFORE INSERT ON work_groups
        FOR EACH ROW SET NEW.updated_at_m3 = NEW.updated_at';
    EXECUTE IMMEDIATE 'CREATE OR REPLACE TRIGGER work_groups_m3_bu BEFORE UPDATE ON work_groups
        FOR EACH ROW SET NEW.updated_at_m3 = NEW.updated_at';
END IF//
-- claimd-batches: work_groups updated_at if @claimd_m3_groups
IF @claimd_m3_groups THEN
    UPDATE work_groups SET updated_at_m3 = updated_at, updated_at = updated_at
     WHERE updated_at BETWEEN IFNULL(@claimd_lo, '1000-01-01')
                          AND IFNULL(@claimd_hi, '9999-12-31 23:59:59.999999')
       AND updated_at_m3 = FROM_UNIXTIME(1);
END IF//
IF @claimd_m3_groups THEN
    ALTER TABLE work_groups ADD KEY IF NOT EXISTS updated_idx_m3 (updated_at_m3),
        ALGORITHM=INPLACE, LOCK=NONE;
END IF//
IF @claimd_m3_groups THEN
    ALTER TABLE work_groups
        CHANGE COLUMN updated_at updated_at_m3 DATETIME(6) NOT NULL
            DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6) INVISIBLE,
        CHANGE COLUMN updated_at_m3 updated_at TIMESTAMP(6) NOT NULL
            DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
        RENAME KEY updated_idx TO updated_idx_m3,
        RENAME KEY updated_idx_m3 TO updated_idx,
        ALGORITHM=INSTANT;
END IF//
DELIMITER ;
DROP TRIGGER IF EXISTS work_groups_m3_bi;
DROP TRIGGER IF EXISTS work_groups_m3_bu;
ALTER TABLE work_groups DROP KEY IF EXISTS updated_idx_m3, ALGORITHM=NOCOPY, LOCK=NONE;
ALTER TABLE work_groups DROP COLUMN IF EXISTS updated_at_m3, ALGORITHM=INSTANT;

-- The small tables, copied.
DELIMITER //
IF (SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
    AND TABLE_NAME = 'queues' AND COLUMN_NAME = 'next_start_at') = 'datetime' THEN
    ALTER TABLE queues
        MODIFY COLUMN next_start_at TIMESTAMP(6) NULL DEFAULT NULL,
        MODIFY COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
            ON UPDATE CURRENT_TIMESTAMP(6),
        ALGORITHM=COPY, LOCK=SHARED;
END IF//
IF (SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
    AND TABLE_NAME = 'supervisors' AND COLUMN_NAME = 'seen_at') = 'datetime' THEN
    ALTER TABLE supervisors
        MODIFY COLUMN started_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        MODIFY COLUMN seen_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        ALGORITHM=COPY, LOCK=SHARED;
END IF//
IF (SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
    AND TABLE_NAME = 'claimd_schema' AND COLUMN_NAME = 'applied_at') = 'datetime' THEN
    ALTER TABLE claimd_schema
        MODIFY COLUMN applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
        ALGORITHM=COPY, LOCK=SHARED;
END IF//
DELIMITER ;

SET SESSION sql_mode = @claimd_sql_mode, SESSION time_zone = @claimd_time_zone;

-- The insert trigger as migration 1 made it, and a run_at outside the TIMESTAMP's range is
-- refused: a strict server refuses it itself, any other would store zero and run it at once.
-- Replaced in one statement: an insert finds the old trigger or the new one, never none.
DELIMITER //
CREATE OR REPLACE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
BEGIN
    DECLARE live BIGINT UNSIGNED DEFAULT NULL;
    DECLARE CONTINUE HANDLER FOR NOT FOUND SET live = NULL;
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
        SELECT id INTO live FROM work_items FORCE INDEX (group_idx)
            WHERE queue = NEW.queue AND group_live = NEW.group_key
            ORDER BY id LIMIT 1 LOCK IN SHARE MODE;
        IF live IS NOT NULL AND NEW.state = 'ready' THEN
            SET NEW.visible_at = NULL;
        END IF;
    END IF;
END//
DELIMITER ;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (3, 'utc_times');
