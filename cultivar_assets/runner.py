"""Running the whole pipeline in one process: the asset graph materialised in a local Dagster
instance, model after model (``cultivar demo`` and ``cultivar run``).

Steps: register the selected models as partitions, materialise ``selected_instances`` (the
named-entity-rich selection over the source benchmark's English side: for the demo, its own
original sentences, every candidate kept) and ``test_sets``, then
``translations`` and ``scores`` for each model (one run per model, as a cluster would), then the
``leaderboard``. The Dagster instance lives in ``$CULTIVAR_HOME/dagster`` (unless ``DAGSTER_HOME``
is set), so ``cultivar ui`` shows these runs afterwards. Translations are cached on disk: a second
run re-materialises everything without generating again.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from cultivar_assets.models import load_models, select_models
from cultivar_assets.paths import dagster_home
from cultivar_assets.settings import Settings


def _console_config() -> dict:
    """Dagster's console logger: silent unless ``CULTIVAR_DEBUG`` is set (this runner reports
    progress and the cause of a failure itself; the full event log stays in the instance)."""
    level = "DEBUG" if os.environ.get("CULTIVAR_DEBUG") else "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}


@dataclass
class PipelineResult:
    database: str
    models: list[str]
    leaderboard: list[dict]
    seconds: float
    site: str


def dagster_home_dir() -> str:
    """``$DAGSTER_HOME``, else ``$CULTIVAR_HOME/dagster``, created with a ``dagster.yaml``."""
    home = os.environ.get("DAGSTER_HOME") or str(dagster_home())
    os.makedirs(home, exist_ok=True)
    config = os.path.join(home, "dagster.yaml")
    if not os.path.exists(config):
        with open(config, "w") as handle:
            handle.write("# Local Dagster instance of the Cultivar toolkit (created by cultivar).\n"
                         "telemetry:\n  enabled: false\n")
    return home


def run_pipeline(settings: Settings, say: Callable[[str], None] = print) -> PipelineResult:
    """Materialise every asset for the models selected in ``settings``."""
    import dagster as dg

    from cultivar_assets.assets.graph import ASSETS
    from cultivar_assets.automation import run_tags
    from cultivar_assets.resources import resources_from_settings
    from cultivar_assets.store.database import Store

    started = time.perf_counter()
    home = dagster_home_dir()
    models = select_models(load_models(settings.models_file), settings.models)
    resources = resources_from_settings(settings)
    with dg.DagsterInstance.from_config(home) as instance:
        known = set(instance.get_dynamic_partitions("models"))
        instance.add_dynamic_partitions("models", [m.id for m in models if m.id not in known])

        def materialise(selection: list[str], partition: str | None = None,
                        tags: dict[str, str] | None = None) -> None:
            result = dg.materialize(
                ASSETS, selection=selection, partition_key=partition, resources=resources,
                instance=instance, run_config=_console_config(), raise_on_error=False,
                tags={"cultivar/entry": "cli", **(tags or {})},
            )
            if not result.success:
                failure = next((e for e in result.all_events if e.is_step_failure), None)
                cause = failure.step_failure_data.error if failure else None
                message = cause.cause.message if cause and cause.cause else (
                    cause.message if cause else "see the Dagster run log")
                raise RuntimeError(f"materialising {', '.join(selection)}"
                                   f"{f' [{partition}]' if partition else ''} failed: "
                                   f"{message.strip()}")

        say(f"[1/4] selection of named-entity-rich instances ({settings.construction.source.name}"
            f" source benchmark, spaCy NER) -> {settings.database_path}")
        materialise(["selected_instances"])
        say(f"[2/4] test sets ({settings.data.kind} data) -> {settings.database_path}")
        materialise(["test_sets"])
        for number, model in enumerate(models, 1):
            say(f"[3/4] model {number}/{len(models)}: {model.id} ({model.type}, "
                f"engine {model.engine}, prompt style {model.prompt_style})")
            materialise(["translations", "scores"], model.id, run_tags(model))
        say("[4/4] leaderboard, per-locale ∆, rank agreement, reported figures, charts, the "
            "dataset folder (push: dry run unless configured) and the site")
        materialise(["leaderboard", "reported_results", "error_annotation_tool", "error_analysis",
                     "charts", "hf_dataset_folder", "hf_dataset_push", "site"])
    rows = Store(settings.database_path).query("leaderboard")
    return PipelineResult(str(settings.database_path), [m.id for m in models], rows,
                          time.perf_counter() - started, str(settings.site.site_path()))
