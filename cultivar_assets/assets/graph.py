"""The asset graph and its jobs, without settings: imported by the definitions and the CLI; the
one description of the pipeline. Its steps (:data:`STEP_GRAPH`) are derived from it
(:mod:`cultivar_assets.assets.step_graph`); jobs that run whole steps select them by step.

:class:`Pipeline` is the extension point: ``PIPELINE.with_assets(extra, ...)`` is the project's
graph with more assets, each declaring its step (``@step_inputs(StepInputs(Step("name"), ...))``
above ``@dg.asset``); :func:`cultivar_assets.runner.pipeline.run_pipeline` and
:func:`cultivar_assets.definitions.build_definitions` take such a pipeline, and a step of new
assets is planned, run, reused and recorded as the project's own are.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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
from cultivar_assets.assets.model_assets import models_partitions, scores, translations
from cultivar_assets.assets.publish_assets import hf_dataset_folder, hf_dataset_push
from cultivar_assets.assets.run_tags import model_partition_tags
from cultivar_assets.assets.site_assets import charts, site
from cultivar_assets.assets.step_graph import step_graph
from cultivar_assets.assets.versioned import versioned
from cultivar_assets.steps.declarations import Step
from cultivar_assets.steps.inputs import BUILD, DATASET, MODEL, RESULTS, SELECTION, TEST_SETS
from cultivar_assets.steps.plan import StepGraph

# each with its code version and its deps on the source assets it reads (assets/versioned.py)
ASSETS = versioned([
    selected_instances, localised_drafts, postedit_tools, annotations, cultivar_dataset,
    test_sets, translations, scores, leaderboard, reported_results, error_annotation_tool,
    error_analysis, charts, hf_dataset_folder, hf_dataset_push, site, run_failures])
STEP_GRAPH = step_graph(ASSETS)


def steps_selection(*steps: Step) -> dg.AssetSelection:
    """The assets of ``steps`` (of the project's graph)."""
    return dg.AssetSelection.assets(*(asset for step in steps
                                      for asset in STEP_GRAPH.node(step.name).assets))


evaluate_model_job = dg.define_asset_job(
    "evaluate_model",
    selection=steps_selection(MODEL),
    # each partition's run tags: its model's GPUs and queue tag (assets/run_tags.py)
    config=dg.PartitionedConfig(partitions_def=models_partitions,
                                run_config_for_partition_key_fn=lambda _key: {},
                                tags_for_partition_key_fn=model_partition_tags),
    description="Translate every test set with one model and score it (one partition = one model).",
)

refresh_results_job = dg.define_asset_job(
    "refresh_results",
    selection=steps_selection(RESULTS),
    description="Recompute the cross-model tables, the error analysis, the charts, the dataset "
                "folder (and its push, where configured) and the site from stored scores: the "
                "whole results step, so the run records it and `cultivar run` reuses it.",
)

publish_job = dg.define_asset_job(
    "publish_dataset",
    selection=dg.AssetSelection.assets(hf_dataset_folder, hf_dataset_push),
    description="Build the Hugging Face dataset folder and push it (a dry run without a token).",
)

build_benchmark_job = dg.define_asset_job(
    "build_benchmark",
    selection=steps_selection(SELECTION, BUILD),
    description="Build Cultivar from the source benchmark: the named-entity-rich selection, then "
                "for one locale (one partition = one locale) the LLM drafts, the post-editing "
                "tool and the ingest of its returned annotation file.",
)

build_dataset_job = dg.define_asset_job(
    "build_dataset",
    selection=steps_selection(DATASET, TEST_SETS),
    description="The Cultivar dataset from the ingested annotations of every configured locale, "
                "then the test sets (evaluated when the data kind is built).",
)

error_analysis_job = dg.define_asset_job(
    "analyse_errors",  # not "error_analysis": a job may not share its name with an asset's op
    selection=dg.AssetSelection.assets(error_annotation_tool, error_analysis),
    description="The error analysis (paper §5): build the annotation pages of the sample, then "
                "Table 5 from the returned files.",
)

JOBS = [evaluate_model_job, refresh_results_job, publish_job, build_benchmark_job,
        build_dataset_job, error_analysis_job]


@dataclass(frozen=True)
class Pipeline:
    """An asset graph with its jobs, and the steps derived from it (module docstring)."""

    assets: tuple[dg.AssetsDefinition, ...]
    jobs: tuple = ()

    @cached_property
    def steps(self) -> StepGraph:
        return step_graph(self.assets)

    def with_assets(self, *assets: dg.AssetsDefinition) -> Pipeline:
        """This pipeline with ``assets`` added (each declaring its step), each with its computed
        code version (:func:`~cultivar_assets.assets.versioned.versioned`)."""
        return Pipeline((*self.assets, *versioned(assets, {})), self.jobs)


PIPELINE = Pipeline(tuple(ASSETS), tuple(JOBS))
