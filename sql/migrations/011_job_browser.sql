-- claimd schema, migration 11: each failed attempt's error, for the job browser.
--
-- last_error holds a row's latest error only; a row that failed twice and then died showed
-- the last of the three. attempt_errors keeps each failed attempt's error and time, written
-- in the transaction that records the failure (a handler's error, a time-out, a cancel, a
-- worker that died while running it) by one INSERT, never by a success: the success path
-- writes nothing more. Bounded per row: a ring of 20 slots (slot = attempt % 20), so a row
-- keeps its newest 20 attempts' errors (a retried row's new attempts take the slots of its
-- old ones), each cut to 1000 characters (last_error keeps up to 4000 bytes). Deleted with
-- the row when claimd deletes it (cancel, a bulk discard) and by the sweep that prunes done
-- and dead rows (which also removes the errors of rows deleted with plain SQL, in the spans
-- of ids it sweeps). Read it with
--     SELECT attempt, failed_at, error FROM attempt_errors WHERE item_id = N ORDER BY failed_at;
-- or claimctl job N, GET /v1/jobs/N.
--   item_id    work_items.id
--   slot       attempt % 20: the place in the row's ring
--   attempt    the row's attempts when it failed (1 for the first run; a retry of a dead row
--              starts again from 1)
--   failed_at  when the attempt's failure was recorded (the database's clock, UTC)
--   error      the attempt's error (as last_error had it), NULL when the handler gave none
CREATE TABLE IF NOT EXISTS attempt_errors (
    item_id     BIGINT UNSIGNED NOT NULL,
    slot        TINYINT UNSIGNED NOT NULL,
    attempt     INT UNSIGNED NOT NULL,
    failed_at   TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    error       VARCHAR(1000) NULL DEFAULT NULL,
    PRIMARY KEY (item_id, slot)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (11, 'job_browser');
