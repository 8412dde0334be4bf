"""The run tags of a model's run, the one definition for every way a model's run is launched.

``run_tags(spec)``: ``cultivar/model``, ``cultivar/gpus`` (:func:`gpus_for`) and, for a run that
needs GPUs, ``cultivar/gpu-run`` (the tag of the GPU queue in ``cultivar_assets/deploy``) and
``dagster-k8s/config`` (that many ``nvidia.com/gpu`` as the Kubernetes Job's limit and request).

The job ``evaluate_model`` derives them per partition (:func:`model_partition_tags`, its
``PartitionedConfig``): Dagster asks the code location for a partition's tags when a run of the
job is launched from the UI (one partition or a backfill of the job), when a sensor or schedule
requests a partition, and in ``dagster job execute`` / ``dg launch --job``. Runs that Dagster
tags without asking the code location (the assets' own partitions, an asset backfill) get them
from ``automation.ModelRunCoordinator`` when they are submitted; ``cultivar run`` puts them on the
runs it starts.
"""

from __future__ import annotations

import json

from cultivar_assets.engines import engine_registry
from cultivar_assets.models import load_models
from cultivar_assets.settings import load_settings
from cultivar_assets.specs import ModelSpec

GPU_RUN_TAG = "cultivar/gpu-run"
K8S_CONFIG_TAG = "dagster-k8s/config"


def gpus_for(spec: ModelSpec) -> int:
    """GPUs a model's run needs: its tensor-parallel size (default 1) when its engine uses GPUs
    (``Engine.uses_gpu``) and its ``device`` option is not ``cpu``; 0 otherwise."""
    engine = engine_registry().get(spec.engine)
    if not engine.uses_gpu or spec.engine_options.get("device") == "cpu":
        return 0
    return int(spec.engine_options.get("tensor_parallel_size", 1))


def run_tags(spec: ModelSpec) -> dict[str, str]:
    """The run tags of ``spec``'s run (module docstring)."""
    gpus = gpus_for(spec)
    tags = {"cultivar/model": spec.id, "cultivar/gpus": str(gpus)}
    if gpus:
        tags[GPU_RUN_TAG] = "true"  # the run queues in cultivar_assets/deploy limit these
        limits = {"nvidia.com/gpu": str(gpus)}
        tags[K8S_CONFIG_TAG] = json.dumps(
            {"container_config": {"resources": {"limits": limits, "requests": limits}}}
        )
    return tags


def model_partition_tags(partition_key: str) -> dict[str, str]:
    """The run tags of the partition ``partition_key`` of the models' partitions: :func:`run_tags`
    of the model of that id in the registry of the settings (:func:`load_settings`,
    ``models_file``); an id not in that registry is refused (``UnknownEntryError``)."""
    return run_tags(load_models(load_settings().models_file).get(partition_key))
