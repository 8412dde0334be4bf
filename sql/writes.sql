-- Named statements used by cultivar_assets/store (one block per "-- name:" line).
-- Blocks that insert read from a relation named "staging", registered by the caller.
-- Each block runs in one transaction: the rows of a model are replaced, never duplicated.

-- name: replace_dataset
DELETE FROM raw.dataset;
DELETE FROM raw.instances;
DELETE FROM raw.segments;
DELETE FROM raw.missing;
DELETE FROM raw.locales;

-- name: insert_dataset
INSERT INTO raw.dataset BY NAME SELECT * FROM staging;

-- name: insert_instances
INSERT INTO raw.instances BY NAME SELECT * FROM staging;

-- name: insert_segments
INSERT INTO raw.segments BY NAME SELECT * FROM staging;

-- name: insert_missing
INSERT INTO raw.missing BY NAME SELECT * FROM staging;

-- name: insert_locales
INSERT INTO raw.locales BY NAME SELECT * FROM staging;

-- Replacing a model's translations keeps its scores: they carry the fingerprint of the
-- translations they were computed from, so they stay valid when the new translations are the same
-- (a re-run from the cache) and are recognised as stale otherwise (views hide them, the
-- leaderboard refuses them) until the scores asset replaces them in one transaction.
-- name: delete_model_translations
DELETE FROM raw.translations WHERE model_id = $model_id;
DELETE FROM raw.model_runs WHERE model_id = $model_id;
DELETE FROM raw.models WHERE model_id = $model_id;

-- Every row of one model, in every raw table keyed by model_id (cultivar models remove;
-- model_stored_rows in reads.sql counts the same rows; tests/test_models_registry.py checks that
-- the two cover every raw table with a model_id column). The results computed across models
-- (locale rows, rank agreement, table averages, the other models' ranks) are left to the next
-- results step, which recomputes them from the models that still have scores.
-- name: delete_model_rows
DELETE FROM raw.models WHERE model_id = $model_id;
DELETE FROM raw.model_runs WHERE model_id = $model_id;
DELETE FROM raw.translations WHERE model_id = $model_id;
DELETE FROM raw.segment_stats WHERE model_id = $model_id;
DELETE FROM raw.segment_scores WHERE model_id = $model_id;
DELETE FROM raw.scores WHERE model_id = $model_id;
DELETE FROM raw.word_recall WHERE model_id = $model_id;
DELETE FROM raw.statistics_digests WHERE model_id = $model_id;
DELETE FROM raw.metric_values WHERE model_id = $model_id;
DELETE FROM raw.model_locale_deltas WHERE model_id = $model_id;
DELETE FROM raw.model_summary WHERE model_id = $model_id;
DELETE FROM raw.locale_word_recall WHERE model_id = $model_id;
DELETE FROM raw.leaderboard_ranks WHERE model_id = $model_id;
DELETE FROM raw.contamination_flags WHERE model_id = $model_id;
DELETE FROM raw.reported_results WHERE model_id = $model_id;
DELETE FROM raw.error_annotations WHERE model_id = $model_id;
DELETE FROM raw.run_failures WHERE model_id = $model_id;
DELETE FROM raw.model_files WHERE model_id = $model_id;

-- name: insert_translations
INSERT INTO raw.translations BY NAME SELECT * FROM staging;

-- name: insert_model_runs
INSERT INTO raw.model_runs BY NAME SELECT * FROM staging;

-- name: insert_models
INSERT INTO raw.models BY NAME SELECT * FROM staging;

-- The record of the files of the storage root last loaded for one model (model_results).
-- name: delete_model_files
DELETE FROM raw.model_files WHERE model_id = $model_id;

-- name: insert_model_files
INSERT INTO raw.model_files BY NAME SELECT * FROM staging;

-- name: delete_model_scores
DELETE FROM raw.scores WHERE model_id = $model_id;
DELETE FROM raw.segment_stats WHERE model_id = $model_id;
DELETE FROM raw.segment_scores WHERE model_id = $model_id;
DELETE FROM raw.word_recall WHERE model_id = $model_id;
DELETE FROM raw.statistics_digests WHERE model_id = $model_id;

-- name: insert_scores
INSERT INTO raw.scores BY NAME SELECT * FROM staging;

-- name: insert_segment_stats
INSERT INTO raw.segment_stats BY NAME SELECT * FROM staging;

-- name: insert_segment_scores
INSERT INTO raw.segment_scores BY NAME SELECT * FROM staging;

-- name: insert_word_recall
INSERT INTO raw.word_recall BY NAME SELECT * FROM staging;

-- record_statistics of every model (after statistics written by other means than
-- store/records.py, such as the benchmarks' synthetic models).
-- name: record_every_model_statistics
DELETE FROM raw.statistics_digests;
INSERT INTO raw.statistics_digests
SELECT model_id, 'segment_stats', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, stats))
FROM raw.segment_stats GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'segment_scores', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, score))
FROM raw.segment_scores GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'word_recall', '', locale, count(*),
       bit_xor(hash(locale, segment_id, n_removed, n_removed_recalled, n_introduced,
                    n_introduced_missed))
FROM raw.word_recall GROUP BY model_id, locale;

-- The digest of one model's stored statistics, segment scores and word-recall counts
-- (raw.statistics_digests), from the rows the transaction holds: run after every write of them
-- (store/records.py), so that the record changes whenever they do. The hashes are those of the
-- query statistics_groups_of_models (tests/test_store_migrations.py and
-- tests/test_aggregation_streaming.py hold them equal).
-- name: record_statistics
DELETE FROM raw.statistics_digests WHERE model_id = $model_id;
INSERT INTO raw.statistics_digests
SELECT model_id, 'segment_stats', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, stats))
FROM raw.segment_stats WHERE model_id = $model_id GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'segment_scores', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, score))
FROM raw.segment_scores WHERE model_id = $model_id GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'word_recall', '', locale, count(*),
       bit_xor(hash(locale, segment_id, n_removed, n_removed_recalled, n_introduced,
                    n_introduced_missed))
FROM raw.word_recall WHERE model_id = $model_id GROUP BY model_id, locale;

-- name: delete_aggregates
DELETE FROM raw.model_locale_deltas;
DELETE FROM raw.locale_word_recall;
DELETE FROM raw.model_summary;
DELETE FROM raw.locale_summary;
DELETE FROM raw.metric_values;
DELETE FROM raw.statistics_metrics;
DELETE FROM raw.rank_agreement;
DELETE FROM raw.table_averages;
DELETE FROM raw.leaderboard_ranks;
DELETE FROM raw.contamination_flags WHERE source = 'evaluated';
DELETE FROM raw.statistics_settings;

-- The cross-model rows of the aggregate tables (every row not of one model), rewritten in full
-- by an aggregation that writes the per-model rows of changed models only.
-- name: delete_cross_model_aggregates
DELETE FROM raw.locale_summary;
DELETE FROM raw.metric_values WHERE level = 'locale';
DELETE FROM raw.statistics_metrics;
DELETE FROM raw.rank_agreement;
DELETE FROM raw.table_averages;
DELETE FROM raw.leaderboard_ranks;
DELETE FROM raw.contamination_flags WHERE source = 'evaluated';
DELETE FROM raw.statistics_settings;

-- The per-model rows of the aggregate tables of some models ($models).
-- name: delete_model_aggregates
DELETE FROM raw.model_locale_deltas WHERE list_contains($models::VARCHAR[], model_id);
DELETE FROM raw.locale_word_recall WHERE list_contains($models::VARCHAR[], model_id);
DELETE FROM raw.model_summary WHERE list_contains($models::VARCHAR[], model_id);
DELETE FROM raw.metric_values
WHERE level <> 'locale' AND list_contains($models::VARCHAR[], model_id);

-- name: insert_model_locale_deltas
INSERT INTO raw.model_locale_deltas BY NAME SELECT * FROM staging;

-- name: insert_locale_word_recall
INSERT INTO raw.locale_word_recall BY NAME SELECT * FROM staging;

-- name: insert_model_summary
INSERT INTO raw.model_summary BY NAME SELECT * FROM staging;

-- name: insert_locale_summary
INSERT INTO raw.locale_summary BY NAME SELECT * FROM staging;

-- name: insert_metric_values
INSERT INTO raw.metric_values BY NAME SELECT * FROM staging;

-- name: insert_statistics_metrics
INSERT INTO raw.statistics_metrics BY NAME SELECT * FROM staging;

-- name: insert_rank_agreement
INSERT INTO raw.rank_agreement BY NAME SELECT * FROM staging;

-- name: insert_table_averages
INSERT INTO raw.table_averages BY NAME SELECT * FROM staging;

-- name: insert_leaderboard_ranks
INSERT INTO raw.leaderboard_ranks BY NAME SELECT * FROM staging;

-- name: insert_contamination_flags
INSERT INTO raw.contamination_flags BY NAME SELECT * FROM staging;

-- name: insert_statistics_settings
INSERT INTO raw.statistics_settings BY NAME SELECT * FROM staging;

-- name: delete_reported_flags
DELETE FROM raw.contamination_flags WHERE source = 'reported';

-- name: delete_reported_results
DELETE FROM raw.reported_results;

-- name: insert_reported_results
INSERT INTO raw.reported_results BY NAME SELECT * FROM staging;

-- name: get_schema_digest
SELECT digest FROM raw.schema_state;

-- name: set_schema_digest
DELETE FROM raw.schema_state;
INSERT INTO raw.schema_state VALUES ($digest);

-- name: record_run_failure
INSERT OR REPLACE INTO raw.run_failures
VALUES ($run_id, $job, $model_id, $step, $error, $failed_at);
