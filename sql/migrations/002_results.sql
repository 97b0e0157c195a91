-- claimd schema, migration 2: what a job says of itself (the HTTP API and the dashboard show
-- them):
--   content_type  the payload's type as its producer gave it (an HTTP POST's Content-Type),
--                 handed to the handler; NULL for rows inserted without one
--   result        what a successful run returned (a pipe: reply's "result", an exec:
--                 handler's stdout with --exec-result, a so: plugin's set_result), at most
--                 64 KiB; result_type says what it is (application/json for pipe:)
--   progress      the last progress a running handler reported: JSON text, at most 1 KiB,
--                 written at most once a second per row; cleared when the row is claimed
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS content_type VARCHAR(255) NULL DEFAULT NULL AFTER payload,
    ADD COLUMN IF NOT EXISTS result MEDIUMBLOB NULL DEFAULT NULL AFTER last_error,
    ADD COLUMN IF NOT EXISTS result_type VARCHAR(255) NULL DEFAULT NULL AFTER result,
    ADD COLUMN IF NOT EXISTS progress VARCHAR(1024) NULL DEFAULT NULL AFTER result_type,
    ALGORITHM=INSTANT;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (2, 'results');
