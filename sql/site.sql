-- Named queries read by the static site builder (cultivar_assets/site).

-- name: site_reported_leaderboard
SELECT * FROM reported_leaderboard;

-- name: site_locales
SELECT l.*, t.n_segments AS n_instances
FROM raw.locales l
LEFT JOIN test_sets t ON t.locale = l.locale
ORDER BY l.locale;

-- name: site_locale_deltas
SELECT * FROM locale_deltas;

-- name: site_rank_agreement
SELECT * FROM rank_agreement;

-- name: site_model_locale_deltas
SELECT d.*, m.family, m.params_total_b, m.type
FROM raw.model_locale_deltas d JOIN raw.models m USING (model_id)
ORDER BY d.model_id, d.locale;

-- name: site_scores
SELECT model_id, test_set, kind, language, locale, metric, score, signature, tokenizer_sha256,
       n_segments
FROM scores ORDER BY model_id, kind DESC, test_set, metric;

-- name: site_word_recall
SELECT * FROM word_recall ORDER BY model_id, locale;

-- name: site_missing
SELECT * FROM missing_test_sets ORDER BY test_set;

-- name: cleaning_counts
SELECT * FROM cleaning_counts ORDER BY model_id, test_set, rule;

-- All translations in one ordered pass (the builder streams it model by model).
-- name: site_translations
SELECT model_id, test_set, segment_id, source, reference, hypothesis, raw_output, cleaning_rules
FROM raw.translations ORDER BY model_id, test_set, segment_id;

-- Statistics and the error analysis (issue 11), shown beside the tables above.
-- name: site_contamination_rules
SELECT * FROM contamination_rules;

-- name: site_table_averages
SELECT * FROM table_averages;

-- name: site_statistics_settings
SELECT * FROM statistics_settings;

-- name: site_error_table5
SELECT * FROM error_table5;

-- name: site_error_correlations
SELECT * FROM error_correlations;

-- name: site_error_files
SELECT * FROM error_files;
