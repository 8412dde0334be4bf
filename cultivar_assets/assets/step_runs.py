"""Step records for the assets of Dagster runs launched outside the runner (the UI, a sensor, a
schedule): :func:`recording_step` wraps every asset.

Inside a pipeline run (``cultivar run``, ``cultivar demo``: :func:`cultivar_assets.store.
database.in_pipeline_run`) it does nothing: the runner keeps the records itself. Elsewhere it calls
the core (:mod:`cultivar_assets.steps.launched_runs`) before and after the asset, with its writes
made for the asset's step (a step of the run's asset graph,
:func:`cultivar_assets.assets.step_graph.run_step_graph`): the settings are rebuilt from the run's
resources as the run configured them (the definitions' resources with the run config's
``resources`` section, :func:`cultivar_assets.resources.settings_from_resources`), the registered
models are the instance's ``models`` partitions. A run whose config sets an asset's own config to
other than its defaults (``localised_drafts``' ``redraft``) records no step: the runner never sets
it. An asset that fails records nothing (its step's record is already forgotten). An asset that
starts before the database file exists records nothing and writes nothing before it computes (our
choice: a failed asset then leaves no file behind).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import dagster as dg

from cultivar_assets.assets.step_graph import run_step_graph
from cultivar_assets.resources import RESOURCE_KEYS, settings_from_resources
from cultivar_assets.settings import Settings
from cultivar_assets.steps.launched_runs import asset_run, asset_starting, asset_succeeded
from cultivar_assets.store.database import Store, in_pipeline_run, writing_for_steps

F = TypeVar("F", bound=Callable[..., Any])
MODELS_PARTITIONS = "models"  # the dynamic partitions of the models (model_assets)


def run_settings(context: dg.AssetExecutionContext) -> Settings:
    """The settings the run's resources were configured with (module docstring)."""
    definitions = {key: value for key, value in context.job_def.resource_defs.items()
                   if key in RESOURCE_KEYS}
    config = {key: value for key, value in ((context.run.run_config or {}).get("resources")
                                            or {}).items() if key in definitions}
    with dg.build_resources(definitions, resource_config=config) as built:
        return settings_from_resources({key: getattr(built, key) for key in RESOURCE_KEYS})


def _own_config(kwargs: dict[str, Any]) -> str | None:
    """Why the run's config of this asset is one the runner never sets, or None."""
    for name, value in kwargs.items():
        if isinstance(value, dg.ConfigurableResource) or not isinstance(value, dg.Config):
            continue  # a resource (run_settings reads those), or not config
        if value.model_dump() != type(value)().model_dump():
            return f"its run config sets {name} ({value.model_dump()}), which the runner never does"
    return None


@contextmanager
def _recorded(kwargs: dict[str, Any]) -> Iterator[None]:
    if in_pipeline_run():
        yield
        return
    context = dg.AssetExecutionContext.get()
    missing = [key for key in RESOURCE_KEYS if key not in context.job_def.resource_defs]
    if missing:  # not the project's definitions: its settings cannot be known
        context.log.info(f"no step is recorded: the run has no resource {', '.join(missing)}; "
                         "its writes forget every step record")
        yield
        return
    settings = run_settings(context)
    if not settings.database_path.exists():
        # no records to forget, and a note written now would create the file even when the
        # asset then fails (which must leave nothing behind): this run records no step
        context.log.info(f"no step is recorded: the database {settings.database_path} did not "
                         "exist when the asset started (the next cultivar run runs the step)")
        yield
        return
    store = Store(settings.database_path)
    partitioned = context.assets_def.partitions_def is not None
    if partitioned and len(context.partition_keys) > 1:
        # a run of several partitions is made for several steps, and records none of them
        store.write([])  # a write for no step: it forgets every record, as the asset's do
        yield
        return
    run = asset_run(run_step_graph(context), settings, context.asset_key.to_user_string(),
                    context.partition_key if partitioned else None, context.run.run_id,
                    context.instance.get_dynamic_partitions(MODELS_PARTITIONS),
                    _own_config(kwargs))
    with (writing_for_steps(run.forgets, context.run.run_id) if run.forgets is not None
          else nullcontext()):
        asset_starting(store, run)
        yield
        record = asset_succeeded(store, run)
    if record is not None:
        context.log.info(f"step {run.key} recorded (inputs fingerprint {record.inputs}): "
                         "the next cultivar run reuses it while it is unchanged")
    elif run.why_unrecorded:
        context.log.info(f"step {run.key} is not recorded: {run.why_unrecorded}")


def recording_step(fn: F) -> F:
    """Wrap an asset function (plain or generator) as the module docstring says."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any):
            with _recorded(kwargs):
                yield from fn(*args, **kwargs)

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def function(*args: Any, **kwargs: Any):
        with _recorded(kwargs):
            return fn(*args, **kwargs)

    return function  # type: ignore[return-value]
