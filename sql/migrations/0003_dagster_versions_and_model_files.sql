-- Migration 2 -> 3. Never edit this file: a later change is a new migration.
-- (1) The project's own reuse records go (Dagster's stale status decides what a pipeline run
-- materialises): raw.step_records and raw.step_runs are dropped. The one-row write state becomes
-- a log of writes (raw.write_log), starting with the file's last write.
-- (2) raw.model_files, new and empty, records which files of the storage root the loading asset
-- (model_results) last loaded for each model (sql/schema.sql).

DROP VIEW IF EXISTS main.step_records;  -- the public view of the records
DROP TABLE raw.step_records;
DROP TABLE raw.step_runs;

CREATE TABLE raw.write_log (
    generation BIGINT PRIMARY KEY,
    writer     VARCHAR NOT NULL
);
INSERT INTO raw.write_log SELECT generation, writer FROM raw.write_state;
DROP TABLE raw.write_state;

CREATE TABLE raw.model_files (
    model_id            VARCHAR PRIMARY KEY,
    translations_digest VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/translations.json
    scores_digest       VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/scores.json
    loaded_at           TIMESTAMP NOT NULL  -- UTC
);
