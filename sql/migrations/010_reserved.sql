-- claimd schema, migration 10: its number is held for another change being made at the same
-- time; this file stands in for it until that change is merged, and changes nothing.
INSERT IGNORE INTO claimd_schema (version, name) VALUES (10, 'reserved');
