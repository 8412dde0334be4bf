-- The step records (raw.step_records, raw.step_runs; cultivar_assets/store/step_records.py).

-- name: read_step_records
SELECT step, inputs, outputs, token, seconds, recorded_at, input_values, run_id
FROM raw.step_records ORDER BY step;

-- name: put_step_record
INSERT OR REPLACE INTO raw.step_records
    (step, inputs, outputs, token, seconds, recorded_at, input_values, run_id)
VALUES ($step, $inputs, $outputs, $token, $seconds, $recorded_at, $input_values, $run_id);
DELETE FROM raw.step_runs WHERE step = $step;

-- name: forget_step_record
DELETE FROM raw.step_records WHERE step = $step;

-- Run inside every write made outside the runner's steps and outside a Dagster run's steps
-- (store/database.py).
-- name: forget_step_records
DELETE FROM raw.step_records;
DELETE FROM raw.step_runs;

-- Run inside every write of a runner's step: no Dagster run can record that step from rows it
-- noted before.
-- name: forget_step_runs
DELETE FROM raw.step_runs WHERE step = $step;

-- Run inside every write made for steps of a Dagster run launched outside the runner: those
-- steps' records are forgotten, and so is what other runs noted of them.
-- name: forget_steps
DELETE FROM raw.step_records WHERE list_contains($steps, step);
DELETE FROM raw.step_runs WHERE list_contains($steps, step) AND run_id <> $run_id;

-- An asset of a step starts in a Dagster run (steps/launched_runs.py).
-- name: start_step_run
INSERT OR REPLACE INTO raw.step_runs VALUES ($step, $run_id, $asset, $inputs, $started_at, false);

-- The asset succeeded; when every asset of the step is done in this run, each with the
-- fingerprint the step has now, the step gets its record (and its rows go).
-- name: finish_step_run
UPDATE raw.step_runs SET done = true
WHERE step = $step AND run_id = $run_id AND asset = $asset;
INSERT OR REPLACE INTO raw.step_records
    (step, inputs, outputs, token, seconds, recorded_at, input_values, run_id)
SELECT $step, $inputs, $outputs, $token,
       epoch($recorded_at) - epoch(min(started_at)), $recorded_at, $input_values, $run_id
FROM raw.step_runs WHERE step = $step AND run_id = $run_id
HAVING count(*) FILTER (WHERE done AND inputs = $inputs AND list_contains($assets, asset))
       = len($assets);
DELETE FROM raw.step_runs WHERE step = $step AND run_id = $run_id
    AND EXISTS (SELECT 1 FROM raw.step_records WHERE step = $step AND token = $token);

-- The file's write generation (raw.write_state; store/database.py).
-- name: read_write_state
SELECT generation, writer FROM raw.write_state;

-- name: set_write_state
DELETE FROM raw.write_state;
INSERT INTO raw.write_state VALUES ($generation, $writer);

-- What Dagster runs noted of a step (tests, and `cultivar query` by hand).
-- name: read_step_runs_of
SELECT step, run_id, asset, inputs, started_at, done FROM raw.step_runs WHERE step = $step
ORDER BY run_id, asset;
