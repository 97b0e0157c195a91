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
-- then run the migration again. The ALTERs rebuild the tables (as long as copying them takes):
-- stop claimd meanwhile. The claim index (queue, priority, visible_at, id) gets 1 byte
-- smaller per entry (a TIMESTAMP(6) takes 7 bytes, a DATETIME(6) 8).
--
-- Idempotent: once the columns are TIMESTAMPs, the check finds nothing to check and the ALTERs
-- copy TIMESTAMPs as they are, whatever the session's zone.

SET @claimd_sql_mode = @@SESSION.sql_mode,
    @claimd_time_zone = @@SESSION.time_zone,
    SESSION time_zone = COALESCE(@claimd_old_time_zone, @@GLOBAL.time_zone);

DELIMITER //
IF (SELECT DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
    AND TABLE_NAME = 'work_items' AND COLUMN_NAME = 'run_at') = 'datetime' THEN
    SET @claimd_bad = (SELECT GROUP_CONCAT(id ORDER BY id SEPARATOR ', ') FROM (
        SELECT id FROM work_items
        WHERE (run_at IS NOT NULL AND UNIX_TIMESTAMP(run_at) IS NULL)
           OR (dedupe_until IS NOT NULL AND UNIX_TIMESTAMP(dedupe_until) IS NULL)
           OR (visible_at IS NOT NULL AND UNIX_TIMESTAMP(visible_at) IS NULL)
           OR (claimed_at IS NOT NULL AND UNIX_TIMESTAMP(claimed_at) IS NULL)
           OR (finished_at IS NOT NULL AND UNIX_TIMESTAMP(finished_at) IS NULL)
           OR (created_at IS NOT NULL AND UNIX_TIMESTAMP(created_at) IS NULL)
        ORDER BY id LIMIT 20) AS bad);
    IF @claimd_bad IS NOT NULL THEN
        SET @claimd_bad = CONCAT('claimd migration 3: work_items rows with a time outside ',
            '1970-01-01 00:00:01 .. 2038-01-19 03:14:07 UTC, which a TIMESTAMP cannot hold ',
            '(ids ', @claimd_bad, '): change or delete them, then migrate again');
        SIGNAL SQLSTATE '22003' SET MESSAGE_TEXT = @claimd_bad;
    END IF;
END IF//
DELIMITER ;

-- Not strict: a value inside a skipped hour becomes the moment of the change (a warning), not
-- an error. Values out of range were refused above.
SET SESSION sql_mode = '';

ALTER TABLE work_items
    MODIFY COLUMN run_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    MODIFY COLUMN dedupe_until TIMESTAMP(6) NULL DEFAULT NULL,
    MODIFY COLUMN visible_at TIMESTAMP(6) NULL DEFAULT NULL,
    MODIFY COLUMN finished_at TIMESTAMP(6) NULL DEFAULT NULL,
    MODIFY COLUMN created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);
-- claimed_at too, unless migration 12 has made it a generated column (this file loaded
-- again): that one is a TIMESTAMP(6) already, and MODIFY cannot change a generated column.
SET @claimd_q = IF((SELECT EXTRA FROM information_schema.COLUMNS
                    WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'work_items'
                      AND COLUMN_NAME = 'claimed_at') LIKE '%GENERATED%', 'DO 0',
    'ALTER TABLE work_items MODIFY COLUMN claimed_at TIMESTAMP(6) NULL DEFAULT NULL');
PREPARE claimd_stmt FROM @claimd_q;
EXECUTE claimd_stmt;
DEALLOCATE PREPARE claimd_stmt;
ALTER TABLE queues
    MODIFY COLUMN next_start_at TIMESTAMP(6) NULL DEFAULT NULL,
    MODIFY COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
        ON UPDATE CURRENT_TIMESTAMP(6);
ALTER TABLE work_groups
    MODIFY COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
        ON UPDATE CURRENT_TIMESTAMP(6);
ALTER TABLE supervisors
    MODIFY COLUMN started_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    MODIFY COLUMN seen_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);
ALTER TABLE claimd_schema
    MODIFY COLUMN applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);

SET SESSION sql_mode = @claimd_sql_mode, SESSION time_zone = @claimd_time_zone;

-- The insert trigger as migration 1 made it, and a run_at outside the TIMESTAMP's range is
-- refused: a strict server refuses it itself, any other would store zero and run it at once.
DROP TRIGGER IF EXISTS work_items_bi;
DELIMITER //
CREATE TRIGGER work_items_bi BEFORE INSERT ON work_items FOR EACH ROW
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
