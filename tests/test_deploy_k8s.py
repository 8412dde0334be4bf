"""The Kubernetes deployment (cultivar_assets/deploy/k8s), as far as a machine without a cluster
can check it: the Helm values against the chart's schema and Dagster's config schemas, the
Kubernetes Jobs that dagster-k8s's own K8sRunLauncher makes of a model's run, and the objects the
project ships, validated against the Kubernetes schemas (kubernetes-validate, offline), with no
secret in plain text anywhere. No Helm, Docker or cluster runs here: docs/kubernetes.md says what
that leaves unchecked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import dagster as dg
import dockerfile
import helm_chart
import kubernetes
import kubernetes_validate
import pytest
import yaml
from dagster._config import process_config, resolve_to_config_type
from dagster._core.code_pointer import ModuleCodePointer
from dagster._core.instance.config import dagster_instance_config
from dagster._core.launcher import LaunchRunContext
from dagster._core.origin import JobPythonOrigin, RepositoryPythonOrigin
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.test_utils import create_run_for_test
from dagster_k8s import K8sRunLauncher
from dagster_k8s.models import k8s_model_from_dict, k8s_snake_case_dict

import cultivar_assets
from cultivar_assets.automation import run_request
from cultivar_assets.models import load_models
from cultivar_assets.secrets import SECRET_NAME, looks_like_secret, misplaced_secrets

pytestmark = pytest.mark.dagster_instances

K8S = Path(cultivar_assets.__file__).parent / "deploy" / "k8s"
REPO = Path(cultivar_assets.__file__).parent.parent
KUBERNETES_VERSION = "1.33.0"  # ours: the Kubernetes release the manifests are checked against
RELEASE = NAMESPACE = "cultivar"  # docs/kubernetes.md: helm install cultivar … -n cultivar
SECRETS = {"hf-token", "cultivar-api-keys"}  # the Secrets created with kubectl (docs)
# Values the test puts in the environment of the process that launches the runs (as the daemon
# would hold them, were they set there): none may reach a Job.
FAKE = {"HF_TOKEN": "hf_" + "Zq7Xk2Lm9Pw4Rt8Yv3Bn6Cd1",
        "OPENAI_API_KEY": "sk-" + "a9B8c7D6e5F4g3H2i1J0kLmN"}


def _validate_config(config_class, config: dict) -> None:
    result = process_config(resolve_to_config_type(config_class.config_type()), config)
    assert result.success, [error.message for error in result.errors]


def _validate_k8s(manifest: dict) -> None:
    """Strict validation (no unknown field) against the pinned Kubernetes version's schema."""
    kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def plaintext_secrets(tree: Any, path: str = "") -> list[str]:
    """Where ``tree`` (a manifest, values, a config) holds a secret in plain text: an
    environment variable whose name is a secret's (``*_TOKEN``, ``*_KEY``, …) with a literal
    ``value`` (not ``valueFrom`` a Secret), a key naming a password or token with a value (the
    project's :func:`misplaced_secrets`, camelCase keys included), or any string that looks like
    a key or token (:func:`looks_like_secret`) or is one of :data:`FAKE`."""
    problems: list[str] = []
    if isinstance(tree, dict):
        name = tree.get("name")
        if isinstance(name, str) and SECRET_NAME.search(name) and tree.get("value"):
            problems.append(f"{path}: {name} has a literal value")
        for key, value in tree.items():
            here = f"{path}.{key}" if path else str(key)
            snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower()
            if isinstance(value, str) and value and misplaced_secrets({snake: value}):
                problems.append(f"{here}: a secret's key with a value")
            problems.extend(plaintext_secrets(value, here))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            problems.extend(plaintext_secrets(value, f"{path}[{index}]"))
    elif isinstance(tree, str) and (looks_like_secret(tree)
                                    or any(secret in tree for secret in FAKE.values())):
        problems.append(f"{path}: looks like a key or token")
    return problems


@pytest.fixture(scope="module")
def values() -> dict[str, Any]:
    return helm_chart.load_values(K8S / "values.yaml")


@pytest.fixture(scope="module")
def deployment(values) -> dict[str, Any]:
    deployments = values["dagster-user-deployments"]["deployments"]
    assert [d["name"] for d in deployments] == ["cultivar"]
    return deployments[0]


# --- the Helm values --------------------------------------------------------------------------

def test_values_use_the_charts_keys(values, deployment):
    keys = helm_chart.CHART_KEYS

    def within(section: str, mapping: dict) -> None:
        assert set(mapping) <= keys[section], (section, set(mapping) - keys[section])

    within("top", values)
    within("global", values["global"])
    within("serviceAccount", values["serviceAccount"])
    within("postgresql", values["postgresql"])
    within("dagster-user-deployments", values["dagster-user-deployments"])
    within("deployment", deployment)
    within("image", deployment["image"])
    assert deployment["image"]["pullPolicy"] in helm_chart.PULL_POLICIES
    within("runLauncher", values["runLauncher"])
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    within("k8sRunLauncher", launcher)
    assert launcher["imagePullPolicy"] in helm_chart.PULL_POLICIES
    within("runK8sConfig", launcher["runK8sConfig"])
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    within("runCoordinator", coordinator)
    within("queuedRunCoordinator", coordinator["config"]["queuedRunCoordinator"])
    for limit in coordinator["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"]:
        within("tagConcurrencyLimit", limit)
    within("telemetry", values["telemetry"])
    with pytest.raises(AssertionError):  # a misspelt key is caught
        within("k8sRunLauncher", {**launcher, "envSecret": []})


def test_values_hold_no_secret(values):
    assert plaintext_secrets(values) == []
    assert values["generatePostgresqlPasswordSecret"] is False  # the chart would make it
    assert "postgresqlPassword" not in values["postgresql"]     # from a value of this file
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    assert {secret["name"] for secret in launcher["envSecrets"]} == SECRETS
    assert "envVars" not in launcher  # copied from the daemon's environment into each Job
    for deployment in values["dagster-user-deployments"]["deployments"]:
        assert "env" not in deployment  # a map becomes a ConfigMap, in plain text
    # the check is not blind: a password, a token in an env list, a key in a ConfigMap
    assert plaintext_secrets({"postgresql": {"postgresqlPassword": "hunter2-but-longer"}})
    assert plaintext_secrets({"env": [{"name": "HF_TOKEN", "value": "x"}]})
    assert plaintext_secrets({"data": {"OPENAI_API_KEY": FAKE["OPENAI_API_KEY"]}})
    assert not plaintext_secrets({"env": [{"name": "HF_TOKEN", "valueFrom": {
        "secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}]})


def test_chart_instance_config_is_valid_and_matches_dagster_yaml(values):
    launcher = helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)
    coordinator = helm_chart.run_coordinator_config(values)
    _validate_config(K8sRunLauncher, launcher["config"])
    _validate_config(QueuedRunCoordinator, coordinator["config"])
    assert coordinator["config"]["tag_concurrency_limits"] == [
        {"key": "cultivar/gpu-run", "value": "true", "limit": 16}]

    # deploy/k8s/dagster.yaml (for an instance set up without the chart) says the same
    shipped, _ = dagster_instance_config(str(K8S))
    assert shipped["run_coordinator"]["config"] == coordinator["config"]
    ours, chart = shipped["run_launcher"]["config"], launcher["config"]
    for key in ("job_namespace", "service_account_name", "instance_config_map",
                "image_pull_policy", "env_config_maps", "env_secrets"):
        assert ours[key] == chart[key], key
    for key, model in (("volumes", kubernetes.client.V1Volume),
                       ("volume_mounts", kubernetes.client.V1VolumeMount)):
        def models(items, model=model):
            return [k8s_model_from_dict(model, k8s_snake_case_dict(model, item))
                    for item in items]

        assert models(ours[key]) == models(chart[key]), key
    assert (ours["run_k8s_config"]["pod_spec_config"]["tolerations"]
            == chart["run_k8s_config"]["pod_spec_config"]["tolerations"])
    assert plaintext_secrets(shipped) == []


def test_user_deployment_and_objects_validate(values, deployment):
    """The pod of the code server, as the chart's deployment-user.yaml lays out what our values
    give it, and every object of objects.yaml, against the Kubernetes schemas."""
    objects = list(yaml.safe_load_all((K8S / "objects.yaml").read_text(encoding="utf-8")))
    assert {(o["kind"], o["metadata"]["name"]) for o in objects} == {
        ("ConfigMap", "cultivar-env"), ("PersistentVolumeClaim", "cultivar-home")}
    for manifest in objects:
        _validate_k8s(manifest)
    assert plaintext_secrets(objects) == []
    env = next(o for o in objects if o["kind"] == "ConfigMap")["data"]
    mounts = {m["name"]: m["mountPath"] for m in deployment["volumeMounts"]}
    assert env["CULTIVAR_HOME"] == mounts["cultivar-home"]
    assert Path(env["CULTIVAR_CONFIG"]).parent == Path(mounts["cultivar-settings"])
    assert env["HF_HOME"].startswith(env["CULTIVAR_HOME"] + "/")

    container = {
        "name": "dagster",
        "image": helm_chart.user_deployment_image(deployment),
        "imagePullPolicy": deployment["image"]["pullPolicy"],
        "args": ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", str(deployment["port"]),
                 *deployment["dagsterApiGrpcArgs"]],
        "envFrom": [{"configMapRef": ref} for ref in deployment["envConfigMaps"]]
                   + [{"secretRef": ref} for ref in deployment.get("envSecrets", [])],
        "volumeMounts": deployment["volumeMounts"],
    }
    pod = {"serviceAccountName": helm_chart.service_account_name(values, RELEASE),
           "containers": [container], "volumes": deployment["volumes"]}
    _validate_k8s({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": f"cultivar-dagster-{deployment['name']}"},
                   "spec": {"selector": {"matchLabels": {"deployment": deployment["name"]}},
                            "template": {"metadata": {"labels": {
                                "deployment": deployment["name"]}}, "spec": pod}}})
    with pytest.raises(kubernetes_validate.ValidationError):  # the validation is strict
        _validate_k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                       "data": {"A": "b"}, "dta": {}})


# --- the Jobs of a model's run ----------------------------------------------------------------

class RecordingBatchApi:
    """Stands in for Kubernetes' BatchV1Api: keeps the Jobs it is asked to create."""

    def __init__(self) -> None:
        self.jobs: list[tuple[str, Any]] = []

    def create_namespaced_job(self, body, namespace, **_kwargs):
        self.jobs.append((namespace, body))


def _kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig naming a server that is never contacted (the batch API is replaced)."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "test", "user": {}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    return path


def launched_job(values: dict, deployment: dict, model_id: str, tmp_path: Path,
                 **launcher_overrides: Any) -> tuple[dict, dict[str, str]]:
    """The Job (as sent to the API server) and the run tags of ``model_id``'s run, launched by
    dagster-k8s's K8sRunLauncher configured as the chart configures it from our values, for a
    run whose tags are those the registry sensor puts on it and whose code location is the
    chart's user deployment (its image and container context)."""
    spec = load_models().get(model_id)
    tags = dict(run_request(spec, "0" * 64, "new in registry").tags)
    config = dict(helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)["config"])
    config.update(load_incluster_config=False, kubeconfig_file=str(_kubeconfig(tmp_path)),
                  **launcher_overrides)
    batch = RecordingBatchApi()
    launcher = K8sRunLauncher(**config, k8s_client_batch_api=batch,
                              k8s_client_core_api=object())
    origin = JobPythonOrigin("evaluate_model", RepositoryPythonOrigin(
        executable_path="/opt/cultivar/venv/bin/python",
        code_pointer=ModuleCodePointer("cultivar_assets.definitions", "defs", None),
        container_image=helm_chart.user_deployment_image(deployment),
        container_context=helm_chart.user_deployment_container_context(
            values, deployment, RELEASE, NAMESPACE)))
    with dg.instance_for_test() as instance:
        launcher.register_instance(instance)
        run = create_run_for_test(instance, job_name="evaluate_model", tags=tags,
                                  job_code_origin=origin)
        launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    assert [namespace for namespace, _ in batch.jobs] == [NAMESPACE]
    manifest = kubernetes.client.ApiClient().sanitize_for_serialization(batch.jobs[0][1])
    # the run id (random hex, in names, labels and arguments) would look like a token
    text = json.dumps(manifest)
    assert run.run_id in text
    return json.loads(text.replace(run.run_id, "RUN-ID")), tags


@pytest.fixture
def fake_secrets(monkeypatch):
    for name, value in FAKE.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(("model_id", "gpus"), [("Llama-3.3-70B-Instruct", 2),
                                                ("copy-source-baseline", 0)])
def test_run_job_validates_asks_for_its_gpus_and_holds_no_secret(
        values, deployment, tmp_path, fake_secrets, model_id, gpus):
    job, tags = launched_job(values, deployment, model_id, tmp_path)
    _validate_k8s(job)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "ghcr.io/your-org/cultivar:0.1.0"  # the user deployment's
    # the code server's interpreter (the image's virtualenv, Dockerfile) runs the run
    assert container["args"][:5] == ["/opt/cultivar/venv/bin/python", "-m", "dagster", "api",
                                     "execute_run"]
    resources = container.get("resources") or {}
    # only what the run tag asks for: nothing inherited from the code server's deployment
    if gpus:  # vLLM, tensor_parallel_size 2: two GPUs, limit = request, on a tainted GPU node
        assert tags["cultivar/gpu-run"] == "true"
        assert resources["limits"] == resources["requests"] == {"nvidia.com/gpu": str(gpus)}
    else:     # the copy baseline: no GPU asked for, outside the GPU queue
        assert "cultivar/gpu-run" not in tags
        assert "nvidia.com/gpu" not in json.dumps(resources)
    assert {t["key"] for t in pod["tolerations"]} == {"nvidia.com/gpu"}

    env_from = container["envFrom"]
    assert {ref["secretRef"]["name"] for ref in env_from if "secretRef" in ref} == SECRETS
    config_maps = {ref["configMapRef"]["name"] for ref in env_from if "configMapRef" in ref}
    assert {"cultivar-env", "cultivar-dagster-cultivar-user-env"} <= config_maps
    # the launcher's and the code location's lists are merged: each entry once (the API
    # server refuses two volumes of one name, which the schema does not see)
    names = [v["name"] for v in pod["volumes"]]
    assert len(names) == len(set(names)) and len(env_from) == len(
        {json.dumps(ref, sort_keys=True) for ref in env_from})
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["cultivar-home"]["persistentVolumeClaim"]["claimName"] == "cultivar-home"
    assert volumes["cultivar-settings"]["configMap"]["name"] == "cultivar-settings"
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    assert {m["name"]: m["mountPath"] for m in container["volumeMounts"]} == {
        "cultivar-home": "/data/cultivar", "cultivar-settings": "/etc/cultivar",
        "dshm": "/dev/shm"}
    [password] = [e for e in container["env"] if e["name"] == "DAGSTER_PG_PASSWORD"]
    assert password["valueFrom"]["secretKeyRef"] == {"name": "dagster-postgresql-secret",
                                                     "key": "postgresql-password"}
    assert pod["serviceAccountName"] == "cultivar-dagster"
    # Dagster's database password comes from its Secret; nothing else names a secret
    literal = {e["name"] for e in container.get("env", []) if "value" in e}
    assert not {name for name in literal if SECRET_NAME.search(name)}
    assert plaintext_secrets(job) == []
    # the run's tags (stored by Dagster, shown in its UI) say which model and how many GPUs
    assert set(tags) <= {"cultivar/model", "cultivar/gpus", "cultivar/gpu-run",
                         "cultivar/reason", "dagster-k8s/config"}
    if gpus:
        assert set(json.loads(tags["dagster-k8s/config"])) == {"container_config"}
    assert not any(secret in json.dumps(tags) for secret in FAKE.values())
    assert not any(secret in json.dumps(job) for secret in FAKE.values())


def test_the_secret_check_sees_a_secret_copied_into_a_job(values, deployment, tmp_path,
                                                          fake_secrets):
    """``envVars: [HF_TOKEN]`` (not in our values) would copy the launching process's token into
    every Job: the checks above would fail on such a Job."""
    job, _ = launched_job(values, deployment, "copy-source-baseline", tmp_path,
                          env_vars=["HF_TOKEN"])
    _validate_k8s(job)  # a valid Job all the same: the schema does not see secrets
    problems = plaintext_secrets(job)
    assert any("HF_TOKEN has a literal value" in problem for problem in problems)
    assert FAKE["HF_TOKEN"] in json.dumps(job)


# --- the Dockerfile ---------------------------------------------------------------------------

def _instructions(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(instruction, arguments) of a Dockerfile as BuildKit's own parser reads it (PyPI
    ``dockerfile``, the Go parser of moby/buildkit): an ``ARG`` gives one word per declared
    argument, ``ENV`` names and values in turn, ``RUN`` (shell form) one string."""
    return [(command.cmd.upper(), command.value) for command in dockerfile.parse_file(str(path))]


def _arguments(words: tuple[str, ...]) -> dict[str, str | None]:
    """``ARG`` words as {name: default} (None without a default), the quotes of a quoted default
    removed; a word that is not an argument's name (an unquoted value split at a space) fails."""
    arguments: dict[str, str | None] = {}
    for word in words:
        name, equals, default = word.partition("=")
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name), f"ARG word {word!r}"
        if default[:1] == default[-1:] and default[:1] in ("'", '"') and len(default) > 1:
            default = default[1:-1]
        arguments[name] = default if equals else None
    return arguments


def test_dockerfile_pins_cuda_by_a_required_digest_and_installs_the_project():
    steps = _instructions(K8S / "Dockerfile")
    froms = [words for name, words in steps if name == "FROM"]
    assert froms == [("${CUDA_IMAGE}",)]
    before = steps[:[name for name, _ in steps].index("FROM")]
    args = {name: default for instruction, words in before if instruction == "ARG"
            for name, default in _arguments(words).items()}
    assert re.fullmatch(r"\d+\.\d+\.\d+-(runtime|devel|base)-ubuntu\d+\.\d+", args["CUDA_TAG"])
    assert args["CUDA_DIGEST"] is None  # required: no digest is made up here
    # the whole reference, the `:?` message included, is the one default of CUDA_IMAGE
    assert re.fullmatch(r"nvidia/cuda:\$\{CUDA_TAG\}@\$\{CUDA_DIGEST:\?[^{}]+\}",
                        args["CUDA_IMAGE"]), args["CUDA_IMAGE"]

    runs = " ".join(word for name, words in steps if name == "RUN" for word in words)
    assert re.search(r"pip install [^&]*['\"]\.\[gpu,k8s\]['\"]", runs)
    copied = [words[:-1] for name, words in steps if name == "COPY"]
    sources = {source for step in copied for source in step}
    assert "." not in sources and all((REPO / source).exists() for source in sources)
    # what the wheel is built from (pyproject.toml) is all copied
    project = __import__("tomllib").loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {"pyproject.toml", project["project"]["readme"], *wheel["packages"],
              *wheel["force-include"]}
    assert needed <= sources, needed - sources
    assert {"gpu", "k8s"} <= set(project["project"]["optional-dependencies"])
    # nothing secret baked into a layer or a build argument (a build argument is kept in the
    # image's history): no variable named like a secret
    names = [*(name for instruction, words in steps if instruction == "ARG"
               for name in _arguments(words)),
             *(name for instruction, words in steps if instruction == "ENV"
               for name in words[::2])]
    assert names and not [name for name in names if SECRET_NAME.search(name)]
