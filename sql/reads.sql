-- Named queries used by cultivar_assets/store to read what the assets need.

-- name: dataset
SELECT fingerprint, source, is_demo, notes, loaded_at, kind, build_provenance FROM raw.dataset;

-- name: test_set_segments
SELECT test_set, kind, language, locale, segment_id, source, reference
FROM raw.segments ORDER BY kind DESC, test_set, segment_id;  -- flores_* first, as loaded

-- name: test_set_index
SELECT test_set, kind, language, locale, n_segments FROM test_sets ORDER BY test_set;

-- name: instances
SELECT locale, instance_id, source_original, english_original, source_localised, english_localised
FROM raw.instances ORDER BY locale, instance_id;

-- name: model_translations
SELECT test_set, segment_id, hypothesis FROM raw.translations
WHERE model_id = $model_id ORDER BY test_set, segment_id;

-- name: all_scores
SELECT s.model_id, s.test_set, s.metric, s.score, s.signature, s.tokenizer_sha256,
       s.dataset_fingerprint, s.n_segments,
       s.translations_fingerprint IS NOT DISTINCT FROM r.translations_fingerprint AS current
FROM raw.scores s LEFT JOIN raw.model_runs r USING (model_id)
ORDER BY s.model_id, s.test_set, s.metric;

-- Every per-segment statistic, read as one Arrow table (Store.arrow) by the aggregation.
-- name: all_segment_stats
SELECT model_id, test_set, segment_id, metric, stats FROM raw.segment_stats;

-- Every per-segment score of the segment-score metrics (Store.arrow), read by the aggregation.
-- name: all_segment_scores
SELECT model_id, test_set, segment_id, metric, score FROM raw.segment_scores;

-- name: all_word_recall
SELECT model_id, locale, segment_id, n_removed, n_removed_recalled, n_introduced,
       n_introduced_missed
FROM raw.word_recall ORDER BY model_id, locale, segment_id;

-- name: model_fingerprints
SELECT model_id, model_fingerprint, dataset_fingerprint, translations_fingerprint
FROM raw.model_runs ORDER BY model_id;

-- name: leaderboard
SELECT * FROM leaderboard;

-- name: dataset_notes
SELECT unnest(notes) AS note FROM raw.dataset;

-- name: missing_test_sets
SELECT test_set, reason FROM missing_test_sets ORDER BY test_set;

-- name: table_counts
SELECT 'translations' AS name, count(*) AS n FROM raw.translations
UNION ALL SELECT 'scores', count(*) FROM raw.scores
UNION ALL SELECT 'segment_stats', count(*) FROM raw.segment_stats
UNION ALL SELECT 'word_recall', count(*) FROM raw.word_recall
UNION ALL SELECT 'segments', count(*) FROM raw.segments
UNION ALL SELECT 'models', count(*) FROM raw.models;

-- name: publish_locales
SELECT l.locale, l.language, l.script, l.location, l.flores_plus_code, l.language_name,
       l.official_or_de_facto, count(*) AS n_instances
FROM raw.instances i JOIN raw.locales l ON l.locale = i.locale
GROUP BY ALL ORDER BY l.locale;

-- A read session (Store.reader): no progress bar on the terminal while a builder streams rows.
-- name: reader_session
SET enable_progress_bar = false;

-- name: failed_models
SELECT * FROM failed_models ORDER BY model_id;

-- The references and hypotheses of one model, for sacreBLEU's paired tests
-- (evaluation/paired_tests.py, cultivar significance).
-- name: model_references_and_hypotheses
SELECT test_set, segment_id, reference, hypothesis FROM raw.translations
WHERE model_id = $model_id ORDER BY test_set, segment_id;

-- The per-model values of the aggregated metrics beyond the paper's BLEU and chrF (the CLI's
-- leaderboard adds their columns), in the configured order.
-- name: leaderboard_other_metrics
SELECT model_id, metric, label, quantity, value, signature
FROM leaderboard_metrics WHERE level = 'model' AND metric NOT IN ('bleu', 'chrf');

-- The rows of one model per raw table keyed by model_id (cultivar models remove says what it
-- removes; the same tables as delete_model_rows in writes.sql).
-- name: model_stored_rows
SELECT 'raw.models' AS table_name, count(*) AS n FROM raw.models WHERE model_id = $model_id
UNION ALL SELECT 'raw.model_runs', count(*) FROM raw.model_runs WHERE model_id = $model_id
UNION ALL SELECT 'raw.translations', count(*) FROM raw.translations WHERE model_id = $model_id
UNION ALL SELECT 'raw.segment_stats', count(*) FROM raw.segment_stats WHERE model_id = $model_id
UNION ALL SELECT 'raw.segment_scores', count(*) FROM raw.segment_scores
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.scores', count(*) FROM raw.scores WHERE model_id = $model_id
UNION ALL SELECT 'raw.word_recall', count(*) FROM raw.word_recall WHERE model_id = $model_id
UNION ALL SELECT 'raw.statistics_digests', count(*) FROM raw.statistics_digests
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.metric_values', count(*) FROM raw.metric_values WHERE model_id = $model_id
UNION ALL SELECT 'raw.model_locale_deltas', count(*) FROM raw.model_locale_deltas
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.model_summary', count(*) FROM raw.model_summary WHERE model_id = $model_id
UNION ALL SELECT 'raw.locale_word_recall', count(*) FROM raw.locale_word_recall
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.leaderboard_ranks', count(*) FROM raw.leaderboard_ranks
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.contamination_flags', count(*) FROM raw.contamination_flags
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.reported_results', count(*) FROM raw.reported_results
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.model_files', count(*) FROM raw.model_files WHERE model_id = $model_id
UNION ALL SELECT 'raw.error_annotations', count(*) FROM raw.error_annotations
    WHERE model_id = $model_id
UNION ALL SELECT 'raw.run_failures', count(*) FROM raw.run_failures WHERE model_id = $model_id;

-- The raw tables that have a model_id column (tests: the two statements above cover them all).
-- name: tables_keyed_by_model
SELECT 'raw.' || table_name AS table_name FROM duckdb_columns()
WHERE schema_name = 'raw' AND column_name = 'model_id' ORDER BY table_name;

-- The digests of the storage root's files last loaded per model (model_results).
-- name: model_files_loaded
SELECT model_id, translations_digest, scores_digest FROM raw.model_files ORDER BY model_id;


-- The aggregation's pool of instance ids U (metrics/bootstrap.py): every id of the chosen models'
-- statistics of the chosen metrics on the chosen test sets, and of their word-recall counts in
-- the chosen locales.
-- name: aggregation_instance_pool
SELECT DISTINCT segment_id FROM (
    SELECT model_id, segment_id FROM raw.segment_stats
    WHERE list_contains($metrics, metric) AND list_contains($test_sets, test_set)
    UNION ALL
    SELECT model_id, segment_id FROM raw.segment_scores
    WHERE list_contains($metrics, metric) AND list_contains($test_sets, test_set)
    UNION ALL
    SELECT model_id, segment_id FROM raw.word_recall WHERE list_contains($locales, locale)
) WHERE model_id IN (SELECT unnest($models::VARCHAR[]))
ORDER BY segment_id;

-- Rows per (metric, model, test set) of the per-segment statistics and scores.
-- name: segment_counts
SELECT metric, model_id, test_set, count(*) AS n FROM raw.segment_stats GROUP BY ALL
UNION ALL
SELECT metric, model_id, test_set, count(*) AS n FROM raw.segment_scores GROUP BY ALL;

-- The statistics of some models ($models), as all_segment_stats, all_segment_scores and
-- all_word_recall: the aggregation reads the models block by block. Statistics are sorted so that
-- each (metric, model, test set) is one run (segment_stats.stats_from_sorted_table).
-- name: segment_stats_of_models
SELECT model_id, test_set, segment_id, metric, stats FROM raw.segment_stats
SEMI JOIN (SELECT unnest($models::VARCHAR[]) AS wanted) ON model_id = wanted
ORDER BY metric, model_id, test_set, segment_id;

-- name: segment_scores_of_models
SELECT model_id, test_set, segment_id, metric, score FROM raw.segment_scores
SEMI JOIN (SELECT unnest($models::VARCHAR[]) AS wanted) ON model_id = wanted;

-- name: word_recall_of_models
SELECT model_id, locale, segment_id, n_removed, n_removed_recalled, n_introduced,
       n_introduced_missed
FROM raw.word_recall
SEMI JOIN (SELECT unnest($models::VARCHAR[]) AS wanted) ON model_id = wanted
ORDER BY model_id, locale, segment_id;

-- segment_counts of the models $models with a digest per group: the XOR of its rows' 64-bit
-- hashes. A model's digest of every per-segment statistic, segment score and word-recall count
-- it has is the XOR of its groups' here and in word_recall_groups_of_models (any changed, added
-- or removed row changes it with near certainty): an aggregation that keeps what it computed per
-- model reuses it under the same one.
-- name: statistics_groups_of_models
SELECT metric, model_id, test_set, count(*) AS n,
       bit_xor(hash(metric, test_set, segment_id, stats)) AS digest
FROM raw.segment_stats WHERE model_id IN (SELECT unnest($models::VARCHAR[])) GROUP BY ALL
UNION ALL
SELECT metric, model_id, test_set, count(*) AS n,
       bit_xor(hash(metric, test_set, segment_id, score)) AS digest
FROM raw.segment_scores WHERE model_id IN (SELECT unnest($models::VARCHAR[])) GROUP BY ALL;

-- word_recall_sums of the models $models with a digest per (model, locale) (see
-- statistics_groups_of_models).
-- name: word_recall_groups_of_models
SELECT model_id, locale, sum(n_removed) AS n_removed,
       sum(n_removed_recalled) AS n_removed_recalled, sum(n_introduced) AS n_introduced,
       sum(n_introduced_missed) AS n_introduced_missed, count(*) AS n_instances,
       bit_xor(hash(locale, segment_id, n_removed, n_removed_recalled, n_introduced,
                    n_introduced_missed)) AS digest
FROM raw.word_recall WHERE model_id IN (SELECT unnest($models::VARCHAR[]))
GROUP BY ALL ORDER BY model_id, locale;

-- Per model: the rows and digest of its statistics, segment scores and word-recall counts as
-- raw.statistics_digests records them (NULL when it records none) and the rows the three tables
-- hold (NULL when they hold none). A model whose two counts differ was written by a path that
-- did not record it; the aggregation hashes its statistics instead (statistics_groups_of_models).
-- name: recorded_statistics
WITH recorded AS (
    SELECT model_id, sum(n) AS n, bit_xor(digest) AS digest FROM raw.statistics_digests
    GROUP BY model_id
), stored AS (
    SELECT model_id, sum(n) AS n FROM (
        SELECT model_id, count(*) AS n FROM raw.segment_stats GROUP BY model_id
        UNION ALL SELECT model_id, count(*) FROM raw.segment_scores GROUP BY model_id
        UNION ALL SELECT model_id, count(*) FROM raw.word_recall GROUP BY model_id
    ) GROUP BY model_id
)
SELECT model_id, recorded.n AS recorded_rows, stored.n AS stored_rows, recorded.digest
FROM stored FULL JOIN recorded USING (model_id) ORDER BY model_id;

-- The groups of statistics and segment scores that raw.statistics_digests records (those of
-- segment_counts).
-- name: recorded_statistics_groups
SELECT metric, model_id, test_set, n FROM raw.statistics_digests WHERE source <> 'word_recall';

-- word_recall_sums of the models $models alone.
-- name: word_recall_sums_of_models
SELECT model_id, locale, sum(n_removed) AS n_removed,
       sum(n_removed_recalled) AS n_removed_recalled, sum(n_introduced) AS n_introduced,
       sum(n_introduced_missed) AS n_introduced_missed, count(*) AS n_instances
FROM raw.word_recall WHERE model_id IN (SELECT unnest($models::VARCHAR[]))
GROUP BY ALL ORDER BY model_id, locale;

-- Per model of $models: the instance ids of aggregation_instance_pool that its statistics,
-- segment scores and word-recall counts hold (sorted).
-- name: instance_pools_of_models
SELECT model_id, list(DISTINCT segment_id ORDER BY segment_id) AS ids FROM (
    SELECT model_id, segment_id FROM raw.segment_stats
    WHERE list_contains($metrics, metric) AND list_contains($test_sets, test_set)
    UNION ALL
    SELECT model_id, segment_id FROM raw.segment_scores
    WHERE list_contains($metrics, metric) AND list_contains($test_sets, test_set)
    UNION ALL
    SELECT model_id, segment_id FROM raw.word_recall WHERE list_contains($locales, locale)
) WHERE model_id IN (SELECT unnest($models::VARCHAR[]))
GROUP BY model_id ORDER BY model_id;

-- What the per-model rows of the aggregate tables hold (every model's rows of
-- model_locale_deltas, model_summary, locale_word_recall and metric_values of levels model_locale
-- and model: per table the number of rows and the XOR of their 64-bit hashes), and the write
-- generation they were read at: the aggregation rewrites the rows of changed models only while
-- these are what it last wrote.
-- name: aggregate_model_rows_digest
SELECT (SELECT max(generation) FROM raw.write_log) AS generation,
       (SELECT concat(count(*), ':', bit_xor(hash(t))) FROM raw.model_locale_deltas t) AS pairs,
       (SELECT concat(count(*), ':', bit_xor(hash(t))) FROM raw.model_summary t) AS models,
       (SELECT concat(count(*), ':', bit_xor(hash(t))) FROM raw.locale_word_recall t) AS recall,
       (SELECT concat(count(*), ':', bit_xor(hash(t))) FROM raw.metric_values t
        WHERE level <> 'locale') AS model_values;

-- Per (model, locale): the summed word-recall counts and the number of instances.
-- name: word_recall_sums
SELECT model_id, locale, sum(n_removed) AS n_removed,
       sum(n_removed_recalled) AS n_removed_recalled, sum(n_introduced) AS n_introduced,
       sum(n_introduced_missed) AS n_introduced_missed, count(*) AS n_instances
FROM raw.word_recall GROUP BY ALL ORDER BY model_id, locale;
