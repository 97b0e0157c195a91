-- claimd schema, migration 7: cancelling a running row.
--
-- claimctl cancel ID, or DELETE /v1/jobs/ID, on a claimed row cannot delete it (a worker runs
-- it): it writes the request instead, and the supervisor that runs the row notices it within
-- a second and stops its handler.
--   cancel_requested_at  when the cancel was asked for; NULL: never. A request is live while
--                        the row did not finish after it (finished_at NULL or older): its
--                        next outcome, a success included, makes it dead with cancel_reason
--                        as its last_error, with no retry; a row claimed again after its
--                        lease ran out (its supervisor died) is not run but made dead the
--                        same way. A run whose success was written before the request stays
--                        done (a recurring row goes on: the request is stale once the row
--                        finished after it).
--   cancel_reason        "cancelled (DELETE /v1/jobs)", "cancelled (claimctl cancel)"
-- Both are instant ADD COLUMNs: nothing is rebuilt.
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS cancel_requested_at TIMESTAMP(6) NULL DEFAULT NULL,
    ADD COLUMN IF NOT EXISTS cancel_reason VARCHAR(255) NULL DEFAULT NULL,
    ALGORITHM=INSTANT;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (7, 'cancel');
