"""The stages of a pipeline run (``cultivar run``, ``cultivar demo``): in order, which assets
each materialises with which named job, which partitions the settings select, and the line the
runner prints when it starts one. A stage decides nothing about reuse: Dagster's stale status
does (:mod:`cultivar_assets.runner.pipeline`).

- ``selection`` (job ``build_benchmark``): the named-entity-rich selection;
- ``localisation, tools and ingest`` (``build_benchmark``, one partition per configured locale,
  when the data kind is ``built``): drafts, the post-editing tool, the returned annotation file;
- ``dataset`` (``build_dataset``, when the data kind is ``built``);
- ``test sets`` (``build_dataset``);
- ``model <id>`` (``evaluate_model``, one partition per selected model, with its run tags);
- each asset added with ``PIPELINE.with_assets`` (its job ``materialise_<asset>``), after the
  stages holding its upstream assets;
- ``results, dataset folder and charts`` (``refresh_results``), with the site's locale shards
  (``locale_shards``: the dataset's alone);
- ``site of model <id>`` (``build_model_site``, the selected models' partitions that Dagster
  reports stale or missing in one run, or one per range of consecutive partitions): each
  model's part of the site, from its rows loaded by ``model_results``;
- ``site`` (``refresh_results``): the cross-model pages, the parts assembled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cultivar_assets.settings import Settings


@dataclass(frozen=True)
class Stage:
    """One stage (module docstring). ``timing``: its name in the run's timings (``{partition}``
    replaced by the partition when each partition is timed on its own); ``partitions``: the
    partition keys the settings select (None: not partitioned); ``when``: whether an
    unpartitioned stage is in the settings' pipeline (None: always); ``kind``: ``locale``
    (partitions tried together, the problems listed at once, one timing), ``model`` (one
    timing and the model's run tags each), ``batch`` (the stale or missing partitions of its
    one asset in as few runs as their order allows, a timing each from the asset's metadata
    ``seconds``), ``other`` (each partition on its own) or None."""

    timing: str
    job: str
    assets: tuple[str, ...]
    title: Callable[[Settings, Sequence[str]], str]
    partitions: Callable[[Settings], list[str]] | None = None
    when: Callable[[Settings], bool] | None = None
    kind: str | None = None

    def keys(self, settings: Settings) -> list[str | None]:
        """The partitions of this stage in the settings' pipeline ([None]: unpartitioned; []:
        not in it)."""
        if self.partitions is not None:
            return list(self.partitions(settings))
        return [None] if self.when is None or self.when(settings) else []

    def timing_name(self, partition: str | None = None) -> str:
        return self.timing.replace("{partition}", partition or "")


def build_locales(settings: Settings) -> list[str]:
    """The locales built: the configured ones, when the data kind is ``built``."""
    return settings.construction.localisation.locale_keys() if (
        settings.data.kind == "built") else []


def selected_model_ids(settings: Settings) -> list[str]:
    """The ids of the models the settings select, in their order."""
    from cultivar_assets.models import load_models, select_models

    return [spec.id for spec in select_models(load_models(settings.models_file), settings.models)]


def _builds_data(settings: Settings) -> bool:
    return settings.data.kind == "built"


def _localiser_label(settings: Settings) -> str:
    from cultivar_assets.construction.localisation.drafts import configured_localiser

    config = settings.construction.localisation
    return f"{configured_localiser(config)}, prompt {config.prompt}"


RESULTS = "results, dataset folder and charts"

STAGES = (
    Stage("selection", "build_benchmark", ("selected_instances",),
          title=lambda s, _: ("selection of named-entity-rich instances ("
                              f"{s.construction.source.name} source benchmark, spaCy NER) -> "
                              f"{s.database_path}")),
    Stage("localisation, tools and ingest", "build_benchmark",
          ("localised_drafts", "postedit_tools", "annotations"), partitions=build_locales,
          kind="locale",
          title=lambda s, locales: (
              f"for {len(locales)} locale(s): LLM drafts ({_localiser_label(s)}), the "
              "post-editing tool, the returned annotation file "
              f"({s.construction.annotation.folder_path()})")),
    Stage("dataset", "build_dataset", ("cultivar_dataset",), when=_builds_data,
          title=lambda s, _: f"the dataset -> {s.construction.dataset.folder_path()}"),
    Stage("test sets", "build_dataset", ("test_sets",),
          title=lambda s, _: f"test sets ({s.data.kind} data) -> {s.database_path}"),
    Stage("model {partition}", "evaluate_model", ("translations", "scores"),
          partitions=selected_model_ids, kind="model",
          title=lambda s, models: f"{len(models)} model(s), one run each"),
    Stage(RESULTS, "refresh_results",
          ("model_results", "hf_dataset_folder", "hf_dataset_push", "leaderboard",
           "error_annotation_tool",
           "error_analysis", "reported_results", "charts", "locale_shards"),
          title=lambda s, _: ("the models' files loaded into the database, leaderboard, "
                              "per-locale ∆, rank agreement, reported figures, the "
                              "error analysis, charts, the site's locale shards and the "
                              "dataset folder (push: dry run unless configured)")),
    Stage("site of model {partition}", "build_model_site", ("model_site",),
          partitions=selected_model_ids, kind="batch",
          title=lambda s, models: f"each model's part of the site ({len(models)} model(s)) -> "
                                  f"{s.site.model_parts_path()}"),
    Stage("site", "refresh_results", ("site",),
          title=lambda s, _: f"the site -> {s.site.site_path()}"),
)


def extension_stage(key: str, job: str, partitions: Callable[[Settings], list[str]] | None
                    ) -> Stage:
    """The stage of an asset added with ``PIPELINE.with_assets``: its job alone."""
    return Stage(key.replace("_", " ") + (" [{partition}]" if partitions else ""), job, (key,),
                 partitions=partitions, kind="other" if partitions else None,
                 title=lambda s, _: f"{key} (job {job})")
