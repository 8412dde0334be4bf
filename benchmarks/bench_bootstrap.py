"""Benchmark: paired bootstrap of 32 models × 27 locales × 200 instances × 1,000 replicates.

Runs :func:`cultivar_assets.metrics.bootstrap.paired_bootstrap` on synthetic per-segment
statistics (BLEU and chrF, plus word-recall counts with ``--recall``) for the real locale registry
(27 locales, 21 source languages: 48 test sets per model) and prints the time of each repeat.
Not a test: run it by hand and record the figure in the README (target: ≤ 10 s on the 2-core
machine, BLEU and chrF).

    python benchmarks/bench_bootstrap.py                 # 3 repeats
    python benchmarks/bench_bootstrap.py --repeats 5 --recall

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
from cultivar_assets.metrics.bootstrap import BootstrapConfig, paired_bootstrap
from cultivar_assets.metrics.ranks import rank_intervals
from cultivar_assets.metrics.segment_stats import RecallCounts, SegmentStats


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--recall", action="store_true", help="also bootstrap FP/FN rates")
    args = parser.parse_args()

    started = time.perf_counter()
    models, locales, stats, recall = synthetic_input(args.models, args.instances)
    print(f"synthetic input: {len(models)} models × {len(locales)} locales × "
          f"{args.instances} instances, {sum(len(t) for t in stats.values())} "
          f"(model, test set, metric) statistics in {time.perf_counter() - started:.1f} s")
    config = BootstrapConfig(n_replicates=args.replicates)
    times, totals = [], []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        result = paired_bootstrap(stats, models, locales, recall if args.recall else None, config)
        times.append(time.perf_counter() - started)
        # what the leaderboard needs next: every interval (as rows) and the rank intervals
        rows = result.pair_rows() + result.model_rows() + result.locale_rows()
        ranks = rank_intervals(result["model_delta_bleu"])
        totals.append(time.perf_counter() - started)
        print(f"repeat {repeat + 1}: bootstrap {times[-1]:.2f} s, with intervals, "
              f"{len(rows)} rows and rank intervals {totals[-1]:.2f} s")
    delta = result["model_delta_bleu"]
    print(f"{len(result['pair_delta_bleu'].keys)} pairs, {len(result.quantities)} quantities; "
          f"model_00 ∆BLEU {delta.point[0]:+.2f} [{delta.low[0]:+.2f}, {delta.high[0]:+.2f}], "
          f"{ranks[-1].label}")
    what = f"{args.replicates} replicates, BLEU + chrF{' + word recall' if args.recall else ''}"
    print(f"paired_bootstrap ({what}): min {min(times):.2f} s, median "
          f"{statistics.median(times):.2f} s; with intervals, rows and ranks: min "
          f"{min(totals):.2f} s, median {statistics.median(totals):.2f} s "
          f"({len(times)} repeats)")


if __name__ == "__main__":
    main()
