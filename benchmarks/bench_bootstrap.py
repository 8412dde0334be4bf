"""Benchmark: paired bootstrap of 32 models × 27 locales × 200 instances × 1,000 replicates.

Runs :func:`cultivar_assets.metrics.bootstrap.paired_bootstrap` on synthetic per-segment
statistics (BLEU and chrF, plus word-recall counts with ``--recall``) for the real locale registry
(27 locales, 21 source languages: 48 test sets per model) and prints the time of each repeat.
Not a test: run it by hand and record the figure in docs/performance.md (target: ≤ 10 s on the
2-core machine, BLEU and chrF). After the bootstrap, each repeat also builds every table the
leaderboard stores from it (``evaluation.statistics.statistics_tables``: every interval as rows,
rank intervals of the 8 sortable columns, rank agreement, averages, contamination flags), and
``--store`` times the whole ``evaluation.aggregate`` on a DuckDB file holding the same
statistics (reading them, the bootstrap with word recall, the tables, the write).

    python benchmarks/bench_bootstrap.py                 # 3 repeats
    python benchmarks/bench_bootstrap.py --repeats 5 --recall
    python benchmarks/bench_bootstrap.py --store --repeats 1

Synthetic statistics: per instance a reference of 20-60 subword tokens and 80-250 characters;
each model has a quality q (0.25-0.75) and the hypothesis length is the reference's ±15 %;
n-gram matches are binomial draws with success probability ~ q^n (BLEU) and q^(n/3) (chrF), so
the counts obey the constraints of real statistics (match ≤ hypothesis n-grams).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from cultivar_assets.data.locales import (
    all_locales,
    cultivar_test_set_name,
    flores_test_set_name,
)
from cultivar_assets.evaluation.statistics import statistics_tables
from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.flags import FlagConfig
from cultivar_assets.metrics.registry import metric_registry, score_functions
from cultivar_assets.metrics.segment_stats import RECALL_COLUMNS, RecallCounts, SegmentStats


def synthetic_segment_stats(rng: np.random.Generator, n: int, quality: float):
    """(bleu (n, 10), chrf (n, 18)) statistics of one system on one test set."""
    ref_tokens = rng.integers(20, 61, size=n)
    hyp_tokens = np.maximum((ref_tokens * rng.uniform(0.85, 1.15, size=n)).astype(int), 1)
    orders = np.arange(1, 5)
    hyp_count = np.maximum(hyp_tokens[:, None] - orders + 1, 0)
    q = np.clip(quality * rng.uniform(0.7, 1.3, size=(n, 1)), 0.01, 0.99)
    match = rng.binomial(hyp_count, q ** orders)
    bleu = np.column_stack([hyp_tokens, ref_tokens, match, hyp_count])

    ref_chars = rng.integers(80, 251, size=n)
    hyp_chars = np.maximum((ref_chars * rng.uniform(0.85, 1.15, size=n)).astype(int), 1)
    orders = np.arange(1, 7)
    hyp_n = np.maximum(hyp_chars[:, None] - orders + 1, 0)
    ref_n = np.maximum(ref_chars[:, None] - orders + 1, 0)
    match_n = rng.binomial(np.minimum(hyp_n, ref_n), np.clip(q ** (orders / 3), 0, 1))
    chrf = np.stack([hyp_n, ref_n, match_n], axis=2).reshape(n, 18)
    return bleu, chrf


def synthetic_input(n_models: int, n_instances: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    locales = all_locales()
    languages = list(dict.fromkeys(loc.source_language for loc in locales))
    ids = np.arange(n_instances) * 3 + 1  # ids need not be 0..n-1
    models = [f"model_{m:02d}" for m in range(n_models)]
    stats: dict[str, dict] = {"bleu": {}, "chrf": {}}
    recall = {}
    for m, model in enumerate(models):
        quality = 0.25 + 0.5 * m / max(n_models - 1, 1)
        names = [flores_test_set_name(lang) for lang in languages]
        names += [cultivar_test_set_name(loc.key) for loc in locales]
        for name in names:
            bleu, chrf = synthetic_segment_stats(rng, n_instances, quality)
            stats["bleu"][(model, name)] = SegmentStats.build(ids, bleu)
            stats["chrf"][(model, name)] = SegmentStats.build(ids, chrf)
        for loc in locales:
            removed = rng.integers(0, 6, size=n_instances)
            introduced = rng.integers(0, 6, size=n_instances)
            counts = np.column_stack([removed, rng.binomial(removed, 0.01), introduced,
                                      rng.binomial(introduced, 0.2)])
            recall[(model, loc.key)] = RecallCounts.build(ids, counts)
    return models, [loc.key for loc in locales], stats, recall


def synthetic_store(path, models, locales, stats, recall):
    """A DuckDB store holding the synthetic statistics and what ``aggregate`` reads with them
    (the dataset, segments, scores, word recall, model entries)."""
    import pyarrow as pa

    from cultivar_assets.data.testsets import BenchmarkData, Instance
    from cultivar_assets.store.database import Store, WriteBlock
    from cultivar_assets.store.records import write_dataset

    ids = next(iter(stats["bleu"].values())).ids
    data = BenchmarkData("synthetic benchmark statistics", False, {
        loc: [Instance(loc, int(i), f"source {i}", f"reference {i}", f"original {i}",
                       f"original reference {i}") for i in ids] for loc in locales})
    store = Store(path)
    fingerprint = write_dataset(store, data)
    signature = {"bleu": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0",
                 "chrf": "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"}
    scores, values = [], []
    columns: dict[str, list] = {c: [] for c in ("model_id", "test_set", "segment_id", "metric")}
    for metric, table in stats.items():
        for (model, test_set), s in table.items():
            scores.append({"model_id": model, "test_set": test_set, "metric": metric,
                           "score": float(metric_registry().get(metric).score_from_stats(
                               s.stats.sum(axis=0))),
                           "signature": signature[metric], "n_segments": len(s.ids),
                           "dataset_fingerprint": fingerprint, "tokenizer_sha256": None})
            columns["model_id"] += [model] * len(s.ids)
            columns["test_set"] += [test_set] * len(s.ids)
            columns["segment_id"] += s.ids.tolist()
            columns["metric"] += [metric] * len(s.ids)
            values += s.stats.tolist()
    segment_stats = pa.table({**columns, "stats": pa.array(values, pa.list_(pa.int64()))})
    recall_rows = [{"model_id": m, "locale": loc, "segment_id": int(i),
                    **dict(zip(RECALL_COLUMNS, map(int, row), strict=True))}
                   for (m, loc), r in recall.items()
                   for i, row in zip(r.ids, r.counts, strict=True)]
    model_rows = [{"model_id": m, "hf_id": None, "revision": None, "weights": "hub",
                   "type": "LLM", "family": "Synthetic", "params_total_b": None,
                   "params_active_b": None, "engine": "none", "prompt_style": "none",
                   "engine_options": "{}"} for m in models]
    store.write([WriteBlock("insert_models", rows=model_rows),
                 WriteBlock("insert_scores", rows=scores),
                 WriteBlock("insert_segment_stats", rows=segment_stats),
                 WriteBlock("insert_word_recall", rows=recall_rows)])
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recall", action="store_true", help="also bootstrap FP/FN rates")
    parser.add_argument("--store", action="store_true",
                        help="also time evaluation.aggregate on a DuckDB file with these data")
    args = parser.parse_args()

    started = time.perf_counter()
    import scipy.stats  # noqa: F401  (rank agreement's; imported once per process, not timed)

    print(f"scipy.stats imported in {time.perf_counter() - started:.1f} s (not in the times)")
    started = time.perf_counter()
    models, locales, stats, recall = synthetic_input(args.models, args.instances)
    print(f"synthetic input: {len(models)} models × {len(locales)} locales × "
          f"{args.instances} instances, {sum(len(t) for t in stats.values())} "
          f"(model, test set, metric) statistics in {time.perf_counter() - started:.1f} s")
    config = BootstrapConfig(n_replicates=args.replicates)
    times, totals = [], []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        result = paired_bootstrap(stats, models, locales, recall if args.recall else None, config,
                                  score_functions=score_functions(stats))
        times.append(time.perf_counter() - started)
        # what the leaderboard stores from it: every interval as rows, the rank intervals of the
        # sortable columns, rank agreement, averages and the contamination flags
        tables = statistics_tables(result, FlagConfig())
        rows = (len(tables.pairs) + len(tables.models) + len(tables.locales) + len(tables.values)
                + len(tables.agreement) + len(tables.averages) + len(tables.ranks)
                + len(tables.flags))
        totals.append(time.perf_counter() - started)
        print(f"repeat {repeat + 1}: bootstrap {times[-1]:.2f} s, with every table "
              f"({rows} rows, {len(tables.ranks)} rank intervals) {totals[-1]:.2f} s")
    delta = result["model_delta_bleu"]
    last = [r for r in tables.ranks.to_pylist() if r["quantity"] == "delta_bleu"][-1]
    print(f"{len(result['pair_delta_bleu'].keys)} pairs, {len(result.quantities)} quantities; "
          f"model_00 ∆BLEU {delta.point[0]:+.2f} [{delta.low[0]:+.2f}, {delta.high[0]:+.2f}], "
          f"last rank {last['rank_low']}–{last['rank_high']}")
    what = f"{args.replicates} replicates, BLEU + chrF{' + word recall' if args.recall else ''}"
    print(f"paired_bootstrap ({what}): min {min(times):.2f} s, median "
          f"{statistics.median(times):.2f} s; with every table: min "
          f"{min(totals):.2f} s, median {statistics.median(totals):.2f} s "
          f"({len(times)} repeats)")
    if args.store:
        time_aggregate(args, models, locales, stats, recall)


def time_aggregate(args, models, locales, stats, recall) -> None:
    import tempfile
    from pathlib import Path

    from cultivar_assets.evaluation import aggregate
    from cultivar_assets.metrics.metric_config import MetricConfig

    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        store = synthetic_store(Path(folder) / "bench.duckdb", models, locales, stats, recall)
        print(f"store written in {time.perf_counter() - started:.1f} s")
        config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=args.replicates)
        aggregated = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            result = aggregate(store, config=config)
            aggregated.append(time.perf_counter() - started)
        print(f"aggregate from the store ({len(result.models)} models, with word recall, "
              f"{args.replicates} replicates; read + bootstrap + tables + write): min "
              f"{min(aggregated):.2f} s, median {statistics.median(aggregated):.2f} s "
              f"({len(aggregated)} repeats)")


if __name__ == "__main__":
    main()
