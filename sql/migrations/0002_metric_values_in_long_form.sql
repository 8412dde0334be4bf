-- Migration 1 -> 2: the metric values are stored in long form (sql/schema.sql: raw.metric_values,
-- raw.statistics_metrics; raw.segment_scores, new and empty, holds the per-segment scores of the
-- segment-score metrics). The per-metric columns of raw.model_locale_deltas, raw.model_summary
-- and raw.locale_summary become rows of raw.metric_values (BLEU and chrF: the only metrics
-- version 1 stored), their signatures (raw.model_summary's bleu_signature, chrf_signature,
-- bleu_tokenizer_sha256, and raw.statistics_settings' two signature columns) rows of
-- raw.statistics_metrics; then those columns are dropped. The public views keep their columns
-- and values (views.sql pivots the long table). Never edit this file: a later change is a new
-- migration.

CREATE TABLE raw.metric_values (
    level         VARCHAR NOT NULL,
    model_id      VARCHAR,
    locale        VARCHAR,
    metric        VARCHAR NOT NULL,   -- a metric registry name (statistics_metrics.metric)
    quantity      VARCHAR NOT NULL,
    value         DOUBLE,
    low           DOUBLE,
    high          DOUBLE,
    excludes_zero BOOLEAN,
    n             INTEGER,
    UNIQUE (level, model_id, locale, metric, quantity)
);

CREATE TABLE raw.segment_scores (
    model_id   VARCHAR NOT NULL,
    test_set   VARCHAR NOT NULL,
    segment_id INTEGER NOT NULL,
    metric     VARCHAR NOT NULL,
    score      DOUBLE NOT NULL,
    PRIMARY KEY (model_id, test_set, segment_id, metric)
);

CREATE TABLE raw.statistics_metrics (
    metric           VARCHAR PRIMARY KEY,
    position         INTEGER NOT NULL,
    label            VARCHAR NOT NULL,
    higher_is_better BOOLEAN NOT NULL,
    signature        VARCHAR NOT NULL,
    tokenizer_sha256 VARCHAR
);

INSERT INTO raw.metric_values
SELECT 'model_locale', model_id, locale, 'bleu', 'flores', flores_bleu, flores_bleu_low,
       flores_bleu_high, NULL, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model_locale', model_id, locale, 'bleu', 'cultivar', cultivar_bleu, cultivar_bleu_low,
       cultivar_bleu_high, NULL, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model_locale', model_id, locale, 'bleu', 'delta', delta_bleu, delta_bleu_low,
       delta_bleu_high, delta_bleu_excludes_zero, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model_locale', model_id, locale, 'chrf', 'flores', flores_chrf, flores_chrf_low,
       flores_chrf_high, NULL, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model_locale', model_id, locale, 'chrf', 'cultivar', cultivar_chrf, cultivar_chrf_low,
       cultivar_chrf_high, NULL, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model_locale', model_id, locale, 'chrf', 'delta', delta_chrf, delta_chrf_low,
       delta_chrf_high, delta_chrf_excludes_zero, n_instances FROM raw.model_locale_deltas
UNION ALL
SELECT 'model', model_id, NULL, 'bleu', 'flores', flores_bleu, flores_bleu_low,
       flores_bleu_high, NULL, n_flores_test_sets FROM raw.model_summary
UNION ALL
SELECT 'model', model_id, NULL, 'bleu', 'cultivar', cultivar_bleu, cultivar_bleu_low,
       cultivar_bleu_high, NULL, n_cultivar_test_sets FROM raw.model_summary
UNION ALL
SELECT 'model', model_id, NULL, 'bleu', 'delta', delta_bleu, delta_bleu_low,
       delta_bleu_high, delta_bleu_excludes_zero, n_locale_pairs FROM raw.model_summary
UNION ALL
SELECT 'model', model_id, NULL, 'chrf', 'flores', flores_chrf, flores_chrf_low,
       flores_chrf_high, NULL, n_flores_test_sets FROM raw.model_summary
UNION ALL
SELECT 'model', model_id, NULL, 'chrf', 'cultivar', cultivar_chrf, cultivar_chrf_low,
       cultivar_chrf_high, NULL, n_cultivar_test_sets FROM raw.model_summary
UNION ALL
SELECT 'model', model_id, NULL, 'chrf', 'delta', delta_chrf, delta_chrf_low,
       delta_chrf_high, delta_chrf_excludes_zero, n_locale_pairs FROM raw.model_summary
UNION ALL
SELECT 'locale', NULL, locale, 'bleu', 'delta', delta_bleu, delta_bleu_low,
       delta_bleu_high, delta_bleu_excludes_zero, n_models FROM raw.locale_summary
UNION ALL
SELECT 'locale', NULL, locale, 'chrf', 'delta', delta_chrf, delta_chrf_low,
       delta_chrf_high, delta_chrf_excludes_zero, n_models FROM raw.locale_summary;

-- the signatures every model's row carried (one per metric: the aggregation refused to mix them);
-- BLEU's label follows its signature's tokenizer, as registry.score_label gives it: spBLEU for a
-- SentencePiece one, BLEU otherwise (tok:13a, ...)
INSERT INTO raw.statistics_metrics
SELECT 'bleu', 0,
       CASE WHEN regexp_extract(any_value(bleu_signature), '(^|\|)tok:([^|]+)', 2)
                 IN ('flores200', 'flores101', 'spBLEU-1K') THEN 'spBLEU' ELSE 'BLEU' END,
       true, any_value(bleu_signature), any_value(bleu_tokenizer_sha256)
FROM raw.model_summary HAVING count(*) > 0
UNION ALL
SELECT 'chrf', 1, 'chrF', true, any_value(chrf_signature), NULL
FROM raw.model_summary HAVING count(*) > 0;

ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_bleu;
ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_bleu_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_bleu_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_bleu;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_bleu_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_bleu_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_bleu;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_bleu_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_bleu_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_chrf;
ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_chrf_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN flores_chrf_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_chrf;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_chrf_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN cultivar_chrf_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_chrf;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_chrf_low;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_chrf_high;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_bleu_excludes_zero;
ALTER TABLE raw.model_locale_deltas DROP COLUMN delta_chrf_excludes_zero;

ALTER TABLE raw.model_summary DROP COLUMN flores_bleu;
ALTER TABLE raw.model_summary DROP COLUMN flores_bleu_low;
ALTER TABLE raw.model_summary DROP COLUMN flores_bleu_high;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_bleu;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_bleu_low;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_bleu_high;
ALTER TABLE raw.model_summary DROP COLUMN delta_bleu;
ALTER TABLE raw.model_summary DROP COLUMN delta_bleu_low;
ALTER TABLE raw.model_summary DROP COLUMN delta_bleu_high;
ALTER TABLE raw.model_summary DROP COLUMN flores_chrf;
ALTER TABLE raw.model_summary DROP COLUMN flores_chrf_low;
ALTER TABLE raw.model_summary DROP COLUMN flores_chrf_high;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_chrf;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_chrf_low;
ALTER TABLE raw.model_summary DROP COLUMN cultivar_chrf_high;
ALTER TABLE raw.model_summary DROP COLUMN delta_chrf;
ALTER TABLE raw.model_summary DROP COLUMN delta_chrf_low;
ALTER TABLE raw.model_summary DROP COLUMN delta_chrf_high;
ALTER TABLE raw.model_summary DROP COLUMN delta_bleu_excludes_zero;
ALTER TABLE raw.model_summary DROP COLUMN delta_chrf_excludes_zero;
ALTER TABLE raw.model_summary DROP COLUMN bleu_signature;
ALTER TABLE raw.model_summary DROP COLUMN chrf_signature;
ALTER TABLE raw.model_summary DROP COLUMN bleu_tokenizer_sha256;

ALTER TABLE raw.locale_summary DROP COLUMN delta_bleu;
ALTER TABLE raw.locale_summary DROP COLUMN delta_bleu_low;
ALTER TABLE raw.locale_summary DROP COLUMN delta_bleu_high;
ALTER TABLE raw.locale_summary DROP COLUMN delta_bleu_excludes_zero;
ALTER TABLE raw.locale_summary DROP COLUMN delta_chrf;
ALTER TABLE raw.locale_summary DROP COLUMN delta_chrf_low;
ALTER TABLE raw.locale_summary DROP COLUMN delta_chrf_high;
ALTER TABLE raw.locale_summary DROP COLUMN delta_chrf_excludes_zero;

ALTER TABLE raw.statistics_settings DROP COLUMN bleu_signature;
ALTER TABLE raw.statistics_settings DROP COLUMN chrf_signature;
