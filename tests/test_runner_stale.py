"""``cultivar run`` materialises exactly what Dagster reports stale or missing, with the
definitions' named jobs, and says what it skipped: a second run with nothing changed runs no
asset; an asset materialised from Dagster (as the UI would) makes exactly its downstream assets
stale, and the next run materialises those. Real pipeline runs (Dagster in process, the demo
data as a local dataset, the copy baseline): the session's first run (``copy_baseline_run``,
tests/pipeline_helpers.py), and runs in copies of it."""

from __future__ import annotations

import dagster as dg
import pytest

from cultivar_assets.assets.graph import PIPELINE
from cultivar_assets.assets.staleness import stale_assets
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.runner import run_pipeline
from cultivar_assets.runner.pipeline import definitions_for
from cultivar_assets.settings import Settings

pytestmark = pytest.mark.dagster_instances

MODEL_ID = "copy-source-baseline"
SELECTION, TEST_SETS = "selection", "test sets"
MODEL, RESULTS = f"model {MODEL_ID}", "results, dataset folder and charts"
MODEL_SITE, SITE = f"site of model {MODEL_ID}", "site"
ALL = [SELECTION, TEST_SETS, MODEL, RESULTS, MODEL_SITE, SITE]
MODEL_ASSETS = ("translations", "scores")
# the assets of a build (data kind built), not in this pipeline: missing throughout
BUILD_ASSETS = {"localised_drafts", "postedit_tools", "annotations", "cultivar_dataset"}
RESULTS_ASSETS = ("model_results", "hf_dataset_folder", "hf_dataset_push", "leaderboard",
                  "error_annotation_tool", "error_analysis", "reported_results", "charts",
                  "locale_shards")


@pytest.fixture
def settings(copy_baseline_home) -> Settings:
    """The settings of a copy of the session's finished run, which the test runs in."""
    return copy_baseline_home.settings()


def _stale(defs, instance) -> dict:
    """What Dagster reports stale or missing, the build's assets left out."""
    return {key: causes for key, causes in stale_assets(defs, instance).items()
            if key[0] not in BUILD_ASSETS}


def _observing(job: str) -> bool:
    """Whether ``job`` observes source assets (observe_sources, observe_sources_<partitions>)."""
    return job == "observe_sources" or job.startswith("observe_sources_")


def _runs(run) -> list[tuple[str, tuple[str, ...], str | None]]:
    """Every run of ``run``'s instance that materialised, oldest first (the source assets'
    observations left out): job, selected assets, partition."""
    with dg.DagsterInstance.from_config(str(run.dagster_home)) as instance:
        return [(run.job_name, tuple(sorted(key.to_user_string()
                                            for key in run.asset_selection or ())),
                 run.tags.get("dagster/partition"))
                for run in reversed(instance.get_runs()) if not _observing(run.job_name)]


def test_a_second_run_with_nothing_changed_runs_no_asset(copy_baseline_run, copy_baseline_home,
                                                        settings):
    first = copy_baseline_run.result  # the first run: the session's, whose copy the test runs in
    assert [name for name, _ in first.stages] == ALL and first.fresh == []
    runs = _runs(copy_baseline_home)  # the first run's, copied
    # named jobs, never __ephemeral_asset_job__: one run per stage (every asset missing)
    assert runs == [
        ("build_benchmark", ("selected_instances",), None),
        ("build_dataset", ("test_sets",), None),
        ("evaluate_model", tuple(sorted(MODEL_ASSETS)), MODEL_ID),
        ("refresh_results", tuple(sorted(RESULTS_ASSETS)), None),
        ("build_model_site", ("model_site",), MODEL_ID),
        ("refresh_results", ("site",), None)]
    assert [job for job, _ in first.runs if not _observing(job)] == [job for job, _, _ in runs]
    assert _observing(first.runs[0][0])  # the sources observed first
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        (model_run,) = instance.get_runs(dg.RunsFilter(job_name="evaluate_model"))
        assert model_run.tags["cultivar/model"] == MODEL_ID  # the model's run tags
        assert model_run.tags["cultivar/entry"] == "cli"
    site = copy_baseline_home.home / "site" / "index.html"
    built = site.stat().st_mtime_ns

    said: list[str] = []
    second = run_pipeline(settings, say=said.append)
    assert second.fresh == ALL and second.runs and all(_observing(job) for job, _ in second.runs)
    assert _runs(copy_baseline_home) == runs  # the sources observed again; no run materialised
    skipped = [line.strip() for line in said if line.endswith(": fresh, skipped")]
    assert skipped == [f"{a}: fresh, skipped" for a in ("selected_instances", "test_sets")] + [
        f"{a} [{MODEL_ID}]: fresh, skipped" for a in MODEL_ASSETS] + [
        f"{a}: fresh, skipped" for a in RESULTS_ASSETS] + [
        f"model_site [{MODEL_ID}]: fresh, skipped", "site: fresh, skipped"]
    assert second.leaderboard == first.leaderboard
    assert site.stat().st_mtime_ns == built


def test_assets_materialised_again_leave_everything_fresh_and_a_changed_input_is_redone(
        copy_baseline_home, settings):
    defs = definitions_for(settings, PIPELINE)  # the copy of a finished run
    resources = resources_from_settings(settings)
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        assert _stale(defs, instance) == {}
        # test_sets again, from Dagster (as the UI would): the same data version, so what reads
        # it stays fresh
        assert dg.materialize(list(PIPELINE.assets), selection=["test_sets"],
                              resources=resources, instance=instance).success
        assert _stale(defs, instance) == {}
        # the model's translations again, all from the translation cache: the same content, the
        # same data version, so scores and everything below stay fresh
        assert dg.materialize(list(PIPELINE.assets), selection=["translations"],
                              partition_key=MODEL_ID, resources=resources,
                              instance=instance).success
        assert _stale(defs, instance) == {}

    # one input changed (the metrics section: more bootstrap replicates): the run redoes what
    # reads it, and below that only what got another data version
    metrics = settings.metrics.model_copy(update={"bootstrap_replicates": 60})
    changed = settings.model_copy(update={"metrics": metrics})
    said: list[str] = []
    again = run_pipeline(changed, say=said.append)
    # the model's part of the site reads no metrics settings and its scores' content is
    # unchanged: fresh, while the site (the leaderboard's intervals) is made again
    assert again.fresh == [SELECTION, TEST_SETS, MODEL_SITE]
    assert f"    translations [{MODEL_ID}]: fresh, skipped" in said
    assert any(line.startswith(f"    scores [{MODEL_ID}]: ") and "settings/metrics" in line
               and line.endswith("materialising") for line in said), said
    runs = _runs(copy_baseline_home)[8:]  # after the first run's six, the two launches from Dagster
    assert runs[0] == ("evaluate_model", ("scores",), MODEL_ID)  # only what was stale
    assert {job for job, _, _ in runs[1:]} == {"refresh_results"}  # then the results
    redone = {asset for _, assets, _ in runs[1:] for asset in assets}
    # the scores' content does not depend on the replicates: the models' rows are not reloaded
    assert "model_results" not in redone and {"leaderboard", "reported_results"} <= redone
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        assert _stale(definitions_for(changed, PIPELINE), instance) == {}  # nothing left stale


def test_an_asset_made_stale_again_by_its_parent_in_the_same_run_is_made_again(
        copy_baseline_home, settings):
    """A second model and another error-analysis sample in one run: the annotation pages
    (stale by their settings in the first wave of the results, before the leaderboard holds the
    new model) are made again after the leaderboard, and show both models; nothing is left
    stale."""
    from conftest import COPY_ENTRY, write_models_file

    from cultivar_assets.error_analysis.config import ErrorAnalysisConfig

    second = {**COPY_ENTRY, "id": "copy-source-second"}
    models = write_models_file(copy_baseline_home.folder / "models.yaml", [COPY_ENTRY, second])
    changed = settings.model_copy(update={
        "models_file": str(models), "models": [MODEL_ID, second["id"]],
        "error_analysis": ErrorAnalysisConfig(locales=["deu_Latn_Germany"], n_instances=2)})
    run_pipeline(changed, say=lambda line: None)
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        assert _stale(definitions_for(changed, PIPELINE), instance) == {}
        record = instance.fetch_materializations(dg.AssetKey("error_annotation_tool"),
                                                 limit=1).records[0]
    models_shown = record.asset_materialization.metadata["models"].value
    assert sorted(models_shown) == sorted([MODEL_ID, second["id"]])
    page = (copy_baseline_home.home / "analysis" / "errors" / "deu_Latn_Germany"
            / "index.html").read_text("utf-8")
    assert '"model_id": "copy-source-second"' in page and f'"model_id": "{MODEL_ID}"' in page
