-- Tables written by the Dagster assets. They live in schema "raw"; the public, documented
-- interface is the set of views in views.sql (schema "main").
--
-- The layout of schema version 4 (SCHEMA_VERSION in cultivar_assets/store/migrations.py), each
-- table whole: applied once, to a new database file. A file of an older version is brought to
-- this layout by the numbered files of sql/migrations/ instead; a test holds the two equal
-- (tests/test_store_migrations.py). Changing a table here takes a new migration and a new
-- version (docs/database-migrations.md).

CREATE SCHEMA IF NOT EXISTS raw;

-- The 27 Cultivar locales (cultivar_assets/data/locales.csv).
CREATE TABLE raw.locales (
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
CREATE TABLE raw.dataset (
    fingerprint VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    is_demo     BOOLEAN NOT NULL,
    notes       VARCHAR[],
    loaded_at   TIMESTAMP NOT NULL,
    -- the data kind it was loaded as (demo, local, hub, built) and, for `built`, the provenance
    -- its build manifest records (JSON); NULL in files written before they were recorded
    kind             VARCHAR,
    build_provenance VARCHAR
);

CREATE TABLE raw.instances (
    locale            VARCHAR NOT NULL,
    instance_id       INTEGER NOT NULL,
    source_original   VARCHAR,
    english_original  VARCHAR,
    source_localised  VARCHAR NOT NULL,
    english_localised VARCHAR NOT NULL,
    PRIMARY KEY (locale, instance_id)
);

CREATE TABLE raw.segments (
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
CREATE TABLE raw.missing (
    test_set VARCHAR NOT NULL,
    kind     VARCHAR NOT NULL,
    language VARCHAR NOT NULL,
    locale   VARCHAR,
    reason   VARCHAR NOT NULL
);

-- The registry entry of every evaluated model, as it was when it ran.
CREATE TABLE raw.models (
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
    engine_options  VARCHAR NOT NULL,   -- JSON
    license         VARCHAR
);

CREATE TABLE raw.model_runs (
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
    finished_at          TIMESTAMP NOT NULL,
    translations_fingerprint VARCHAR     -- TranslationRun.translations_fingerprint
);

CREATE TABLE raw.translations (
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
CREATE TABLE raw.segment_stats (
    model_id   VARCHAR NOT NULL,
    test_set   VARCHAR NOT NULL,
    segment_id INTEGER NOT NULL,
    metric     VARCHAR NOT NULL,
    stats      BIGINT[] NOT NULL,
    PRIMARY KEY (model_id, test_set, segment_id, metric)
);

-- Per-segment scores of the segment-score metrics (registry kind "segment scores", the shape of
-- COMET): one float per segment; the corpus score in raw.scores is their mean.
CREATE TABLE raw.segment_scores (
    model_id   VARCHAR NOT NULL,
    test_set   VARCHAR NOT NULL,
    segment_id INTEGER NOT NULL,
    metric     VARCHAR NOT NULL,
    score      DOUBLE NOT NULL,
    PRIMARY KEY (model_id, test_set, segment_id, metric)
);

CREATE TABLE raw.scores (
    model_id            VARCHAR NOT NULL,
    test_set            VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,   -- 'bleu' or 'chrf'
    score               DOUBLE NOT NULL,
    signature           VARCHAR NOT NULL,   -- exactly as sacreBLEU formats it
    n_segments          INTEGER NOT NULL,
    dataset_fingerprint VARCHAR NOT NULL,
    tokenizer_sha256    VARCHAR,            -- SentencePiece model file used (spBLEU); else NULL
    -- the translations the score was computed from (model_runs.translations_fingerprint then)
    translations_fingerprint VARCHAR,
    PRIMARY KEY (model_id, test_set, metric)
);

-- Which files of the storage root (store/model_files.py) the loading asset model_results last
-- loaded into this file, one row per model: their digests (the digest of each file's content;
-- a model whose files have other digests is loaded again, whole, in one transaction).
CREATE TABLE raw.model_files (
    model_id            VARCHAR PRIMARY KEY,
    translations_digest VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/translations.json
    scores_digest       VARCHAR NOT NULL,   -- the digest of <root>/models/<id>/scores.json
    loaded_at           TIMESTAMP NOT NULL  -- UTC
);

-- Locale-specific word recall counts per instance of a cultivar_* test set
-- (R, I, H as defined in cultivar_assets/metrics/word_recall.py).
CREATE TABLE raw.word_recall (
    model_id            VARCHAR NOT NULL,
    locale              VARCHAR NOT NULL,
    segment_id          INTEGER NOT NULL,
    n_removed           INTEGER NOT NULL,   -- |R|
    n_removed_recalled  INTEGER NOT NULL,   -- |H ∩ R| (false positives)
    n_introduced        INTEGER NOT NULL,   -- |I|
    n_introduced_missed INTEGER NOT NULL,   -- |I \ H| (false negatives)
    PRIMARY KEY (model_id, locale, segment_id)
);

-- A digest of each model's per-segment statistics, segment scores and word-recall counts, one row
-- per group: ('segment_stats' or 'segment_scores', metric, test set) or ('word_recall', '',
-- locale), with its number of rows and the XOR of its rows' 64-bit hashes (the hashes of the
-- query statistics_groups_of_models in sql/reads.sql). Written in the transaction that writes
-- the rows it describes (record_statistics in sql/writes.sql; deleted with them): the aggregation reads a
-- model's digest here instead of hashing every statistic (evaluation/aggregates.py).
CREATE TABLE raw.statistics_digests (
    model_id VARCHAR NOT NULL,
    source   VARCHAR NOT NULL,   -- 'segment_stats', 'segment_scores' or 'word_recall'
    metric   VARCHAR NOT NULL,   -- '' for word_recall
    test_set VARCHAR NOT NULL,   -- the locale for word_recall
    n        BIGINT NOT NULL,    -- rows of the group
    digest   UBIGINT NOT NULL,   -- the XOR of the rows' hashes
    PRIMARY KEY (model_id, source, metric, test_set)
);

-- Cross-model aggregates, rewritten as a whole by the leaderboard asset
-- (cultivar_assets/evaluation/aggregates.py, definitions in evaluation/statistics.py).
--
-- The metric values are stored in long form (schema version 2): one row of raw.metric_values per
-- level, item, metric and quantity; the non-metric columns (language, FP/FN rates, counts) stay
-- in the narrow tables below it; raw.statistics_metrics says which metrics the aggregation
-- computed, with their signatures. The paper's wide tables (model_locale_deltas, leaderboard,
-- locale_deltas) are views pivoting raw.metric_values (views.sql).
--
-- level, and the item of a row:
--   'model_locale': model_id and locale (paper ∆ per model and locale; locale = the Cultivar
--                   locale, both sides on the paired instances P = ids(cultivar) ∩ ids(flores))
--   'model':        model_id, locale NULL (Table 3: the model's averages)
--   'locale':       locale, model_id NULL (Table 4: the mean ∆ over the models)
-- quantity: 'flores' (score on FLORES), 'cultivar' (score on Cultivar), 'delta' (∆ = cultivar −
-- flores, whatever the metric's direction: for a lower-is-better metric such as TER a positive ∆
-- is a worse Cultivar score); level 'locale' has 'delta' only.
-- value: the point estimate; low/high: the paired bootstrap's percentile interval
-- (statistics_settings); excludes_zero: the whole interval lies above or below 0 (set for
-- 'delta' rows, NULL otherwise); n: how many items the value rests on (level 'model_locale':
-- |P|; 'model': locale pairs for 'delta', FLORES test sets for 'flores', Cultivar test sets for
-- 'cultivar'; 'locale': models). low/high/excludes_zero/n are NULL in rows migrated from files
-- written before intervals were stored.
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

-- The metrics of the last aggregation, one row each, in the configured order (position 0, 1,
-- ...): the registry's label and direction, and the signature shared by every score aggregated
-- (exactly as sacreBLEU formats it; tokenizer_sha256: the SentencePiece model file, else NULL).
CREATE TABLE raw.statistics_metrics (
    metric           VARCHAR PRIMARY KEY,
    position         INTEGER NOT NULL,
    label            VARCHAR NOT NULL,
    higher_is_better BOOLEAN NOT NULL,
    signature        VARCHAR NOT NULL,
    tokenizer_sha256 VARCHAR
);

-- Per model and locale: the non-metric columns (n_instances = |P|; n_cultivar_only: the
-- locale's ids without a FLORES original, left out of both sides).
CREATE TABLE raw.model_locale_deltas (
    model_id        VARCHAR NOT NULL,
    locale          VARCHAR NOT NULL,
    language        VARCHAR NOT NULL,
    n_instances     INTEGER,
    n_cultivar_only INTEGER,
    PRIMARY KEY (model_id, locale)
);

-- Per model: the word-recall rates with their intervals, and the counts. The interval columns
-- came after the first release (NULL in rows written before them).
CREATE TABLE raw.model_summary (
    model_id             VARCHAR PRIMARY KEY,
    false_positive_rate  DOUBLE,
    false_negative_rate  DOUBLE,
    n_locale_pairs       INTEGER NOT NULL,
    n_flores_test_sets   INTEGER NOT NULL,
    n_cultivar_test_sets INTEGER NOT NULL,
    false_positive_rate_low  DOUBLE,
    false_positive_rate_high DOUBLE,
    false_negative_rate_low  DOUBLE,
    false_negative_rate_high DOUBLE,
    n_fp_locales             INTEGER,
    n_fn_locales             INTEGER
);

-- Word-recall rates per model and locale (cultivar_assets/metrics/word_recall.py).
CREATE TABLE raw.locale_word_recall (
    model_id            VARCHAR NOT NULL,
    locale              VARCHAR NOT NULL,
    false_positive_rate DOUBLE,            -- NULL when Σ|R| = 0
    false_negative_rate DOUBLE,            -- NULL when Σ|I| = 0
    n_removed_terms     BIGINT NOT NULL,   -- Σ|R|
    n_introduced_terms  BIGINT NOT NULL,   -- Σ|I|
    n_instances         INTEGER NOT NULL,
    PRIMARY KEY (model_id, locale)
);

-- Per locale: how many models its mean ∆ is over.
CREATE TABLE raw.locale_summary (
    locale     VARCHAR PRIMARY KEY,
    n_models   INTEGER NOT NULL
);

CREATE TABLE raw.rank_agreement (
    aggregation   VARCHAR NOT NULL,  -- 'per_locale', 'model_averages' (default), 'mean_of_locales'
    locale        VARCHAR,           -- NULL for the two averages
    metric        VARCHAR NOT NULL,
    spearman      DOUBLE,            -- NULL when undefined (fewer than 3 models, constant scores)
    kendall_tau_b DOUBLE,
    n_models      INTEGER NOT NULL,
    note          VARCHAR,
    n_locales     INTEGER,
    is_default    BOOLEAN
);

-- The Average rows of Tables 3 and 4, with their intervals and n.
CREATE TABLE raw.table_averages (
    paper_table VARCHAR NOT NULL,   -- 'table3' (mean over models), 'table4' (mean over locales)
    quantity    VARCHAR NOT NULL,   -- the averaged column
    aggregation VARCHAR NOT NULL,
    value       DOUBLE,
    low         DOUBLE,
    high        DOUBLE,
    n           INTEGER NOT NULL,   -- how many items are averaged
    n_of        VARCHAR NOT NULL,   -- 'models' or 'locales'
    note        VARCHAR,
    PRIMARY KEY (paper_table, quantity)
);

-- Rank, rank interval and non-separable models per sortable leaderboard column.
CREATE TABLE raw.leaderboard_ranks (
    model_id           VARCHAR NOT NULL,
    quantity           VARCHAR NOT NULL,   -- the leaderboard column ranked by
    higher_is_better   BOOLEAN NOT NULL,
    value              DOUBLE NOT NULL,
    rank               INTEGER NOT NULL,   -- on the point estimates; ties share the best rank
    rank_low           INTEGER NOT NULL,   -- percentile interval of the rank over the replicates
    rank_high          INTEGER NOT NULL,
    not_separable_from VARCHAR[] NOT NULL, -- models whose paired difference interval holds 0
    n_models           INTEGER NOT NULL,
    PRIMARY KEY (model_id, quantity)
);

-- Contamination and robustness rules (cultivar_assets/metrics/flags.py), one row per rule and
-- model, for the evaluated models (leaderboard asset) and the paper's reported Table 3
-- (reported_results asset).
CREATE TABLE raw.contamination_flags (
    source        VARCHAR NOT NULL,   -- 'evaluated' or 'reported'
    rule          VARCHAR NOT NULL,
    rule_text     VARCHAR NOT NULL,
    applied       BOOLEAN NOT NULL,   -- false: the rule could not be applied (see note)
    model_id      VARCHAR NOT NULL,
    fired         BOOLEAN,            -- NULL: not applied to this model (see detail)
    value         DOUBLE,
    threshold     DOUBLE,
    used_interval BOOLEAN NOT NULL,
    detail        VARCHAR NOT NULL,
    note          VARCHAR,
    PRIMARY KEY (source, rule, model_id)
);

-- How the last aggregation computed its statistics (one row).
CREATE TABLE raw.statistics_settings (
    n_replicates   INTEGER NOT NULL,
    seed           BIGINT NOT NULL,
    confidence     DOUBLE NOT NULL,
    n_instances    INTEGER NOT NULL,   -- the pool of instance ids resampled
    n_models       INTEGER NOT NULL,
    n_locales      INTEGER NOT NULL,
    resampling     VARCHAR NOT NULL,
    interval       VARCHAR NOT NULL,
    rank_rule      VARCHAR NOT NULL,
    flag_config    VARCHAR NOT NULL,   -- JSON of metrics.flags with its defaults
    seconds        DOUBLE NOT NULL,
    computed_at    TIMESTAMP NOT NULL
);

-- Figures published in the paper (Table 3), from the model registry: reported, not evaluated.
CREATE TABLE raw.reported_results (
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

-- Returned annotation files (post-editing, paper §2.3): one per locale, the last one ingested
-- (cultivar_assets/construction/annotation/file.py; its JSON Schema annotation.schema.json).
CREATE TABLE raw.annotation_files (
    locale         VARCHAR PRIMARY KEY,
    task_id        VARCHAR NOT NULL,
    drafts_hash    VARCHAR NOT NULL,
    annotator      VARCHAR NOT NULL,
    tool_version   VARCHAR NOT NULL,
    schema_version INTEGER NOT NULL,
    saved_at       TIMESTAMP NOT NULL,
    file_name      VARCHAR NOT NULL,
    file_sha256    VARCHAR,
    n_items        INTEGER NOT NULL,
    ingested_at    TIMESTAMP NOT NULL
);

-- One row per annotated instance. *_changed: the final text differs from the starting text (the
-- LLM paraphrase; the original for a flagged draft); *_edits: maximal runs of changed tokens
-- from the starting text to the final text (construction/annotation/text_edits.py).
CREATE TABLE raw.annotations (
    locale           VARCHAR NOT NULL,
    instance_id      INTEGER NOT NULL,
    source_original  VARCHAR NOT NULL,
    english_original VARCHAR NOT NULL,
    source_draft     VARCHAR,
    english_draft    VARCHAR,
    flagged          BOOLEAN NOT NULL,
    draft_hash       VARCHAR NOT NULL,
    prompt_hash      VARCHAR NOT NULL,
    source_final     VARCHAR NOT NULL,
    english_final    VARCHAR NOT NULL,
    action           VARCHAR NOT NULL,   -- 'kept', 'edited', 'reverted'
    confirmed        BOOLEAN NOT NULL,
    source_mode      VARCHAR NOT NULL,   -- 'word' or 'char'
    source_changed   BOOLEAN NOT NULL,
    english_changed  BOOLEAN NOT NULL,
    source_edits     INTEGER NOT NULL,
    english_edits    INTEGER NOT NULL,
    updated_at       TIMESTAMP,
    confirmed_at     TIMESTAMP,
    PRIMARY KEY (locale, instance_id)
);

-- Building Cultivar, named-entity-rich selection (paper §2.1; asset selected_instances). The
-- tables hold the last selection run and are rewritten as a whole.
CREATE TABLE raw.selection_runs (
    fingerprint        VARCHAR NOT NULL,
    source_name        VARCHAR NOT NULL,
    source_description VARCHAR NOT NULL,
    source_fingerprint VARCHAR NOT NULL,
    is_demo            BOOLEAN NOT NULL,
    spacy_version      VARCHAR NOT NULL,
    pipeline           VARCHAR NOT NULL,
    pipeline_version   VARCHAR NOT NULL,
    counted_labels     VARCHAR[] NOT NULL,
    config             VARCHAR NOT NULL,   -- JSON of the selection configuration
    corrections_file   VARCHAR,
    corrections_sha256 VARCHAR,
    selection_file     VARCHAR,            -- the manual selection file, when one was given
    selection_sha256   VARCHAR,
    counts             VARCHAR NOT NULL,   -- JSON: the counts of the report
    notes              VARCHAR[] NOT NULL,
    created_at         TIMESTAMP NOT NULL,
    -- the source benchmark's identity (JSON: kind; flores: split, origin, path or repo, revision,
    -- commit; files: path, sha256), which the built dataset's manifest records. NULL in files
    -- written before it was recorded (then the manifest says it is not known)
    source_identity    VARCHAR
);

-- Every instance of the source benchmark with the selection's findings and decision.
CREATE TABLE raw.selection_instances (
    instance_id     INTEGER PRIMARY KEY,
    english         VARCHAR NOT NULL,
    domain          VARCHAR,
    topic           VARCHAR,             -- as the source spells it
    topic_terms     VARCHAR[] NOT NULL,  -- normalised (cultivar_assets/construction/selection/rules.py)
    n_entities      INTEGER NOT NULL,    -- counted entities after corrections
    enough_entities BOOLEAN NOT NULL,    -- n_entities >= min_entities
    excluded_by     VARCHAR[] NOT NULL,  -- rules that exclude it
    candidate       BOOLEAN NOT NULL,    -- enough entities, no rule excludes it
    selected        BOOLEAN NOT NULL,
    selected_by     VARCHAR,             -- 'order' or 'manual'
    selection_rank  INTEGER,             -- place in the order, or in the manual selection file
    overrides       VARCHAR[] NOT NULL   -- what a manual selection overrode
);

CREATE TABLE raw.selection_entities (
    instance_id INTEGER NOT NULL,
    start_char  INTEGER NOT NULL,   -- character offsets into english, end exclusive
    end_char    INTEGER NOT NULL,
    text        VARCHAR NOT NULL,
    label       VARCHAR NOT NULL,
    origin      VARCHAR NOT NULL,   -- 'ner' (spaCy) or 'added' (corrections file)
    removed     BOOLEAN NOT NULL,   -- a spaCy entity removed by the corrections file
    counted     BOOLEAN NOT NULL,   -- kept and its label is counted
    note        VARCHAR
);

CREATE TABLE raw.selection_rule_outcomes (
    instance_id INTEGER NOT NULL,
    rule        VARCHAR NOT NULL,
    excluded    BOOLEAN NOT NULL,
    value       DOUBLE,
    detail      VARCHAR NOT NULL,
    PRIMARY KEY (instance_id, rule)
);

-- The source sentences of the selected instances, for the localisation step.
CREATE TABLE raw.selection_sources (
    instance_id INTEGER NOT NULL,
    language    VARCHAR NOT NULL,   -- FLORES+ code
    source      VARCHAR NOT NULL,
    PRIMARY KEY (instance_id, language)
);

-- Building Cultivar, LLM localisation (paper §2.2; asset localised_drafts): one row per locale,
-- the run that wrote its drafts (cultivar_assets/construction/localisation/localiser.py). No secret is
-- stored: engine_options holds only the options that change answers (no server address, no key).
CREATE TABLE raw.localisation_runs (
    locale                   VARCHAR PRIMARY KEY,
    task_id                  VARCHAR NOT NULL,   -- <locale>-<drafts_hash[:12]>
    drafts_hash              VARCHAR NOT NULL,
    n_drafts                 INTEGER NOT NULL,
    n_flagged                INTEGER NOT NULL,   -- answers that could not be read
    n_retried                INTEGER NOT NULL,   -- drafts that needed more than one attempt
    n_unchanged              INTEGER NOT NULL,   -- drafts identical to the original pair
    n_generated              INTEGER NOT NULL,   -- answers generated by this run (not cached)
    prompt_tokens            BIGINT,             -- NULL: the engine reported no usage
    completion_tokens        BIGINT,
    estimated_cost           DOUBLE,             -- NULL: no prices configured
    estimated_cost_this_run  DOUBLE,
    price_input_per_million  DOUBLE,
    price_output_per_million DOUBLE,
    currency                 VARCHAR,
    localiser                VARCHAR NOT NULL,   -- engine and model that ran (drafts.py:
                                                 -- localiser_description), never a label
    engine                   VARCHAR NOT NULL,
    engine_version           VARCHAR NOT NULL,
    model                    VARCHAR NOT NULL,
    model_revision           VARCHAR,
    engine_fingerprint       VARCHAR NOT NULL,
    engine_options           VARCHAR NOT NULL,   -- JSON
    prompt_name              VARCHAR NOT NULL,
    prompt_hash              VARCHAR NOT NULL,
    max_new_tokens           INTEGER NOT NULL,
    max_attempts             INTEGER NOT NULL,
    selection_fingerprint    VARCHAR NOT NULL,
    is_demo                  BOOLEAN NOT NULL,
    seconds                  DOUBLE NOT NULL,    -- the localisation call that wrote the row
    n_locales_in_run         INTEGER NOT NULL,   -- locales that call localised
    created_at               TIMESTAMP NOT NULL,
    -- added later (NULL in older files): how many drafts fail each check (construction/localisation/drafts.py:
    -- draft_checks) and, for the engine replay, what the recording says it was recorded from (JSON)
    n_source_not_in_script   INTEGER,
    n_source_equals_english  INTEGER,
    n_source_equals_original INTEGER,
    recorded_from            VARCHAR
);

-- One LLM draft per locale and selected instance (construction/localisation/drafts.py: draft_hash).
CREATE TABLE raw.localised_drafts (
    locale            VARCHAR NOT NULL,
    instance_id       INTEGER NOT NULL,
    source_original   VARCHAR NOT NULL,
    english_original  VARCHAR NOT NULL,
    source_draft      VARCHAR,              -- NULL when flagged
    english_draft     VARCHAR,
    raw_answer        VARCHAR NOT NULL,     -- the last answer, as returned
    flagged           BOOLEAN NOT NULL,
    flag_reason       VARCHAR,
    attempts          INTEGER NOT NULL,
    prompt_hash       VARCHAR NOT NULL,
    draft_hash        VARCHAR NOT NULL,
    prompt_tokens     BIGINT,
    completion_tokens BIGINT,
    checks            VARCHAR[],            -- the codes of the checks the draft fails (drafts.py;
                                            -- added later: NULL in older files)
    PRIMARY KEY (locale, instance_id)
);

-- Building Cultivar, the dataset (paper §2.4; asset cultivar_dataset): the last build, its
-- instances with their provenance, and Table 1 of the annotations it was built from. Rewritten as
-- a whole by each build.
CREATE TABLE raw.dataset_build (
    fingerprint   VARCHAR NOT NULL,   -- sha256 of the built rows
    folder        VARCHAR NOT NULL,   -- where the dataset files were written
    is_demo       BOOLEAN NOT NULL,   -- built from the demo data
    source        VARCHAR NOT NULL,   -- the source benchmark (selection_summary)
    locales       VARCHAR[] NOT NULL,
    n_instances   INTEGER NOT NULL,
    built_at      TIMESTAMP NOT NULL,
    -- what the build's records say about how it was made (JSON; construction/dataset.py,
    -- build_provenance): the manifest's "provenance". NULL in files written before it was recorded
    provenance    VARCHAR
);

CREATE TABLE raw.built_instances (
    locale            VARCHAR NOT NULL,
    instance_id       INTEGER NOT NULL,
    source_original   VARCHAR NOT NULL,
    english_original  VARCHAR NOT NULL,
    source_draft      VARCHAR,              -- the LLM draft (NULL when it was flagged)
    english_draft     VARCHAR,
    flagged           BOOLEAN NOT NULL,
    source_localised  VARCHAR NOT NULL,     -- the confirmed final pair (surrounding space trimmed)
    english_localised VARCHAR NOT NULL,
    action            VARCHAR NOT NULL,     -- 'kept', 'edited', 'reverted'
    draft_hash        VARCHAR NOT NULL,
    prompt_hash       VARCHAR NOT NULL,
    task_id           VARCHAR NOT NULL,
    annotator         VARCHAR NOT NULL,
    PRIMARY KEY (locale, instance_id)
);

CREATE TABLE raw.built_table1 (
    locale                    VARCHAR PRIMARY KEY,
    n_instances               INTEGER NOT NULL,
    n_flagged                 INTEGER NOT NULL,
    kept_llm_paraphrase       INTEGER NOT NULL,
    reverted_to_flores        INTEGER NOT NULL,
    edited_source_only        INTEGER NOT NULL,
    edited_target_only        INTEGER NOT NULL,
    edited_both               INTEGER NOT NULL,
    avg_edits_source          DOUBLE,
    avg_edits_english         DOUBLE,
    n_revised_source_changed  INTEGER NOT NULL,
    n_revised_english_changed INTEGER NOT NULL,
    annotator                 VARCHAR
);

-- Error analysis (paper §5, Table 5): the returned error-annotation files, one per locale, and
-- one row per annotated translation (cultivar_assets/error_analysis/file.py; its JSON Schema
-- error_annotation.schema.json). Replaced as a whole by the error_analysis asset.
CREATE TABLE raw.error_files (
    locale                VARCHAR PRIMARY KEY,
    task_id               VARCHAR NOT NULL,
    annotator             VARCHAR NOT NULL,
    tool_version          VARCHAR NOT NULL,
    schema_version        INTEGER NOT NULL,
    saved_at              TIMESTAMP NOT NULL,
    file_name             VARCHAR NOT NULL,
    file_sha256           VARCHAR,
    is_demo               BOOLEAN NOT NULL,   -- the toolkit's bundled, illustrative demo files
    n_items               INTEGER NOT NULL,
    n_translation_changed INTEGER NOT NULL,   -- items whose stored translation differs (demo only)
    ingested_at           TIMESTAMP NOT NULL
);

CREATE TABLE raw.error_annotations (
    locale              VARCHAR NOT NULL,
    instance_id         INTEGER NOT NULL,
    model_id            VARCHAR NOT NULL,
    item_key            VARCHAR NOT NULL,
    system              VARCHAR NOT NULL,   -- what the page called the model ('system 2' when blind)
    errors              VARCHAR[] NOT NULL, -- error type codes (error_analysis/types.py), each once
    note                VARCHAR NOT NULL,
    done                BOOLEAN NOT NULL,
    hypothesis_sha256   VARCHAR NOT NULL,   -- of the translation annotated
    translation_matches BOOLEAN NOT NULL,   -- it equals the stored translation
    updated_at          TIMESTAMP,
    done_at             TIMESTAMP,
    PRIMARY KEY (locale, instance_id, model_id)
);

-- The error analysis's configuration at the last ingest (one row): the outlier model of the
-- second correlation and the sample's definition.
CREATE TABLE raw.error_analysis_settings (
    outlier_model   VARCHAR,
    seed            VARCHAR NOT NULL,
    n_instances     INTEGER,            -- per locale; NULL: all
    locales         VARCHAR[] NOT NULL,
    models          VARCHAR[],          -- NULL: every model on the leaderboard
    blind           BOOLEAN NOT NULL,
    annotations_dir VARCHAR,
    n_files         INTEGER NOT NULL,
    ingested_at     TIMESTAMP NOT NULL
);

-- Failed Dagster runs, recorded by the run-failure sensor (cultivar_assets/automation.py): one
-- row per run; the model is the run's `cultivar/model` tag or its partition, when it has one.
CREATE TABLE raw.run_failures (
    run_id     VARCHAR PRIMARY KEY,
    job        VARCHAR NOT NULL,
    model_id   VARCHAR,              -- NULL: a run of no single model (results, build, ...)
    step       VARCHAR,              -- the first failed step, when a step failed
    error      VARCHAR NOT NULL,     -- the first line of the error (secrets redacted)
    failed_at  TIMESTAMP NOT NULL    -- UTC
);

-- The file's write log: every Store.write appends its generation (one more than the last) and
-- its writer (host:pid:token of the process) in its own transaction, and keeps the most recent
-- 100,000 rows. A pipeline run reads the writers since its first look: another writer means
-- the results it would print are not only its own (store/database.py, runner/pipeline.py).
CREATE TABLE raw.write_log (
    generation BIGINT PRIMARY KEY,
    writer     VARCHAR NOT NULL
);

-- Which schema.sql and views.sql the file was last set up with (the sha256 of both texts): a
-- connection sets the file up (migrations, views) only when this differs (store/database.py).
CREATE TABLE raw.schema_state (
    digest VARCHAR NOT NULL
);

-- The schema versions the file went through, one row each: the version it was created at (by
-- schema.sql) and each migration since (by its file in sql/migrations/). Its version is the
-- largest (store/migrations.py).
CREATE TABLE raw.schema_version (
    version    INTEGER NOT NULL,
    applied_at TIMESTAMP NOT NULL,   -- UTC
    applied_by VARCHAR NOT NULL      -- schema.sql, or the migration's file name
);
