"""Adding a step is one asset definition and nothing else: an asset that declares a new step
(``@step_inputs(StepInputs(Step(...), ...))`` above ``@dg.asset``), added to the project's graph
with ``PIPELINE.with_assets``, is planned after the step it depends on, run and recorded by the
CLI runner, reused while unchanged, read by the ``results`` step, and recorded as the runner
would when Dagster materialises it (docs/pipeline.md, "Adding a step")."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from conftest import copy_baseline_settings

from cultivar_assets.assets.graph import PIPELINE
from cultivar_assets.assets.step_graph import step_inputs
from cultivar_assets.assets.step_runs import recording_step
from cultivar_assets.resources import StoreResource, resources_from_settings
from cultivar_assets.runner import run_pipeline
from cultivar_assets.settings import Settings
from cultivar_assets.steps.declarations import Step, StepContext, StepInputs
from cultivar_assets.store.database import Store
from cultivar_assets.store.step_records import read_step_records

pytestmark = pytest.mark.dagster_instances

MODEL_ID = "copy-source-baseline"
COUNTS = Step("segment_counts", timing="segment counts",
              title=lambda settings, _: f"segment counts -> {_counts_file(settings.database)}")


def _counts_file(database: str | Path) -> Path:
    return Path(database).with_suffix(".counts.json")


def _output(ctx: StepContext) -> Path:
    return _counts_file(ctx.settings.database_path)


# the one definition the new step needs: its asset, declaring the step and its inputs
@step_inputs(StepInputs(COUNTS, settings=("data",),
                        other={"counts file": lambda c: str(_output(c))}, outputs=(_output,)))
@dg.asset(deps=["test_sets"], group_name="extension")
@recording_step
def segment_counts(store: StoreResource) -> dg.MaterializeResult:
    """The number of segments of every test set, as a JSON file beside the database."""
    db = store.store()
    sizes = {row["test_set"]: row["n_segments"] for row in db.query("test_set_index")}
    _counts_file(db.path).write_text(json.dumps(sizes, sort_keys=True), "utf-8")
    return dg.MaterializeResult(metadata={"test_sets": len(sizes)})


@pytest.fixture
def settings(tmp_path, monkeypatch, isolated_home) -> Settings:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return copy_baseline_settings(tmp_path)


def test_a_step_added_as_one_asset_runs_in_the_runner_and_in_dagster(settings, tmp_path):
    pipeline = PIPELINE.with_assets(segment_counts)
    assert [node.step.name for node in pipeline.steps.nodes] == [
        "selection", "build", "dataset", "test_sets", "model", "segment_counts", "results"]
    assert pipeline.steps.node("segment_counts").upstream == ("test_sets",)

    said: list[str] = []
    first = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert [name for name, _ in first.steps] == [
        "selection", "test sets", f"model {MODEL_ID}", "segment counts",
        "results, dataset folder and site"]
    assert f"[4/5] segment counts -> {_counts_file(settings.database)}" in said
    sizes = json.loads(_counts_file(settings.database).read_text("utf-8"))
    assert sizes and all(n > 0 for n in sizes.values())
    assert set(sizes) == {row["test_set"] for row in Store(settings.database_path).query(
        "test_set_index")}
    records = read_step_records(Store(settings.database_path))
    step = records["segment_counts"]
    assert step.input_values["step:test_sets"] == records["test_sets"].token
    assert step.input_values["setting:data.kind"] == "local"
    assert step.input_values["other:counts file"] == str(_counts_file(settings.database))
    assert records["results"].input_values["step:segment_counts"] == step.token

    second = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert second.reused == ["selection", "test sets", f"model {MODEL_ID}", "segment counts",
                             "results, dataset folder and site"]

    # Dagster materialises the new asset (as a launch from the UI would): the step is recorded
    # as the runner records it, and the runner then reuses it; results, which reads it, runs
    _counts_file(settings.database).unlink()
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        launched = dg.materialize(list(pipeline.assets), selection=["segment_counts"],
                                  resources=resources_from_settings(settings), instance=instance)
    assert launched.success and _counts_file(settings.database).exists()
    record = read_step_records(Store(settings.database_path))["segment_counts"]
    assert record.run_id == launched.run_id and record.token != step.token
    third = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert third.reused == ["selection", "test sets", f"model {MODEL_ID}", "segment counts"]


def test_the_project_graph_leaves_the_new_step_out_and_the_definitions_take_it():
    from cultivar_assets.definitions import build_definitions

    assert "segment_counts" not in [node.step.name for node in PIPELINE.steps.nodes]
    definitions = build_definitions(PIPELINE.with_assets(segment_counts))
    assert definitions.resolve_assets_def("segment_counts").key == dg.AssetKey("segment_counts")
