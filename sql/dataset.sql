-- Named statements of the built dataset (cultivar_assets/construction/dataset.py) and what the
-- publication reads of it. Blocks that insert read from a relation named "staging".

-- name: replace_dataset_build
DELETE FROM raw.dataset_build;
DELETE FROM raw.built_instances;
DELETE FROM raw.built_table1;

-- name: insert_dataset_build
INSERT INTO raw.dataset_build BY NAME SELECT * FROM staging;

-- name: insert_built_instances
INSERT INTO raw.built_instances BY NAME SELECT * FROM staging;

-- Table 1 of the annotations the dataset is built from (the annotation_summary view, frozen).
-- name: insert_built_table1
INSERT INTO raw.built_table1 BY NAME
SELECT * FROM annotation_summary WHERE list_contains($locales, locale);

-- name: annotation_file_headers
SELECT * FROM raw.annotation_files ORDER BY locale;

-- Table 1 for the locales of the loaded test data that are exactly the built dataset's (every
-- loaded instance of the locale is a built one with the same localised pair, and no more).
-- name: built_annotation_summary
WITH matched AS (
    SELECT i.locale, count(*) AS n_loaded, count(b.instance_id) AS n_built
    FROM raw.instances i LEFT JOIN raw.built_instances b
      ON i.locale = b.locale AND i.instance_id = b.instance_id
     AND i.source_localised = b.source_localised AND i.english_localised = b.english_localised
    GROUP BY i.locale)
SELECT t.* FROM raw.built_table1 t JOIN matched m USING (locale)
WHERE m.n_loaded = m.n_built AND m.n_loaded = t.n_instances
ORDER BY t.locale;

-- name: instance_provenance
SELECT * FROM instance_provenance;

-- name: dataset_build_row
SELECT * FROM raw.dataset_build;
