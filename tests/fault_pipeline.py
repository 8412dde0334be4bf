"""A small real evaluation through the core (no Dagster), for the fault-injection test.

``python fault_pipeline.py DB CACHE [KILL_AT]``: load the demo data, translate it with the copy
baseline and a second, word-dropping system, score both, aggregate, store the reported results.
With KILL_AT, the process kills itself (SIGKILL, no clean-up) when DuckDB is about to run its
KILL_AT-th statement (counted from 1 over the whole run).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path


def translate_two_systems(store, fingerprint: str, cache: Path):
    """The copy baseline and a second system (the reference with every third word dropped),
    translated and stored; returns their TranslationRuns."""
    from cultivar_assets.models import load_models
    from cultivar_assets.store.records import read_test_sets, write_translations
    from cultivar_assets.translation import TranslationRow, TranslationRun, translate

    copy = translate(load_models().get("copy-source-baseline"), read_test_sets(store),
                     cache_dir=cache, show_progress_bar=False)
    write_translations(store, copy, fingerprint)
    rows = [TranslationRow("drop-words", r.test_set, r.segment_id, r.source, r.reference,
                           " ".join(w for i, w in enumerate(r.reference.split()) if i % 3),
                           r.reference, ()) for r in copy.rows]
    spec = copy.model.model_copy(update={"id": "drop-words", "type": "LLM", "family": "Test"})
    second = TranslationRun(spec, "f", copy.info, "h", rows, 0, 0, 0.0)
    write_translations(store, second, fingerprint)
    return copy, second


def run(database: Path, cache: Path) -> None:
    from cultivar_assets.data.sources import DataConfig, load_benchmark
    from cultivar_assets.evaluation import aggregate, score_model
    from cultivar_assets.metrics.metric_config import MetricConfig
    from cultivar_assets.models import load_models
    from cultivar_assets.store.database import Store
    from cultivar_assets.store.records import write_dataset, write_reported_results

    store = Store(database)
    translate_two_systems(store, write_dataset(store, load_benchmark(DataConfig())), cache)
    for model in ("copy-source-baseline", "drop-words"):
        score_model(store, model, MetricConfig(bleu_tokenize="13a"))
    aggregate(store)
    registry = load_models()
    write_reported_results(store, [registry.get(m) for m in registry])


def kill_at(n: int) -> None:
    """Make the n-th DuckDB statement of this process SIGKILL it instead."""
    from cultivar_assets.store import database

    original = database._run
    count = [0]

    def run_or_die(con, statement, params):
        count[0] += 1
        if count[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(con, statement, params)

    database._run = run_or_die


if __name__ == "__main__":
    if len(sys.argv) > 3:
        kill_at(int(sys.argv[3]))
    run(Path(sys.argv[1]), Path(sys.argv[2]))
    print("finished")
