-- Named statements of the annotation ingest (cultivar_assets/store/annotation_records.py).
-- Blocks that insert read from a relation named "staging", registered by the caller; a locale's
-- rows are replaced in one transaction (Store.write), never merged with an older file's.

-- name: delete_locale_annotations
DELETE FROM raw.annotations WHERE locale = $locale;
DELETE FROM raw.annotation_files WHERE locale = $locale;

-- name: insert_annotation_files
INSERT INTO raw.annotation_files BY NAME SELECT * FROM staging;

-- name: insert_annotations
INSERT INTO raw.annotations BY NAME SELECT * FROM staging;

-- name: annotation_summary
SELECT * FROM annotation_summary ORDER BY locale;

-- name: locale_annotations
SELECT * FROM annotations WHERE locale = $locale ORDER BY instance_id;
