"""The site's parts follow by themselves (conditions.py): a new model's ``model_site`` partition,
and no other, is requested once ``model_results`` has loaded its scores, and the site after it;
a new dataset requests ``locale_shards`` and every model's part, new results never
``locale_shards``. Stand-ins with the real graph's keys and each the condition of the real asset
of its name, evaluated as the ``cultivar_automation`` sensor does; the real graph's assets:
tests/test_results_automation.py."""

from __future__ import annotations

import dagster as dg
import pytest

from cultivar_assets.assets.conditions import AUTOMATION_RUN_TAG
from cultivar_assets.assets.graph import ASSETS

pytestmark = pytest.mark.dagster_instances

models = dg.DynamicPartitionsDefinition(name="stand_in_site_models")
# each stand-in has the condition of the real graph's asset of its name
CONDITION = {key.to_user_string(): condition for asset in ASSETS
             for key, condition in asset.automation_conditions_by_key.items()}


@dg.asset
def test_sets() -> None: ...


@dg.asset(partitions_def=models, deps=[test_sets])
def scores() -> None: ...


@dg.asset(deps=[scores], automation_condition=CONDITION.get("model_results"))
def model_results() -> None: ...


@dg.asset(partitions_def=models, deps=[scores, test_sets],
          automation_condition=CONDITION.get("model_site"))
def model_site() -> None: ...


@dg.asset(deps=[test_sets], automation_condition=CONDITION.get("locale_shards"))
def locale_shards() -> None: ...


@dg.asset(deps=[model_results, model_site, locale_shards, test_sets],
          automation_condition=CONDITION.get("site"))
def site() -> None: ...


STAND_INS = [test_sets, scores, model_results, model_site, locale_shards, site]
KEYS = ("model_results", "model_site", "locale_shards", "site")


def requested(result) -> dict[str, list]:
    """The partitions requested of each asset that has any (``None`` for an unpartitioned one)."""
    out = {}
    for key in KEYS:
        found = result.get_requested_partitions(dg.AssetKey(key))
        if found:
            out[key] = sorted(found, key=str)
    return out


class Sensor:
    """The automation sensor's ticks over one instance, and the runs it would launch, made with
    its run tag (runs launched by anything else count as handling what they materialise)."""

    def __init__(self, instance):
        self.instance, self.cursor = instance, None
        self.defs = dg.Definitions(assets=STAND_INS)

    def tick(self) -> dict[str, list]:
        result = dg.evaluate_automation_conditions(defs=self.defs, instance=self.instance,
                                                   cursor=self.cursor)
        self.cursor = result.cursor
        return requested(result)

    def launch(self, ticked: dict[str, list]) -> None:
        """The runs of a tick: the unpartitioned assets in one, each partition in one."""
        unpartitioned = [key for key, parts in ticked.items() if parts == [None]]
        if unpartitioned:
            self.materialize(unpartitioned, None, automated=True)
        for key, parts in ticked.items():
            for part in parts:
                if part is not None:
                    self.materialize([key], part, automated=True)

    def materialize(self, selection, partition=None, automated=False) -> None:
        """A run of ``selection`` with its asset selection recorded, as a launched run's is
        (Dagster's any_deps_updated ignores a run's updates of its own targets' dependencies)."""
        keys = [dg.AssetKey(key) for key in selection]
        job = self.defs.resolve_implicit_job_def_def_for_assets(keys)
        tags = {AUTOMATION_RUN_TAG: "true"} if automated else None
        assert job.execute_in_process(instance=self.instance, asset_selection=keys,
                                      partition_key=partition, tags=tags).success


@pytest.fixture
def sensor():
    """Models ``a`` and ``b`` evaluated, their parts, the locale shards and the site written by
    hand; the sensor's first tick (which requests nothing) made."""
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(models.name, ["a", "b"])
        sensor = Sensor(instance)
        sensor.materialize(["test_sets", "locale_shards"])
        for model in ("a", "b"):
            sensor.materialize(["scores", "model_site"], model)
        sensor.materialize(["model_results", "site"])
        assert sensor.tick() == {}
        yield sensor


def test_a_new_models_part_is_requested_after_its_results_and_before_the_site(sensor):
    """Neither ``model_site`` nor ``locale_shards`` had a condition: the site, requested with
    the results, made the new model's part itself (``models_made_here``)."""
    sensor.instance.add_dynamic_partitions(models.name, ["c"])
    assert sensor.tick() == {}  # registered, not scored: its part is not requested
    sensor.materialize(["scores"], "c")  # the model's run (launched by the registry sensor)
    results = sensor.tick()
    assert results == {"model_results": [None]}  # the database does not hold c's rows yet
    sensor.launch(results)
    part = sensor.tick()
    assert part == {"model_site": ["c"]}  # c's alone; the site waits for it
    sensor.launch(part)
    built = sensor.tick()
    assert built == {"site": [None]}
    sensor.launch(built)
    assert sensor.tick() == {}


def test_a_models_new_scores_request_its_part_alone_and_not_the_locale_shards(sensor):
    sensor.materialize(["scores"], "b")  # b evaluated again
    results = sensor.tick()
    assert results == {"model_results": [None]}
    sensor.launch(results)
    assert sensor.tick() == {"model_site": ["b"]}


def test_a_part_waits_while_the_results_run(sensor):
    """A new dataset while a run of ``model_results`` is in progress: the parts wait for it."""
    job = sensor.defs.resolve_implicit_job_def_def_for_assets([dg.AssetKey("model_results")])
    run = sensor.instance.create_run_for_job(job, asset_selection={dg.AssetKey("model_results")})
    sensor.instance.report_dagster_event(dg.DagsterEvent(
        event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name),
        run_id=run.run_id)
    sensor.materialize(["test_sets"])
    assert sensor.tick() == {"locale_shards": [None]}
    sensor.instance.report_run_failed(sensor.instance.get_run_by_id(run.run_id), "stopped")
    assert sensor.tick() == {"model_site": ["a", "b"]}


def test_a_new_dataset_requests_the_locale_shards_and_every_part_then_the_site(sensor):
    sensor.materialize(["test_sets"])
    dataset = sensor.tick()
    assert dataset == {"model_site": ["a", "b"], "locale_shards": [None]}
    sensor.launch(dataset)
    built = sensor.tick()
    assert built == {"site": [None]}
    sensor.launch(built)
    assert sensor.tick() == {}


def test_a_handled_part_is_not_requested_again(sensor):
    """A part written by another run (``cultivar run``, the UI) after new scores handles them."""
    sensor.materialize(["scores"], "a")
    sensor.materialize(["model_results"])
    sensor.materialize(["model_site"], "a")
    sensor.materialize(["site"])
    assert sensor.tick() == {}
