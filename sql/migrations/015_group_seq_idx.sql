-- claimd schema, migration 15: a FIFO group's next row found by its number.
--
-- A row of a FIFO group (a key run one at a time, migration 1) has its number in the group,
-- group_seq, given by the insert trigger under the group's lock: the next row added to the
-- group has the next number. When a row finishes, its group's next row is the one numbered
-- one more, if that one is live; else (it was cancelled or deleted while it waited) the
-- oldest live row by group_idx, as before. group_idx alone made that a walk from the
-- group's head through the entries of its finished rows, which stay in the index,
-- delete-marked, until the server's purge removes them (with 100 keys at 5,000 rows/s,
-- ~70 pages a row); group_seq_idx makes it one lookup. Its columns do not change while a
-- row lives, so claims and finishes do not write it. Built in place, online.
--
-- A dead row put back into its group (claimctl retry, the job browser's retry) goes ahead
-- of the rows waiting there, as the oldest; its group is marked (work_groups.put_back) and
-- from then on finds its next row by the walk, until the group is forgotten. A dead row
-- put back with plain SQL is not marked: it starts when its group has no other row left.
-- Idempotent.

ALTER TABLE work_items ADD KEY IF NOT EXISTS group_seq_idx (queue, group_key, group_seq),
    ALGORITHM=INPLACE, LOCK=NONE;

ALTER TABLE work_groups
    ADD COLUMN IF NOT EXISTS put_back TINYINT(1) NOT NULL DEFAULT 0 AFTER next_start_at,
    ALGORITHM=INSTANT;

INSERT IGNORE INTO claimd_schema (version, name) VALUES (15, 'group_seq_idx');
