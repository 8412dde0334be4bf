"""Dagster definitions: ``dagster dev -w workspace.yaml`` or ``dg dev`` load this module.

Settings come from ``$CULTIVAR_CONFIG`` / ``./cultivar.yaml``, else the embedded demo defaults
(see :mod:`cultivar_assets.settings`). Importing this module imports no torch or transformers.
"""

from __future__ import annotations

import dagster as dg

from cultivar_assets.assets.graph import ASSETS, JOBS, PIPELINE, Pipeline, observe_jobs
from cultivar_assets.assets.sources import SOURCES
from cultivar_assets.automation import (
    automated_assets,
    build_automation_sensor,
    build_model_registry_sensor,
    build_run_failure_sensor,
    nightly_reevaluation,
)
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.secrets import install_log_redaction, register_environment
from cultivar_assets.settings import load_settings

register_environment()  # every process that loads the definitions redacts secrets from its logs
install_log_redaction()


def build_definitions(pipeline: Pipeline = PIPELINE) -> dg.Definitions:
    """The project's definitions, with the settings of :func:`load_settings`; ``pipeline``: the
    asset graph and jobs (``PIPELINE.with_assets(...)`` adds assets, each with a job of its own:
    :mod:`cultivar_assets.assets.graph`), with the source assets the project's assets read
    (:mod:`cultivar_assets.assets.sources`)."""
    settings = load_settings()
    registry_sensor = build_model_registry_sensor(
        settings.automation.registry_sensor_interval_seconds)
    return dg.Definitions(
        assets=automated_assets(list(pipeline.assets), settings.publish),
        jobs=[*pipeline.jobs, *observe_jobs(pipeline.assets)],
        sensors=[registry_sensor,
                 build_automation_sensor(settings.automation.automation_sensor_interval_seconds),
                 build_run_failure_sensor(settings.automation)],
        schedules=[nightly_reevaluation],
        resources=resources_from_settings(settings),
    )


defs = build_definitions()
# ASSETS, JOBS: as the graph has them; SOURCES: the source assets they read
__all__ = ["ASSETS", "JOBS", "SOURCES", "build_definitions", "defs"]
