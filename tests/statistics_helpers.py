"""A store with six systems on the demo data, for the tests of the wired statistics.

The systems are made in the test from the references (no model runs): the copy baseline (its
sources), four systems that drop every k-th word of the reference (k = 2..5: a quality ladder;
on the Cultivar test sets, for the ids divisible by k, of the *original* English instead, so that
their false-positive rates differ), and a "memoriser" that returns the original FLORES English
for every segment — exact on the FLORES test sets, the unlocalised sentence on the Cultivar ones
(a large negative ∆ and recall of the original terms, what the contamination rules look for).
One locale can be given fewer instances than the others (``drop_ids``), so that instance pairing
matters.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.data.testsets import BenchmarkData
from cultivar_assets.evaluation import score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import read_test_sets, write_dataset, write_translations
from cultivar_assets.translation import TranslationRow, TranslationRun, translate

SHORT_LOCALE = "deu_Latn_Switzerland"
DROPPED_IDS = (3, 7)
DROP_MODELS = {f"drop-{k}": k for k in (2, 3, 4, 5)}
MODELS = ["copy-source-baseline", *DROP_MODELS, "memoriser"]


def demo_with_a_short_locale(drop_ids=DROPPED_IDS) -> BenchmarkData:
    demo = load_benchmark(DataConfig())
    instances = dict(demo.instances)
    instances[SHORT_LOCALE] = [i for i in instances[SHORT_LOCALE]
                               if i.instance_id not in set(drop_ids)]
    return replace(demo, instances=instances)


def drop_words(text: str, k: int) -> str:
    return " ".join(w for i, w in enumerate(text.split(), 1) if i % k)


_BUILT: dict[tuple, Path] = {}  # one build per test process and arguments, copied to callers


def build_statistics_store(path: Path, cache: Path, drop_ids=DROPPED_IDS,
                           config: MetricConfig | None = None) -> tuple[Store, BenchmarkData]:
    """The store with the six systems translated and scored (not yet aggregated), at ``path``.
    Built once per test process (and arguments), then copied."""
    key = (tuple(drop_ids), None if config is None else config.model_dump_json())
    if key not in _BUILT:
        folder = Path(tempfile.mkdtemp(prefix="statistics-store-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _build(folder / "built.duckdb", cache, drop_ids, config)
        _BUILT[key] = folder / "built.duckdb"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_BUILT[key], path)
    return Store(path), demo_with_a_short_locale(drop_ids)


def _build(path: Path, cache: Path, drop_ids, config: MetricConfig | None) -> None:
    data = demo_with_a_short_locale(drop_ids)
    store = Store(path)
    fingerprint = write_dataset(store, data)
    test_sets = read_test_sets(store)
    copy = translate(load_models().get("copy-source-baseline"), test_sets, cache_dir=cache,
                     show_progress_bar=False)
    write_translations(store, copy, fingerprint)
    english_original = {i.instance_id: i.english_original
                        for rows in data.instances.values() for i in rows}
    for model in MODELS[1:]:
        rows = []
        for r in copy.rows:
            if model == "memoriser":
                hypothesis = english_original[r.segment_id]
            else:
                k = DROP_MODELS[model]
                text = (english_original[r.segment_id] if r.test_set.startswith("cultivar_")
                        and r.segment_id % k == 0 else r.reference)
                hypothesis = drop_words(text, k)
            rows.append(TranslationRow(model, r.test_set, r.segment_id, r.source, r.reference,
                                       hypothesis, hypothesis, ()))
        spec = copy.model.model_copy(update={"id": model, "type": "LLM", "family": "Test"})
        write_translations(store, TranslationRun(spec, "f", copy.info, "h", rows, 0, 0, 0.0),
                           fingerprint)
    for model in MODELS:
        score_model(store, model, config or MetricConfig(bleu_tokenize="13a"))
