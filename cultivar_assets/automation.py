"""Keeping the leaderboard current: a registry sensor, a nightly schedule, automation conditions.

- ``model_registry_sensor`` (after Dagster's ``assets_dynamic_partitions`` release sensor): its
  cursor holds ``{model id: fingerprint}`` of the selected registry entries. On its first tick it
  only registers the models as partitions and remembers them (no flood of runs); afterwards a new
  entry becomes a partition and gets one run, a changed entry (revision, weights, engine options,
  prompt template: anything in the fingerprint) gets one run, an unchanged registry gets none.
- ``nightly_reevaluation`` re-checks the registry against what the database says each model was
  last run with (``model_runs.model_fingerprint``) and re-runs the models that changed.
- The ``leaderboard`` asset carries an automation condition, evaluated by the
  ``cultivar_automation`` sensor: it is recomputed once new score partitions have landed.

Run requests carry tags for the run launcher: ``cultivar/model``, ``cultivar/gpus`` (tensor
parallel size for GPU engines, 0 otherwise) and, for GPU runs, a ``dagster-k8s/config`` tag that
asks Kubernetes for that many ``nvidia.com/gpu`` (see ``cultivar_assets/deploy``).
"""

import json

import dagster as dg

from cultivar_assets.assets.model_assets import models_partitions
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.models import load_models, select_models
from cultivar_assets.resources import EngineResource, StoreResource
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import StoreError


def gpus_for(spec: ModelSpec) -> int:
    """GPUs a model's run needs: its tensor-parallel size (default 1) when its engine uses GPUs
    (``Engine.uses_gpu``) and its ``device`` option is not ``cpu``; 0 otherwise."""
    engine = engine_registry().get(spec.engine)
    if not engine.uses_gpu or spec.engine_options.get("device") == "cpu":
        return 0
    return int(spec.engine_options.get("tensor_parallel_size", 1))


def run_tags(spec: ModelSpec) -> dict[str, str]:
    gpus = gpus_for(spec)
    tags = {"cultivar/model": spec.id, "cultivar/gpus": str(gpus)}
    if gpus:
        tags["cultivar/gpu-run"] = "true"  # the run queues in cultivar_assets/deploy limit these
        limits = {"nvidia.com/gpu": str(gpus)}
        tags["dagster-k8s/config"] = json.dumps(
            {"container_config": {"resources": {"limits": limits, "requests": limits}}}
        )
    return tags


def selected_models(engine: EngineResource) -> list[ModelSpec]:
    return select_models(load_models(engine.models_file), engine.selection)


def run_request(spec: ModelSpec, fingerprint: str, reason: str) -> dg.RunRequest:
    return dg.RunRequest(
        partition_key=spec.id,
        run_key=f"{spec.id}:{fingerprint[:16]}",
        tags={**run_tags(spec), "cultivar/reason": reason},
    )


@dg.sensor(
    name="model_registry_sensor",
    job_name="evaluate_model",
    minimum_interval_seconds=300,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Runs models added to (or changed in) the registry; first tick runs nothing.",
)
def model_registry_sensor(context: dg.SensorEvaluationContext, engine: EngineResource):
    specs = {spec.id: spec for spec in selected_models(engine)}
    settings = engine.settings()
    current = {model_id: run_fingerprint(spec, settings) for model_id, spec in specs.items()}
    known = set(context.instance.get_dynamic_partitions(models_partitions.name))
    unregistered = [model_id for model_id in current if model_id not in known]
    add = [models_partitions.build_add_request(unregistered)] if unregistered else []
    if context.cursor is None:
        return dg.SensorResult(run_requests=[], dynamic_partitions_requests=add,
                               cursor=json.dumps(current, sort_keys=True))
    previous = json.loads(context.cursor)
    requests = []
    for model_id, fingerprint in current.items():
        if model_id not in previous:
            requests.append(run_request(specs[model_id], fingerprint, "new in registry"))
        elif previous[model_id] != fingerprint:
            requests.append(run_request(specs[model_id], fingerprint, "changed in registry"))
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=add,
                           cursor=json.dumps(current, sort_keys=True))


@dg.schedule(
    name="nightly_reevaluation",
    cron_schedule="0 3 * * *",
    job_name="evaluate_model",
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Re-runs models whose registry entry differs from the one they were run with.",
)
def nightly_reevaluation(context: dg.ScheduleEvaluationContext, engine: EngineResource,
                         store: StoreResource):
    try:
        runs = {row["model_id"]: row["model_fingerprint"]
                for row in store.store().query("model_fingerprints")}
    except StoreError as error:
        return dg.SkipReason(f"cannot read the database: {error}")
    known = set(context.instance.get_dynamic_partitions(models_partitions.name))
    settings = engine.settings()
    current = {spec.id: (spec, run_fingerprint(spec, settings)) for spec in selected_models(engine)}
    requests = [
        run_request(spec, fingerprint, "changed since its last run")
        for model_id, (spec, fingerprint) in current.items()
        if model_id in runs and model_id in known and runs[model_id] != fingerprint
    ]
    return requests or dg.SkipReason("every evaluated model matches its registry entry")


automation_sensor = dg.AutomationConditionSensorDefinition(
    "cultivar_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
)
