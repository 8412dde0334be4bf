"""Running the whole pipeline in one process (``cultivar demo``, ``cultivar run``): the asset
graph materialised in a local Dagster instance, exactly what Dagster reports as stale or
missing -- the set that the UI's "Materialize changed and missing" selects.

:func:`run_pipeline` registers the selected models as ``models`` partitions, observes the
observable source assets (job ``observe_sources``), then, stage by stage
(:mod:`cultivar_assets.runner.stages`) and partition by partition, materialises the assets that
:func:`cultivar_assets.assets.staleness.stale_assets` reports with the stage's named job, asking
again until none is left; every run it starts carries ``cultivar/entry: cli``. A write by
another process during the run (``raw.write_log``) stops it with :class:`ConcurrentWriteError`
before it prints results; a signal that interrupts a Dagster run stops it with
:class:`StageInterrupted`. The instance and the turns of runs of the same settings:
:mod:`cultivar_assets.runner.instance`. What a run prints and why: docs/pipeline.md; the write
log and the turns: docs/writers-and-disk-full.md.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cultivar_assets.models import load_models, select_models
from cultivar_assets.processes import Interrupted, Interruptions, interruptions
from cultivar_assets.runner.instance import dagster_home_dir, local_instance, settings_turn
from cultivar_assets.runner.stages import STAGES, Stage, extension_stage
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store, writer_id

if TYPE_CHECKING:
    import dagster as dg

    from cultivar_assets.assets.graph import Pipeline

# an asset's metadata entry that the runner prints (kept drafts, kept flagged pairs)
NOTICE = "notice"
OBSERVE_JOB = "observe_sources"
ENTRY_TAG = {"cultivar/entry": "cli"}


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
    stages: list[tuple[str, float]] = field(default_factory=list)  # (stage, seconds)
    build: BuildSummary | None = None
    fresh: list[str] = field(default_factory=list)  # stages whose every asset Dagster found fresh
    # rows of VERIFIED_READS, read with the leaderboard (what the run computed or verified)
    verified: dict[str, list[dict]] = field(default_factory=dict)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (job, run id) of the runs started


class ConcurrentWriteError(RuntimeError):
    """Another process wrote to the database during this run (module docstring)."""


class StageInterrupted(Interrupted):
    """SIGINT or SIGTERM stopped the pipeline during a stage; ``run``: the Dagster run id and
    the status it is recorded with, when it was created."""

    def __init__(self, signum: int, stage: str, run: tuple[str, str] | None) -> None:
        super().__init__(signum)
        self.stage, self.run = stage, run

    def __str__(self) -> str:
        where = (f"; its Dagster run {self.run[0]} is recorded as {self.run[1]}" if self.run
                 else "; no Dagster run of it was recorded")
        return f"interrupted ({self.name}) during the stage {self.stage}{where}"


def _label(asset: str, partition: str | None) -> str:
    return f"{asset} [{partition}]" if partition else asset


class _Materialiser:
    """Materialises what Dagster reports stale or missing, stage by stage, in one instance."""

    def __init__(self, defs: dg.Definitions, instance: dg.DagsterInstance,
                 say: Callable[[str], None], signals: Interruptions) -> None:
        self.defs, self.instance, self.say, self.signals = defs, instance, say, signals
        self.runs: list[tuple[str, str]] = []

    def observe_sources(self) -> None:
        """Observe every observable source asset of the definitions (the jobs
        ``observe_sources*``, one per partitions definition: :func:`observe_jobs`)."""
        for job in self.defs.resolve_all_job_defs():
            if job.name == OBSERVE_JOB or job.name.startswith(f"{OBSERVE_JOB}_"):
                self._execute(job.name, None, None, {}, "observing the source assets")

    def stage(self, stage: Stage, partition: str | None, tags: dict[str, str],
              indent: str = "  ") -> bool:
        """Materialise the assets of ``stage`` (``partition``) that Dagster reports stale or
        missing, wave after wave (module docstring); True when every one was fresh. An asset
        of a wave is in a later wave again when Dagster reports it stale after a parent asset
        of the stage was materialised in a wave after its own (a settings change and a new
        upstream version in one run). A failed run raises RuntimeError."""
        from cultivar_assets.assets.staleness import stale_assets

        wave_of: dict[str, int] = {}  # asset -> the last wave that materialised it
        wave = 0
        while True:
            stale = stale_assets(self.defs, self.instance)
            pending = [asset for asset in stage.assets if (asset, partition) in stale
                       and (asset not in wave_of
                            or any(wave_of.get(parent, -1) > wave_of[asset]
                                   for parent in self._parents(asset)))]
            if not pending:
                break
            for asset in pending:
                self.say(f"{indent}{_label(asset, partition)}: "
                         f"{'; '.join(stale[(asset, partition)])}, materialising")
            result = self._execute(stage.job, pending, partition, tags,
                                   stage.timing_name(partition))
            for event in result.get_asset_materialization_events():  # what an asset asks to say
                notice = event.materialization.metadata.get(NOTICE)
                if notice is not None:
                    self.say(f"{indent}{notice.value}")
            wave_of.update(dict.fromkeys(pending, wave))
            wave += 1
        for asset in stage.assets:
            if asset not in wave_of:
                self.say(f"{indent}{_label(asset, partition)}: fresh, skipped")
        return not wave_of

    def _parents(self, asset: str) -> set[str]:
        """The keys of the assets ``asset`` reads (its parents in the definitions' graph)."""
        import dagster as dg

        node = self.defs.resolve_asset_graph().get(dg.AssetKey.from_user_string(asset))
        return {key.to_user_string() for key in node.parent_keys}

    def batch(self, stage: Stage, partitions: list[str], indent: str = "  "
              ) -> dict[str, float | None]:
        """Materialise the partitions of ``stage``'s one asset among ``partitions`` that Dagster
        reports stale or missing, all in one run where they are consecutive in the asset's
        partitions (a partition range; else one run per range of consecutive ones): partition
        -> the seconds its materialisation took as the asset measured them (its metadata
        ``seconds``), None where it was fresh. A failed run raises RuntimeError."""
        import dagster as dg
        from dagster._core.storage.tags import (
            ASSET_PARTITION_RANGE_END_TAG,
            ASSET_PARTITION_RANGE_START_TAG,
        )

        from cultivar_assets.assets.staleness import stale_assets

        (asset,) = stage.assets
        stale = stale_assets(self.defs, self.instance)
        wanted = {p for p in partitions if (asset, p) in stale}
        for partition in partitions:
            self.say(f"{indent}{_label(asset, partition)}: "
                     + (f"{'; '.join(stale[(asset, partition)])}, materialising"
                        if partition in wanted else "fresh, skipped"))
        seconds: dict[str, float | None] = dict.fromkeys(partitions)
        node = self.defs.resolve_asset_graph().get(dg.AssetKey.from_user_string(asset))
        order = node.partitions_def.get_partition_keys(dynamic_partitions_store=self.instance)
        for keys in consecutive(order, wanted):
            tags = ({ASSET_PARTITION_RANGE_START_TAG: keys[0],
                     ASSET_PARTITION_RANGE_END_TAG: keys[-1]} if len(keys) > 1 else {})
            result = self._execute(stage.job, [asset], keys[0] if len(keys) == 1 else None,
                                   tags, stage.timing_name(keys[0]))
            for event in result.get_asset_materialization_events():
                seconds[event.partition] = event.materialization.metadata["seconds"].value
        return seconds

    def _execute(self, job_name: str, assets: list[str] | None, partition: str | None,
                 tags: dict[str, str], what: str):
        import dagster as dg

        job = self.defs.resolve_job_def(job_name)
        runs_before = {r.run_id for r in self.instance.get_runs(limit=1)}
        try:
            result = job.execute_in_process(
                run_config=_console_config(), instance=self.instance, partition_key=partition,
                raise_on_error=False, tags={**ENTRY_TAG, **tags},
                asset_selection=[dg.AssetKey.from_user_string(a) for a in assets]
                if assets is not None else None)
            self.signals.check()  # a signal Dagster's handler took: stop here, not go on
        except Interrupted as stop:
            latest = self.instance.get_runs(limit=1)
            run = latest[0] if latest and latest[0].run_id not in runs_before else None
            raise StageInterrupted(stop.signum, what,
                                   (run.run_id, run.status.value) if run else None) from None
        self.runs.append((job_name, result.run_id))
        if not result.success:
            failure = next((e for e in result.all_events if e.is_step_failure), None)
            cause = failure.step_failure_data.error if failure else None
            message = cause.cause.message if cause and cause.cause else (
                cause.message if cause else "see the Dagster run log")
            selected = ", ".join(assets) if assets else "the source assets"
            raise RuntimeError(f"materialising {selected}"
                               f"{f' [{partition}]' if partition else ''} failed (job "
                               f"{job_name}, run {result.run_id}): {message.strip()}")
        return result


def definitions_for(settings: Settings, pipeline: Pipeline) -> dg.Definitions:
    """The definitions a pipeline run materialises: ``pipeline``'s assets and jobs (its
    ``evaluate_model`` tagging a partition with the settings' registry entry, not the settings
    file's), a job ``observe_sources`` when it has observable source assets, and the
    resources of ``settings``."""
    import dagster as dg

    from cultivar_assets.assets.graph import observe_jobs
    from cultivar_assets.resources import resources_from_settings

    registry = load_models(settings.models_file)
    pipeline = pipeline.with_model_tags(lambda key: _model_tags(registry.get(key)))
    return dg.Definitions(assets=list(pipeline.assets),
                          jobs=[*pipeline.jobs, *observe_jobs(pipeline.assets)],
                          resources=resources_from_settings(settings))


def stages_of(pipeline: Pipeline, instance: dg.DagsterInstance) -> list[Stage]:
    """The stages of ``pipeline``: :data:`~cultivar_assets.runner.stages.STAGES` with a stage
    for each asset that none of them holds (an added asset, with its job), placed after the
    stages holding its upstream assets."""
    from cultivar_assets.assets.graph import extension_job

    stages = list(STAGES)
    held = {asset for stage in stages for asset in stage.assets}
    for asset in pipeline.assets:
        key = asset.key.to_user_string()
        if key in held or not getattr(asset, "is_materializable", False):
            continue
        upstream = {dep.to_user_string() for dep in asset.dependency_keys}
        after = max((i for i, stage in enumerate(stages) if upstream & set(stage.assets)),
                    default=-1)
        partitions = None
        if asset.partitions_def is not None:  # every partition the instance knows
            partitions = functools.partial(_known_partitions, asset.partitions_def, instance)
        stages.insert(after + 1, extension_stage(key, extension_job(asset).name, partitions))
        held.add(key)
    return stages


def _known_partitions(partitions_def, instance, _settings: Settings) -> list[str]:
    return list(partitions_def.get_partition_keys(dynamic_partitions_store=instance))


def run_pipeline(settings: Settings, say: Callable[[str], None] = print,
                 pipeline: Pipeline | None = None) -> PipelineResult:
    """Materialise what Dagster reports stale or missing for the models selected in
    ``settings`` (module docstring); ``pipeline``: the asset graph and its jobs (default: the
    project's, :data:`cultivar_assets.assets.graph.PIPELINE`; one with more assets:
    ``PIPELINE.with_assets(...)``)."""
    from cultivar_assets.assets.graph import PIPELINE

    pipeline = pipeline or PIPELINE
    started = time.perf_counter()
    timings: list[tuple[str, float]] = []
    fresh: list[str] = []
    models = select_models(load_models(settings.models_file), settings.models)
    specs = {model.id: model for model in models}
    store = Store(settings.database_path)
    with (settings_turn(settings, say), local_instance(dagster_home_dir()) as instance,
          interruptions() as signals):
        known = set(instance.get_dynamic_partitions("models"))
        new = [m.id for m in models if m.id not in known]
        if new:
            instance.add_dynamic_partitions("models", new)
        first_look = store.generation()
        runner = _Materialiser(definitions_for(settings, pipeline), instance, say, signals)
        runner.observe_sources()

        def finish(name: str, since: float, all_fresh: bool) -> None:
            timings.append((name, time.perf_counter() - since))
            if all_fresh:
                fresh.append(name)

        planned = [(stage, keys) for stage in stages_of(pipeline, instance)
                   if (keys := stage.keys(settings))]
        for number, (stage, keys) in enumerate(planned, 1):
            title = stage.title(settings, [k for k in keys if k])
            say(f"[{number}/{len(planned)}] {title}")
            since = time.perf_counter()
            if keys == [None]:
                finish(stage.timing_name(), since, runner.stage(stage, None, {}))
            elif stage.kind == "locale":
                _run_together(runner, settings, stage, keys, finish, since)
            elif stage.kind == "batch":  # a timing per partition, as the asset measured it
                for partition, seconds in runner.batch(stage, keys, indent="    ").items():
                    timings.append((stage.timing_name(partition), seconds or 0.0))
                    if seconds is None:
                        fresh.append(stage.timing_name(partition))
            else:  # each partition on its own (a model: with its run tags)
                for index, partition in enumerate(keys, 1):
                    tags = {}
                    if stage.kind == "model":
                        model = specs[partition]
                        say(f"  model {index}/{len(keys)}: {model.id} ({model.type}, "
                            f"engine {model.engine}, prompt style {model.prompt_style})")
                        tags = _model_tags(model)
                    else:
                        say(f"  {stage.timing_name(partition)} {index}/{len(keys)}")
                    since = time.perf_counter()
                    finish(stage.timing_name(partition), since,
                           runner.stage(stage, partition, tags, indent="    "))
        rows, reads = _verified_reads(store, settings.data.kind == "built", first_look)
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
                          timings, summary, fresh, reads, runner.runs)


def consecutive(order: list[str], wanted: set[str]) -> list[list[str]]:
    """The keys of ``order`` that are in ``wanted``, as runs of keys consecutive in ``order``
    (each a partition range of one Dagster run)."""
    runs: list[list[str]] = []
    previous = False
    for key in order:
        if key in wanted:
            if not previous:
                runs.append([])
            runs[-1].append(key)
        previous = key in wanted
    return runs


def _run_together(runner: _Materialiser, settings: Settings, stage: Stage, locales: list,
                  finish: Callable[[str, float, bool], None], since: float) -> None:
    """The locales of a stage: the localiser's model loaded once for all of them
    (:func:`cultivar_assets.construction.localisation.localiser.shared_engines`), every locale
    tried, the problems listed at once, one timing."""
    from cultivar_assets.construction.localisation.localiser import shared_engines

    failures, outcomes = [], []
    with shared_engines():
        for locale in locales:
            try:
                outcomes.append(runner.stage(stage, locale, {}, indent=f"  {locale}: "))
            except RuntimeError as error:
                failures.append(str(error))
    finish(stage.timing_name(), since, all(outcomes) and not failures)
    if failures:
        raise RuntimeError(
            f"building {len(failures)} of {len(locales)} locale(s) failed (tool pages are in "
            f"{settings.construction.annotation.tools_path()}):\n" + "\n".join(failures))


# what a run prints besides the leaderboard (named queries), read with it (_verified_reads);
# with data of kind "built", Table 1 of the build as well
VERIFIED_READS = ("leaderboard_other_metrics", "site_models", "dataset_notes",
                  "missing_test_sets")
BUILT_TABLE1 = "built_annotation_summary"


def _verified_reads(store: Store, built: bool, first_look: int
                    ) -> tuple[list[dict], dict[str, list[dict]]]:
    """The leaderboard and the rows of :data:`VERIFIED_READS` (and :data:`BUILT_TABLE1` when
    ``built``), read in one connection with the writers of the writes since ``first_look`` (the
    generation before the run's first stage): only when every one of them is this process
    (what the run computed or verified); otherwise :class:`ConcurrentWriteError`."""
    me = writer_id()
    with store.reader() as reader:
        writers = [row["writer"] for row in reader.rows("writes_since", generation=first_look)]
        rows = reader.rows("leaderboard")
        reads = {name: reader.rows(name)
                 for name in VERIFIED_READS + ((BUILT_TABLE1,) if built else ())}
    others = sorted({writer for writer in writers if writer != me})
    if others:
        raise ConcurrentWriteError(
            f"another process wrote to the database {store.path} during this run (writer "
            f"{', '.join(others)}), so its leaderboard is not only what this run computed or "
            "verified and is not shown; run again (`cultivar query` shows what the database "
            "holds now)")
    return rows, reads


def _model_tags(model) -> dict[str, str]:
    from cultivar_assets.automation import run_tags

    return run_tags(model)
