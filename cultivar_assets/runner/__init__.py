"""The whole pipeline in one process (``cultivar demo``, ``cultivar run``): the steps and their
inputs (:mod:`.steps`), reusing unchanged ones (:mod:`.reuse`, :mod:`.digests`) and running the
rest in a local Dagster instance (:mod:`.pipeline`)."""

from cultivar_assets.runner.instance import dagster_home_dir
from cultivar_assets.runner.pipeline import BuildSummary, PipelineResult, run_pipeline

__all__ = ["BuildSummary", "PipelineResult", "dagster_home_dir", "run_pipeline"]
