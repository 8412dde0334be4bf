-- What an asset wrote to the database, read back for its data version
-- (cultivar_assets/versions/rows.py: a sha256 over the rows in this order). Each row as JSON,
-- with the columns that say when or how long (computed_at, seconds, ingested_at) left out: a
-- rerun that writes the same results gives the same data version.

-- name: leaderboard_written_rows
SELECT source, row FROM (
    SELECT 'model_locale_deltas' AS source, to_json(t)::VARCHAR AS row FROM raw.model_locale_deltas t
    UNION ALL SELECT 'locale_word_recall', to_json(t)::VARCHAR FROM raw.locale_word_recall t
    UNION ALL SELECT 'model_summary', to_json(t)::VARCHAR FROM raw.model_summary t
    UNION ALL SELECT 'locale_summary', to_json(t)::VARCHAR FROM raw.locale_summary t
    UNION ALL SELECT 'metric_values', to_json(t)::VARCHAR FROM raw.metric_values t
    UNION ALL SELECT 'statistics_metrics', to_json(t)::VARCHAR FROM raw.statistics_metrics t
    UNION ALL SELECT 'rank_agreement', to_json(t)::VARCHAR FROM raw.rank_agreement t
    UNION ALL SELECT 'table_averages', to_json(t)::VARCHAR FROM raw.table_averages t
    UNION ALL SELECT 'leaderboard_ranks', to_json(t)::VARCHAR FROM raw.leaderboard_ranks t
    UNION ALL SELECT 'contamination_flags', to_json(t)::VARCHAR
              FROM raw.contamination_flags t WHERE source = 'evaluated'
    UNION ALL SELECT 'statistics_settings', to_json(t)::VARCHAR
              FROM (SELECT * EXCLUDE (seconds, computed_at) FROM raw.statistics_settings) t
) ORDER BY source, row;

-- name: reported_results_written_rows
SELECT source, row FROM (
    SELECT 'reported_results' AS source, to_json(t)::VARCHAR AS row FROM raw.reported_results t
    UNION ALL SELECT 'contamination_flags', to_json(t)::VARCHAR
              FROM raw.contamination_flags t WHERE source = 'reported'
) ORDER BY source, row;

-- name: error_analysis_written_rows
SELECT source, row FROM (
    SELECT 'error_files' AS source, to_json(t)::VARCHAR AS row
    FROM (SELECT * EXCLUDE (ingested_at) FROM raw.error_files) t
    UNION ALL SELECT 'error_annotations', to_json(t)::VARCHAR FROM raw.error_annotations t
    UNION ALL SELECT 'error_analysis_settings', to_json(t)::VARCHAR
              FROM (SELECT * EXCLUDE (ingested_at) FROM raw.error_analysis_settings) t
) ORDER BY source, row;
