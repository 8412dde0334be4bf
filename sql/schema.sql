-- Tables written by the Dagster assets. They live in schema "raw"; the public, documented
-- interface is the set of views in views.sql (schema "main"). Applied on every write connection;
-- every statement is idempotent.

CREATE SCHEMA IF NOT EXISTS raw;

-- The 27 Cultivar locales (cultivar_assets/data/locales.csv).
CREATE TABLE IF NOT EXISTS raw.locales (
    locale               VARCHAR PRIMARY KEY,
    language             VARCHAR NOT NULL,
    script               VARCHAR NOT NULL,
    location             VARCHAR NOT NULL,
    location_short       VARCHAR NOT NULL,
    flores_plus_code     VARCHAR NOT NULL,
    flores200_code       VARCHAR,
    language_name        VARCHAR NOT NULL,
    official_or_de_facto BOOLEAN NOT NULL
);

-- The loaded benchmark data (one row: the current dataset).
CREATE TABLE IF NOT EXISTS raw.dataset (
    fingerprint VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    is_demo     BOOLEAN NOT NULL,
    notes       VARCHAR[],
    loaded_at   TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS raw.instances (
    locale            VARCHAR NOT NULL,
    instance_id       INTEGER NOT NULL,
    source_original   VARCHAR,
    english_original  VARCHAR,
    source_localised  VARCHAR NOT NULL,
    english_localised VARCHAR NOT NULL,
    PRIMARY KEY (locale, instance_id)
);

CREATE TABLE IF NOT EXISTS raw.segments (
    test_set   VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL,   -- 'flores' or 'cultivar'
    language   VARCHAR NOT NULL,   -- FLORES+ code of the source language
    locale     VARCHAR,            -- NULL for flores_* test sets
    segment_id INTEGER NOT NULL,   -- instance id = 0-based FLORES dev line index
    source     VARCHAR NOT NULL,
    reference  VARCHAR NOT NULL,
    PRIMARY KEY (test_set, segment_id)
);

-- Expected test sets the data could not provide, with the reason.
CREATE TABLE IF NOT EXISTS raw.missing (
    test_set VARCHAR NOT NULL,
    kind     VARCHAR NOT NULL,
    language VARCHAR NOT NULL,
    locale   VARCHAR,
    reason   VARCHAR NOT NULL
);

-- The registry entry of every evaluated model, as it was when it ran.
CREATE TABLE IF NOT EXISTS raw.models (
    model_id        VARCHAR PRIMARY KEY,
    hf_id           VARCHAR,
    revision        VARCHAR,
    weights         VARCHAR NOT NULL,
    type            VARCHAR NOT NULL,
    family          VARCHAR NOT NULL,
    params_total_b  DOUBLE,
    params_active_b DOUBLE,
    engine          VARCHAR NOT NULL,
    prompt_style    VARCHAR NOT NULL,
    engine_options  VARCHAR NOT NULL   -- JSON
);

CREATE TABLE IF NOT EXISTS raw.model_runs (
    model_id             VARCHAR PRIMARY KEY,
    dataset_fingerprint  VARCHAR NOT NULL,
    model_fingerprint    VARCHAR NOT NULL,
    engine               VARCHAR NOT NULL,
    engine_version       VARCHAR NOT NULL,
    model_revision       VARCHAR,
    prompt_template_hash VARCHAR NOT NULL,
    chat_template_hash   VARCHAR,
    n_segments           INTEGER NOT NULL,
    n_generated          INTEGER NOT NULL,
    n_cached             INTEGER NOT NULL,
    n_empty              INTEGER NOT NULL,
    seconds              DOUBLE NOT NULL,
    finished_at          TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS raw.translations (
    model_id       VARCHAR NOT NULL,
    test_set       VARCHAR NOT NULL,
    segment_id     INTEGER NOT NULL,
    source         VARCHAR NOT NULL,
    reference      VARCHAR NOT NULL,
    hypothesis     VARCHAR NOT NULL,
    raw_output     VARCHAR NOT NULL,
    cleaning_rules VARCHAR[] NOT NULL,
    PRIMARY KEY (model_id, test_set, segment_id)
);

-- Per-segment sufficient statistics (sacreBLEU layout): BLEU
-- [hyp_len, ref_len, match_1..4, hyp_count_1..4]; chrF [hyp_n, ref_n, match_n] for n = 1..6.
CREATE TABLE IF NOT EXISTS raw.segment_stats (
    model_id   VARCHAR NOT NULL,
    test_set   VARCHAR NOT NULL,
    segment_id INTEGER NOT NULL,
    metric     VARCHAR NOT NULL,
    stats      BIGINT[] NOT NULL,
    PRIMARY KEY (model_id, test_set, segment_id, metric)
);

CREATE TABLE IF NOT EXISTS raw.scores (
    model_id            VARCHAR NOT NULL,
    test_set            VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,   -- 'bleu' or 'chrf'
    score               DOUBLE NOT NULL,
    signature           VARCHAR NOT NULL,
    n_segments          INTEGER NOT NULL,
    dataset_fingerprint VARCHAR NOT NULL,
    PRIMARY KEY (model_id, test_set, metric)
);

-- Locale-specific word recall counts per instance of a cultivar_* test set
-- (R, I, H as defined in cultivar_assets/metrics/word_recall.py).
CREATE TABLE IF NOT EXISTS raw.word_recall (
    model_id            VARCHAR NOT NULL,
    locale              VARCHAR NOT NULL,
    segment_id          INTEGER NOT NULL,
    n_removed           INTEGER NOT NULL,   -- |R|
    n_removed_recalled  INTEGER NOT NULL,   -- |H ∩ R| (false positives)
    n_introduced        INTEGER NOT NULL,   -- |I|
    n_introduced_missed INTEGER NOT NULL,   -- |I \ H| (false negatives)
    PRIMARY KEY (model_id, locale, segment_id)
);

-- Cross-model aggregates, rewritten as a whole by the aggregates asset.
CREATE TABLE IF NOT EXISTS raw.model_locale_deltas (
    model_id      VARCHAR NOT NULL,
    locale        VARCHAR NOT NULL,
    language      VARCHAR NOT NULL,
    flores_bleu   DOUBLE NOT NULL,
    cultivar_bleu DOUBLE NOT NULL,
    delta_bleu    DOUBLE NOT NULL,
    flores_chrf   DOUBLE NOT NULL,
    cultivar_chrf DOUBLE NOT NULL,
    delta_chrf    DOUBLE NOT NULL,
    PRIMARY KEY (model_id, locale)
);

CREATE TABLE IF NOT EXISTS raw.model_summary (
    model_id             VARCHAR PRIMARY KEY,
    delta_bleu           DOUBLE,
    delta_chrf           DOUBLE,
    flores_bleu          DOUBLE,
    flores_chrf          DOUBLE,
    cultivar_bleu        DOUBLE,
    cultivar_chrf        DOUBLE,
    false_positive_rate  DOUBLE,
    false_negative_rate  DOUBLE,
    n_locale_pairs       INTEGER NOT NULL,
    n_flores_test_sets   INTEGER NOT NULL,
    n_cultivar_test_sets INTEGER NOT NULL,
    bleu_signature       VARCHAR NOT NULL,
    chrf_signature       VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS raw.locale_summary (
    locale     VARCHAR PRIMARY KEY,
    delta_bleu DOUBLE NOT NULL,
    delta_chrf DOUBLE NOT NULL,
    n_models   INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS raw.rank_agreement (
    aggregation   VARCHAR NOT NULL,  -- 'per_locale', 'mean_of_locales', 'locale_averaged_scores'
    locale        VARCHAR,           -- NULL for the two averages
    metric        VARCHAR NOT NULL,
    spearman      DOUBLE,            -- NULL when undefined (fewer than 3 models, constant scores)
    kendall_tau_b DOUBLE,
    n_models      INTEGER NOT NULL,
    note          VARCHAR
);

-- Figures published in the paper (Table 3), from the model registry: reported, not evaluated.
CREATE TABLE IF NOT EXISTS raw.reported_results (
    model_id            VARCHAR PRIMARY KEY,
    type                VARCHAR NOT NULL,
    family              VARCHAR NOT NULL,
    params_total_b      DOUBLE,
    params_active_b     DOUBLE,
    delta_bleu          DOUBLE NOT NULL,
    delta_chrf          DOUBLE NOT NULL,
    flores_bleu         DOUBLE NOT NULL,
    flores_chrf         DOUBLE NOT NULL,
    cultivar_bleu       DOUBLE NOT NULL,
    cultivar_chrf       DOUBLE NOT NULL,
    false_positive_rate DOUBLE NOT NULL,
    false_negative_rate DOUBLE NOT NULL,
    source              VARCHAR NOT NULL
);

-- Which schema.sql and views.sql the file was last set up with (the sha256 of both texts): a
-- write connection applies the two scripts only when this differs (store/database.py).
CREATE TABLE IF NOT EXISTS raw.schema_state (
    digest VARCHAR NOT NULL
);
