-- Example queries of the site's Query page (the paper's tables as SQL over the published
-- tables). Titles: cultivar_assets/site/build.py, QUERY_EXAMPLES; tests run each one.

-- name: example_table3
SELECT model_id, type, delta_bleu, delta_chrf, flores_bleu, flores_chrf, cultivar_bleu,
       cultivar_chrf, false_positive_rate, false_negative_rate
FROM leaderboard
ORDER BY delta_bleu DESC;

-- Every configured metric (chrF++ and TER when metrics.metrics lists them; TER: lower is
-- better, so its ∆ = Cultivar − FLORES above 0 is a worse Cultivar score).
-- name: example_metrics
SELECT model_id, label, higher_is_better, quantity, round(value, 2) AS value,
       round(low, 2) AS low, round(high, 2) AS high, excludes_zero, n
FROM leaderboard_metrics
WHERE level = 'model'
ORDER BY model_id, metric, quantity;

-- name: example_table4
SELECT locale, language, location, official_or_de_facto, delta_bleu, delta_chrf, n_models
FROM locale_deltas
ORDER BY delta_bleu DESC;

-- name: example_table2
SELECT locale, metric, spearman, kendall_tau_b, n_models, aggregation
FROM rank_agreement
ORDER BY aggregation = 'per_locale' DESC, aggregation, locale, metric;

-- name: example_table1
SELECT locale, kept_llm_paraphrase, reverted_to_flores, edited_source_only,
       edited_target_only, edited_both, round(avg_edits_source, 2) AS avg_edits_source,
       round(avg_edits_english, 2) AS avg_edits_english
FROM annotation_summary
ORDER BY locale;

-- name: example_figure3
SELECT l.language_name, l.location, l.official_or_de_facto, d.delta_bleu, d.delta_chrf
FROM locale_deltas d JOIN locales l USING (locale)
WHERE l.language IN (SELECT language FROM locales GROUP BY language
                     HAVING count(DISTINCT official_or_de_facto) = 2)
ORDER BY l.language_name, d.delta_bleu DESC;

-- name: example_worst_locale
SELECT model_id, arg_min(locale, delta_bleu) AS worst_locale, round(min(delta_bleu), 2) AS delta_bleu,
       count(*) FILTER (delta_bleu < 0) AS negative_locales, count(*) AS locales
FROM model_locale_deltas
GROUP BY model_id
ORDER BY delta_bleu;

-- name: example_evaluated_vs_reported
-- Every evaluated model; the paper's figures where its Table 3 has the same model id (our
-- choice: a LEFT JOIN, so that a model the paper did not report says so instead of vanishing).
SELECT e.model_id, round(e.delta_bleu, 2) AS evaluated_delta_bleu,
       r.delta_bleu AS reported_delta_bleu, round(e.delta_bleu - r.delta_bleu, 2) AS difference,
       CASE WHEN r.model_id IS NULL THEN 'no: the paper''s Table 3 has no model with this id'
            ELSE 'yes' END AS in_paper
FROM leaderboard e LEFT JOIN reported_leaderboard r USING (model_id)
ORDER BY r.model_id IS NULL, e.model_id;

-- name: example_translations
SELECT model_id, test_set, segment_id, hypothesis
FROM translations
WHERE test_set LIKE 'cultivar_%'
ORDER BY model_id, test_set, segment_id
LIMIT 20;
