"""Running the whole pipeline in one process: the asset graph materialised in a local Dagster
instance, model after model (``cultivar demo`` and ``cultivar run``).

Steps (:mod:`cultivar_assets.steps.plan`): register the selected models as partitions,
materialise ``selected_instances`` (the named-entity-rich selection over the source benchmark's
English side: for the demo, its own original sentences, every candidate kept); when the data is
the project's own build (data kind ``built``, the demo's), then for each configured locale
``localised_drafts``, ``postedit_tools`` and ``annotations`` (one run per locale; the
localiser's model is loaded once for all of them,
:func:`cultivar_assets.construction.localisation.localiser.shared_engines`) and
``cultivar_dataset``; then
``test_sets``, ``translations`` and ``scores`` for each model (one run per model, as a cluster
would), then the leaderboard, the error analysis, charts, the dataset folder and the site. The
Dagster instance lives in ``$CULTIVAR_HOME/dagster`` (unless ``DAGSTER_HOME`` is set), so
``cultivar ui`` shows these runs afterwards.

A step whose inputs and output files are unchanged since its last successful run is *reused*
instead (:mod:`cultivar_assets.steps.reuse`): it is not run, the runner says so ("unchanged since
its run of ..., reused"), and each of its assets gets a Dagster observation saying the same, with
the inputs fingerprint. A step that runs carries its inputs fingerprint as the run tag
``cultivar/inputs``. Drafts and translations are cached on disk as well: a step that runs again
generates only what is not cached. Each step's time is returned (``PipelineResult.steps``), and
which steps were reused (``PipelineResult.reused``).

SIGINT and SIGTERM stop the pipeline (:func:`cultivar_assets.processes.interruptions`): a signal
received while a step's Dagster run executes is taken by Dagster, which fails that run in the
run storage ("Execution was interrupted"); the runner then stops with :class:`StepInterrupted`
instead of going on to the next step, and says which run and with what status it was left.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cultivar_assets.models import load_models, select_models
from cultivar_assets.paths import dagster_home
from cultivar_assets.processes import Interrupted, Interruptions, interruptions
from cultivar_assets.settings import Settings
from cultivar_assets.steps import plan
from cultivar_assets.steps.reuse import Decision, StepBook
from cultivar_assets.store.database import Store, recording_steps, seen_generation

# an asset's metadata entry that the runner prints (kept drafts, kept flagged pairs)
NOTICE = "notice"


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
    reused: list[str] = field(default_factory=list)  # the steps (names as in steps) reused whole


class StepInterrupted(Interrupted):
    """SIGINT or SIGTERM stopped the pipeline during a step; ``run``: the step's Dagster run id
    and the status it is recorded with, when it was created."""

    def __init__(self, signum: int, step: str, run: tuple[str, str] | None) -> None:
        super().__init__(signum)
        self.step, self.run = step, run

    def __str__(self) -> str:
        where = (f"; its Dagster run {self.run[0]} is recorded as {self.run[1]}" if self.run
                 else "; no Dagster run of it was recorded")
        return f"interrupted ({self.name}) during the step {self.step}{where}"


class ConcurrentWriteError(RuntimeError):
    """Another process wrote to the database during this pipeline run: the run cannot vouch
    for what the database holds (:mod:`cultivar_assets.steps.reuse`)."""


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


class _Steps:
    """Runs or reuses the steps of one pipeline run in one Dagster instance."""

    def __init__(self, settings: Settings, instance, book: StepBook,
                 say: Callable[[str], None], signals: Interruptions) -> None:
        self.settings, self.instance, self.book, self.say = settings, instance, book, say
        self.signals = signals
        self._definitions: tuple[list, dict] | None = None

    def _assets_and_resources(self) -> tuple[list, dict]:
        """The asset graph and the resources, imported on the first step that runs."""
        if self._definitions is None:
            from cultivar_assets.assets.graph import ASSETS
            from cultivar_assets.resources import resources_from_settings

            self._definitions = (ASSETS, resources_from_settings(self.settings))
        return self._definitions

    def run(self, step: plan.PlannedStep, tags: Callable[[], dict[str, str]] | None = None,
            indent: str = "  ") -> bool:
        """Reuse ``step`` or run it; True when it was reused. A failed run raises RuntimeError."""
        decision = self.book.decide(step)
        label = f"{step.partition}: " if step.partition and step.key.startswith("build:") else ""
        if decision.reuse:
            self.say(f"{indent}{label}{decision.reason}")
            self._observe(step, decision)
            return True
        if decision.record is not None or step.always_runs:
            self.say(f"{indent}{label}{decision.reason}")
        self.book.starting(step)
        started = time.perf_counter()
        result = self._materialise(step, {"cultivar/inputs": decision.fingerprint,
                                          **(tags() if tags else {})})
        for event in result.get_asset_materialization_events():  # what an asset asks to say
            notice = event.materialization.metadata.get(NOTICE)
            if notice is not None:
                self.say(f"{indent}{notice.value}")
        if self.book.finished(step, decision, time.perf_counter() - started,
                              result.run_id) is None:
            raise ConcurrentWriteError(
                f"another process wrote to the database {self.book.store.path} while the step "
                f"{step.key} ran, so what the database holds now may mix that writer's rows with "
                "this run's: nothing of this run is recorded as unchanged and its results are "
                "not shown. Run again once the other writer has finished (every step runs)")
        return False

    def _observe(self, step: plan.PlannedStep, decision: Decision) -> None:
        """One Dagster observation per asset of a reused step, saying so."""
        import dagster as dg

        record = decision.record
        metadata: dict[str, Any] = {
            "reused": "unchanged, reused: its inputs fingerprint and output files are the ones "
                      "recorded at its last successful run; it was not run again",
            "inputs_fingerprint": decision.fingerprint,
            "last_run_at": f"{record.recorded_at:%Y-%m-%d %H:%M:%S} UTC",
            "last_run_seconds": round(record.seconds, 1),
            "step": step.key,
        }
        for asset in step.assets:
            self.instance.report_runless_asset_event(dg.AssetObservation(
                asset_key=asset, partition=step.partition, metadata=metadata,
                tags={"cultivar/entry": "cli"}))

    def _materialise(self, step: plan.PlannedStep, tags: dict[str, str]):
        import dagster as dg

        assets, resources = self._assets_and_resources()
        runs_before = {r.run_id for r in self.instance.get_runs(limit=1)}
        try:
            result = dg.materialize(
                assets, selection=list(step.assets), partition_key=step.partition,
                resources=resources, instance=self.instance, run_config=_console_config(),
                raise_on_error=False, tags={"cultivar/entry": "cli", **tags},
            )
            self.signals.check()  # a signal Dagster's handler took: stop here, not go on
        except Interrupted as stop:
            latest = self.instance.get_runs(limit=1)
            run = latest[0] if latest and latest[0].run_id not in runs_before else None
            raise StepInterrupted(stop.signum, step.key,
                                  (run.run_id, run.status.value) if run else None) from None
        if not result.success:
            failure = next((e for e in result.all_events if e.is_step_failure), None)
            cause = failure.step_failure_data.error if failure else None
            message = cause.cause.message if cause and cause.cause else (
                cause.message if cause else "see the Dagster run log")
            raise RuntimeError(f"materialising {', '.join(step.assets)}"
                               f"{f' [{step.partition}]' if step.partition else ''} failed: "
                               f"{message.strip()}")
        return result


def run_pipeline(settings: Settings, say: Callable[[str], None] = print) -> PipelineResult:
    """Materialise every asset for the models selected in ``settings``, reusing the steps that
    are unchanged since their last run (module docstring)."""
    import dagster as dg

    from cultivar_assets.construction.localisation.localiser import shared_engines

    started = time.perf_counter()
    timings: list[tuple[str, float]] = []
    reused: list[str] = []
    home = dagster_home_dir()
    models = select_models(load_models(settings.models_file), settings.models)
    store = Store(settings.database_path)
    with (dg.DagsterInstance.from_config(home) as instance, recording_steps(),
          interruptions() as signals):
        known = set(instance.get_dynamic_partitions("models"))
        new = [m.id for m in models if m.id not in known]
        if new:
            instance.add_dynamic_partitions("models", new)
        runner = _Steps(settings, instance, StepBook(store), say, signals)
        done: list[str] = []  # keys of the steps so far

        built = settings.data.kind == "built"
        construction = settings.construction
        total = 6 if built else 4
        number = [0]

        def timed(title: str) -> float:
            number[0] += 1
            say(f"[{number[0]}/{total}] {title}")
            return time.perf_counter()

        def finish(name: str, since: float, all_reused: bool) -> None:
            timings.append((name, time.perf_counter() - since))
            if all_reused:
                reused.append(name)

        since = timed(f"selection of named-entity-rich instances ({construction.source.name}"
                      f" source benchmark, spaCy NER) -> {settings.database_path}")
        step = plan.selection_step(settings)
        finish("selection", since, runner.run(step))
        done.append(step.key)
        if built:
            locales = construction.localisation.locale_keys()
            since = timed(
                f"for {len(locales)} locale(s): LLM drafts ({_localiser_label(settings)}), the "
                "post-editing tool, the returned annotation file "
                f"({construction.annotation.folder_path()})")
            failures, outcomes = [], []
            with shared_engines():
                for locale in locales:  # every locale is tried; the problems are listed at once
                    step = plan.build_step(settings, locale)
                    try:
                        outcomes.append(runner.run(step))
                    except RuntimeError as error:
                        failures.append(str(error))
                    done.append(step.key)
            finish("localisation, tools and ingest", since, all(outcomes) and not failures)
            if failures:
                raise RuntimeError(
                    f"building {len(failures)} of {len(locales)} locale(s) failed (tool pages are "
                    f"in {construction.annotation.tools_path()}):\n" + "\n".join(failures))
            since = timed(f"the dataset -> {construction.dataset.folder_path()}")
            step = plan.dataset_step(settings, locales)
            finish("dataset", since, runner.run(step))
            done.append(step.key)
        since = timed(f"test sets ({settings.data.kind} data) -> {settings.database_path}")
        step = plan.test_sets_step(settings)
        finish("test sets", since, runner.run(step))
        done.append(step.key)
        timed(f"{len(models)} model(s), one run each")
        for index, model in enumerate(models, 1):
            say(f"  model {index}/{len(models)}: {model.id} ({model.type}, "
                f"engine {model.engine}, prompt style {model.prompt_style})")
            since = time.perf_counter()
            step = plan.model_step(settings, model)
            finish(f"model {model.id}", since,
                   runner.run(step, lambda model=model: _model_tags(model), indent="    "))
            done.append(step.key)
        since = timed("leaderboard, per-locale ∆, rank agreement, reported figures, "
                      "the error analysis, charts, the dataset folder (push: dry run "
                      "unless configured) and the site")
        registered = sorted(known | set(new))
        results = plan.planned_step(settings, "results", registered)
        assert results.upstream == tuple(done), (results.upstream, done)  # one plan for both
        finish("results, dataset folder and site", since, runner.run(results))
        rows = _verified_leaderboard(store)
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
                          time.perf_counter() - started, str(settings.site.site_path()),
                          timings, summary, reused)


def _verified_leaderboard(store: Store) -> list[dict]:
    """The leaderboard, read in one connection with the file's write generation: only when no
    other process wrote since this run's last write or look (what the run computed or
    verified); otherwise :class:`ConcurrentWriteError`."""
    seen = seen_generation(store.path)
    with store.reader() as reader:
        state = reader.rows("read_write_state")
        rows = reader.rows("leaderboard")
    now = state[0]["generation"] if state else 0
    if now != seen:
        writer = state[0]["writer"] if state else "unknown"
        raise ConcurrentWriteError(
            f"another process ({writer}) wrote to the database {store.path} after this run's "
            "last step, so its leaderboard is not the one this run computed or verified and is "
            "not shown; run again (`cultivar query` shows what the database holds now)")
    return rows


def _model_tags(model) -> dict[str, str]:
    from cultivar_assets.automation import run_tags

    return run_tags(model)


def _localiser_label(settings: Settings) -> str:
    from cultivar_assets.construction.localisation.drafts import configured_localiser

    config = settings.construction.localisation
    return f"{configured_localiser(config)}, prompt {config.prompt}"
