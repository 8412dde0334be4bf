-- Named statements of building Cultivar (cultivar_assets/store/construction_records.py).
-- Blocks that insert read from a relation named "staging", registered by the caller.

-- name: replace_selection
DELETE FROM raw.selection_runs;
DELETE FROM raw.selection_instances;
DELETE FROM raw.selection_entities;
DELETE FROM raw.selection_rule_outcomes;
DELETE FROM raw.selection_sources;

-- name: insert_selection_run
INSERT INTO raw.selection_runs BY NAME SELECT * FROM staging;

-- name: insert_selection_instances
INSERT INTO raw.selection_instances BY NAME SELECT * FROM staging;

-- name: insert_selection_entities
INSERT INTO raw.selection_entities BY NAME SELECT * FROM staging;

-- name: insert_selection_rule_outcomes
INSERT INTO raw.selection_rule_outcomes BY NAME SELECT * FROM staging;

-- name: insert_selection_sources
INSERT INTO raw.selection_sources BY NAME SELECT * FROM staging;

-- name: selection_run
SELECT * FROM raw.selection_runs;

-- name: selection_selected_sources
SELECT i.instance_id, i.english, s.language, s.source
FROM raw.selection_instances i LEFT JOIN raw.selection_sources s USING (instance_id)
WHERE i.selected ORDER BY i.instance_id, s.language;
