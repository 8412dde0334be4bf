"""The models' outputs as files under the storage root (store/model_files.py, store/records.py):
written atomically with a content digest, read back checked, and loaded into the database by
``load_models_files`` exactly as the database path writes them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from database_state import state

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.evaluation.model_scores import compute_scores, score_model
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.store.database import Store
from cultivar_assets.store.model_files import (
    ModelFilesError,
    model_folder,
    read_document,
    scores_path,
    translations_path,
    write_document,
)
from cultivar_assets.store.records import (
    load_models_files,
    read_test_sets,
    read_test_sets_file,
    write_dataset,
    write_scores_file,
    write_test_sets_file,
    write_translations,
    write_translations_file,
)
from cultivar_assets.translation import TranslationRow, translate

CONFIG = MetricConfig(bleu_tokenize="13a")


def _runs(cache: Path):
    """Two translation runs on the demo data: the copy baseline and a system that answers with
    the reference of every segment but the first of each test set."""
    demo = load_benchmark(DataConfig())
    copy = translate(load_models().get("copy-source-baseline"), demo.test_sets(),
                     cache_dir=cache, show_progress_bar=False)
    spec = copy.model.model_copy(update={"id": "almost-reference", "type": "LLM",
                                         "family": "Test"})
    rows = [TranslationRow(spec.id, r.test_set, r.segment_id, r.source, r.reference,
                           r.reference if r.segment_id else "", r.reference, ())
            for r in copy.rows]
    return demo, [copy, replace(copy, model=spec, rows=rows, fingerprint="f")]


def _write_model_files(root: str, demo, run) -> tuple[str, str]:
    """What the partitions of ``translations`` and ``scores`` write (model_assets.py)."""
    translated = write_translations_file(root, run, demo.fingerprint())
    stored = read_test_sets_file(root)
    document = read_document(translations_path(root, run.model.id), "translations")
    result = compute_scores(run.model.id, document.content["translations"],
                            document.content["run"], stored.test_sets, stored.instances,
                            stored.fingerprint, CONFIG)
    return translated, write_scores_file(root, run.model.id, result.rows, translated)


def test_loaded_files_equal_the_database_path_and_only_changed_models_load_again(tmp_path):
    demo, runs = _runs(tmp_path / "cache")
    direct = Store(tmp_path / "direct.duckdb")
    write_dataset(direct, demo)
    for run in runs:
        write_translations(direct, run, demo.fingerprint())
        score_model(direct, run.model.id, CONFIG)

    root = str(tmp_path / "storage")
    write_test_sets_file(root, demo)
    for run in runs:
        _write_model_files(root, demo, run)
    loaded = Store(tmp_path / "loaded.duckdb")
    write_dataset(loaded, demo)
    first = load_models_files(loaded, root, ["almost-reference", "copy-source-baseline",
                                             "never-run"])
    assert (first.loaded, first.unchanged, first.without_files, first.problems) == (
        ["almost-reference", "copy-source-baseline"], [], ["never-run"], [])
    got, want = state(loaded.path), state(direct.path)
    assert (len(got.pop("model_files")), want.pop("model_files")) == (2, [])
    assert got == want

    # a rerun with the same outputs (the run's times differ) writes the same digests: nothing
    # is loaded again; the database's data version stays
    again = replace(runs[0], n_generated=0, n_cached=len(runs[0].rows), seconds=99.0)
    assert _write_model_files(root, demo, again) == (
        first_digests := tuple(read_document(p, k).digest for p, k in (
            (translations_path(root, "copy-source-baseline"), "translations"),
            (scores_path(root, "copy-source-baseline"), "scores"))))
    assert len(first_digests) == 2
    second = load_models_files(loaded, root, ["almost-reference", "copy-source-baseline"])
    assert (second.loaded, second.unchanged, second.digest) == (
        [], ["almost-reference", "copy-source-baseline"], first.digest)

    # one model's outputs change: only that model is loaded, and the data version changes
    changed = replace(runs[1], rows=[replace(r, hypothesis=r.reference) for r in runs[1].rows])
    _write_model_files(root, demo, changed)
    third = load_models_files(loaded, root, ["almost-reference", "copy-source-baseline"])
    assert (third.loaded, third.unchanged) == (["almost-reference"], ["copy-source-baseline"])
    assert third.digest != first.digest
    assert [r for r in state(loaded.path)["translations"] if r[0] == "almost-reference"] == [
        (r.model_id, r.test_set, r.segment_id, r.source, r.reference, r.reference, r.reference,
         []) for r in sorted(changed.rows, key=lambda r: repr((r.model_id, r.test_set,
                                                               r.segment_id)))]


@pytest.mark.parametrize("damage", ["missing scores", "truncated", "edited", "stale scores"])
def test_a_damaged_model_folder_is_named_and_nothing_of_that_model_is_loaded(tmp_path, damage):
    demo, runs = _runs(tmp_path / "cache")
    root = str(tmp_path / "storage")
    write_test_sets_file(root, demo)
    for run in runs:
        _write_model_files(root, demo, run)
    store = Store(tmp_path / "db.duckdb")
    write_dataset(store, demo)
    scores_file = Path(str(scores_path(root, "almost-reference")))
    translations_file = Path(str(translations_path(root, "almost-reference")))
    if damage == "missing scores":
        scores_file.unlink()
    elif damage == "truncated":  # a copy that stopped half-way
        translations_file.write_bytes(translations_file.read_bytes()[:1000])
    elif damage == "edited":  # content that does not give the recorded digest
        document = json.loads(scores_file.read_text())
        document["content"]["scores"][0]["score"] += 1.0
        scores_file.write_text(json.dumps(document))
    else:  # scores of other translations than the folder holds
        write_translations_file(root, replace(runs[1], rows=runs[1].rows[1:]),
                                demo.fingerprint())
    result = load_models_files(store, root, ["almost-reference", "copy-source-baseline"])
    assert result.loaded == ["copy-source-baseline"]
    assert len(result.problems) == 1
    line = result.problems[0]
    assert "\n" not in line and line.startswith("almost-reference: ")
    assert str(model_folder(root, "almost-reference")) in line
    rows = state(store.path)
    assert {r[0] for r in rows["translations"]} == {"copy-source-baseline"}
    assert {r[0] for r in rows["scores"]} == {"copy-source-baseline"}
    assert [r[0] for r in rows["model_files"]] == ["copy-source-baseline"]


def test_files_are_written_whole_and_any_fsspec_location_works(tmp_path):
    content = {"rows": [{"a": 1, "b": "ü"}]}
    local = tmp_path / "root" / "x.json"
    from upath import UPath

    digest = write_document(UPath(str(local)), "kind", content, {"seconds": 1.5})
    assert sorted(p.name for p in local.parent.iterdir()) == ["x.json"]  # nothing left aside
    document = read_document(UPath(str(local)), "kind")
    assert (document.digest, document.content, document.run) == (
        digest, content, {"seconds": 1.5})
    # the same content in memory (an fsspec file system) gives the same digest
    remote = UPath("memory://cultivar-test/root/x.json")
    assert write_document(remote, "kind", content, {"seconds": 7.0}) == digest
    assert read_document(remote, "kind").content == content
    with pytest.raises(ModelFilesError, match=r"memory://.*/y\.json: missing"):
        read_document(UPath("memory://cultivar-test/root/y.json"), "kind")
    with pytest.raises(ModelFilesError, match=r"x\.json: .*\bother\b"):
        read_document(remote, "other")
    with pytest.raises(ModelFilesError, match=r"test_sets\.json: missing\b.*\btest_sets\b"):
        read_test_sets_file(str(tmp_path / "empty-root"))


def test_the_test_sets_file_holds_what_the_database_holds(tmp_path):
    demo = load_benchmark(DataConfig())
    store = Store(tmp_path / "db.duckdb")
    write_dataset(store, demo)
    root = str(tmp_path / "storage")
    write_test_sets_file(root, demo)
    stored = read_test_sets_file(root)
    assert stored.test_sets == read_test_sets(store)
    assert stored.fingerprint == demo.fingerprint()
    assert stored.instances == {(r["locale"], r["instance_id"]): r
                                for r in store.query("instances")}
