-- Migration 3 -> 4. Never edit this file: a later change is a new migration.
-- raw.statistics_digests (sql/schema.sql), new, filled with the digest of every model's stored
-- statistics, segment scores and word-recall counts (the groups of the query
-- statistics_groups_of_models).

CREATE TABLE raw.statistics_digests (
    model_id VARCHAR NOT NULL,
    source   VARCHAR NOT NULL,   -- 'segment_stats', 'segment_scores' or 'word_recall'
    metric   VARCHAR NOT NULL,   -- '' for word_recall
    test_set VARCHAR NOT NULL,   -- the locale for word_recall
    n        BIGINT NOT NULL,    -- rows of the group
    digest   UBIGINT NOT NULL,   -- the XOR of the rows' hashes
    PRIMARY KEY (model_id, source, metric, test_set)
);

INSERT INTO raw.statistics_digests
SELECT model_id, 'segment_stats', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, stats))
FROM raw.segment_stats GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'segment_scores', metric, test_set, count(*),
       bit_xor(hash(metric, test_set, segment_id, score))
FROM raw.segment_scores GROUP BY model_id, metric, test_set
UNION ALL
SELECT model_id, 'word_recall', '', locale, count(*),
       bit_xor(hash(locale, segment_id, n_removed, n_removed_recalled, n_introduced,
                    n_introduced_missed))
FROM raw.word_recall GROUP BY model_id, locale;
