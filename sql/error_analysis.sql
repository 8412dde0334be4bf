-- Named statements of the error analysis (cultivar_assets/error_analysis/sample.py and
-- error_store.py). Blocks that insert read from a relation named "staging", registered by the
-- caller; the whole analysis is replaced in one transaction (Store.write).

-- The translations of one test set by every model (the sample of a locale).
-- name: locale_translations
SELECT model_id, segment_id, hypothesis FROM raw.translations
WHERE test_set = $test_set ORDER BY model_id, segment_id;

-- name: replace_error_analysis
DELETE FROM raw.error_annotations;
DELETE FROM raw.error_files;
DELETE FROM raw.error_analysis_settings;

-- name: insert_error_files
INSERT INTO raw.error_files BY NAME SELECT * FROM staging;

-- name: insert_error_annotations
INSERT INTO raw.error_annotations BY NAME SELECT * FROM staging;

-- name: insert_error_analysis_settings
INSERT INTO raw.error_analysis_settings BY NAME SELECT * FROM staging;

-- name: error_table5
SELECT * FROM error_table5;

-- name: error_correlations
SELECT * FROM error_correlations;
