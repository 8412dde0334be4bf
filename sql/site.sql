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

-- Each row of site_model_locale_deltas with row_digest, the md5 of the row as text (its column
-- names and values, -0.0 apart from 0.0): a locale page's "∆ of every model" row is keyed by it
-- (site_pages.py), which costs DuckDB milliseconds where Python's repr of 27,000 rows took a
-- second; the builder runs it on a cursor of its own beside its Python work (at 1,000 models
-- the md5s take 0.2 s).
-- name: site_model_locale_delta_digests
SELECT model_id, locale, md5(r::VARCHAR) AS row_digest
FROM (SELECT d.*, m.family, m.params_total_b, m.type
      FROM published_model_locale_deltas d JOIN raw.models m USING (model_id)) r;

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

-- What each model's translations, per-segment statistics and segment scores are, as one string
-- per model (the builder reuses a model's files from the previous build when it is unchanged).
-- The translations are stood for, by our choice, by their count and the run record's
-- translations_fingerprint (raw.model_runs: the sha256 of every row's test set, segment id,
-- hypothesis, raw output and cleaning rules, written with the rows in one transaction,
-- store/records.py write_translations; the scores view trusts it the same way); only a model
-- without one has its rows hashed (site_translation_row_digests): hashing 9.6 million rows
-- took most of this query's second at 1,000 models. The statistics (10,000s of
-- list rows per model) are stood for by their count and the model's raw.scores rows, which
-- the scoring step writes with them and which hold what they are computed from: the metric's
-- signature, the dataset's and the translations' fingerprints. A direct edit of
-- raw.translations or raw.segment_stats that bypasses those writers (and keeps the row
-- counts) is therefore not seen; a build with reuse off renders every file again.
-- name: site_translation_digests
SELECT t.model_id, t.n_rows, r.translations_fingerprint,
       coalesce(s.n_stats || ':' || coalesce(c.digest, ''), '') || coalesce(':' || g.digest, '')
           AS digest
FROM (SELECT model_id, count(*) AS n_rows FROM raw.translations GROUP BY model_id) AS t
LEFT JOIN (SELECT model_id, CASE WHEN count(*) = 1 THEN any_value(translations_fingerprint) END
                      AS translations_fingerprint
           FROM raw.model_runs GROUP BY model_id) AS r USING (model_id)
LEFT JOIN (SELECT model_id, count(*) AS n_stats FROM raw.segment_stats GROUP BY model_id) AS s
    USING (model_id)
LEFT JOIN (SELECT model_id, count(*) || '/' || sum(hash(v::VARCHAR)) AS digest
           FROM raw.scores v GROUP BY model_id) AS c USING (model_id)
-- segment scores (none unless a segment-score metric is configured: the digest is unchanged)
LEFT JOIN (SELECT model_id, sum(hash(metric, test_set, segment_id, score))::VARCHAR AS digest
           FROM raw.segment_scores GROUP BY model_id) AS g USING (model_id)
ORDER BY t.model_id;

-- The translations of the given models (those without a run record's fingerprint, see above)
-- as the sum of their rows' hashes (order-free).
-- name: site_translation_row_digests
SELECT model_id,
       sum(hash(test_set, segment_id, hypothesis, raw_output, cleaning_rules))::VARCHAR AS digest
FROM raw.translations WHERE list_contains($models, model_id)
GROUP BY model_id ORDER BY model_id;

-- What each model's page, compare shard and table downloads are made from besides its
-- leaderboard row: per model, the sum of the hashes of its whole rows in each published table
-- they read (order-free; whole rows as text, so more than the columns shown, with their names,
-- and -0.0 apart from 0.0, which DuckDB's hash of a double or a row does not tell apart: a
-- change anywhere in them renders the page again). published_<table>: the published tables as
-- the builder read them (site_models, site_model_locale_deltas_table, site_scores,
-- site_word_recall, cleaning_counts; registered Arrow, Reader.register), so that the views are
-- not evaluated a second time. The builder renders an unchanged model's page only when this or
-- its leaderboard row changed.
-- name: site_model_page_digests
SELECT rm.model_id,
       hash(rm::VARCHAR)::VARCHAR || ':' || coalesce(hash(m::VARCHAR)::VARCHAR, '') AS model,
       coalesce(d.digest, '') AS deltas, coalesce(s.digest, '') AS scores,
       coalesce(w.digest, '') AS recall, coalesce(c.digest, '') AS cleaning
FROM raw.models rm
LEFT JOIN published_models m USING (model_id)
LEFT JOIN (SELECT model_id, count(*) || ':' || sum(hash(v::VARCHAR)) AS digest
           FROM published_model_locale_deltas v GROUP BY model_id) d USING (model_id)
LEFT JOIN (SELECT model_id, count(*) || ':' || sum(hash(v::VARCHAR)) AS digest
           FROM published_scores v GROUP BY model_id) s USING (model_id)
LEFT JOIN (SELECT model_id, count(*) || ':' || sum(hash(v::VARCHAR)) AS digest
           FROM published_word_recall v GROUP BY model_id) w USING (model_id)
LEFT JOIN (SELECT model_id, count(*) || ':' || sum(hash(v::VARCHAR)) AS digest
           FROM published_cleaning_counts v GROUP BY model_id) c USING (model_id)
ORDER BY rm.model_id;

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
