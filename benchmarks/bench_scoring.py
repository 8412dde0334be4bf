"""Benchmark: scoring 32 models x 48 test sets x 200 segments (BLEU + chrF).

Compares the project's scorer (:func:`cultivar_assets.metrics.scoring.score_systems`) with a plain
loop of sacreBLEU ``corpus_score`` calls on the same synthetic data, checks that every score is
identical, and prints the timings. Not a test: run it by hand and record the figures in the README.

    python benchmarks/bench_scoring.py                   # BLEU tokenizer 13a (no download needed)
    python benchmarks/bench_scoring.py --tokenize flores200   # needs the flores200 SPM model

Synthetic data: references are pseudo-English sentences of 12-40 words drawn from a fixed
syllable alphabet; each model's hypotheses replace, drop or insert words at a model-specific rate.
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from cultivar_assets.metrics.configured import build_metrics
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.metrics.scoring import score_systems

SYLLABLES = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["th", "ing", "er", "an"]


def synthetic_data(models: int, test_sets: int, segments: int, seed: int = 13):
    rng = random.Random(seed)
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(6000)]
    words += [",", ".", "the", "of", "and", "in", "to", "a"] * 50

    def sentence() -> str:
        text = " ".join(rng.choices(words, k=rng.randint(12, 40)))
        return text[0].upper() + text[1:] + "."

    references = {f"test_{t:02d}": [sentence() for _ in range(segments)] for t in range(test_sets)}
    hypotheses: dict[str, dict[str, list[str]]] = {}
    for m in range(models):
        rate = 0.05 + 0.4 * m / max(models - 1, 1)
        per_test = {}
        for name, refs in references.items():
            hyps = []
            for ref in refs:
                out = []
                for token in ref.split():
                    draw = rng.random()
                    if draw < rate / 3:
                        continue  # drop
                    if draw < 2 * rate / 3:
                        token = rng.choice(words)  # replace
                    elif draw < rate:
                        out.append(rng.choice(words))  # insert
                    out.append(token)
                hyps.append(" ".join(out))
            per_test[name] = hyps
        hypotheses[f"model_{m:02d}"] = per_test
    return references, hypotheses


def baseline(references, hypotheses, config: MetricConfig) -> dict:
    metrics = build_metrics(config).metrics
    scores = {}
    for model, tests in hypotheses.items():
        for test_set, hyps in tests.items():
            for name, metric in metrics.items():
                refs = [references[test_set]]
                scores[model, test_set, name] = metric.corpus_score(hyps, refs).score
    return scores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32)
    parser.add_argument("--test-sets", type=int, default=48)
    parser.add_argument("--segments", type=int, default=200)
    parser.add_argument("--processes", type=int, default=None, help="default: all CPUs")
    parser.add_argument("--tokenize", default="13a", help="BLEU tokenizer (default 13a)")
    args = parser.parse_args(argv)
    config = MetricConfig(bleu_tokenize=args.tokenize)
    references, hypotheses = synthetic_data(args.models, args.test_sets, args.segments)
    n_segments = args.models * args.test_sets * args.segments

    start = time.perf_counter()
    fast = {(s.system, s.test_set, s.metric): s.score
            for s in score_systems(references, hypotheses, config, processes=args.processes)}
    fast_seconds = time.perf_counter() - start

    start = time.perf_counter()
    slow = baseline(references, hypotheses, config)
    slow_seconds = time.perf_counter() - start

    mismatches = [key for key in slow if slow[key] != fast.get(key)]
    print(f"data: {args.models} models x {args.test_sets} test sets x {args.segments} segments "
          f"= {n_segments:,} segments; BLEU tokenizer {args.tokenize}, chrF word order 0")
    print(f"sacreBLEU corpus_score loop : {slow_seconds:7.1f} s  "
          f"({n_segments / slow_seconds:,.0f} segments/s)")
    print(f"cultivar score_systems      : {fast_seconds:7.1f} s  "
          f"({n_segments / fast_seconds:,.0f} segments/s)")
    print(f"speed-up: {slow_seconds / fast_seconds:.1f}x; scores compared: {len(slow)}, "
          f"mismatches: {len(mismatches)}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
