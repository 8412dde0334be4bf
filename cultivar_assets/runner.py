"""Running the whole pipeline in one process: the asset graph materialised in a local Dagster
instance, model after model (``cultivar demo`` and ``cultivar run``).

Steps: register the selected models as partitions, materialise ``selected_instances`` (the
named-entity-rich selection over the source benchmark's English side: for the demo, its own
original sentences, every candidate kept); when the data is the project's own build (data kind
``built``, the demo's), then for each configured locale ``localised_drafts``, ``postedit_tools``
and ``annotations`` (one run per locale; the localiser's model is loaded once for all of them,
:func:`cultivar_assets.construction.localisation.shared_engines`) and ``cultivar_dataset``; then
``test_sets``, ``translations`` and ``scores`` for each model (one run per model, as a cluster
would), then the ``leaderboard``. The Dagster instance lives in ``$CULTIVAR_HOME/dagster``
(unless ``DAGSTER_HOME`` is set), so ``cultivar ui`` shows these runs afterwards. Drafts and
translations are cached on disk: a second run re-materialises everything without generating
again. Each step's time is returned (``PipelineResult.steps``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cultivar_assets.models import load_models, select_models
from cultivar_assets.paths import dagster_home
from cultivar_assets.settings import Settings


def _console_config() -> dict:
    """Dagster's console logger: silent unless ``CULTIVAR_DEBUG`` is set (this runner reports
    progress and the cause of a failure itself; the full event log stays in the instance)."""
    level = "DEBUG" if os.environ.get("CULTIVAR_DEBUG") else "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}


@dataclass
class BuildSummary:
    """What the construction half left: Table 1 of the built dataset, the tool pages, the
    folder the annotation files are read from and the dataset folder."""

    table1: list[dict]
    tools: dict[str, str]  # locale -> tool page
    annotation_folder: str
    dataset_folder: str
    is_demo: bool


@dataclass
class PipelineResult:
    database: str
    models: list[str]
    leaderboard: list[dict]
    seconds: float
    site: str
    steps: list[tuple[str, float]] = field(default_factory=list)  # (step, seconds)
    build: BuildSummary | None = None


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
    from cultivar_assets.construction.localisation import shared_engines
    from cultivar_assets.resources import resources_from_settings
    from cultivar_assets.store.database import Store

    started = time.perf_counter()
    steps: list[tuple[str, float]] = []
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

        built = settings.data.kind == "built"
        construction = settings.construction
        total = 6 if built else 4
        step = [0]

        def timed(title: str) -> float:
            step[0] += 1
            say(f"[{step[0]}/{total}] {title}")
            return time.perf_counter()

        started_step = timed(f"selection of named-entity-rich instances ({construction.source.name}"
                             f" source benchmark, spaCy NER) -> {settings.database_path}")
        materialise(["selected_instances"])
        steps.append(("selection", time.perf_counter() - started_step))
        if built:
            locales = construction.localisation.locale_keys()
            started_step = timed(
                f"for {len(locales)} locale(s): LLM drafts ({_localiser_label(settings)}), the "
                "post-editing tool, the returned annotation file "
                f"({construction.annotation.folder_path()})")
            failures = []
            with shared_engines():
                for locale in locales:  # every locale is tried; the problems are listed at once
                    try:
                        materialise(["localised_drafts", "postedit_tools", "annotations"], locale)
                    except RuntimeError as error:
                        failures.append(str(error))
            steps.append(("localisation, tools and ingest", time.perf_counter() - started_step))
            if failures:
                raise RuntimeError(
                    f"building {len(failures)} of {len(locales)} locale(s) failed (tool pages are "
                    f"in {construction.annotation.tools_path()}):\n" + "\n".join(failures))
            started_step = timed(f"the dataset -> {construction.dataset.folder_path()}")
            materialise(["cultivar_dataset"])
            steps.append(("dataset", time.perf_counter() - started_step))
        started_step = timed(f"test sets ({settings.data.kind} data) -> {settings.database_path}")
        materialise(["test_sets"])
        steps.append(("test sets", time.perf_counter() - started_step))
        started_step = timed(f"{len(models)} model(s), one run each")
        for number, model in enumerate(models, 1):
            say(f"  model {number}/{len(models)}: {model.id} ({model.type}, "
                f"engine {model.engine}, prompt style {model.prompt_style})")
            model_started = time.perf_counter()
            materialise(["translations", "scores"], model.id, run_tags(model))
            steps.append((f"model {model.id}", time.perf_counter() - model_started))
        started_step = timed("leaderboard, per-locale ∆, rank agreement, reported figures, "
                             "the error analysis, charts, the dataset folder (push: dry run "
                             "unless configured) and the site")
        materialise(["leaderboard", "reported_results", "error_annotation_tool", "error_analysis",
                     "charts", "hf_dataset_folder", "hf_dataset_push", "site"])
        steps.append(("results, dataset folder and site", time.perf_counter() - started_step))
    store = Store(settings.database_path)
    rows = store.query("leaderboard")
    summary = None
    if settings.data.kind == "built":
        tools = settings.construction.annotation.tools_path()
        summary = BuildSummary(
            table1=store.query("built_annotation_summary"),
            tools={loc: str(tools / loc / "index.html")
                   for loc in settings.construction.localisation.locale_keys()},
            annotation_folder=str(settings.construction.annotation.folder_path()),
            dataset_folder=str(settings.construction.dataset.folder_path()),
            is_demo=settings.construction.source.kind == "demo")
    return PipelineResult(str(settings.database_path), [m.id for m in models], rows,
                          time.perf_counter() - started, str(settings.site.site_path()), steps,
                          summary)


def _localiser_label(settings: Settings) -> str:
    config = settings.construction.localisation
    return config.label or f"{config.model} ({config.engine}), prompt {config.prompt}"
