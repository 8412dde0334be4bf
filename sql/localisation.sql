-- Named statements of the localisation step (cultivar_assets/construction/localisation/store.py).
-- Blocks that insert read from a relation named "staging", registered by the caller; a locale's
-- drafts are replaced in one transaction.

-- name: delete_locale_drafts
DELETE FROM raw.localised_drafts WHERE locale = $locale;
DELETE FROM raw.localisation_runs WHERE locale = $locale;

-- name: insert_localisation_run
INSERT INTO raw.localisation_runs BY NAME SELECT * FROM staging;

-- name: insert_localised_drafts
INSERT INTO raw.localised_drafts BY NAME SELECT * FROM staging;

-- name: locale_drafts
SELECT * FROM raw.localised_drafts WHERE locale = $locale ORDER BY instance_id;

-- name: localisation_run
SELECT * FROM raw.localisation_runs WHERE locale = $locale;

-- name: localisation_runs
SELECT * FROM raw.localisation_runs ORDER BY locale;
