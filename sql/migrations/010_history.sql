-- claimd schema, migration 10: the queues' history, per minute, for the whole cluster.
--
-- Every supervisor counts what its workers finish and writes it here, a row per queue and
-- minute of its own (supervisor_id is its row in supervisors, which is unique to one run of
-- one claimd), adding to the row at each flush (claimd --history-flush, 1 min by default, and
-- at a clean stop). GET /v1/stats and claimctl stats add up the supervisors' rows (and the
-- queues', unless one is named), so the history covers every host and survives restarts.
-- Maintenance deletes rows older than --keep-history (14 days by default).
--
--   minute          the minute's start, UTC (sessions of claimd are UTC), a whole minute
--   done            runs that ended done
--   retried         runs that failed and will run again
--   dead            runs that failed for good
--   run_sum_us      the handlers' run times of those runs added up, in microseconds
--   wait_sum_us     how long those rows had waited (claimable to claimed), added up
--   run0 .. run17   how many of those runs took, in seconds, up to 0.0005, 0.001, 0.0025,
--                   0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, and
--                   over 300 (run17): a histogram, not cumulative; buckets add up across
--                   supervisors, so a percentile of the sum is exact to a bucket
--   wait0 .. wait17 the same for the waits
--   flush_seq       the number of the flush that last added to the row: a flush that is sent
--                   again (its answer was lost) adds nothing the second time
CREATE TABLE IF NOT EXISTS queue_history (
    minute        DATETIME NOT NULL,
    queue         VARCHAR(64) NOT NULL,
    supervisor_id VARCHAR(128) NOT NULL,
    done          INT UNSIGNED NOT NULL DEFAULT 0,
    retried       INT UNSIGNED NOT NULL DEFAULT 0,
    dead          INT UNSIGNED NOT NULL DEFAULT 0,
    run_sum_us    BIGINT UNSIGNED NOT NULL DEFAULT 0,
    wait_sum_us   BIGINT UNSIGNED NOT NULL DEFAULT 0,
    run0 INT UNSIGNED NOT NULL DEFAULT 0, run1 INT UNSIGNED NOT NULL DEFAULT 0,
    run2 INT UNSIGNED NOT NULL DEFAULT 0, run3 INT UNSIGNED NOT NULL DEFAULT 0,
    run4 INT UNSIGNED NOT NULL DEFAULT 0, run5 INT UNSIGNED NOT NULL DEFAULT 0,
    run6 INT UNSIGNED NOT NULL DEFAULT 0, run7 INT UNSIGNED NOT NULL DEFAULT 0,
    run8 INT UNSIGNED NOT NULL DEFAULT 0, run9 INT UNSIGNED NOT NULL DEFAULT 0,
    run10 INT UNSIGNED NOT NULL DEFAULT 0, run11 INT UNSIGNED NOT NULL DEFAULT 0,
    run12 INT UNSIGNED NOT NULL DEFAULT 0, run13 INT UNSIGNED NOT NULL DEFAULT 0,
    run14 INT UNSIGNED NOT NULL DEFAULT 0, run15 INT UNSIGNED NOT NULL DEFAULT 0,
    run16 INT UNSIGNED NOT NULL DEFAULT 0, run17 INT UNSIGNED NOT NULL DEFAULT 0,
    wait0 INT UNSIGNED NOT NULL DEFAULT 0, wait1 INT UNSIGNED NOT NULL DEFAULT 0,
    wait2 INT UNSIGNED NOT NULL DEFAULT 0, wait3 INT UNSIGNED NOT NULL DEFAULT 0,
    wait4 INT UNSIGNED NOT NULL DEFAULT 0, wait5 INT UNSIGNED NOT NULL DEFAULT 0,
    wait6 INT UNSIGNED NOT NULL DEFAULT 0, wait7 INT UNSIGNED NOT NULL DEFAULT 0,
    wait8 INT UNSIGNED NOT NULL DEFAULT 0, wait9 INT UNSIGNED NOT NULL DEFAULT 0,
    wait10 INT UNSIGNED NOT NULL DEFAULT 0, wait11 INT UNSIGNED NOT NULL DEFAULT 0,
    wait12 INT UNSIGNED NOT NULL DEFAULT 0, wait13 INT UNSIGNED NOT NULL DEFAULT 0,
    wait14 INT UNSIGNED NOT NULL DEFAULT 0, wait15 INT UNSIGNED NOT NULL DEFAULT 0,
    wait16 INT UNSIGNED NOT NULL DEFAULT 0, wait17 INT UNSIGNED NOT NULL DEFAULT 0,
    flush_seq     BIGINT UNSIGNED NOT NULL DEFAULT 0,
    -- a time range (of one queue or all) is a range of the key; pruning too
    PRIMARY KEY (minute, queue, supervisor_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (10, 'history');
