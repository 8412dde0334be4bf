"""The shipped deployment configuration loads and validates against Dagster's own schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster._config import process_config, resolve_to_config_type
from dagster._core.instance.config import dagster_instance_config

import cultivar_assets
from cultivar_assets.automation import run_tags
from cultivar_assets.models import load_models, select_models

DEPLOY = Path(cultivar_assets.__file__).parent / "deploy"


def _validate(config_class, config: dict) -> None:
    result = process_config(resolve_to_config_type(config_class.config_type()), config)
    assert result.success, [error.message for error in result.errors]


def _limits(config: dict) -> dict[tuple[str, str], int]:
    limits = config["run_coordinator"]["config"]["tag_concurrency_limits"]
    return {(limit["key"], limit["value"]): limit["limit"] for limit in limits}


def test_gpu_node_instance_config_is_valid():
    from dagster._core.run_coordinator import QueuedRunCoordinator

    config, _ = dagster_instance_config(str(DEPLOY / "gpu-node"))
    _validate(QueuedRunCoordinator, config["run_coordinator"]["config"])
    assert _limits(config) == {("cultivar/gpu-run", "true"): 1}


def test_k8s_instance_config_is_valid():
    k8s = pytest.importorskip("dagster_k8s", reason="dagster-k8s is the 'k8s' extra")
    from dagster._core.run_coordinator import QueuedRunCoordinator

    config, _ = dagster_instance_config(str(DEPLOY / "k8s"))
    assert config["run_launcher"]["class"] == "K8sRunLauncher"
    _validate(k8s.K8sRunLauncher, config["run_launcher"]["config"])
    _validate(QueuedRunCoordinator, config["run_coordinator"]["config"])
    with pytest.raises(AssertionError, match="unexpected config entry"):
        _validate(k8s.K8sRunLauncher, {**config["run_launcher"]["config"], "gpus": 2})


def test_paper_runs_carry_the_tags_the_queues_limit():
    for spec in select_models(load_models(), ["suite:paper"]):
        tags = run_tags(spec)
        tensor_parallel = spec.engine_options.get("tensor_parallel_size", 1)
        assert tags["cultivar/gpu-run"] == "true"
        request = json.loads(tags["dagster-k8s/config"])["container_config"]["resources"]
        assert request["limits"]["nvidia.com/gpu"] == str(tensor_parallel)
    demo = select_models(load_models(), ["suite:demo"])
    assert all("cultivar/gpu-run" not in run_tags(spec) for spec in demo)  # CPU demo
