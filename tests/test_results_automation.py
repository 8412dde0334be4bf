"""New results reach the site by themselves: the assets' automation conditions (conditions.py),
evaluated as the ``cultivar_automation`` sensor does, once per batch of model runs; the push
only where it is configured. (The daemon itself: tests/test_automation_daemon.py.)"""

from __future__ import annotations

import secrets

import dagster as dg
import pytest
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS, AUTOMATION_RUN_TAG
from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.automation import automated_assets, build_automation_sensor, push_configured
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings

pytestmark = [pytest.mark.dagster_instances, pytest.mark.usefixtures("shared_site_caches")]

parts = dg.DynamicPartitionsDefinition(name="stand_in_models")


@dg.asset(partitions_def=parts)
def model_scores() -> None:
    """A model's scores."""


@dg.asset(deps=[model_scores], automation_condition=AFTER_NEW_RESULTS)
def board() -> None: ...


@dg.asset(deps=[board], automation_condition=AFTER_NEW_RESULTS)
def page() -> None: ...


STAND_INS = [model_scores, board, page]


def _requested(result, keys=("board", "page")) -> dict[str, int]:
    return {key: len(result.get_requested_partitions(dg.AssetKey(key))) for key in keys}


def _start_run(instance, defs: dg.Definitions, partition: str) -> dg.DagsterRun:
    """A run of ``model_scores`` [``partition``] that has started and not finished, recorded as
    Dagster records a launched run (its planned materialisation, then its start): a run in
    flight, with no second execution in this process (Dagster's in-process execution redirects
    the process's stdout and stderr to the run's compute logs, one run at a time)."""
    job = defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("model_scores")])
    run = instance.create_run_for_job(job, asset_selection={dg.AssetKey("model_scores")},
                                      tags={"dagster/partition": partition})
    instance.report_dagster_event(dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name),
        run_id=run.run_id)
    started = instance.get_run_by_id(run.run_id)
    assert started.status == dg.DagsterRunStatus.STARTED, started.status
    return started


def test_results_follow_once_per_batch_and_no_update_is_lost():
    """Only the leaderboard had a condition, recomputing on the tick a score landed: scores that
    landed while another model's run was in progress were lost when that run then failed."""
    defs = dg.Definitions(assets=STAND_INS)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("stand_in_models", ["fast", "slow"])
        for key in ("fast", "slow"):
            assert dg.materialize(STAND_INS, selection=["model_scores"], partition_key=key,
                                  instance=instance).success
        assert dg.materialize(STAND_INS, selection=["board", "page"], instance=instance).success

        def evaluate(cursor):
            return dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                     cursor=cursor)

        first = evaluate(None)
        assert first.total_requested == 0  # the daemon's first tick launches nothing

        # a batch: the slow model's run is in flight while the fast one lands
        slow = _start_run(instance, defs, "slow")
        assert dg.materialize(STAND_INS, selection=["model_scores"], partition_key="fast",
                              instance=instance).success
        waiting = evaluate(first.cursor)
        assert _requested(waiting) == {"board": 0, "page": 0}  # a run is still in flight
        instance.report_run_failed(slow, "the model's run failed")
        assert instance.get_run_by_id(slow.run_id).status == dg.DagsterRunStatus.FAILURE
        after = evaluate(waiting.cursor)  # the slow run failed: the fast one's scores count
        assert _requested(after) == {"board": 1, "page": 1}  # one request each, together
        quiet = evaluate(after.cursor)
        assert quiet.total_requested == 0  # requested: handled

        # scores that land while that automated run is in progress are not swallowed by it
        assert dg.materialize(STAND_INS, selection=["model_scores"], partition_key="fast",
                              instance=instance).success
        assert dg.materialize(STAND_INS, selection=["board", "page"], instance=instance,
                              tags={AUTOMATION_RUN_TAG: "true"}).success
        again = evaluate(quiet.cursor)
        assert _requested(again) == {"board": 1, "page": 1}

        # an update made by another run (cultivar run, the UI) handles it: nothing is repeated
        assert dg.materialize(STAND_INS, selection=["model_scores"], partition_key="fast",
                              instance=instance).success
        assert dg.materialize(STAND_INS, selection=["board", "page"], instance=instance).success
        assert evaluate(again.cursor).total_requested == 0


RESULTS = ("model_results", "leaderboard", "error_annotation_tool", "error_analysis", "charts")
PARTS = ("model_site", "locale_shards", "site")
OTHERS = ("reported_results", "hf_dataset_folder", "hf_dataset_push", "translations")


def _settings(tmp_path) -> Settings:
    from cultivar_assets.site.config import SiteConfig

    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(tmp_path / "db.duckdb"), models_file=str(models),
                    models=["copy-source-baseline"], metrics=MetricConfig(bleu_tokenize="13a"),
                    site=SiteConfig(output_dir=str(tmp_path / "site"), query_page="off",
                                    charts_dir=str(tmp_path / "charts")))


@pytest.mark.slow
def test_new_scores_bring_the_results_then_the_models_part_then_the_site(tmp_path):
    """The real graph: new scores request the leaderboard, the error analysis and the charts
    (not the dataset folder: it holds no scores); once they are written, the model's part; then
    the site, which assembles the part (``models_made_here`` empty; the site made it itself when
    ``model_site`` had no condition). A model's recorded failure requests the site alone."""
    from test_automation import _failed_run, _sense_failure

    from cultivar_assets.settings import AutomationConfig

    settings = _settings(tmp_path)
    resources = resources_from_settings(settings)
    defs = dg.Definitions(assets=ASSETS, resources=resources)
    model = "copy-source-baseline"
    everything = (*RESULTS, *PARTS, *OTHERS)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", [model])

        def run(selection, partition=None):
            """A run as the automation launches it: its tag, and its asset selection recorded
            (what Dagster's any_deps_updated reads to ignore the run's own updates)."""
            keys = [dg.AssetKey(key) for key in selection]
            job = defs.resolve_implicit_job_def_def_for_assets(keys)
            assert job.execute_in_process(instance=instance, asset_selection=keys,
                                          partition_key=partition,
                                          tags={AUTOMATION_RUN_TAG: "true"}).success

        for selection, partition in ((["test_sets"], None), (["translations", "scores"], model),
                                     ([*RESULTS, "locale_shards", "site", "reported_results",
                                       "hf_dataset_folder"], None)):
            assert dg.materialize(ASSETS, selection=selection, partition_key=partition,
                                  resources=resources, instance=instance).success
        quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert quiet.total_requested == 0
        assert dg.materialize(ASSETS, selection=["scores"], partition_key=model,
                              resources=resources, instance=instance).success
        after = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                  cursor=quiet.cursor)
        assert _requested(after, everything) == {**dict.fromkeys(everything, 0),
                                                 **dict.fromkeys(RESULTS, 1)}
        run(list(RESULTS))
        part = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                 cursor=after.cursor)
        assert _requested(part, everything) == {**dict.fromkeys(everything, 0), "model_site": 1}
        assert part.get_requested_partitions(dg.AssetKey("model_site")) == {model}
        run(["model_site"], model)
        built = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                  cursor=part.cursor)
        assert _requested(built, everything) == {**dict.fromkeys(everything, 0), "site": 1}
        run(["site"])
        metadata = instance.get_latest_materialization_event(
            dg.AssetKey("site")).asset_materialization.metadata
        assert metadata["models_made_here"].value == []
        assert metadata["locale_shards_made_here"].value is False

        run_, event = _failed_run(instance)  # a run of the model "beta" fails, is recorded
        _sense_failure(instance, run_, event, settings, AutomationConfig())
        failed = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                   cursor=built.cursor)
        assert _requested(failed, everything) == {**dict.fromkeys(everything, 0), "site": 1}


def test_the_push_follows_the_folder_only_where_configured(tmp_path, monkeypatch):
    """With no repo and token the automation must launch nothing for the push."""
    monkeypatch.delenv("CULTIVAR_TEST_HUB_TOKEN", raising=False)
    settings = _settings(tmp_path)
    unconfigured = PublishConfig(repo_id="me/cultivar", token_env="CULTIVAR_TEST_HUB_TOKEN")
    assert not push_configured(unconfigured) and not push_configured(PublishConfig())
    # a random token: a registered secret's fragments are redacted process-wide, and one of
    # repeated letters would redact other tests' text (e.g. test_secrets' padding)
    monkeypatch.setenv("CULTIVAR_TEST_HUB_TOKEN", "hf_" + secrets.token_hex(15))
    assert push_configured(unconfigured)
    assert not push_configured(PublishConfig(token_env="CULTIVAR_TEST_HUB_TOKEN"))  # no repo

    resources = resources_from_settings(settings)
    # both graphs evaluated over one instance's history (the conditions read it, each graph
    # with its own cursor): the materialisations are the same in both
    defs = {name: dg.Definitions(assets=automated_assets(ASSETS, config), resources=resources)
            for name, config in (("configured", unconfigured), ("not configured",
                                                                PublishConfig()))}
    with dg.instance_for_test() as instance:
        assert dg.materialize(ASSETS, selection=["test_sets", "hf_dataset_folder"],
                              resources=resources, instance=instance).success
        first = {name: dg.evaluate_automation_conditions(defs=graph, instance=instance)
                 for name, graph in defs.items()}
        assert dg.materialize(ASSETS, selection=["test_sets"], resources=resources,
                              instance=instance).success
        outcomes = {name: _requested(dg.evaluate_automation_conditions(
            defs=graph, instance=instance, cursor=first[name].cursor),
            ("hf_dataset_folder", "hf_dataset_push")) for name, graph in defs.items()}
    assert outcomes == {"configured": {"hf_dataset_folder": 1, "hf_dataset_push": 1},
                        "not configured": {"hf_dataset_folder": 1, "hf_dataset_push": 0}}


def test_the_automation_sensor_ticks_as_configured():
    assert build_automation_sensor(7).minimum_interval_seconds == 7
    with pytest.raises(ValueError, match="automation_sensor_interval_seconds"):
        Settings.model_validate({"automation": {"automation_sensor_interval_seconds": 1}})
    assert Settings().automation.automation_sensor_interval_seconds == 60
