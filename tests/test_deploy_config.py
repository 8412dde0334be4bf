"""The shipped deployment configuration loads and validates against Dagster's own schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster._config import process_config, resolve_to_config_type
from dagster._core.instance.config import dagster_instance_config

import cultivar_assets
from cultivar_assets.automation import ModelRunCoordinator, run_tags
from cultivar_assets.models import load_models, select_models
from cultivar_assets.specs import ModelSpec

DEPLOY = Path(cultivar_assets.__file__).parent / "deploy"


def _validate(config_class, config: dict) -> None:
    result = process_config(resolve_to_config_type(config_class.config_type()), config)
    assert result.success, [error.message for error in result.errors]


def _limits(config: dict) -> dict[tuple[str, str], int]:
    limits = config["run_coordinator"]["config"]["tag_concurrency_limits"]
    return {(limit["key"], limit["value"]): limit["limit"] for limit in limits}


def test_gpu_node_instance_config_is_valid():
    config, _ = dagster_instance_config(str(DEPLOY / "gpu-node"))
    # the coordinator that tags every submitted run of a model, however launched
    coordinator = config["run_coordinator"]
    assert (coordinator["module"], coordinator["class"]) == ("cultivar_assets.automation",
                                                             "ModelRunCoordinator")
    _validate(ModelRunCoordinator, coordinator["config"])
    assert _limits(config) == {("cultivar/gpu-run", "true"): 1}


def test_k8s_instance_config_is_valid():
    k8s = pytest.importorskip("dagster_k8s", reason="dagster-k8s is the 'k8s' extra")
    config, _ = dagster_instance_config(str(DEPLOY / "k8s"))
    assert config["run_launcher"]["class"] == "K8sRunLauncher"
    _validate(k8s.K8sRunLauncher, config["run_launcher"]["config"])
    assert config["run_coordinator"]["class"] == "ModelRunCoordinator"
    _validate(ModelRunCoordinator, config["run_coordinator"]["config"])
    with pytest.raises(AssertionError, match=r'"gpus"'):
        _validate(k8s.K8sRunLauncher, {**config["run_launcher"]["config"], "gpus": 2})


# The paper ran two models on two A100s (tensor parallelism 2), every other one on one GPU.
TWO_GPU_MODELS = {"Llama-3.3-70B-Instruct", "Qwen3.5-122B-A10B-FP8"}


def test_paper_runs_carry_the_tags_the_queues_limit():
    paper = select_models(load_models(), ["suite:paper"])
    assert len(paper) == 32
    gpus = {}
    for spec in paper:
        tags = run_tags(spec)
        assert tags["cultivar/gpu-run"] == "true"  # the tag the gpu-node queue limits to 1 run
        request = json.loads(tags["dagster-k8s/config"])["container_config"]["resources"]
        assert request["limits"] == request["requests"]
        gpus[spec.id] = request["limits"]["nvidia.com/gpu"]
        assert tags["cultivar/gpus"] == gpus[spec.id]
    assert {m for m, n in gpus.items() if n == "2"} == TWO_GPU_MODELS
    assert {n for m, n in gpus.items() if m not in TWO_GPU_MODELS} == {"1"}


def test_cpu_demo_and_remote_models_ask_for_no_gpu():
    demo = select_models(load_models(), ["suite:demo"])
    assert demo
    for spec in demo:  # the demo's systems run on the CPU (device: cpu, or the copy baseline)
        tags = run_tags(spec)
        assert tags["cultivar/gpus"] == "0"
        assert "cultivar/gpu-run" not in tags
        # a model's run has its volumes on Kubernetes (assets/run_tags.py), and no GPU
        assert "resources" not in json.loads(tags["dagster-k8s/config"])["container_config"]
    remote = ModelSpec(id="served", hf_id="org/m", type="LLM", family="X", engine="openai",
                       prompt_style="chat-instruction")
    assert run_tags(remote)["cultivar/gpus"] == "0"  # the server has the GPUs, not this run
