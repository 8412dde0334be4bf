"""Benchmark: building the site for 32 and 320 synthetic models × 48 test sets × 200 segments.

A synthetic database (27 locales + 21 languages = 48 test sets of 200 segments; hypotheses are
perturbed references; scores and word-recall counts are random) is written for each size, then
``build_site`` is timed. Build time should grow no worse than linearly with the number of models.
Not a test: run it by hand and record the figures in the README.

    python benchmarks/bench_site.py                 # 32 and 320 models (several GB in /tmp)
    python benchmarks/bench_site.py --models 8 32   # other sizes
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cultivar_assets.data.locales import all_locales
from cultivar_assets.data.testsets import BenchmarkData, Instance
from cultivar_assets.engines.base import EngineInfo
from cultivar_assets.evaluation import aggregate
from cultivar_assets.site.build import build_site
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import Step, Store
from cultivar_assets.store.records import read_test_sets, write_dataset, write_translations
from cultivar_assets.translation import TranslationRow, TranslationRun

sys.path.insert(0, str(Path(__file__).parent))
from bench_scoring import SYLLABLES


def synthetic_benchmark(n_ids: int, rng: random.Random) -> BenchmarkData:
    words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 3))) for _ in range(3000)]

    def sentence(entities: list[str]) -> str:
        body = rng.choices(words, k=rng.randint(12, 30))
        for entity in entities:
            body.insert(rng.randrange(len(body)), entity)
        return " ".join(body).capitalize() + "."

    english = {i: sentence(["Alpha City", "Beta Corp"]) for i in range(n_ids)}
    instances = {}
    for locale in all_locales():
        rows = []
        for i in range(n_ids):
            local = english[i].replace("Alpha City", f"{locale.location} Town")
            rows.append(Instance(locale.key, i, f"[{locale.language}] {local}", local,
                                 f"[{locale.language}] {english[i]}", english[i]))
        instances[locale.key] = rows
    return BenchmarkData("synthetic benchmark data", False, instances)


def fill(store: Store, n_models: int, n_ids: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    fingerprint = write_dataset(store, synthetic_benchmark(n_ids, rng))
    test_sets = read_test_sets(store)
    for m in range(n_models):
        spec = ModelSpec(id=f"model-{m:03d}", hf_id=f"org/model-{m:03d}", type="LLM",
                         family=f"family-{m % 8}", params_total_b=0.5 * (1 + m % 40),
                         engine="copy-source", prompt_style="source")
        rows = []
        for test_set in test_sets:
            for segment in test_set.segments:
                words = segment.reference.split()
                for _ in range(rng.randint(0, 3)):
                    words[rng.randrange(len(words))] = rng.choice(words)
                hypothesis = " ".join(words)
                rows.append(TranslationRow(spec.id, test_set.name, segment.segment_id,
                                           segment.source, segment.reference, hypothesis,
                                           hypothesis, ()))
        run = TranslationRun(spec, "0" * 64, EngineInfo("copy-source", "synthetic", None, None),
                             "0" * 64, rows, len(rows), 0, 0.0)
        write_translations(store, run, fingerprint)
        scores = [{"model_id": spec.id, "test_set": t.name, "metric": metric,
                   "score": rng.uniform(10, 60), "signature": f"synthetic {metric}",
                   "n_segments": len(t.segments), "dataset_fingerprint": fingerprint}
                  for t in test_sets for metric in ("bleu", "chrf")]
        recall = [{"model_id": spec.id, "locale": t.locale, "segment_id": s.segment_id,
                   "n_removed": 2, "n_removed_recalled": rng.randint(0, 1), "n_introduced": 2,
                   "n_introduced_missed": rng.randint(0, 2)}
                  for t in test_sets if t.locale for s in t.segments]
        store.write([Step("delete_model_scores", {"model_id": spec.id}),
                     Step("insert_scores", rows=scores), Step("insert_word_recall", rows=recall)])
    aggregate(store)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, nargs="+", default=[32, 320])
    parser.add_argument("--segments", type=int, default=200, help="instances per test set")
    parser.add_argument("--keep", action="store_true", help="keep the built sites")
    args = parser.parse_args(argv)
    results = []
    for n_models in args.models:
        folder = Path(tempfile.mkdtemp(prefix=f"cultivar-site-{n_models}-"))
        store = Store(folder / "bench.duckdb")
        start = time.perf_counter()
        fill(store, n_models, args.segments)
        filled = time.perf_counter() - start
        summary = build_site(store, folder / "site", card_markdown="# Synthetic card")
        results.append((n_models, filled, summary))
        print(f"{n_models} models: database {filled:.0f} s; site {summary.seconds:.1f} s, "
              f"{summary.pages} pages, {summary.bytes / 1e9:.2f} GB", flush=True)
        if not args.keep:
            shutil.rmtree(folder)
    print("\n| models | pages | size (GB) | build (s) | s per model |")
    print("|---|---|---|---|---|")
    for n_models, _, summary in results:
        print(f"| {n_models} | {summary.pages} | {summary.bytes / 1e9:.2f} | "
              f"{summary.seconds:.1f} | {summary.seconds / n_models:.2f} |")
    if len(results) >= 2:
        (n1, _, s1), (n2, _, s2) = results[0], results[-1]
        growth = (s2.seconds / s1.seconds) / (n2 / n1)
        print(f"\nbuild time grew {s2.seconds / s1.seconds:.1f}x for {n2 / n1:.0f}x the models "
              f"({growth:.2f} of linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
