"""``cultivar models remove``: a model's registry entry and every row of it in the database go;
the other models' rows and entries stay; refusals change nothing."""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from error_helpers import copy_store, error_document, evaluated_store, sample_config, write_document

from cultivar_assets.cli import main
from cultivar_assets.error_analysis.sample import build_error_sample
from cultivar_assets.error_analysis.store import ingest_error_files
from cultivar_assets.models import add_model_entry, default_models_file, load_models
from cultivar_assets.sqlfiles import statement_text

GONE = "memoriser"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """The statistics systems scored and aggregated, with an error analysis of three of them."""
    folder = tmp_path_factory.mktemp("models_remove")
    store = evaluated_store(folder)
    sample = build_error_sample(store, sample_config())
    for task in sample.tasks:
        write_document(folder / "errors", error_document(task))
    ingest_error_files(store, sample, sample_config(folder / "errors"))
    return store


def model_rows(store, model_id: str) -> dict[str, int]:
    return {r["table_name"]: r["n"] for r in store.query("model_stored_rows", model_id=model_id)}


@pytest.fixture
def home(evaluated, tmp_path):
    """A copy of the store, a registry with an entry for GONE, and settings naming both."""
    store = copy_store(evaluated, tmp_path / "results.duckdb")
    registry = tmp_path / "models.yaml"
    shutil.copyfile(default_models_file(), registry)
    add_model_entry(registry, {"id": GONE, "type": "baseline", "family": "Baseline",
                               "engine": "copy-source", "prompt_style": "source"})
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({"database": str(store.path), "models_file": str(registry),
                                      "models": ["copy-source-baseline"]}), "utf-8")
    return store, registry, config


def test_the_statements_cover_every_table_keyed_by_model(evaluated):
    """model_stored_rows counts, and delete_model_rows deletes from, every raw table with a
    model_id column (a table added later must be added to both)."""
    keyed = {r["table_name"] for r in evaluated.query("tables_keyed_by_model")}
    assert set(model_rows(evaluated, GONE)) == keyed
    deleted = set(re.findall(r"DELETE FROM (raw\.\w+) WHERE model_id = \$model_id;",
                             statement_text("delete_model_rows")))
    assert deleted == keyed


def test_models_remove_drops_the_entry_and_every_row_of_the_model(home, capsys):
    store, registry, config = home
    before = model_rows(store, GONE)
    assert before["raw.translations"] and before["raw.scores"] and before["raw.model_summary"]
    assert before["raw.error_annotations"]
    others = {m: model_rows(store, m) for m in ("drop-3", "copy-source-baseline")}
    entries = [e for e in yaml.safe_load(registry.read_text("utf-8"))["models"]
               if e["id"] != GONE]

    assert main(["--config", str(config), "models", "remove", GONE]) == 0
    out = capsys.readouterr().out
    assert GONE in out and str(registry) in out
    for table, n in before.items():
        if n:
            assert f"{table} {n}" in out
    assert not any(model_rows(store, GONE).values())
    assert {m: model_rows(store, m) for m in others} == others
    assert GONE not in {r["model_id"] for r in store.query("leaderboard")}
    assert "drop-3" in {r["model_id"] for r in store.query("leaderboard")}
    assert yaml.safe_load(registry.read_text("utf-8"))["models"] == entries
    assert GONE not in load_models(registry)

    assert main(["--config", str(config), "models", "remove", GONE]) == 1
    assert repr(GONE) in capsys.readouterr().err


def test_models_remove_drops_the_models_files_so_the_loader_cannot_bring_it_back(home, capsys):
    from cultivar_assets.settings import load_settings
    from cultivar_assets.store.model_files import model_folder
    from cultivar_assets.store.records import load_models_files

    store, _registry, config = home
    root = load_settings(config).storage_root
    for model in (GONE, "drop-3"):
        folder = model_folder(root, model)
        folder.mkdir(parents=True)
        (folder / "translations.json").write_text("{}")
    assert main(["--config", str(config), "models", "remove", GONE]) == 0
    assert str(model_folder(root, GONE)) in capsys.readouterr().out
    assert not model_folder(root, GONE).exists() and model_folder(root, "drop-3").exists()
    # a partition still registered in an instance: no folder, so nothing is loaded for it
    assert load_models_files(store, root, [GONE]).without_files == [GONE]
    assert not any(model_rows(store, GONE).values())


def test_a_model_the_settings_select_by_id_is_not_removed(home, capsys):
    store, registry, config = home
    before, text = model_rows(store, "copy-source-baseline"), registry.read_text("utf-8")
    assert main(["--config", str(config), "models", "remove", "copy-source-baseline"]) == 1
    err = capsys.readouterr().err
    assert "'copy-source-baseline'" in err and "models" in err
    assert model_rows(store, "copy-source-baseline") == before
    assert registry.read_text("utf-8") == text
