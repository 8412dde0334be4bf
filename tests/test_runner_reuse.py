"""The runner reuses the steps whose inputs and outputs are unchanged, says so, and runs a step
again when anything it depends on changed: a model's registry entry, a data file, an output that
was removed, a write to the database made outside the runner. Real pipeline runs (Dagster in
process, the demo data as a local dataset, the copy baseline)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.data.sources import DataConfig, demo_dataset_dir
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.runner import run_pipeline
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store
from cultivar_assets.store.records import write_reported_results
from cultivar_assets.store.step_records import read_step_records

pytestmark = pytest.mark.dagster_instances

SELECTION, TEST_SETS = "selection", "test sets"
MODEL, RESULTS = "model copy-source-baseline", "results, dataset folder and site"
ALL = [SELECTION, TEST_SETS, MODEL, RESULTS]


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    data = tmp_path / "data"
    shutil.copytree(demo_dataset_dir(), data)
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(tmp_path / "results.duckdb"), models_file=str(models),
                    models=["copy-source-baseline"],
                    data=DataConfig(kind="local", cultivar_path=str(data)),
                    metrics=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50))


def _run(settings: Settings) -> tuple[list[str], list[str]]:
    """One pipeline run: the steps it reused, and what it said."""
    said: list[str] = []
    result = run_pipeline(settings, say=said.append)
    assert [name for name, _ in result.steps] == ALL
    return result.reused, said


def test_unchanged_steps_are_reused_and_reported(settings, isolated_home, tmp_path):
    import dagster as dg

    first = run_pipeline(settings, say=lambda _: None)
    assert first.reused == []
    records = read_step_records(Store(settings.database_path))
    assert sorted(records) == ["model:copy-source-baseline", "results", "selection", "test_sets"]
    site = isolated_home / "site" / "index.html"
    built = site.stat().st_mtime_ns

    said: list[str] = []
    second = run_pipeline(settings, say=said.append)
    assert second.reused == ALL
    reused = [line for line in said if "reused" in line]
    assert len(reused) == 4 and all(
        line.strip().startswith("unchanged since its run of ") for line in reused)
    assert second.leaderboard == first.leaderboard
    assert read_step_records(Store(settings.database_path)) == records  # nothing was rewritten
    assert site.stat().st_mtime_ns == built

    # each asset of a reused step has a Dagster observation that says so
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster")) as inst:
        for asset, partition in (("site", None), ("scores", "copy-source-baseline")):
            (event,) = inst.fetch_observations(dg.AssetKey(asset), limit=1).records
            observation = event.asset_observation
            assert observation.partition == partition
            assert observation.metadata["reused"].value.startswith("unchanged, reused")
            step = observation.metadata["step"].value
            assert observation.metadata["inputs_fingerprint"].value == records[step].inputs
        runs = inst.get_runs()
        assert all(len(run.tags["cultivar/inputs"]) == 64 for run in runs)
        assert len(runs) == 4  # the first run's four steps; the second ran none


def test_a_changed_input_runs_its_step_and_the_steps_reading_it(settings, isolated_home):
    run_pipeline(settings, say=lambda _: None)

    # the model's registry entry
    models = Path(settings.models_file)
    write_models_file(models, [{**COPY_ENTRY, "family": "Another family"}])
    reused, said = _run(settings)
    assert reused == [SELECTION, TEST_SETS]
    assert any(line.strip().startswith("runs again since its run of ") and line.endswith(
        ": registry entry field family changed (Baseline → Another family)")
        for line in said), said
    assert Store(settings.database_path).query("leaderboard")[0]["family"] == "Another family"

    # a data file: the test sets, and then the model and the results, which read them
    path = Path(settings.data.cultivar_path) / "hin_Deva_US.jsonl"
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    rows[0]["english_localised"] += " Indeed."
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    assert _run(settings)[0] == [SELECTION]
    (instance,) = [i for i in Store(settings.database_path).query("instances")
                   if i["locale"] == "hin_Deva_US" and i["instance_id"] == rows[0]["id"]]
    assert instance["english_localised"].endswith(" Indeed.")

    # a removed output: only the step that writes it
    shutil.rmtree(isolated_home / "site")
    reused, said = _run(settings)
    assert reused == [SELECTION, TEST_SETS, MODEL]
    assert any("runs again: its output files changed or are missing" in line
               for line in said)
    assert (isolated_home / "site" / "index.html").is_file()

    # a write to the database that the runner did not make: nothing can be taken as unchanged
    registry = load_models(settings.models_file)
    write_reported_results(Store(settings.database_path),
                           [registry.get(m) for m in registry])
    assert _run(settings)[0] == []
    assert _run(settings)[0] == ALL
