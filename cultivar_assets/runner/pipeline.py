"""Running the whole pipeline in one process: the asset graph materialised in a local Dagster
instance, model after model (``cultivar demo`` and ``cultivar run``).

Steps (derived from the asset graph, :mod:`cultivar_assets.assets.step_graph`; in order in
``docs/pipeline.md``): register the selected models as partitions, then run each step of the
settings' pipeline in order, one Dagster run per step (per partition of a partitioned step):
the named-entity-rich selection; when the data is the project's own build (data kind
``built``, the demo's), each configured locale's drafts, tool page and ingest (the localiser's
model loaded once for all of them, :func:`cultivar_assets.construction.localisation.localiser.
shared_engines`; every locale tried, the problems listed at once) and the dataset; the test
sets; each model's translations and scores (one run per model, as a cluster would, with its
run tags); the results (leaderboard to site). A pipeline with more assets
(``PIPELINE.with_assets``) runs their steps in their place. The Dagster instance lives in
``$CULTIVAR_HOME/dagster`` (unless ``DAGSTER_HOME`` is set), so ``cultivar ui`` shows these
runs afterwards; it is set up, or a set-up that a killed process left half done is completed,
under a file lock before the run uses it (:mod:`cultivar_assets.runner.instance`). A run of the
same settings as a run in progress on the same database waits for it ("waiting for the run
started at … (pid N) …"), then runs (reusing what that run left).

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

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cultivar_assets.models import load_models, select_models
from cultivar_assets.processes import Interrupted, Interruptions, interruptions
from cultivar_assets.runner.instance import dagster_home_dir, local_instance, settings_turn
from cultivar_assets.settings import Settings
from cultivar_assets.steps import plan
from cultivar_assets.steps.reuse import ConcurrentWriteError, Decision, StepBook
from cultivar_assets.store.database import Store, recording_steps, seen_generation

if TYPE_CHECKING:
    from cultivar_assets.assets.graph import Pipeline

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
    # rows of VERIFIED_READS, read with the leaderboard (what the run computed or verified)
    verified: dict[str, list[dict]] = field(default_factory=dict)


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


class _Steps:
    """Runs or reuses the steps of one pipeline run in one Dagster instance."""

    def __init__(self, settings: Settings, instance, book: StepBook,
                 say: Callable[[str], None], signals: Interruptions, assets: tuple) -> None:
        self.settings, self.instance, self.book, self.say = settings, instance, book, say
        self.signals, self.assets = signals, list(assets)
        self._resources: dict | None = None

    def _assets_and_resources(self) -> tuple[list, dict]:
        """The asset graph and the resources (made on the first step that runs)."""
        if self._resources is None:
            from cultivar_assets.resources import resources_from_settings

            self._resources = resources_from_settings(self.settings)
        return self.assets, self._resources

    def run(self, step: plan.PlannedStep, tags: Callable[[], dict[str, str]] | None = None,
            indent: str = "  ", label: str = "") -> bool:
        """Reuse ``step`` or run it; True when it was reused. A failed run raises RuntimeError."""
        decision = self.book.decide(step)
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


def run_pipeline(settings: Settings, say: Callable[[str], None] = print,
                 pipeline: Pipeline | None = None) -> PipelineResult:
    """Materialise every asset for the models selected in ``settings``, reusing the steps that
    are unchanged since their last run (module docstring); ``pipeline``: the asset graph whose
    steps are run (default: the project's, :data:`cultivar_assets.assets.graph.PIPELINE`; one
    with more assets: ``PIPELINE.with_assets(...)``)."""
    from cultivar_assets.assets.graph import PIPELINE

    pipeline = pipeline or PIPELINE

    started = time.perf_counter()
    timings: list[tuple[str, float]] = []
    reused: list[str] = []
    models = select_models(load_models(settings.models_file), settings.models)
    store = Store(settings.database_path)
    with (settings_turn(settings, say), local_instance(dagster_home_dir()) as instance,
          recording_steps(), interruptions() as signals):
        known = set(instance.get_dynamic_partitions("models"))
        new = [m.id for m in models if m.id not in known]
        if new:
            instance.add_dynamic_partitions("models", new)
        registered = sorted(known | set(new))
        runner = _Steps(settings, instance, StepBook(store), say, signals, pipeline.assets)
        specs = {model.id: model for model in models}

        def planned(key: str) -> plan.PlannedStep:
            return plan.planned_step(pipeline.steps, settings, key, registered, specs)

        def finish(name: str, since: float, all_reused: bool) -> None:
            timings.append((name, time.perf_counter() - since))
            if all_reused:
                reused.append(name)

        steps = pipeline.steps.pipeline(settings)
        for number, (node, keys) in enumerate(steps, 1):
            step = node.step
            partitions = [key.split(":", 1)[1] for key in keys] if step.partitions else []
            say(f"[{number}/{len(steps)}] {step.heading(settings, partitions)}")
            since = time.perf_counter()
            if step.partitions is None:
                finish(step.timing_name(), since, runner.run(planned(keys[0])))
            elif step.kind == "locale":
                _run_together(runner, settings, [planned(key) for key in keys], finish, since,
                              step.timing_name())
            else:  # each partition on its own (a model: with its run tags)
                for index, (key, partition) in enumerate(zip(keys, partitions, strict=True), 1):
                    tags = None
                    if step.kind == "model":
                        model = specs[partition]
                        say(f"  model {index}/{len(keys)}: {model.id} ({model.type}, "
                            f"engine {model.engine}, prompt style {model.prompt_style})")
                        tags = functools.partial(_model_tags, model)
                    else:
                        say(f"  {step.name} {index}/{len(keys)}: {partition}")
                    since = time.perf_counter()
                    finish(step.timing_name(partition), since,
                           runner.run(planned(key), tags, indent="    "))
        rows, reads = _verified_reads(store, settings.data.kind == "built")
    summary = None
    if settings.data.kind == "built":
        tools = settings.construction.annotation.tools_path()
        summary = BuildSummary(
            table1=reads[BUILT_TABLE1],
            tools={loc: str(tools / loc / "index.html")
                   for loc in settings.construction.localisation.locale_keys()},
            annotation_folder=str(settings.construction.annotation.folder_path()),
            dataset_folder=str(settings.construction.dataset.folder_path()),
            is_demo=settings.construction.source.kind == "demo")
    return PipelineResult(str(settings.database_path), [m.id for m in models], rows,
                          time.perf_counter() - started, str(settings.site.site_path()),
                          timings, summary, reused, reads)


def _run_together(runner: _Steps, settings: Settings, planned: list[plan.PlannedStep],
                  finish: Callable[[str, float, bool], None], since: float, name: str) -> None:
    """The locales' steps: the localiser's model loaded once for all of them
    (:func:`cultivar_assets.construction.localisation.localiser.shared_engines`), every locale
    tried, the problems listed at once, one timing."""
    from cultivar_assets.construction.localisation.localiser import shared_engines

    failures, outcomes = [], []
    with shared_engines():
        for step in planned:
            try:
                outcomes.append(runner.run(step, label=f"{step.partition}: "))
            except RuntimeError as error:
                failures.append(str(error))
    finish(name, since, all(outcomes) and not failures)
    if failures:
        raise RuntimeError(
            f"building {len(failures)} of {len(planned)} locale(s) failed (tool pages are in "
            f"{settings.construction.annotation.tools_path()}):\n" + "\n".join(failures))


# what a run prints besides the leaderboard (named queries), read with it (_verified_reads);
# with data of kind "built", Table 1 of the build as well
VERIFIED_READS = ("leaderboard_other_metrics", "site_models", "dataset_notes",
                  "missing_test_sets")
BUILT_TABLE1 = "built_annotation_summary"


def _verified_reads(store: Store, built: bool) -> tuple[list[dict], dict[str, list[dict]]]:
    """The leaderboard and the rows of :data:`VERIFIED_READS` (and :data:`BUILT_TABLE1` when
    ``built``), read in one connection with the file's write generation: only when no other
    process wrote since this run's last write or look (what the run computed or verified);
    otherwise :class:`ConcurrentWriteError`."""
    seen = seen_generation(store.path)
    with store.reader() as reader:
        state = reader.rows("read_write_state")
        rows = reader.rows("leaderboard")
        reads = {name: reader.rows(name)
                 for name in VERIFIED_READS + ((BUILT_TABLE1,) if built else ())}
    now = state[0]["generation"] if state else 0
    if now != seen:
        writer = state[0]["writer"] if state else "unknown"
        raise ConcurrentWriteError(
            f"another process ({writer}) wrote to the database {store.path} after this run's "
            "last step, so its leaderboard is not the one this run computed or verified and is "
            "not shown; run again (`cultivar query` shows what the database holds now)")
    return rows, reads


def _model_tags(model) -> dict[str, str]:
    from cultivar_assets.automation import run_tags

    return run_tags(model)


