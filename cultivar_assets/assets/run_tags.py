"""The run tags of a model's run, the one definition for every way a model's run is launched.

``run_tags(spec)``: ``cultivar/model``, ``cultivar/gpus`` (:func:`gpus_for`),
``dagster-k8s/config`` (:func:`k8s_config`: the volumes of a model's run on Kubernetes and, for a
run that needs GPUs, that many ``nvidia.com/gpu`` as the Kubernetes Job's limit and request) and,
for a run that needs GPUs, ``cultivar/gpu-run`` (the tag of the GPU queue in
``cultivar_assets/deploy``).

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
from functools import cache
from pathlib import Path
from typing import Any

from cultivar_assets.config_files import read_yaml_file
from cultivar_assets.engines import engine_registry
from cultivar_assets.models import load_models
from cultivar_assets.settings import load_settings
from cultivar_assets.specs import ModelSpec

GPU_RUN_TAG = "cultivar/gpu-run"
K8S_CONFIG_TAG = "dagster-k8s/config"
# the volumes of a model's run on Kubernetes (dagster-k8s's snake_case keys)
MODEL_RUN_VOLUMES = Path(__file__).parent.parent / "deploy" / "k8s" / "model-run.yaml"


class ModelRunVolumesError(ValueError):
    """``model-run.yaml`` does not give a model's run its volumes (:func:`model_run_volumes`)."""


@cache
def model_run_volumes(path: Path = MODEL_RUN_VOLUMES) -> dict[str, list[dict[str, Any]]]:
    """The volumes of a model's run on Kubernetes: ``{"volume_mounts": [...], "volumes": [...]}``
    as ``path`` (``deploy/k8s/model-run.yaml``) lists them. A file without both lists, an entry
    without a name, two entries of one name, or a mount of a volume the file does not list
    raises :class:`ModelRunVolumesError` naming the file and the entry."""
    data = read_yaml_file(path, "model-run volumes file", allow_empty=False)
    if not isinstance(data, dict) or set(data) != {"volume_mounts", "volumes"}:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ModelRunVolumesError(f"{path}: holds {keys}, not the two lists volume_mounts "
                                   "and volumes")
    names: dict[str, list[str]] = {}
    for key in ("volume_mounts", "volumes"):
        entries = data[key]
        if not isinstance(entries, list) or not all(
                isinstance(entry, dict) and isinstance(entry.get("name"), str)
                for entry in entries):
            raise ModelRunVolumesError(f"{path}: {key} is not a list of entries with a name")
        names[key] = [entry["name"] for entry in entries]
        repeated = sorted({name for name in names[key] if names[key].count(name) > 1})
        if repeated:
            raise ModelRunVolumesError(f"{path}: {key} names {repeated} more than once")
    unknown = [name for name in names["volume_mounts"] if name not in names["volumes"]]
    if unknown:
        raise ModelRunVolumesError(f"{path}: volume_mounts mount {unknown}, which volumes does "
                                   "not list")
    return data


def k8s_config(gpus: int) -> dict[str, Any]:
    """The ``dagster-k8s/config`` of a model's run that needs ``gpus`` GPUs: the container's
    mounts and the pod's volumes of :func:`model_run_volumes`, with ``merge_behavior: SHALLOW``
    (dagster-k8s then replaces the run launcher's lists of volumes and mounts with these instead
    of adding to them), and for ``gpus > 0`` that many ``nvidia.com/gpu`` as limit and request."""
    volumes = model_run_volumes()
    container: dict[str, Any] = {"volume_mounts": volumes["volume_mounts"]}
    if gpus:
        limits = {"nvidia.com/gpu": str(gpus)}
        container["resources"] = {"limits": limits, "requests": limits}
    return {"merge_behavior": "SHALLOW", "container_config": container,
            "pod_spec_config": {"volumes": volumes["volumes"]}}


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
    tags = {"cultivar/model": spec.id, "cultivar/gpus": str(gpus),
            K8S_CONFIG_TAG: json.dumps(k8s_config(gpus))}
    if gpus:
        tags[GPU_RUN_TAG] = "true"  # the run queues in cultivar_assets/deploy limit these
    return tags


def model_partition_tags(partition_key: str) -> dict[str, str]:
    """The run tags of the partition ``partition_key`` of the models' partitions: :func:`run_tags`
    of the model of that id in the registry of the settings (:func:`load_settings`,
    ``models_file``); an id not in that registry is refused (``UnknownEntryError``)."""
    return run_tags(load_models(load_settings().models_file).get(partition_key))
