-- claimd schema, migration 9: a queue's own retry back-off.
--
-- A failed row waits before its next attempt: base * 2^(attempt - 1), then +- jitter percent
-- at random, and never more than max. Without a setting (NULL, the default) a queue takes
-- claimd's: --retry-base (1 s), at most 1 h, +- 25 %. Set them with claimctl backoff NAME
-- [--base DUR] [--max DUR] [--jitter PCT] (--reset: all three NULL again), POST
-- /v1/queues/NAME/backoff?base=..&max=..&jitter=.., or SQL:
--     INSERT INTO queues (name, retry_base_ms, retry_max_ms, retry_jitter_pct)
--     VALUES ('mail', 5000, 600000, 0)
--     ON DUPLICATE KEY UPDATE retry_base_ms = 5000, retry_max_ms = 600000, retry_jitter_pct = 0;
-- A worker reads them with every claim (the same lookup as min_interval_ms), so a change
-- applies on every supervisor to the rows claimed after it; a row already running keeps what
-- its claim read.
--   retry_base_ms     the first retry's wait, 1 ms .. 7 days
--   retry_max_ms      the longest wait, 1 ms .. 7 days, not below retry_base_ms when both are set
--   retry_jitter_pct  0 .. 100: each wait is moved by up to this percent of it, either way
--                     (0: exact waits)
-- MariaDB adds a CHECK constraint only by copying the table: queues has a row per queue that
-- has settings, copied in milliseconds, its reads going on meanwhile.
ALTER TABLE queues
    ADD COLUMN IF NOT EXISTS retry_base_ms INT UNSIGNED NULL DEFAULT NULL AFTER next_start_at,
    ADD COLUMN IF NOT EXISTS retry_max_ms INT UNSIGNED NULL DEFAULT NULL AFTER retry_base_ms,
    ADD COLUMN IF NOT EXISTS retry_jitter_pct TINYINT UNSIGNED NULL DEFAULT NULL
        AFTER retry_max_ms,
    ADD CONSTRAINT IF NOT EXISTS retry_base_range
        CHECK (retry_base_ms BETWEEN 1 AND 604800000),
    ADD CONSTRAINT IF NOT EXISTS retry_max_range
        CHECK (retry_max_ms BETWEEN 1 AND 604800000 AND retry_max_ms >= retry_base_ms),
    ADD CONSTRAINT IF NOT EXISTS retry_jitter_range CHECK (retry_jitter_pct <= 100),
    ALGORITHM=COPY, LOCK=SHARED;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (9, 'queue_backoff');
