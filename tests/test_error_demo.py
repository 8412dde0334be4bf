"""The bundled demo error-annotation files belong to the demo's error-analysis sample.

The demo systems are stood in for without running Gemma: the copy baseline is the real
(deterministic) engine, the two Gemma ids get stand-in outputs. The files must validate against
the demo sample (same tasks, every translation present and done); the copy baseline's
judgments match their translations exactly, and the stand-ins' are kept and counted as changed
because the files are labelled demo — what happens on a machine where Gemma's outputs differ.
"""

from __future__ import annotations

import json

import pytest

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.error_analysis.config import demo_annotations_dir, demo_error_analysis
from cultivar_assets.error_analysis.file import find_error_files
from cultivar_assets.error_analysis.sample import build_error_sample
from cultivar_assets.error_analysis.store import ingest_error_files
from cultivar_assets.error_analysis.table import read_table5
from cultivar_assets.evaluation import aggregate, score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import read_test_sets, write_dataset, write_translations
from cultivar_assets.translation import TranslationRow, TranslationRun, translate

GEMMA = ("gemma-3-270m-fewshot", "gemma-3-270m-fewshot-unnamed")


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo_errors")
    store = Store(folder / "demo.duckdb")
    fingerprint = write_dataset(store, load_benchmark(DataConfig()))
    registry = load_models()
    copy = translate(registry.get("copy-source-baseline"), read_test_sets(store),
                     cache_dir=folder / "cache", show_progress_bar=False)
    write_translations(store, copy, fingerprint)
    for model in GEMMA:  # stand-ins: the reference with its last word dropped
        rows = [TranslationRow(model, r.test_set, r.segment_id, r.source, r.reference,
                               r.reference.rsplit(" ", 1)[0], r.reference, ())
                for r in copy.rows]
        write_translations(store, TranslationRun(registry.get(model), "f", copy.info, "h",
                                                 rows, 0, 0, 0.0), fingerprint)
    config = MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50)
    for model in ("copy-source-baseline", *GEMMA):
        score_model(store, model, config)
    aggregate(store, config=config)
    return store


def test_the_bundled_files_belong_to_the_demo_sample(demo_store):
    config = demo_error_analysis()
    sample = build_error_sample(demo_store, config)
    assert sample.notes == () and len(sample.tasks) == 3
    paths = find_error_files(demo_annotations_dir())
    assert sorted(p.name for p in paths) == sorted(f"{t.task_id}.errors.json"
                                                   for t in sample.tasks)
    for path in paths:
        document = json.loads(path.read_text("utf-8"))
        assert document["demo"] is True and "demo" in document["task"]["annotator"]
    ingested = ingest_error_files(demo_store, sample, config)
    assert len(ingested.files) == 3 and ingested.left_out == []
    for file in ingested.files:
        by_model = {a.model_id: [] for a in file.annotations}
        for a in file.annotations:
            by_model[a.model_id].append(a.translation_matches)
        assert all(by_model["copy-source-baseline"])  # the real, deterministic engine
        assert not any(by_model[GEMMA[0]]) and not any(by_model[GEMMA[1]])  # stand-ins
        assert file.n_translation_changed == 8
    table5, correlations = read_table5(demo_store)
    assert len(table5) == 9 and all(r["is_demo"] for r in table5)
    copy_rows = [r for r in table5 if r["model_id"] == "copy-source-baseline"]
    assert all(r["ut"] == r["n_translations"] == 4 and r["n_translation_changed"] == 0
               for r in copy_rows)  # an untranslated copy is judged as such
    assert {r["language"] for r in correlations} == {"cmn", "deu"}
