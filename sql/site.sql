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

-- The ∆ of every model and locale with the model's family, size and type (charts, locale and
-- model pages). published_model_locale_deltas: the rows of site_model_locale_deltas_table as
-- read by the builder (registered Arrow, Reader.register), so that the view is not evaluated
-- twice.
-- name: site_model_locale_deltas
SELECT d.*, m.family, m.params_total_b, m.type
FROM published_model_locale_deltas d JOIN raw.models m USING (model_id)
ORDER BY model_id, locale;

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

-- The rows of site_scores and cleaning_counts of the given models, in those tables' order: a
-- model's part of the site (site/model_part.py) writes its scores and cleaning downloads from
-- them. site_scores reads raw.scores of the model's current run (raw.model_runs) joined with
-- test_sets (the dataset); cleaning_counts reads the model's rows of raw.translations: both
-- the model's own rows and the dataset alone.
-- name: site_model_scores
SELECT model_id, test_set, kind, language, locale, metric, score, signature, tokenizer_sha256,
       n_segments
FROM scores WHERE list_contains($models, model_id)
ORDER BY model_id, kind DESC, test_set, metric;

-- name: site_model_cleaning_counts
SELECT * FROM cleaning_counts WHERE list_contains($models, model_id)
ORDER BY model_id, test_set, rule;

-- All translations in one ordered pass (the builder streams it model by model).
-- name: site_translations
SELECT model_id, test_set, segment_id, source, reference, hypothesis, raw_output, cleaning_rules
FROM raw.translations ORDER BY model_id, test_set, segment_id;

-- Public views present in this database (the site shows optional ones only where they exist).
-- name: site_views
SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'
ORDER BY view_name;

-- name: site_models
SELECT * FROM models ORDER BY model_id;

-- The leaderboard's rows as the pages and charts read them: the "not separable from" lists,
-- which grow with the square of the models (at 1,000 models most of the rows' size and of the
-- time they take to read), as the length of the ∆BLEU one (the leaderboard's "≈ n"); the lists
-- themselves are in the published leaderboard (site_leaderboard: downloads, data/separable.js).
-- name: site_leaderboard_rows
SELECT COLUMNS(lambda c: c NOT LIKE 'not_separable_%'),
       len(not_separable_delta_bleu) AS not_separable_delta_bleu_count
FROM leaderboard;

-- The leaderboard as published (downloads, Query page): with whether the model's latest run
-- failed (view failed_models), so that a failed model's earlier scores are never shown as current.
-- name: site_leaderboard
SELECT l.*, f.model_id IS NOT NULL AS latest_run_failed
FROM leaderboard l LEFT JOIN failed_models f USING (model_id)
ORDER BY l.delta_bleu DESC NULLS LAST, l.model_id;

-- Every stored metric value in long form (the Query page's leaderboard_metrics).
-- name: site_leaderboard_metrics
SELECT * FROM leaderboard_metrics;

-- The pages' columns of the metrics besides the wide views' ($wide: the paper's): their rows of
-- one $level ('model': the leaderboard; 'model_locale', 'locale': the ∆ tables; at 1,000 models
-- the whole view is 168,000 rows, nearly all the paper's).
-- name: site_more_metric_rows
SELECT * FROM leaderboard_metrics WHERE level = $level AND NOT list_contains($wide, metric);

-- The aggregated metrics in their configured order (the leaderboard's metric columns).
-- name: site_statistics_metrics
SELECT metric, label, higher_is_better, signature, tokenizer_sha256 FROM statistics_metrics
ORDER BY position;

-- name: site_model_locale_deltas_table
SELECT * FROM model_locale_deltas ORDER BY model_id, locale;

-- name: site_locales_table
SELECT * FROM locales ORDER BY locale;

-- name: site_test_sets
SELECT * FROM test_sets ORDER BY kind DESC, test_set;

-- name: site_annotation_summary
SELECT * FROM annotation_summary ORDER BY locale;

-- name: site_annotations
SELECT * FROM annotations ORDER BY locale, instance_id;

-- The test sets' segments (sources and references; the builder applies the originals policy).
-- name: site_segments
SELECT test_set, kind, language, locale, segment_id, source, reference
FROM raw.segments ORDER BY test_set, segment_id;

-- The models with translations (each has a part of the site: site/model_part.py).
-- name: site_translated_models
SELECT DISTINCT model_id FROM raw.translations ORDER BY model_id;

-- Translations of the given models, model by model; raw_output is NULL where it equals the
-- hypothesis (cleaning changed nothing), which is most rows.
-- name: site_model_translations
SELECT model_id, test_set, segment_id, hypothesis,
       CASE WHEN raw_output = hypothesis THEN NULL ELSE raw_output END AS raw_output,
       cleaning_rules
FROM raw.translations WHERE list_contains($models, model_id)
ORDER BY model_id, test_set, segment_id;

-- The DuckDB download (site.include_database): the site's own published parquet files as
-- tables of a fresh database file, originals policy as there. site/downloads.py export_database
-- makes one table per published table (PUBLISHED_TABLES, and segments) from
-- $dir/<table>.parquet with DuckDB's relational API (read_parquet, create), so that no second
-- list of them is kept here; then this block adds the translations (a parquet file per model).
-- name: export_translations
CREATE TABLE translations AS
SELECT t.model_id, t.test_set, t.segment_id, s.source, s.reference, t.hypothesis,
       coalesce(t.raw_output, t.hypothesis) AS raw_output, t.cleaning_rules
FROM read_parquet($translation_files) t JOIN segments s USING (test_set, segment_id)
ORDER BY t.model_id, t.test_set, t.segment_id;

-- The Query page (DuckDB-Wasm in the reader's browser). After the published tables are loaded:
-- no extension may be installed or loaded and no file or URL read (nothing leaves the page),
-- and the reader's SQL cannot change that.
-- name: query_page_lock
SET autoinstall_known_extensions = false;
SET autoload_known_extensions = false;
SET enable_external_access = false;
SET lock_configuration = true;

-- The Query page's published tables: the build's database file (data/query/published.duckdb.gz),
-- attached READ_ONLY, so DuckDB refuses any statement that would change one of them. The
-- reader's own tables go into `memory`, first on the search path; names not found there are
-- looked up among the published tables.
-- name: query_page_attach
ATTACH 'published.duckdb' AS published (READ_ONLY);
SET search_path = 'memory.main,published.main';

-- The translations on the Query page: the models' outputs, loaded model by model from the
-- site's translation shards, joined with the published segments.
-- name: query_page_translations
CREATE TABLE hypotheses (model_id VARCHAR, test_set VARCHAR, segment_id INTEGER,
                         hypothesis VARCHAR, raw_output VARCHAR, cleaning_rules VARCHAR[]);
CREATE VIEW translations AS
SELECT h.model_id, h.test_set, h.segment_id, s.source, s.reference, h.hypothesis, h.raw_output,
       h.cleaning_rules
FROM hypotheses h LEFT JOIN segments s USING (test_set, segment_id);

-- name: query_page_insert_translations
INSERT INTO hypotheses
SELECT model_id, test_set, segment_id, hypothesis, raw_output,
       CASE WHEN rules = '' THEN []::VARCHAR[] ELSE string_split(rules, chr(31)) END
FROM hypotheses_staging;

-- Statistics and the error analysis, shown beside the tables above.
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

-- Models whose latest run failed (view failed_models: a recorded failure newer than the model's
-- last finished run), with what the registry entry stored for it says, where one is stored.
-- name: site_failed_models
SELECT f.model_id, f.run_id, f.step, f.error, f.failed_at, f.last_success_at,
       m.type, m.family, m.params_total_b
FROM failed_models f LEFT JOIN raw.models m USING (model_id)
ORDER BY f.model_id;

-- The compare view's statistics (site/compare_stats.py): every stored metric's per instance of
-- the flores_* and cultivar_* test sets, for the given models.
-- name: site_model_stats
SELECT model_id, metric, test_set, segment_id, stats
FROM raw.segment_stats
WHERE list_contains($models, model_id)
  AND (starts_with(test_set, 'flores_') OR starts_with(test_set, 'cultivar_'))
ORDER BY model_id, metric, test_set, segment_id;

-- The instance ids the bootstrap resamples (metrics/bootstrap.py: the pool U).
-- name: site_stats_universe
SELECT DISTINCT segment_id FROM raw.segment_stats
WHERE starts_with(test_set, 'flores_') OR starts_with(test_set, 'cultivar_')
ORDER BY segment_id;
