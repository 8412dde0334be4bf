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

CREATE OR REPLACE VIEW scores AS
SELECT s.model_id, s.test_set, t.kind, t.language, t.locale, s.metric, s.score, s.signature,
       s.tokenizer_sha256, s.n_segments
FROM raw.scores s LEFT JOIN test_sets t USING (test_set);

CREATE OR REPLACE VIEW segment_stats AS
SELECT * FROM raw.segment_stats;

-- Locale-specific word recall per model and locale: FP = Σ|H∩R| / Σ|R|, FN = Σ|I∖H| / Σ|I|
-- (computed by cultivar_assets/metrics/word_recall.py from the per-instance counts in
-- raw.word_recall; written by the leaderboard asset).
CREATE OR REPLACE VIEW word_recall AS
SELECT model_id, locale, false_positive_rate, false_negative_rate, n_removed_terms,
       n_introduced_terms, n_instances
FROM raw.locale_word_recall;

-- ∆ = score(model, cultivar_<locale>) − score(model, flores_<language of locale>).
CREATE OR REPLACE VIEW model_locale_deltas AS
SELECT * FROM raw.model_locale_deltas;

-- Paper, Table 3.
CREATE OR REPLACE VIEW leaderboard AS
SELECT s.model_id, m.type, m.family, m.params_total_b, m.params_active_b,
       s.delta_bleu, s.delta_chrf, s.flores_bleu, s.flores_chrf, s.cultivar_bleu, s.cultivar_chrf,
       s.false_positive_rate, s.false_negative_rate,
       s.n_locale_pairs, s.n_flores_test_sets, s.n_cultivar_test_sets,
       s.bleu_signature, s.chrf_signature, s.bleu_tokenizer_sha256
FROM raw.model_summary s JOIN raw.models m USING (model_id)
ORDER BY s.delta_bleu DESC NULLS LAST, s.model_id;

-- Paper, Table 4.
CREATE OR REPLACE VIEW locale_deltas AS
SELECT l.locale, l.language, l.script, l.location, l.official_or_de_facto,
       s.delta_bleu, s.delta_chrf, s.n_models
FROM raw.locale_summary s JOIN raw.locales l USING (locale)
ORDER BY s.delta_bleu DESC, l.locale;

-- Paper, Table 2 (per locale), plus two labelled averages (locale IS NULL).
CREATE OR REPLACE VIEW rank_agreement AS
SELECT locale, metric, spearman, kendall_tau_b, n_models, aggregation, note
FROM raw.rank_agreement
ORDER BY aggregation = 'per_locale' DESC, aggregation, locale, metric;

-- The paper's Table 3 as published (reported results, with their source); never merged with the
-- leaderboard computed here.
CREATE OR REPLACE VIEW reported_leaderboard AS
SELECT * FROM raw.reported_results ORDER BY delta_bleu DESC, model_id;

-- Post-edited instances, one row per locale and instance (from the returned annotation files).
CREATE OR REPLACE VIEW annotations AS
SELECT a.*, f.annotator, f.task_id
FROM raw.annotations a JOIN raw.annotation_files f USING (locale);

-- Paper, Table 1, computed from the annotation files (definitions: construction/annotation_stats.py).
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
