"""The whole pipeline in one process (``cultivar demo``, ``cultivar run``): what Dagster reports
stale or missing, materialised stage by stage with the definitions' named jobs
(:mod:`.pipeline`, :mod:`.stages`) in a local Dagster instance (:mod:`.instance`)."""

from cultivar_assets.runner.instance import dagster_home_dir
from cultivar_assets.runner.pipeline import BuildSummary, PipelineResult, run_pipeline

__all__ = ["BuildSummary", "PipelineResult", "dagster_home_dir", "run_pipeline"]
