-- Public views: the queryable product. Column meanings are documented in the README.

CREATE OR REPLACE VIEW locales AS
SELECT * FROM raw.locales;

CREATE OR REPLACE VIEW models AS
SELECT m.*, r.engine_version, r.model_revision, r.prompt_template_hash, r.chat_template_hash,
       r.finished_at
FROM raw.models m LEFT JOIN raw.model_runs r USING (model_id);

CREATE OR REPLACE VIEW test_sets AS
SELECT test_set, any_value(kind) AS kind, any_value(language) AS language,
       any_value(locale) AS locale, count(*) AS n_segments
FROM raw.segments GROUP BY test_set;

-- Test sets the configuration expects but the data could not provide.
CREATE OR REPLACE VIEW missing_test_sets AS
SELECT * FROM raw.missing;

CREATE OR REPLACE VIEW translations AS
SELECT model_id, test_set, segment_id, source, reference, hypothesis, raw_output, cleaning_rules
FROM raw.translations;

-- How often each cleaning rule changed a model's output, per test set.
CREATE OR REPLACE VIEW cleaning_counts AS
SELECT model_id, test_set, rule, count(*) AS n_segments
FROM (SELECT model_id, test_set, unnest(cleaning_rules) AS rule FROM raw.translations)
GROUP BY ALL;

DROP VIEW IF EXISTS current_scores;

-- Scores (and their per-segment statistics) of each model's current translations only: scores
-- of earlier translations are stale until the scores asset replaces them.
CREATE OR REPLACE VIEW scores AS
SELECT s.model_id, s.test_set, t.kind, t.language, t.locale, s.metric, s.score, s.signature,
       s.tokenizer_sha256, s.n_segments
FROM raw.scores s
JOIN raw.model_runs r ON r.model_id = s.model_id
                     AND r.translations_fingerprint IS NOT DISTINCT FROM s.translations_fingerprint
LEFT JOIN test_sets t ON t.test_set = s.test_set;

CREATE OR REPLACE VIEW segment_stats AS
SELECT g.* FROM raw.segment_stats g
WHERE EXISTS (SELECT 1 FROM scores s  -- of a current score (the view above)
              WHERE s.model_id = g.model_id AND s.test_set = g.test_set AND s.metric = g.metric);

CREATE OR REPLACE VIEW segment_scores AS
SELECT g.* FROM raw.segment_scores g
WHERE EXISTS (SELECT 1 FROM scores s  -- of a current score (the view above)
              WHERE s.model_id = g.model_id AND s.test_set = g.test_set AND s.metric = g.metric);

-- Locale-specific word recall per model and locale: FP = Σ|H∩R| / Σ|R|, FN = Σ|I∖H| / Σ|I|
-- (computed by cultivar_assets/metrics/word_recall.py from the per-instance counts in
-- raw.word_recall; written by the leaderboard asset).
CREATE OR REPLACE VIEW word_recall AS
SELECT model_id, locale, false_positive_rate, false_negative_rate, n_removed_terms,
       n_introduced_terms, n_instances
FROM raw.locale_word_recall;

-- ∆ = score(model, cultivar_<locale>) − score(model, flores_<language of locale>), both on the
-- paired instances P = ids(cultivar) ∩ ids(flores) (n_instances = |P|; n_cultivar_only: the
-- locale's ids without an original, left out of both sides). *_low/*_high: the paired
-- bootstrap's percentile interval (statistics_settings); *_excludes_zero: it lies above or below 0.
-- The paper's metrics (cultivar_assets.metrics.registry: PAPER_METRICS, BLEU and chrF) pivoted
-- from raw.metric_values (every stored metric: leaderboard_metrics). This file is a Jinja
-- template rendered when it is applied (store/database.py: views_script): ``paper_metrics``, the
-- paper's metrics in order (``m.key``: the column key of ``m.name``), ``sides`` ('flores',
-- 'cultivar', 'delta'), ``bleu`` (the metric the leaderboard is ranked and sorted by).
-- The paper's metric columns of one level of raw.metric_values ('model_locale', 'model',
-- 'locale'), one row per model and locale (either NULL by level): per metric, FLORES, Cultivar
-- and ∆ with their intervals, ∆'s *_excludes_zero (NULL where the level has no such row).
CREATE OR REPLACE MACRO paper_metric_columns(wanted) AS TABLE
SELECT model_id, locale
{%- for m in paper_metrics %}{% for q in sides %},
       max(value) FILTER (WHERE metric = '{{ m.name }}' AND quantity = '{{ q }}') AS {{ q }}_{{ m.key }},
       max(low) FILTER (WHERE metric = '{{ m.name }}' AND quantity = '{{ q }}') AS {{ q }}_{{ m.key }}_low,
       max(high) FILTER (WHERE metric = '{{ m.name }}' AND quantity = '{{ q }}') AS {{ q }}_{{ m.key }}_high
{%- if q == "delta" %},
       max(excludes_zero) FILTER (WHERE metric = '{{ m.name }}' AND quantity = '{{ q }}') AS {{ q }}_{{ m.key }}_excludes_zero
{%- endif %}{% endfor %}{% endfor %}
FROM raw.metric_values WHERE level = wanted GROUP BY model_id, locale;

CREATE OR REPLACE VIEW model_locale_deltas AS
WITH v AS (SELECT * FROM paper_metric_columns('model_locale'))
SELECT d.model_id, d.locale, d.language, v.* EXCLUDE (model_id, locale),
       d.n_instances, d.n_cultivar_only
FROM raw.model_locale_deltas d LEFT JOIN v USING (model_id, locale)
ORDER BY d.model_id, d.locale;

-- Rank, rank interval ("rank 3–7") and the models each one is not separable from, for every
-- sortable leaderboard column that has intervals (rank 1: highest ∆/BLEU/chrF, lowest FP/FN).
CREATE OR REPLACE VIEW leaderboard_ranks AS
SELECT model_id, quantity, rank, rank_low, rank_high,
       'rank ' || rank_low || CASE WHEN rank_low = rank_high THEN '' ELSE '–' || rank_high END
           AS rank_label,
       not_separable_from, value, higher_is_better, n_models
FROM raw.leaderboard_ranks
ORDER BY quantity, rank, model_id;

-- Contamination and robustness rules per model (source 'evaluated': the models evaluated here,
-- with intervals; 'reported': the paper's Table 3, without). fired NULL: not applied (detail).
CREATE OR REPLACE VIEW contamination_flags AS
SELECT source, rule, rule_text, applied, model_id, fired, value, threshold, used_interval,
       detail, note
FROM raw.contamination_flags
ORDER BY source, rule, model_id;

-- One row per rule and source: whether it could be applied, why not, and for whom it fired.
CREATE OR REPLACE VIEW contamination_rules AS
SELECT source, rule, any_value(rule_text) AS rule_text, bool_and(applied) AS applied,
       any_value(note) AS note, count(*)::INTEGER AS n_models,
       count(*) FILTER (fired)::INTEGER AS n_fired,
       count(*) FILTER (fired IS NULL)::INTEGER AS n_not_applied,
       coalesce(list(model_id ORDER BY model_id) FILTER (fired), []::VARCHAR[]) AS fired_for
FROM raw.contamination_flags
GROUP BY source, rule
ORDER BY source, rule;

-- Paper, Table 3, with intervals, n, the ∆BLEU rank interval and the rules that fired. The metric
-- columns are the paper's metrics pivoted from raw.metric_values (every stored metric:
-- leaderboard_metrics), the signatures from raw.statistics_metrics.
CREATE OR REPLACE VIEW leaderboard AS
WITH p AS (SELECT * EXCLUDE (locale) FROM paper_metric_columns('model')), g AS (
    SELECT {% for m in paper_metrics %}max(signature) FILTER (WHERE metric = '{{ m.name }}') AS {{ m.key }}_signature,
           {% endfor %}max(tokenizer_sha256) FILTER (WHERE metric = '{{ bleu.name }}') AS {{ bleu.key }}_tokenizer_sha256
    FROM raw.statistics_metrics
)
SELECT s.model_id, m.type, m.family, m.params_total_b, m.params_active_b,
       {% for q in ("delta", "flores", "cultivar") %}{% for m in paper_metrics %}p.{{ q }}_{{ m.key }}, {% endfor %}{% endfor %}
       s.false_positive_rate, s.false_negative_rate,
       s.n_locale_pairs, s.n_flores_test_sets, s.n_cultivar_test_sets,
       {% for m in paper_metrics %}g.{{ m.key }}_signature, {% endfor %}g.{{ bleu.key }}_tokenizer_sha256,
       {%- for q in ("delta", "flores", "cultivar") %}{% for m in paper_metrics %}
       p.{{ q }}_{{ m.key }}_low, p.{{ q }}_{{ m.key }}_high,{% if q == "delta" %} p.{{ q }}_{{ m.key }}_excludes_zero,{% endif %}
       {%- endfor %}{% endfor %}
       s.false_positive_rate_low, s.false_positive_rate_high,
       s.false_negative_rate_low, s.false_negative_rate_high,
       s.n_fp_locales, s.n_fn_locales,
       r.rank AS rank_delta_{{ bleu.key }}, r.rank_low AS rank_delta_{{ bleu.key }}_low,
       r.rank_high AS rank_delta_{{ bleu.key }}_high, r.rank_label AS rank_delta_{{ bleu.key }}_label,
       coalesce(r.not_separable_from, []::VARCHAR[]) AS not_separable_delta_{{ bleu.key }},
       coalesce(f.flags, []::VARCHAR[]) AS flags
FROM raw.model_summary s JOIN raw.models m USING (model_id)
LEFT JOIN p USING (model_id) LEFT JOIN g ON true
LEFT JOIN leaderboard_ranks r ON r.model_id = s.model_id AND r.quantity = 'delta_{{ bleu.key }}'
LEFT JOIN (SELECT model_id, list(rule ORDER BY rule) AS flags FROM raw.contamination_flags
           WHERE source = 'evaluated' AND fired GROUP BY model_id) f ON f.model_id = s.model_id
ORDER BY p.delta_{{ bleu.key }} DESC NULLS LAST, s.model_id;

-- Paper, Table 4 (instances resampled, models fixed); the paper's metrics pivoted from
-- raw.metric_values.
CREATE OR REPLACE VIEW locale_deltas AS
WITH v AS (SELECT * EXCLUDE (model_id) FROM paper_metric_columns('locale'))
SELECT l.locale, l.language, l.script, l.location, l.official_or_de_facto,
       {% for m in paper_metrics %}v.delta_{{ m.key }}, {% endfor %}s.n_models,
       {%- for m in paper_metrics %}
       v.delta_{{ m.key }}_low, v.delta_{{ m.key }}_high, v.delta_{{ m.key }}_excludes_zero{{ "," if not loop.last }}
       {%- endfor %}
FROM raw.locale_summary s JOIN raw.locales l USING (locale) LEFT JOIN v USING (locale)
ORDER BY v.delta_{{ bleu.key }} DESC, l.locale;

-- The Average rows of Table 3 (mean over models) and Table 4 (mean over locales; the paper's own
-- aggregation of that row is unknown), each with its interval and n.
CREATE OR REPLACE VIEW table_averages AS
SELECT paper_table, quantity, aggregation, value, low, high, n, n_of, note
FROM raw.table_averages
ORDER BY paper_table, quantity;

-- How the intervals, ranks and flags were computed (one row; the metrics settings), with the
-- signatures of the paper's metrics (every metric's: statistics_metrics).
CREATE OR REPLACE VIEW statistics_settings AS
SELECT s.n_replicates, s.seed, s.confidence, s.n_instances, s.n_models, s.n_locales,
       s.resampling, s.interval, s.rank_rule, s.flag_config,
       {% for m in paper_metrics -%}
       (SELECT signature FROM raw.statistics_metrics WHERE metric = '{{ m.name }}') AS {{ m.key }}_signature,
       {% endfor -%}
       s.seconds, s.computed_at
FROM raw.statistics_settings s;

-- The metrics of the last aggregation, in the configured order: registry label, direction
-- (higher_is_better false: TER), the signature of every score aggregated, the tokenizer model.
CREATE OR REPLACE VIEW statistics_metrics AS
SELECT metric, position, label, higher_is_better, signature, tokenizer_sha256
FROM raw.statistics_metrics ORDER BY position;

-- Every stored metric value in long form: per level ('model_locale', 'model', 'locale'), item,
-- metric and quantity ('flores', 'cultivar', 'delta' = cultivar − flores) the point estimate,
-- its interval, whether a ∆'s interval excludes 0, and n (sql/schema.sql, raw.metric_values);
-- with the metric's label, direction and signature.
CREATE OR REPLACE VIEW leaderboard_metrics AS
SELECT v.level, v.model_id, v.locale, v.metric, m.label, v.quantity, v.value, v.low, v.high,
       v.excludes_zero, v.n, m.higher_is_better, m.signature, m.tokenizer_sha256
FROM raw.metric_values v LEFT JOIN raw.statistics_metrics m USING (metric)
ORDER BY v.level, m.position, v.metric, v.quantity, v.model_id, v.locale;

-- Paper, Table 2 (per locale), plus two labelled averages (locale IS NULL): model_averages (the
-- default, the paper's) and mean_of_locales, each with its numbers of models and locales.
CREATE OR REPLACE VIEW rank_agreement AS
SELECT locale, metric, spearman, kendall_tau_b, n_models, aggregation, note, n_locales,
       is_default
FROM raw.rank_agreement
ORDER BY aggregation = 'per_locale' DESC, is_default DESC, aggregation, locale, metric;

-- The paper's Table 3 as published (reported results, with their source); never merged with the
-- leaderboard computed here.
CREATE OR REPLACE VIEW reported_leaderboard AS
SELECT * FROM raw.reported_results ORDER BY delta_bleu DESC, model_id;

-- Post-edited instances, one row per locale and instance (from the returned annotation files).
CREATE OR REPLACE VIEW annotations AS
SELECT a.*, f.annotator, f.task_id
FROM raw.annotations a JOIN raw.annotation_files f USING (locale);

-- Paper, Table 1, computed from the annotation files (definitions: construction/annotation/stats.py).
-- Edits are averaged over the revised instances (edited or reverted) whose side changed.
CREATE OR REPLACE VIEW annotation_summary AS
SELECT locale,
       count(*)::INTEGER                                                  AS n_instances,
       count(*) FILTER (flagged)::INTEGER                                 AS n_flagged,
       count(*) FILTER (action = 'kept')::INTEGER                         AS kept_llm_paraphrase,
       count(*) FILTER (action = 'reverted')::INTEGER                     AS reverted_to_flores,
       count(*) FILTER (action = 'edited' AND source_changed AND NOT english_changed)::INTEGER
                                                                          AS edited_source_only,
       count(*) FILTER (action = 'edited' AND english_changed AND NOT source_changed)::INTEGER
                                                                          AS edited_target_only,
       count(*) FILTER (action = 'edited' AND source_changed AND english_changed)::INTEGER
                                                                          AS edited_both,
       avg(source_edits) FILTER (action <> 'kept' AND source_changed)     AS avg_edits_source,
       avg(english_edits) FILTER (action <> 'kept' AND english_changed)   AS avg_edits_english,
       count(*) FILTER (action <> 'kept' AND source_changed)::INTEGER     AS n_revised_source_changed,
       count(*) FILTER (action <> 'kept' AND english_changed)::INTEGER    AS n_revised_english_changed,
       any_value(annotator)                                               AS annotator
FROM annotations
GROUP BY locale
ORDER BY locale;

-- Building Cultivar: the named-entity-rich selection (paper §2.1).
CREATE OR REPLACE VIEW selection_summary AS
SELECT source_name, source_description, is_demo, spacy_version, pipeline, pipeline_version,
       counted_labels, corrections_file, selection_file, counts, notes, fingerprint, created_at
FROM raw.selection_runs;

CREATE OR REPLACE VIEW selection_candidates AS
SELECT * FROM raw.selection_instances ORDER BY instance_id;

CREATE OR REPLACE VIEW selection_entities AS
SELECT * FROM raw.selection_entities ORDER BY instance_id, start_char, removed;

CREATE OR REPLACE VIEW selection_rule_outcomes AS
SELECT * FROM raw.selection_rule_outcomes ORDER BY instance_id, rule;

CREATE OR REPLACE VIEW selected_instances AS
SELECT instance_id, selection_rank, selected_by, overrides, english, domain, topic, n_entities
FROM raw.selection_instances WHERE selected ORDER BY instance_id;

CREATE OR REPLACE VIEW selected_sources AS
SELECT s.instance_id, s.language, s.source, i.english
FROM raw.selection_sources s JOIN raw.selection_instances i USING (instance_id)
ORDER BY s.instance_id, s.language;

-- Building Cultivar: LLM localisation (paper §2.2).
CREATE OR REPLACE VIEW localised_drafts AS
SELECT * FROM raw.localised_drafts ORDER BY locale, instance_id;

CREATE OR REPLACE VIEW localisation_summary AS
SELECT * FROM raw.localisation_runs ORDER BY locale;

-- Building Cultivar: the last built dataset (paper §2.4).
CREATE OR REPLACE VIEW dataset_build AS
SELECT * FROM raw.dataset_build;

-- Per instance of the loaded test data that is the project's own build: the original pair, the
-- LLM draft and the final pair with the annotator's action (the paper's provenance; the site's
-- segment browser shows the draft beside the final localisation). An instance appears when its
-- loaded localised pair is exactly the built final pair.
CREATE OR REPLACE VIEW instance_provenance AS
SELECT b.locale, b.instance_id, b.source_original, b.english_original, b.source_draft,
       b.english_draft, b.flagged, b.source_localised AS source_final,
       b.english_localised AS english_final, b.action, b.draft_hash, b.prompt_hash, b.task_id,
       b.annotator
FROM raw.built_instances b
JOIN raw.instances i ON i.locale = b.locale AND i.instance_id = b.instance_id
     AND i.source_localised = b.source_localised AND i.english_localised = b.english_localised
ORDER BY b.locale, b.instance_id;
-- Error analysis (paper §5): one row per annotated translation, with its file's annotator.
CREATE OR REPLACE VIEW error_annotations AS
SELECT a.locale, a.instance_id, a.model_id, a.system, a.errors, a.note, a.done,
       a.translation_matches, a.hypothesis_sha256, a.updated_at, a.done_at,
       f.annotator, f.task_id, f.is_demo
FROM raw.error_annotations a JOIN raw.error_files f USING (locale)
ORDER BY a.locale, a.instance_id, a.model_id;

CREATE OR REPLACE VIEW error_files AS
SELECT locale, task_id, annotator, is_demo, n_items, n_translation_changed, file_name,
       file_sha256, tool_version, schema_version, saved_at, ingested_at
FROM raw.error_files ORDER BY locale;

-- Paper, Table 5: per model and locale, how many annotated translations show each error type
-- (a type counts once per translation); totals over the four locale-specific types, the five
-- general ones and all nine; BLEU = the model's instance-paired Cultivar BLEU of the locale
-- (model_locale_deltas, the leaderboard's signature). n_translations: translations annotated.
CREATE OR REPLACE VIEW error_table5 AS
WITH counts AS (
    SELECT a.model_id, a.locale,
           count(*)::INTEGER AS n_translations,
           count(*) FILTER (list_contains(a.errors, 'NE'))::INTEGER AS ne,
           count(*) FILTER (list_contains(a.errors, 'PY'))::INTEGER AS py,
           count(*) FILTER (list_contains(a.errors, 'IC'))::INTEGER AS ic,
           count(*) FILTER (list_contains(a.errors, 'NU'))::INTEGER AS nu,
           count(*) FILTER (list_contains(a.errors, 'MT'))::INTEGER AS mt,
           count(*) FILTER (list_contains(a.errors, 'OM'))::INTEGER AS om,
           count(*) FILTER (list_contains(a.errors, 'AD'))::INTEGER AS ad,
           count(*) FILTER (list_contains(a.errors, 'UT'))::INTEGER AS ut,
           count(*) FILTER (list_contains(a.errors, 'RF'))::INTEGER AS rf,
           count(*) FILTER (NOT a.translation_matches)::INTEGER AS n_translation_changed
    FROM raw.error_annotations a GROUP BY a.model_id, a.locale
)
SELECT c.model_id, c.locale, l.language, c.ne, c.py, c.ic, c.nu,
       (c.ne + c.py + c.ic + c.nu) AS locale_specific_total,
       (c.mt + c.om + c.ad + c.ut + c.rf) AS general_total,
       (c.ne + c.py + c.ic + c.nu + c.mt + c.om + c.ad + c.ut + c.rf) AS total,
       d.cultivar_bleu AS bleu, c.mt, c.om, c.ad, c.ut, c.rf, c.n_translations,
       c.n_translation_changed, f.annotator, f.is_demo
FROM counts c JOIN raw.locales l USING (locale) JOIN raw.error_files f USING (locale)
LEFT JOIN model_locale_deltas d USING (model_id, locale)
ORDER BY c.locale, c.model_id;

-- Pearson r between BLEU and the total error count per language, over every (model, locale)
-- cell of the language in Table 5 (the paper's r_incl = −0.64 and r_excl = −0.86 for Chinese
-- are these over its 10 models × 3 locales); "excluding": without the configured outlier model.
-- NULL (undefined) with fewer than 3 cells, or when BLEU or the total is the same in every cell.
CREATE OR REPLACE VIEW error_correlations AS
WITH cells AS (
    SELECT t.language, t.model_id, t.locale, t.total, t.bleu, s.outlier_model,
           t.model_id IS NOT DISTINCT FROM s.outlier_model AS is_outlier
    FROM error_table5 t LEFT JOIN raw.error_analysis_settings s ON true
    WHERE t.bleu IS NOT NULL
), coefficients AS (
    SELECT language, corr(bleu, total) AS r_all, count(*)::INTEGER AS n_all,
           any_value(outlier_model) AS outlier_model,
           corr(bleu, total) FILTER (NOT is_outlier) AS r_rest,
           count(*) FILTER (NOT is_outlier)::INTEGER AS n_rest,
           bool_or(is_outlier) AS outlier_present,
           count(DISTINCT model_id)::INTEGER AS n_models,
           count(DISTINCT locale)::INTEGER AS n_locales
    FROM cells GROUP BY language
)
SELECT language,
       CASE WHEN n_all >= 3 AND NOT isnan(r_all) THEN r_all END AS r_including,
       n_all AS n_including, outlier_model,
       CASE WHEN outlier_model IS NOT NULL AND n_rest >= 3 AND NOT isnan(r_rest) THEN r_rest END
           AS r_excluding,
       CASE WHEN outlier_model IS NOT NULL THEN n_rest END AS n_excluding,
       outlier_present, n_models, n_locales
FROM coefficients ORDER BY language;

CREATE OR REPLACE VIEW error_analysis_settings AS
SELECT * FROM raw.error_analysis_settings;

-- Failed runs (the run-failure sensor), newest first.
CREATE OR REPLACE VIEW run_failures AS
SELECT run_id, job, model_id, step, error, failed_at FROM raw.run_failures
ORDER BY failed_at DESC;

-- Models whose last run failed: a failure newer than the model's last finished run.
CREATE OR REPLACE VIEW failed_models AS
SELECT f.model_id, f.run_id, f.step, f.error, f.failed_at, r.finished_at AS last_success_at
FROM (SELECT *, row_number() OVER (PARTITION BY model_id ORDER BY failed_at DESC) AS k
      FROM raw.run_failures WHERE model_id IS NOT NULL) f
LEFT JOIN raw.model_runs r USING (model_id)
WHERE f.k = 1 AND (r.finished_at IS NULL OR f.failed_at > r.finished_at);
