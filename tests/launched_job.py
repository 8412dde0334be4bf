"""A job of the project's definitions for `dagster.reconstructable`: what a run launched from the
UI executes, step by step in subprocesses that load the definitions from `$CULTIVAR_CONFIG`."""

from __future__ import annotations


def evaluate_model_job():
    from cultivar_assets.definitions import build_definitions

    return build_definitions().get_job_def("evaluate_model")
