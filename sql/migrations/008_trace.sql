-- claimd schema, migration 8: trace context. A row may carry the W3C traceparent of the
-- request that added it ("00-<trace-id>-<parent-id>-<flags>", https://www.w3.org/TR/trace-context/):
-- an HTTP POST's traceparent header, claimctl add --traceparent, or a column value written
-- with SQL. claimd hands it to the handler (exec: the TRACEPARENT environment variable, pipe:
-- the request's "traceparent", so: job->traceparent) and names its trace id in the log lines
-- it writes about the row, so that the work shows up in the trace that asked for it.
ALTER TABLE work_items
    ADD COLUMN IF NOT EXISTS traceparent VARCHAR(55) NULL DEFAULT NULL AFTER content_type,
    ALGORITHM=INSTANT;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (8, 'trace');
