"""Keeping the leaderboard current: a registry sensor, a nightly schedule, a run-failure sensor,
the automation sensor and the run coordinator that gives a model's runs their tags.

- ``model_registry_sensor`` (after Dagster's ``assets_dynamic_partitions`` release sensor): its
  cursor holds, per selected registry entry, its fingerprint and the entry (secrets redacted);
  its first tick runs only the models the database holds no run of, later ticks a new or
  changed entry once, with the reason and the changed fields in the run's tags.
- ``nightly_reevaluation``: the models whose fingerprint differs from their stored run's.
- ``run_failure_recorder``: every failed run in the database (``run_failures``), and where
  configured to a webhook and a JSON-lines file.
- ``cultivar_automation``: the automation-condition sensor of
  :mod:`cultivar_assets.assets.conditions`.
- :class:`ModelRunCoordinator`: every other submitted run of a model gets its model's run tags
  (:mod:`cultivar_assets.assets.run_tags`: GPUs, queue tag, a model run's volumes) before it
  is queued.

What each does and its settings: docs/evaluating-models.md ("New models, kept current") and
docs/kubernetes.md.
"""

import json
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_key import AssetKey
from dagster._core.remote_representation.external_data import PartitionExecutionErrorSnap
from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.storage.tags import PARTITION_NAME_TAG

from cultivar_assets.assets.conditions import AFTER_NEW_RESULTS, run_failures
from cultivar_assets.assets.model_assets import models_partitions
from cultivar_assets.assets.publish_assets import hf_dataset_push
from cultivar_assets.assets.run_tags import run_tags
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.models import load_models, select_models
from cultivar_assets.publish.config import PublishConfig
from cultivar_assets.resources import EngineResource, StoreResource
from cultivar_assets.secrets import redact
from cultivar_assets.settings import (
    DEFAULT_AUTOMATION_SENSOR_INTERVAL,
    DEFAULT_REGISTRY_SENSOR_INTERVAL,
    AutomationConfig,
)
from cultivar_assets.specs import ModelSpec
from cultivar_assets.store.database import StoreError, WriteBlock

MODEL_JOB = "evaluate_model"


class ModelRunTagsError(Exception):
    """A model's run whose run tags cannot be had from its code location."""


def model_run_tags(run: DagsterRun, workspace: Any) -> dict[str, str]:
    """The run tags of ``run``'s model that ``run`` lacks, or ``{}`` for a run that is not a
    model's. A model's run: a run with a partition (tag ``dagster/partition``) of the job
    ``evaluate_model``, or of assets that job materialises. Its tags are those that
    ``evaluate_model`` gives that partition, asked of the run's code location in ``workspace``
    (its settings and registry: :func:`~cultivar_assets.assets.run_tags.model_partition_tags`);
    a partition that the code location cannot tag raises :class:`ModelRunTagsError`."""
    partition = run.tags.get(PARTITION_NAME_TAG)
    origin = run.remote_job_origin
    if partition is None or origin is None:
        return {}
    location = workspace.get_code_location(origin.location_name)
    repository = location.get_repository(origin.repository_origin.repository_name)
    if run.job_name != MODEL_JOB:
        model_assets = {node.asset_key for node in repository.get_asset_node_snaps(MODEL_JOB)}
        selected: set[AssetKey] = set(run.asset_selection or ())
        if not selected & model_assets:
            return {}
    snap = location.get_partition_tags_from_repo(repository.handle, MODEL_JOB, partition,
                                                 workspace.instance)
    if isinstance(snap, PartitionExecutionErrorSnap):
        error = snap.error
        while error is not None and error.cause is not None:  # the registry's, not Dagster's
            error = error.cause
        message = error.message.strip().splitlines()[0] if error else "no error given"
        raise ModelRunTagsError(f"run {run.run_id} (partition {partition!r} of {MODEL_JOB}, code "
                                f"location {origin.location_name}): no run tags: {message}")
    return {key: value for key, value in snap.tags.items()
            if key.startswith("cultivar/") or key == "dagster-k8s/config"
            if key not in run.tags}


class ModelRunCoordinator(QueuedRunCoordinator):
    """Dagster's ``QueuedRunCoordinator`` (same config) that adds to every submitted run of a
    model the run tags of its model that the run lacks (:func:`model_run_tags`) before queueing
    it: its GPUs and volumes (``dagster-k8s/config``) and the GPU queue's tag
    (``cultivar/gpu-run``), whatever launched the run. Every run launched from the UI, a
    backfill, a sensor or a schedule is submitted through the instance's run coordinator
    (``cultivar_assets/deploy/k8s``)."""

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        tags = model_run_tags(run, context.workspace)
        if tags:
            self._instance.add_run_tags(run.run_id, tags)
            run = self._instance.get_run_by_id(run.run_id)
        return super().submit_run(SubmitRunContext(run, context.workspace))


def selected_models(engine: EngineResource) -> list[ModelSpec]:
    return select_models(load_models(engine.models_file), engine.selection)


REGISTRY_SENSOR = "model_registry_sensor"
MAX_TAG_CHARS = 1000  # ours: a tag the UI shows in full; the cursor keeps every change


def run_request(spec: ModelSpec, fingerprint: str, reason: str,
                changed: str | None = None) -> dg.RunRequest:
    tags = {**run_tags(spec), "cultivar/reason": reason}
    if changed:
        tags["cultivar/changed"] = changed[:MAX_TAG_CHARS]
    return dg.RunRequest(partition_key=spec.id, run_key=f"{spec.id}:{fingerprint[:16]}", tags=tags)


def entry_record(spec: ModelSpec) -> dict[str, Any]:
    """A registry entry as the cursor keeps it: its fields as JSON, every string redacted."""
    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [clean(item) for item in value]
        return value

    return clean(spec.model_dump(mode="json", exclude_none=True))


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> str:
    """``field: old → new; …`` for every field of an entry that differs (nested options by dotted
    name; a field absent on one side shows as ``–``); equal entries whose run settings changed
    say so instead."""
    before, after = _flatten(old), _flatten(new)
    parts = [f"{name}: {json.dumps(before.get(name, '–'))} → {json.dumps(after.get(name, '–'))}"
             for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    return "; ".join(parts) or "the run settings (engine section of the settings)"


class SensorCursorError(ValueError):
    """A registry sensor cursor that is not ``{model id: {"fingerprint": …, "entry": …}}``."""


def _cursor_entries(cursor: str) -> dict[str, dict[str, Any]]:
    """The cursor as ``{model id: {"fingerprint": …, "entry": …}}``; any other shape raises
    :class:`SensorCursorError` naming the first entry that is not one."""
    data = json.loads(cursor)
    for model_id, value in data.items():
        if not (isinstance(value, dict) and {"fingerprint", "entry"} <= set(value)):
            raise SensorCursorError(
                f"{REGISTRY_SENSOR} cursor: the entry of {model_id!r} is {str(value)[:80]!r}, "
                "not {\"fingerprint\": …, \"entry\": …}; reset the sensor's cursor in the UI")
    return data


def _evaluated_models(store: StoreResource) -> set[str]:
    """The models the database holds a run of (none when it does not exist yet)."""
    database = store.store()
    if not database.path.exists():
        return set()
    return {row["model_id"] for row in database.query("model_fingerprints")}


def build_model_registry_sensor(
        interval_seconds: int = DEFAULT_REGISTRY_SENSOR_INTERVAL) -> dg.SensorDefinition:
    """The registry sensor, ticking every ``interval_seconds``."""

    @dg.sensor(
        name=REGISTRY_SENSOR,
        job_name="evaluate_model",
        minimum_interval_seconds=interval_seconds,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Runs models added to (or changed in) the registry; its first tick runs "
                    "only the models not evaluated yet. Ticks every "
                    f"{interval_seconds} s (automation.registry_sensor_interval_seconds).",
    )
    def model_registry_sensor(context: dg.SensorEvaluationContext, engine: EngineResource,
                              store: StoreResource):
        specs = {spec.id: spec for spec in selected_models(engine)}
        settings = engine.settings()
        current = {model_id: {"fingerprint": run_fingerprint(spec, settings),
                              "entry": entry_record(spec)} for model_id, spec in specs.items()}
        cursor = json.dumps(current, sort_keys=True)
        known = set(context.instance.get_dynamic_partitions(models_partitions.name))
        unregistered = [model_id for model_id in current if model_id not in known]
        add = [models_partitions.build_add_request(unregistered)] if unregistered else []
        if context.cursor is None:
            evaluated = _evaluated_models(store)
            requests = [run_request(specs[model_id], now["fingerprint"], "not evaluated yet")
                        for model_id, now in current.items() if model_id not in evaluated]
            return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=add,
                                   cursor=cursor)
        previous = _cursor_entries(context.cursor)
        requests = []
        for model_id, now in current.items():
            before = previous.get(model_id)
            if before is None:
                requests.append(run_request(specs[model_id], now["fingerprint"],
                                            "new in registry"))
            elif before["fingerprint"] != now["fingerprint"]:
                requests.append(run_request(specs[model_id], now["fingerprint"],
                                            "changed in registry",
                                            changed_fields(before["entry"], now["entry"])))
        return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=add,
                               cursor=cursor)

    return model_registry_sensor


model_registry_sensor = build_model_registry_sensor()


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


AUTOMATION_SENSOR = "cultivar_automation"


def build_automation_sensor(
        interval_seconds: int = DEFAULT_AUTOMATION_SENSOR_INTERVAL,
) -> dg.AutomationConditionSensorDefinition:
    """The sensor that evaluates the assets' automation conditions (on by default), ticking
    every ``interval_seconds`` (``automation.automation_sensor_interval_seconds``)."""
    return dg.AutomationConditionSensorDefinition(
        AUTOMATION_SENSOR,
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=interval_seconds,
        description="Requests the results, error analysis and charts once new scores have "
                    "landed, once per batch; then each model's part of the site whose scores "
                    "they loaded; then the site (also after recorded failures); the locale "
                    "shards, every model's part and the dataset folder after new test sets; the "
                    "push only where a repo and token are configured. "
                    f"Ticks every {interval_seconds} s (automation.automation_sensor_interval_"
                    "seconds).",
    )


automation_sensor = build_automation_sensor()


def push_configured(config: PublishConfig) -> bool:
    """Whether a push can happen at all: a repo id and its token (in ``config.token_env``) are
    set. Only then does ``hf_dataset_push`` follow the folder automatically; without them the
    automation launches nothing for it (a launch would only be a dry run)."""
    return bool(config.repo_id and config.token())


def automated_assets(assets: list, publish: PublishConfig) -> list:
    """``assets`` with the push's automation condition where :func:`push_configured`."""
    if not push_configured(publish):
        return list(assets)
    return [asset.with_attributes(automation_condition=AFTER_NEW_RESULTS)
            if asset.key == hf_dataset_push.key else asset for asset in assets]


FAILURE_SENSOR = "run_failure_recorder"
WEBHOOK_TIMEOUT_S = 10


def failure_record(context: dg.RunFailureSensorContext) -> dict[str, Any]:
    """The failed run as stored and sent: run id, job, model (tag ``cultivar/model``, else the
    run's partition for ``evaluate_model``), the first failed step, the first line of the error
    that caused it (the innermost cause; secrets redacted) and the time (UTC)."""
    run = context.dagster_run
    model = run.tags.get("cultivar/model") or (
        run.tags.get("dagster/partition") if run.job_name == "evaluate_model" else None)
    steps = context.get_step_failure_events()
    step = steps[0].step_key if steps else None
    error = steps[0].step_failure_data.error if steps and steps[0].step_failure_data else None
    while error is not None and error.cause is not None:  # the user's error, not Dagster's
        error = error.cause                                 # "Error occurred while executing"
    message = (error.message if error else context.failure_event.message) or "failed"
    first_line = next((line for line in message.strip().splitlines() if line.strip()), "failed")
    return {"run_id": run.run_id, "job": run.job_name, "model_id": model, "step": step,
            "error": redact(first_line.strip())[:500],
            "failed_at": datetime.now(UTC).replace(tzinfo=None)}


def report_failure(record: dict[str, Any], config: AutomationConfig,
                   log: Any) -> list[str]:
    """Send ``record`` where ``config`` says; returns what could not be reached (logged)."""
    problems = []
    body = {**record, "failed_at": record["failed_at"].isoformat() + "Z"}
    if config.failure_log:
        try:
            path = Path(config.failure_log)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(body, ensure_ascii=False) + "\n")
        except OSError as error:
            problems.append(f"failure log {config.failure_log}: {error}")
    if config.failure_webhook:
        request = urllib.request.Request(
            config.failure_webhook, data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as answer:
                answer.read()
        except OSError as error:
            where = redact(config.failure_webhook)
            problems.append(f"failure webhook {where}: {redact(str(error))}")
    for problem in problems:
        log.warning(f"cannot report run {record['run_id']}'s failure: {problem}")
    return problems


def build_run_failure_sensor(config: AutomationConfig | None = None) -> dg.SensorDefinition:
    """The run-failure sensor, reporting where ``config`` says (always to the database)."""
    config = config or AutomationConfig()

    @dg.run_failure_sensor(
        name=FAILURE_SENSOR,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Records failed runs in the database (view run_failures) and reports them "
                    "to the configured webhook or file.",
    )
    def run_failure_recorder(context: dg.RunFailureSensorContext, store: StoreResource):
        record = failure_record(context)
        store.store().write([WriteBlock("record_run_failure", record)])  # the site's failed_models
        if record["model_id"]:  # what the site shows: it follows (a run of no model would loop)
            context.instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=run_failures.key, description=f"a run of {record['model_id']} failed",
                metadata={"run_id": record["run_id"], "model_id": record["model_id"],
                          "step": record["step"] or "", "error": record["error"]}))
        report_failure(record, config, context.log)

    return run_failure_recorder
