"""An asset added to the project's graph with ``PIPELINE.with_assets`` (and nothing else) gets a
job of its own, ``materialise_<asset>``; ``cultivar run`` materialises it when Dagster reports it
missing or stale, after the stages holding its upstream assets, and skips it while it is
fresh. An observable source asset added the same way is observed first (job
``observe_sources``): a new data version of it makes what reads it stale, and only that runs
again. The definitions take the same pipeline (docs/pipeline.md, "Adding an asset"). The runs
start from a copy of the session's finished run of the project's graph (``copy_baseline_home``,
tests/pipeline_helpers.py), where the added asset is the only one missing. (The run that skips
the added asset while it is fresh is in the slow set; the fast test reads Dagster's report of
it, which the runner follows: tests/test_runner_stale.py.)"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import dagster as dg
import pytest

from cultivar_assets.assets.graph import PIPELINE
from cultivar_assets.resources import StoreResource
from cultivar_assets.runner import run_pipeline
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

pytestmark = pytest.mark.dagster_instances

MODEL_ID = "copy-source-baseline"
LABELS: list[Path] = []  # the label file the source asset observes (set by the fixture)


def _counts_file(database: str | Path) -> Path:
    return Path(database).with_suffix(".counts.json")


@dg.observable_source_asset
def counts_label() -> dg.DataVersion:
    """A text file whose content labels the counts (observed: its sha256)."""
    return dg.DataVersion(hashlib.sha256(LABELS[-1].read_bytes()).hexdigest())


@dg.asset(deps=["test_sets", counts_label], group_name="extension")
def segment_counts(store: StoreResource) -> dg.MaterializeResult:
    """The number of segments of every test set, under the label, as a JSON file beside the
    database."""
    db = store.store()
    sizes = {row["test_set"]: row["n_segments"] for row in db.query("test_set_index")}
    text = {"label": LABELS[-1].read_text("utf-8"), "sizes": sizes}
    _counts_file(db.path).write_text(json.dumps(text, sort_keys=True), "utf-8")
    return dg.MaterializeResult(metadata={"test_sets": len(sizes)})


@pytest.fixture
def settings(tmp_path, copy_baseline_home) -> Settings:
    label = tmp_path / "label.txt"
    label.write_text("first", "utf-8")
    LABELS.append(label)
    yield copy_baseline_home.settings()
    LABELS.pop()


def _materialising(result) -> list[str]:
    """The jobs of ``result``'s runs that materialised (the source observations left out)."""
    return [job for job, _ in result.runs
            if job != "observe_sources" and not job.startswith("observe_sources_")]


def _pipeline():
    """The project's graph with the added assets."""
    pipeline = PIPELINE.with_assets(counts_label, segment_counts)
    assert "materialise_segment_counts" in [job.name for job in pipeline.jobs]
    return pipeline


def _first_run(settings: Settings, pipeline) -> None:
    """The added asset's pipeline run in the copy, where it is the only asset missing: it is
    materialised, in its own stage right after that of its upstream ``test_sets``, and nothing
    else is."""

    said: list[str] = []
    first = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert [name for name, _ in first.stages] == [
        "selection", "test sets", "segment counts", f"model {MODEL_ID}",
        "results, dataset folder and charts", f"site of model {MODEL_ID}",
        "site"]  # right after the stage of its upstream test_sets
    assert "[3/7] segment_counts (job materialise_segment_counts)" in said
    assert first.runs[0][0] == "observe_sources"  # the sources observed first
    # the project's assets are fresh in the copy: the added one, missing, is the only one run
    assert _materialising(first) == ["materialise_segment_counts"]
    assert first.fresh == [name for name, _ in first.stages if name != "segment counts"]
    counts = json.loads(_counts_file(settings.database).read_text("utf-8"))
    assert counts["label"] == "first" and set(counts["sizes"]) == {
        row["test_set"] for row in Store(settings.database_path).query("test_set_index")}


def test_an_added_asset_is_materialised_when_missing_or_stale(settings, tmp_path,
                                                             copy_baseline_home):
    """Missing, then fresh in Dagster's report (which ``cultivar run`` skips: a run that
    materialises nothing, tests/test_runner_stale.py; the added asset's: the slow test
    below), then stale by a new data version of its source asset."""
    import dagster as dg

    from cultivar_assets.assets.staleness import stale_assets
    from cultivar_assets.runner.pipeline import definitions_for

    pipeline = _pipeline()
    defs = definitions_for(settings, pipeline)
    home = str(copy_baseline_home.dagster_home)
    with dg.DagsterInstance.from_config(home) as instance:
        assert stale_assets(defs, instance)[("segment_counts", None)] == ["never materialised"]
    _first_run(settings, pipeline)
    with dg.DagsterInstance.from_config(home) as instance:
        assert ("segment_counts", None) not in stale_assets(defs, instance)  # fresh

    LABELS[-1].write_text("second", "utf-8")  # a new data version of the source asset
    said: list[str] = []
    third = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert _materialising(third) == ["materialise_segment_counts"]
    assert any(line.startswith("  segment_counts: ") and "counts_label" in line
               and line.endswith("materialising") for line in said)
    assert json.loads(_counts_file(settings.database).read_text("utf-8"))["label"] == "second"


@pytest.mark.slow  # a run more; fast: Dagster's report of the added asset (above)
def test_an_added_asset_is_skipped_while_fresh(settings, tmp_path):
    pipeline = _pipeline()
    _first_run(settings, pipeline)
    said: list[str] = []
    second = run_pipeline(settings, say=said.append, pipeline=pipeline)
    assert second.runs and _materialising(second) == []  # observed; nothing to run
    assert "  segment_counts: fresh, skipped" in said


def test_the_project_graph_leaves_the_added_asset_out_and_the_definitions_take_it():
    from cultivar_assets.definitions import build_definitions

    assert "segment_counts" not in [asset.key.to_user_string() for asset in PIPELINE.assets]
    definitions = build_definitions(PIPELINE.with_assets(segment_counts))
    assert definitions.resolve_assets_def("segment_counts").key == dg.AssetKey("segment_counts")
    assert definitions.resolve_job_def("materialise_segment_counts") is not None
