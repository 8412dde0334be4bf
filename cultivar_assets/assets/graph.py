"""The asset graph and its jobs, without settings: imported by the definitions and the CLI; the
one description of the pipeline.

Every asset is materialised by a named job (:data:`JOBS`): ``build_benchmark`` (the selection,
then per locale the drafts, tool page and ingest), ``build_dataset`` (the dataset, the test
sets), ``evaluate_model`` (one model's translations and scores, per partition),
``refresh_results`` (the cross-model tables, error analysis, charts, dataset folder, push and
site), ``build_model_site`` (one model's part of the site, per partition, between the two);
``publish_dataset`` and ``analyse_errors`` materialise parts of the results.

:class:`Pipeline` is the extension point: ``PIPELINE.with_assets(extra, ...)`` is the project's
graph with more assets (observable source assets among them), and a job
``materialise_<asset>`` for each added materialisable asset;
:func:`cultivar_assets.runner.pipeline.run_pipeline` and
:func:`cultivar_assets.definitions.build_definitions` take such a pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg

from cultivar_assets.assets.aggregate_assets import leaderboard, reported_results
from cultivar_assets.assets.analysis_assets import error_analysis, error_annotation_tool
from cultivar_assets.assets.conditions import run_failures
from cultivar_assets.assets.construction_assets import (
    annotations,
    cultivar_dataset,
    localised_drafts,
    postedit_tools,
    selected_instances,
)
from cultivar_assets.assets.data_assets import test_sets
from cultivar_assets.assets.model_assets import (
    model_results,
    models_partitions,
    scores,
    translations,
)
from cultivar_assets.assets.publish_assets import hf_dataset_folder, hf_dataset_push
from cultivar_assets.assets.run_tags import model_partition_tags
from cultivar_assets.assets.site_assets import charts, locale_shards, model_site, site
from cultivar_assets.assets.sources import SOURCES
from cultivar_assets.assets.versioned import versioned

# each with its code version and its deps on the source assets it reads (assets/versioned.py)
ASSETS = versioned([
    selected_instances, localised_drafts, postedit_tools, annotations, cultivar_dataset,
    test_sets, translations, scores, model_results, leaderboard, reported_results,
    error_annotation_tool, error_analysis, charts, hf_dataset_folder, hf_dataset_push,
    model_site, locale_shards, site, run_failures])

MODEL_JOB = "evaluate_model"
MODEL_ASSETS = (translations, scores)
RESULTS_ASSETS = (model_results, hf_dataset_folder, hf_dataset_push, leaderboard,
                  error_annotation_tool, error_analysis, reported_results, charts,
                  locale_shards, site)


def evaluate_model_job(tags_for_partition: Callable[[str], dict[str, str]]
                       ) -> dg.UnresolvedAssetJobDefinition:
    """The job ``evaluate_model`` whose partitions' run tags are ``tags_for_partition(model
    id)`` (the definitions': :func:`~cultivar_assets.assets.run_tags.model_partition_tags`)."""
    return dg.define_asset_job(
        MODEL_JOB,
        selection=dg.AssetSelection.assets(*MODEL_ASSETS),
        # each partition's run tags: its model's GPUs and queue tag (assets/run_tags.py)
        config=dg.PartitionedConfig(partitions_def=models_partitions,
                                    run_config_for_partition_key_fn=lambda _key: {},
                                    tags_for_partition_key_fn=tags_for_partition),
        description="Translate every test set with one model and score it (one partition = one "
                    "model).",
    )


MODEL_SITE_JOB = "build_model_site"
model_site_job = dg.define_asset_job(
    MODEL_SITE_JOB,
    selection=dg.AssetSelection.assets(model_site),
    description="Write one model's part of the site (one partition = one model) from its rows "
                "in the database, for the site to assemble.",
)

refresh_results_job = dg.define_asset_job(
    "refresh_results",
    selection=dg.AssetSelection.assets(*RESULTS_ASSETS),
    description="Recompute the cross-model tables, the error analysis, the charts, the dataset "
                "folder (and its push, where configured), the site's locale shards and the "
                "site from stored scores.",
)

publish_job = dg.define_asset_job(
    "publish_dataset",
    selection=dg.AssetSelection.assets(hf_dataset_folder, hf_dataset_push),
    description="Build the Hugging Face dataset folder and push it (a dry run without a token).",
)

build_benchmark_job = dg.define_asset_job(
    "build_benchmark",
    selection=dg.AssetSelection.assets(selected_instances, localised_drafts, postedit_tools,
                                       annotations),
    description="Build Cultivar from the source benchmark: the named-entity-rich selection, then "
                "for one locale (one partition = one locale) the LLM drafts, the post-editing "
                "tool and the ingest of its returned annotation file.",
)

build_dataset_job = dg.define_asset_job(
    "build_dataset",
    selection=dg.AssetSelection.assets(cultivar_dataset, test_sets),
    description="The Cultivar dataset from the ingested annotations of every configured locale, "
                "then the test sets (evaluated when the data kind is built).",
)

error_analysis_job = dg.define_asset_job(
    "analyse_errors",  # not "error_analysis": a job may not share its name with an asset's op
    selection=dg.AssetSelection.assets(error_annotation_tool, error_analysis),
    description="The error analysis (paper §5): build the annotation pages of the sample, then "
                "Table 5 from the returned files.",
)

JOBS = [evaluate_model_job(model_partition_tags), model_site_job, refresh_results_job,
        publish_job, build_benchmark_job, build_dataset_job, error_analysis_job]


def extension_job(asset: dg.AssetsDefinition) -> dg.UnresolvedAssetJobDefinition:
    """The job ``materialise_<asset>`` that materialises an added asset."""
    name = asset.key.to_python_identifier()
    return dg.define_asset_job(f"materialise_{name}", selection=dg.AssetSelection.assets(asset),
                               partitions_def=asset.partitions_def,
                               description=f"Materialise {asset.key.to_user_string()} (an asset "
                                           "added to the project's graph).")


def observe_jobs(assets) -> list:
    """The jobs that observe the observable source assets among ``assets``: one job per
    partitions definition (Dagster runs one partitions definition per job; a partitioned
    source's observation returns every partition's data version at once): ``observe_sources``
    (unpartitioned), ``observe_sources_<partitions>`` (a dynamic partitions definition's name:
    ``observe_sources_models``; otherwise the group's asset keys: ``observe_sources_annotation_
    files``)."""
    groups: dict[object, list] = {}
    for asset in assets:
        if asset.is_observable and not getattr(asset, "is_materializable", False):
            keys = asset.keys if hasattr(asset, "keys") else [asset.key]
            groups.setdefault(asset.partitions_def, []).extend(keys)
    jobs = []
    for partitions, keys in groups.items():
        name = getattr(partitions, "name", None) or "_".join(
            sorted(key.to_python_identifier() for key in keys))
        suffix = "" if partitions is None else f"_{name}"
        jobs.append(dg.define_asset_job(
            f"observe_sources{suffix}", selection=dg.AssetSelection.assets(
                *sorted(keys, key=lambda key: key.to_user_string()))))
    return jobs


@dataclass(frozen=True)
class Pipeline:
    """An asset graph with its jobs (module docstring)."""

    assets: tuple[dg.AssetsDefinition | dg.SourceAsset, ...]
    jobs: tuple = ()

    def with_assets(self, *assets: dg.AssetsDefinition) -> Pipeline:
        """This pipeline with ``assets`` added, each with its computed code version
        (:func:`~cultivar_assets.assets.versioned.versioned`) and each materialisable one with a
        job of its own (:func:`extension_job`; an observable source asset is observed by the
        runner's job ``observe_sources``)."""
        added = versioned(assets, {})
        return Pipeline((*self.assets, *added), (*self.jobs, *(
            extension_job(asset) for asset in added
            if isinstance(asset, dg.AssetsDefinition) and asset.is_materializable)))

    def with_model_tags(self, tags_for_partition: Callable[[str], dict[str, str]]) -> Pipeline:
        """This pipeline whose ``evaluate_model`` tags a partition with
        ``tags_for_partition(model id)`` (a run's own registry, not the settings file's)."""
        return Pipeline(self.assets, tuple(
            evaluate_model_job(tags_for_partition) if job.name == MODEL_JOB else job
            for job in self.jobs))


# the assets with the observable source assets they read (assets/sources.py)
PIPELINE = Pipeline((*ASSETS, *SOURCES), tuple(JOBS))
