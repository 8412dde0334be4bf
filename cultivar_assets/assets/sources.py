"""What the assets read besides their upstream assets, as Dagster observable source assets (group
``sources``): observing one records a data version per partition, the digest of what it stands
for now (:mod:`cultivar_assets.versions.inputs`); an asset that depends on it is stale in
Dagster's eyes once that version differs from the one its last materialisation read.

The sources: ``settings/<section>``, one per settings section an asset reads
(:data:`~cultivar_assets.versions.inputs.SETTINGS_SECTIONS`); ``model_entries`` and
``model_files`` (partitioned by model); ``annotation_files`` (partitioned by locale);
``localiser_files``, ``source_benchmark_files``, ``selection_files``, ``data_files``,
``spm_model``, ``error_annotation_files``, ``model_registry`` and ``query_page_engine``. What
each stands for and which assets read it: docs/pipeline.md ("Code and data versions").
:data:`SOURCE_DEPS` says which asset reads which; :func:`cultivar_assets.assets.versioned.
versioned` adds them to the assets' deps. Every source reads the settings from the resources
(:func:`~cultivar_assets.resources.settings_from_resources`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import dagster as dg

from cultivar_assets.assets.construction_assets import locale_partitions
from cultivar_assets.assets.model_assets import models_partitions
from cultivar_assets.resources import RESOURCE_KEYS, settings_from_resources
from cultivar_assets.settings import Settings
from cultivar_assets.versions import inputs

GROUP = "sources"
# observable source assets are "beta" in Dagster 1.13; the warning says nothing to our users
warnings.filterwarnings("ignore", message=".*observable_source_asset.*", category=dg.BetaWarning)
warnings.filterwarnings("ignore", message=".*DataVersionsByPartition.*", category=dg.BetaWarning)


def _settings(context) -> Settings:
    return settings_from_resources({key: getattr(context.resources, key)
                                    for key in RESOURCE_KEYS})


def section_key(section: str) -> dg.AssetKey:
    """The key of a settings section's source asset (``settings/construction_localisation``)."""
    return dg.AssetKey(["settings", section.replace(".", "_")])


def _section_source(section: str) -> dg.SourceAsset:
    @dg.observable_source_asset(key=section_key(section), group_name=GROUP,
                                required_resource_keys=set(RESOURCE_KEYS),
                                description=f"The settings section `{section}` (cache folders "
                                            "left out).")
    def observe(context) -> dg.DataVersion:
        return dg.DataVersion(inputs.section_digest(_settings(context), section))

    return observe


def _file_source(name: str, digest: Callable[[Settings], str], description: str
                 ) -> dg.SourceAsset:
    @dg.observable_source_asset(name=name, group_name=GROUP,
                                required_resource_keys=set(RESOURCE_KEYS),
                                description=description)
    def observe(context) -> dg.DataVersion:
        return dg.DataVersion(digest(_settings(context)))

    return observe


@dg.observable_source_asset(group_name=GROUP, partitions_def=models_partitions,
                            required_resource_keys=set(RESOURCE_KEYS))
def model_entries(context) -> dg.DataVersionsByPartition:
    """Each registered model's registry entry (cache folders left out)."""
    settings = _settings(context)
    return dg.DataVersionsByPartition({
        model_id: inputs.entry_digest(spec)
        for model_id, spec in _registered_specs(context, settings).items()})


@dg.observable_source_asset(group_name=GROUP, partitions_def=models_partitions,
                            required_resource_keys=set(RESOURCE_KEYS))
def model_files(context) -> dg.DataVersionsByPartition:
    """What each registered model's engine reads from disk besides caches: recorded answers,
    a local weights folder (listed), submitted outputs."""
    settings = _settings(context)
    return dg.DataVersionsByPartition({
        model_id: inputs.model_files_digest(spec)
        for model_id, spec in _registered_specs(context, settings).items()})


def _registered_specs(context, settings: Settings) -> dict:
    """The registry entries of the models registered as partitions (a registered model that
    the registry no longer has gets none: its runs fail on the entry, loudly)."""
    from cultivar_assets.models import load_models

    registry = load_models(settings.models_file)
    registered = context.instance.get_dynamic_partitions(models_partitions.name)
    return {model_id: registry.get(model_id) for model_id in registered if model_id in registry}


@dg.observable_source_asset(group_name=GROUP, partitions_def=locale_partitions,
                            required_resource_keys=set(RESOURCE_KEYS))
def annotation_files(context) -> dg.DataVersionsByPartition:
    """Each locale's own returned annotation files in the annotation folder (by name and
    content; ``none`` when it has none yet)."""
    settings = _settings(context)
    return dg.DataVersionsByPartition({
        locale: inputs.annotation_files_digest(settings, locale)
        for locale in locale_partitions.get_partition_keys()})


FILE_SOURCES = [
    _file_source("localiser_files", inputs.localiser_files_digest,
                 "The localisation prompts file and the localiser's recorded answers or local "
                 "weights folder (listed)."),
    _file_source("source_benchmark_files", inputs.source_benchmark_digest,
                 "The source benchmark's files (none for the bundled demo source)."),
    _file_source("selection_files", inputs.selection_files_digest,
                 "The selection's corrections file and selection file."),
    _file_source("data_files", inputs.data_files_digest,
                 "The local FLORES release and local Cultivar data, where the settings read "
                 "them."),
    _file_source("spm_model", inputs.spm_model_digest,
                 "The flores200 SentencePiece model, when the BLEU tokenizer needs it."),
    _file_source("error_annotation_files", inputs.error_annotation_files_digest,
                 "The returned error-annotation files (*.errors.json)."),
    _file_source("model_registry", inputs.registry_file_digest, "The model registry file."),
    _file_source("query_page_engine", inputs.query_page_digest,
                 "Whether the site gets its Query page (DuckDB-Wasm cached, or npm to fetch "
                 "it)."),
]

SOURCES = [*(_section_source(section) for section in inputs.SETTINGS_SECTIONS),
           model_entries, model_files, annotation_files, *FILE_SOURCES]


def _s(section: str) -> str:
    return section_key(section).to_user_string()


# which asset reads which source (by key, as user strings)
SOURCE_DEPS: dict[str, tuple[str, ...]] = {
    "selected_instances": (_s("construction.source"), _s("construction.selection"),
                           "source_benchmark_files", "selection_files"),
    "localised_drafts": (_s("construction.localisation"), "localiser_files"),
    "postedit_tools": (_s("construction.annotation"),),
    "annotations": (_s("construction.annotation"), "annotation_files"),
    "cultivar_dataset": (_s("construction.localisation"), _s("construction.dataset")),
    "test_sets": (_s("data"), _s("storage"), "data_files"),
    "translations": (_s("engine"), _s("storage"), "model_entries", "model_files"),
    "scores": (_s("metrics"), _s("storage"), "spm_model"),
    "model_results": (_s("storage"),),
    "leaderboard": (_s("metrics"),),
    "reported_results": (_s("engine"), _s("metrics"), "model_registry"),
    "error_annotation_tool": (_s("error_analysis"),),
    "error_analysis": (_s("error_analysis"), "error_annotation_files"),
    "charts": (_s("site"),),
    "model_site": (_s("site"), _s("storage")),
    "locale_shards": (_s("site"),),
    "site": (_s("site"), _s("publish"), "query_page_engine"),
    "hf_dataset_folder": (_s("publish"), _s("metrics"), _s("engine")),
    "hf_dataset_push": (_s("publish"),),
}
