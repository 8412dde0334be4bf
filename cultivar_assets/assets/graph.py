"""The asset graph and its jobs, without settings: imported by the definitions and the CLI."""

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
from cultivar_assets.assets.model_assets import scores, translations
from cultivar_assets.assets.publish_assets import hf_dataset_folder, hf_dataset_push
from cultivar_assets.assets.site_assets import charts, site

evaluate_model_job = dg.define_asset_job(
    "evaluate_model",
    selection=dg.AssetSelection.assets(translations, scores),
    description="Translate every test set with one model and score it (one partition = one model).",
)

refresh_results_job = dg.define_asset_job(
    "refresh_results",
    selection=dg.AssetSelection.assets(leaderboard, reported_results, charts, site),
    description="Recompute the cross-model tables, the charts and the site from stored scores.",
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

ASSETS = [selected_instances, localised_drafts, postedit_tools, annotations, cultivar_dataset,
          test_sets, translations, scores, leaderboard, reported_results, error_annotation_tool,
          error_analysis, charts, hf_dataset_folder, hf_dataset_push, site, run_failures]
JOBS = [evaluate_model_job, refresh_results_job, publish_job, build_benchmark_job,
        build_dataset_job, error_analysis_job]
