-- The pipeline runner's step records (raw.step_records; cultivar_assets/store/step_records.py).

-- name: read_step_records
SELECT step, inputs, outputs, token, seconds, recorded_at FROM raw.step_records ORDER BY step;

-- name: put_step_record
DELETE FROM raw.step_records WHERE step = $step;
INSERT INTO raw.step_records VALUES ($step, $inputs, $outputs, $token, $seconds, $recorded_at);

-- name: forget_step_record
DELETE FROM raw.step_records WHERE step = $step;

-- Run inside every write made outside the runner's steps (store/database.py).
-- name: forget_step_records
DELETE FROM raw.step_records;

-- The file's write generation (raw.write_state; store/database.py).
-- name: read_write_state
SELECT generation, writer FROM raw.write_state;

-- name: set_write_state
DELETE FROM raw.write_state;
INSERT INTO raw.write_state VALUES ($generation, $writer);

