-- Migration 2 -> 3: raw.model_files, new and empty, records which files of the storage root the
-- loading asset (model_results) last loaded for each model (sql/schema.sql). Never edit this
-- file: a later change is a new migration.

CREATE TABLE raw.model_files (
    model_id            VARCHAR PRIMARY KEY,
    translations_digest VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/translations.json
    scores_digest       VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/scores.json
    loaded_at           TIMESTAMP NOT NULL  -- UTC
);
