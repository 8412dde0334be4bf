-- The file's write log (raw.write_log; store/database.py).
-- name: read_write_state
SELECT generation, writer FROM raw.write_log ORDER BY generation DESC LIMIT 1;

-- name: log_write
INSERT INTO raw.write_log VALUES ($generation, $writer);
DELETE FROM raw.write_log WHERE generation <= $generation - $kept;

-- name: writes_since
SELECT generation, writer FROM raw.write_log WHERE generation > $generation ORDER BY generation;
