"""The Kubernetes deployment (cultivar_assets/deploy/k8s), as far as a machine without a cluster
can check it: the Helm values against the chart's schema and Dagster's config schemas, the
Kubernetes Jobs that dagster-k8s's own K8sRunLauncher makes of a model's run, and the objects the
project ships, validated against the Kubernetes schemas (kubernetes-validate, offline), with no
secret in plain text anywhere; the Dockerfile as BuildKit's parser reads it; the real chart
rendered by the real helm where both are given. No Docker or cluster runs here: docs/kubernetes.md
says what that leaves unchecked."""

from __future__ import annotations

import hashlib
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
from cultivar_assets.automation import ModelRunCoordinator, run_request
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


KUBERNETES_KEY_FIELDS = frozenset({"key"})
# A pod template's ``checksum/<name>`` annotation holds the SHA-256 (64 hex digits) that the chart
# computes of a rendered config (deployment-daemon.yaml: ``include … | sha256sum``), so that a
# changed config rolls the pods: a digest of config, not a credential.
CHECKSUM_ANNOTATION = re.compile(r"checksum/[A-Za-z0-9._-]+")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def plaintext_secrets(tree: Any, path: str = "") -> list[str]:
    """Where ``tree`` (a manifest, values, a config) holds a secret in plain text: an
    environment variable whose name is a secret's (``*_TOKEN``, ``*_KEY``, …) with a literal
    ``value`` (not ``valueFrom`` a Secret), a key naming a password or token with a value (the
    project's :func:`misplaced_secrets`, camelCase keys included), or any string that looks like
    a key or token (:func:`looks_like_secret`) or is one of :data:`FAKE`. The SHA-256 digest
    under a ``checksum/<name>`` annotation is not a secret (:data:`CHECKSUM_ANNOTATION`)."""
    problems: list[str] = []
    if isinstance(tree, dict):
        name = tree.get("name")
        if isinstance(name, str) and SECRET_NAME.search(name) and tree.get("value"):
            problems.append(f"{path}: {name} has a literal value")
        for key, value in tree.items():
            here = f"{path}.{key}" if path else str(key)
            snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower()
            # Kubernetes' ``key`` fields name a taint, a label or an entry of a Secret (a
            # toleration's, a match expression's, a secretKeyRef's): never a secret themselves
            # (their values are still checked below, as every string is)
            if (isinstance(value, str) and value and key not in KUBERNETES_KEY_FIELDS
                    and misplaced_secrets({snake: value})):
                problems.append(f"{here}: a secret's key with a value")
            if (isinstance(value, str) and CHECKSUM_ANNOTATION.fullmatch(str(key))
                    and SHA256_HEX.fullmatch(value)):
                continue
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
    within("dagsterDaemon", values["dagsterDaemon"])
    within("dagsterWebserver", values["dagsterWebserver"])
    # the webserver and the daemon (which submit runs through the coordinator) run our image
    for section in ("dagsterDaemon", "dagsterWebserver"):
        within("image", values[section]["image"])
        assert values[section]["image"] == deployment["image"], section
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    within("runCoordinator", coordinator)
    within("runCoordinatorConfig", coordinator["config"])
    assert coordinator["type"] == "CustomRunCoordinator"
    within("customRunCoordinator", coordinator["config"]["customRunCoordinator"])
    assert values["dagster-user-deployments"]["rbacEnabled"] is False  # the main chart's Role
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
    # a config's SHA-256 under a checksum/ annotation passes; anything else there, or the same
    # digest under another key, does not
    digest = hashlib.sha256(b"dagster.yaml").hexdigest()
    assert not plaintext_secrets({"annotations": {"checksum/dagster-instance": digest}})
    assert plaintext_secrets({"annotations": {"checksum/dagster-instance": FAKE["HF_TOKEN"]}})
    assert plaintext_secrets({"annotations": {"example.com/build": digest}})


def test_chart_instance_config_is_valid_and_matches_dagster_yaml(values):
    launcher = helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)
    coordinator = helm_chart.run_coordinator_config(values)
    _validate_config(K8sRunLauncher, launcher["config"])
    assert (coordinator["module"], coordinator["class"]) == ("cultivar_assets.automation",
                                                             "ModelRunCoordinator")
    assert issubclass(ModelRunCoordinator, QueuedRunCoordinator)
    _validate_config(ModelRunCoordinator, coordinator["config"])
    assert coordinator["config"]["tag_concurrency_limits"] == [
        {"key": "cultivar/gpu-run", "value": "true", "limit": 16}]

    # deploy/k8s/dagster.yaml (for an instance set up without the chart) says the same
    shipped, _ = dagster_instance_config(str(K8S))
    assert shipped["run_coordinator"] == coordinator
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


def _objects() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((K8S / "objects.yaml").read_text(encoding="utf-8")))


def _env() -> dict[str, str]:
    """The ConfigMap cultivar-env: the environment of every pod."""
    [env] = [o["data"] for o in _objects() if o["kind"] == "ConfigMap"]
    return env


def _claim_access_modes() -> dict[str, list[str]]:
    return {o["metadata"]["name"]: o["spec"]["accessModes"]
            for o in _objects() if o["kind"] == "PersistentVolumeClaim"}


def test_user_deployment_and_objects_validate(values, deployment):
    """The pod of the code server, as the chart's deployment-user.yaml lays out what our values
    give it, and every object of objects.yaml, against the Kubernetes schemas."""
    objects = _objects()
    assert {(o["kind"], o["metadata"]["name"]) for o in objects} == {
        ("ConfigMap", "cultivar-env"), ("PersistentVolumeClaim", "cultivar-home"),
        ("PersistentVolumeClaim", "cultivar-storage"),
        ("PersistentVolumeClaim", "cultivar-weights")}
    for manifest in objects:
        _validate_k8s(manifest)
    assert plaintext_secrets(objects) == []
    # the database's volume is mounted by one node; the storage root and the weights by any
    assert _claim_access_modes() == {"cultivar-home": ["ReadWriteOnce"],
                                     "cultivar-storage": ["ReadWriteMany"],
                                     "cultivar-weights": ["ReadWriteMany"]}
    env = _env()
    mounts = {m["name"]: m["mountPath"] for m in deployment["volumeMounts"]}
    assert env["CULTIVAR_HOME"] == mounts["cultivar-home"]
    assert Path(env["CULTIVAR_CONFIG"]).parent == Path(mounts["cultivar-settings"])

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


def _snake(model, items: list[dict]) -> dict[str, dict]:
    """Volumes or mounts by name, as dagster-k8s's snake_case dicts (camelCase keys of the
    chart's values converted)."""
    return {item["name"]: k8s_snake_case_dict(model, item) for item in items}


def test_both_kinds_of_run_read_one_storage_root_and_one_database(values):
    """deploy/k8s/cultivar.yaml (the settings every pod reads) against the volumes of a model's
    run (model-run.yaml, its run tag) and of every other run (the launcher's): the storage root
    is the shared claim's mount in both; the database lies on cultivar-home, which only the
    other runs mount; CULTIVAR_HOME is mounted in both (the database's volume, or an emptyDir
    in a model's run) and holds neither the storage root nor HF_HOME, which is on the weights'
    shared claim in both; every claim a model's run mounts is ReadWriteMany; the settings and
    /dev/shm volumes are the launcher's."""
    from kubernetes.client import V1Volume, V1VolumeMount

    from cultivar_assets.assets.run_tags import model_run_volumes
    from cultivar_assets.settings import load_settings

    settings = load_settings(K8S / "cultivar.yaml")
    env = _env()
    access = _claim_access_modes()
    launcher = helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)["config"]
    model = model_run_volumes()
    layouts = {"model run": (_snake(V1Volume, model["volumes"]),
                             _snake(V1VolumeMount, model["volume_mounts"])),
               "other run": (_snake(V1Volume, launcher["volumes"]),
                             _snake(V1VolumeMount, launcher["volume_mounts"]))}
    home, storage, hf_home = (Path(env["CULTIVAR_HOME"]), Path(settings.storage_root),
                              Path(env["HF_HOME"]))
    for kind, (volumes, mounts) in layouts.items():
        assert set(volumes) == set(mounts), kind

        def claim_at(path: Path, volumes=volumes, mounts=mounts) -> str | None:
            """The claim (or None: another kind of volume) mounted at ``path`` or above it."""
            [name] = [name for name, mount in mounts.items()
                      if path == Path(mount["mount_path"])
                      or Path(mount["mount_path"]) in path.parents]
            return (volumes[name].get("persistent_volume_claim") or {}).get("claim_name")

        claims = {claim_at(Path(mount["mount_path"])) for mount in mounts.values()} - {None}
        assert claims <= set(access), kind  # every claim is one objects.yaml makes
        assert claim_at(storage) == "cultivar-storage", kind
        assert claim_at(hf_home) == "cultivar-weights", kind
        assert storage != home and home not in storage.parents, kind
        assert home not in hf_home.parents, kind
        # the settings and /dev/shm as the launcher gives them
        for name in ("cultivar-settings", "dshm"):
            assert volumes[name] == layouts["other run"][0][name], (kind, name)
            assert mounts[name] == layouts["other run"][1][name], (kind, name)
        if kind == "model run":
            [at_home] = [n for n, m in mounts.items() if Path(m["mount_path"]) == home]
            assert volumes[at_home] == {"name": "model-home", "empty_dir": {}}
            assert "cultivar-home" not in claims
            assert all(access[claim] == ["ReadWriteMany"] for claim in claims), claims
        else:
            assert claim_at(home) == "cultivar-home"
            assert claim_at(settings.database_path) == "cultivar-home"
            assert access["cultivar-home"] == ["ReadWriteOnce"]


@pytest.mark.parametrize(("text", "message"), [
    ("volumes: []\n", r"holds \['volumes'\], not the two lists"),
    ("volume_mounts: [{name: a, mount_path: /a}]\nvolumes: [{empty_dir: {}}]\n",
     r"volumes is not a list of entries with a name"),
    ("volume_mounts: [{name: a, mount_path: /a}]\nvolumes: [{name: b, empty_dir: {}}]\n",
     r"volume_mounts mount \['a'\], which volumes does not list"),
    ("volume_mounts: []\nvolumes: [{name: b, empty_dir: {}}, {name: b, empty_dir: {}}]\n",
     r"volumes names \['b'\] more than once"),
])
def test_a_model_run_volumes_file_that_gives_no_volumes_is_refused(tmp_path, text, message):
    from cultivar_assets.assets.run_tags import ModelRunVolumesError, model_run_volumes

    path = tmp_path / "model-run.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ModelRunVolumesError, match=message) as raised:
        model_run_volumes(path)
    assert str(path) in str(raised.value)


# --- the real chart, rendered by the real helm --------------------------------------------------

def _real_chart() -> tuple[str, Path]:
    """helm (``$CULTIVAR_HELM``, else ``helm`` on PATH) and the Dagster chart 1.13.27
    (``$CULTIVAR_DAGSTER_CHART``: its folder or .tgz); the test skips, saying which is missing,
    without them (docs/kubernetes.md says how to get both)."""
    import os
    import shutil

    helm = os.environ.get("CULTIVAR_HELM") or shutil.which("helm")
    chart = os.environ.get("CULTIVAR_DAGSTER_CHART")
    if not helm or not Path(helm).exists():
        pytest.skip("no helm: set CULTIVAR_HELM or put helm on PATH (docs/kubernetes.md)")
    if not chart or not Path(chart).exists():
        pytest.skip("no Dagster chart: set CULTIVAR_DAGSTER_CHART to the dagster/dagster "
                    "1.13.27 chart's folder or .tgz (docs/kubernetes.md)")
    return helm, Path(chart)


def test_the_real_chart_renders_our_values_without_duplicates(values, deployment, tmp_path):
    """``helm template`` of the real chart with our values: no two objects of one kind and name
    (Helm refuses such a release), every object valid against the Kubernetes schemas, the
    instance's dagster.yaml with our coordinator and the launcher that tests/helm_chart.py
    restates, and the webserver and daemon on our image."""
    import subprocess

    helm, chart = _real_chart()
    rendered = subprocess.run(
        [helm, "template", RELEASE, str(chart), "-n", NAMESPACE, "--skip-tests",
         "-f", str(K8S / "values.yaml")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr[-3000:]
    objects = [o for o in yaml.safe_load_all(rendered.stdout) if o]
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for manifest in objects:
        _validate_k8s(manifest)
    assert plaintext_secrets(objects) == []
    by_name = {name: o for name, o in zip(names, objects, strict=True)}
    instance = yaml.safe_load(
        by_name["ConfigMap", "cultivar-dagster-instance"]["data"]["dagster.yaml"])
    assert instance["run_coordinator"] == helm_chart.run_coordinator_config(values)
    assert instance["run_launcher"] == helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)
    image = helm_chart.user_deployment_image(deployment)
    for (kind, _), manifest in by_name.items():
        if kind == "Deployment":
            for container in manifest["spec"]["template"]["spec"]["containers"]:
                assert container["image"] == image, (manifest["metadata"]["name"], container)
    code_server = by_name["Deployment", f"cultivar-dagster-{deployment['name']}"]
    [container] = code_server["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    context = env.get("DAGSTER_CLI_API_GRPC_CONTAINER_CONTEXT")  # None: not passed to runs
    assert (json.loads(context) if context is not None else None) == (
        helm_chart.user_deployment_container_context(values, deployment, RELEASE, NAMESPACE))


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


def code_origin(values: dict, deployment: dict, job_name: str) -> JobPythonOrigin:
    """The code origin of a run of ``job_name``: the chart's user deployment (its image and,
    where ``includeConfigInLaunchedRuns`` is on, its container context) serving the project's
    definitions."""
    return JobPythonOrigin(job_name, RepositoryPythonOrigin(
        executable_path="/opt/cultivar/venv/bin/python",
        code_pointer=ModuleCodePointer("cultivar_assets.definitions", "defs", None),
        container_image=helm_chart.user_deployment_image(deployment),
        container_context=helm_chart.user_deployment_container_context(
            values, deployment, RELEASE, NAMESPACE)))


def job_of_run(instance, run, values: dict, tmp_path: Path,
               **launcher_overrides: Any) -> dict:
    """The Job (as sent to the API server) that dagster-k8s's K8sRunLauncher, configured as the
    chart configures it from our values, makes of the stored ``run``."""
    config = dict(helm_chart.run_launcher_config(values, RELEASE, NAMESPACE)["config"])
    config.update(load_incluster_config=False, kubeconfig_file=str(_kubeconfig(tmp_path)),
                  **launcher_overrides)
    batch = RecordingBatchApi()
    launcher = K8sRunLauncher(**config, k8s_client_batch_api=batch,
                              k8s_client_core_api=object())
    launcher.register_instance(instance)
    launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
    assert [namespace for namespace, _ in batch.jobs] == [NAMESPACE]
    manifest = kubernetes.client.ApiClient().sanitize_for_serialization(batch.jobs[0][1])
    # the run id (random hex, in names, labels and arguments) would look like a token
    text = json.dumps(manifest)
    assert run.run_id in text
    return json.loads(text.replace(run.run_id, "RUN-ID"))


def launched_job(values: dict, deployment: dict, model_id: str, tmp_path: Path,
                 **launcher_overrides: Any) -> tuple[dict, dict[str, str]]:
    """The Job and the run tags of ``model_id``'s run (:func:`job_of_run`), for a run whose tags
    are those the registry sensor puts on it."""
    spec = load_models().get(model_id)
    tags = dict(run_request(spec, "0" * 64, "new in registry").tags)
    with dg.instance_for_test() as instance:
        run = create_run_for_test(instance, job_name="evaluate_model", tags=tags,
                                  job_code_origin=code_origin(values, deployment,
                                                              "evaluate_model"))
        return job_of_run(instance, run, values, tmp_path, **launcher_overrides), tags


# What a pod mounts where: {volume name: (mount path, what the volume is)}, the volume as
# "claim <name>", "emptyDir" or "configMap <name>"; dshm (a memory emptyDir) as "emptyDir".
MODEL_RUN_LAYOUT = {"model-home": ("/data/cultivar", "emptyDir"),
                    "cultivar-storage": ("/data/storage", "claim cultivar-storage"),
                    "cultivar-weights": ("/data/weights", "claim cultivar-weights"),
                    "cultivar-settings": ("/etc/cultivar", "configMap cultivar-settings"),
                    "dshm": ("/dev/shm", "emptyDir")}
DATABASE_RUN_LAYOUT = {**{name: entry for name, entry in MODEL_RUN_LAYOUT.items()
                          if name != "model-home"},
                       "cultivar-home": ("/data/cultivar", "claim cultivar-home")}


def pod_layout(job: dict) -> dict[str, tuple[str, str]]:
    """``job``'s volumes as {name: (mount path, what it is)} (:data:`MODEL_RUN_LAYOUT`); a
    volume not mounted, or mounted twice, fails."""
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    mounts = [(m["name"], m["mountPath"]) for m in container.get("volumeMounts", [])]
    assert len(mounts) == len(dict(mounts)), mounts

    def kind(volume: dict) -> str:
        if "persistentVolumeClaim" in volume:
            return f"claim {volume['persistentVolumeClaim']['claimName']}"
        if "configMap" in volume:
            return f"configMap {volume['configMap']['name']}"
        return next(key for key in volume if key != "name")

    volumes = {v["name"]: kind(v) for v in pod.get("volumes", [])}
    assert set(volumes) == set(dict(mounts)), (volumes, mounts)
    return {name: (path, volumes[name]) for name, path in mounts}


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
    # the launcher's (the code server's config is not passed on: includeConfigInLaunchedRuns)
    assert config_maps == {"cultivar-env"}
    # each entry once (the API server refuses two volumes of one name, which the schema does
    # not see)
    names = [v["name"] for v in pod["volumes"]]
    assert len(names) == len(set(names)) and len(env_from) == len(
        {json.dumps(ref, sort_keys=True) for ref in env_from})
    # a model's run, GPUs or not: the storage root, the weights, a home of its own; no database
    assert pod_layout(job) == MODEL_RUN_LAYOUT
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["cultivar-settings"]["configMap"]["name"] == "cultivar-settings"
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
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
    assert set(json.loads(tags["dagster-k8s/config"])) == {
        "merge_behavior", "container_config", "pod_spec_config"}
    assert not any(secret in json.dumps(tags) for secret in FAKE.values())
    assert not any(secret in json.dumps(job) for secret in FAKE.values())


GPU_MODEL = "Llama-3.3-70B-Instruct"  # vLLM, tensor_parallel_size 2


def test_every_launch_of_a_models_run_gets_its_gpus_and_queue_tag(values, deployment,
                                                                   tmp_path):
    """However a model's run is launched, its Job asks for the model's GPUs and the run carries
    the GPU queue's tag. Runs submitted to the instance (the UI, backfills, sensors, schedules)
    pass through the chart's run coordinator (``ModelRunCoordinator``), which asks the code
    location for the tags; each run is made with the tags Dagster gives it on that path, then
    submitted, then launched by dagster-k8s as the chart configures it. Runs executed in
    process (``dg launch --job``, ``dagster job execute``, ``cultivar run``) take their tags from
    the job's partition tags or the runner."""
    from dagster._core.definitions.assets.job.asset_job import IMPLICIT_ASSET_JOB_NAME
    from dagster._core.storage.tags import BACKFILL_ID_TAG, PARTITION_NAME_TAG
    from dagster._core.test_utils import in_process_test_workspace
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    from cultivar_assets.automation import ModelRunTagsError
    from cultivar_assets.definitions import defs
    from cultivar_assets.runner.pipeline import _model_tags

    coordinator = helm_chart.run_coordinator_config(values)
    gpus = {"nvidia.com/gpu": "2"}

    def asks_for_gpus(job: dict) -> bool:
        [container] = job["spec"]["template"]["spec"]["containers"]
        resources = container.get("resources") or {}
        return resources.get("limits") == resources.get("requests") == gpus

    with dg.instance_for_test(overrides={"run_coordinator": coordinator}) as instance:
        assert type(instance.run_coordinator) is ModelRunCoordinator
        instance.add_dynamic_partitions("models", [GPU_MODEL, "copy-source-baseline", "gone"])
        with in_process_test_workspace(instance, LoadableTargetOrigin(
                module_name="cultivar_assets.definitions", attribute="defs")) as workspace:
            [entry] = workspace.get_code_location_entries().values()
            location = entry.code_location
            [repository] = location.get_repositories().values()
            model_assets = {node.asset_key
                            for node in repository.get_asset_node_snaps("evaluate_model")}
            assert {key.to_user_string() for key in model_assets} == {"translations", "scores"}
            job_def = defs.resolve_job_def("evaluate_model")

            def submitted(job_name: str, tags: dict, assets=None):
                origin = repository.get_full_job(job_name).get_remote_origin()
                run = create_run_for_test(
                    instance, job_name=job_name, tags=tags, asset_selection=assets,
                    remote_job_origin=origin,
                    job_code_origin=code_origin(values, deployment, job_name))
                instance.submit_run(run.run_id, workspace)
                return instance.get_run_by_id(run.run_id)

            def partition_tags(partition: str) -> dict:
                snap = location.get_partition_tags_from_repo(
                    repository.handle, "evaluate_model", partition, instance)
                return dict(snap.tags)

            partition = {PARTITION_NAME_TAG: GPU_MODEL}  # all the host gives the assets' runs
            launches = {
                # Assets → translations, scores → Materialize, one partition
                "UI: the model assets' partition": (IMPLICIT_ASSET_JOB_NAME, partition,
                                                    model_assets),
                # the assets' partitions page → backfill (an asset backfill's runs)
                "asset backfill": (IMPLICIT_ASSET_JOB_NAME,
                                   {**partition, BACKFILL_ID_TAG: "abcdefgh"}, model_assets),
                # Jobs → evaluate_model → a partition, or a backfill of its partitions
                "UI: evaluate_model's partition": ("evaluate_model", partition_tags(GPU_MODEL),
                                                   None),
                "backfill of evaluate_model": (
                    "evaluate_model", {**partition, BACKFILL_ID_TAG: "ijklmnop"}, None),
                # a sensor's or schedule's RunRequest(partition_key=…), resolved as the daemon
                # resolves it; and the registry sensor's own request
                "a sensor or schedule": ("evaluate_model", dict(dg.RunRequest(
                    partition_key=GPU_MODEL).with_resolved_tags_and_config(
                        job_def, [], instance).tags), None),
                "the registry sensor": ("evaluate_model", dict(run_request(
                    load_models().get(GPU_MODEL), "0" * 64, "new in registry").tags), None),
            }
            for how, (job_name, tags, assets) in launches.items():
                run = submitted(job_name, tags, assets)
                assert run.tags.get("cultivar/gpu-run") == "true", how
                assert run.tags["cultivar/gpus"] == "2", how
                job = job_of_run(instance, run, values, tmp_path)
                assert asks_for_gpus(job), how
                _validate_k8s(job)
                # the storage root and a home of its own, not the database's volume
                assert pod_layout(job) == MODEL_RUN_LAYOUT, how

            # executed in process: `dg launch --job evaluate_model --partition …` and `dagster
            # job execute` take the job's partition tags (dagster/_cli/job.py); `cultivar run`
            # the runner's
            in_process = {"dg launch --job": dict(job_def.get_tags_for_partition_key(
                              GPU_MODEL, selected_asset_keys=None)),
                          "cultivar run": _model_tags(load_models().get(GPU_MODEL))}
            for how, tags in in_process.items():
                assert tags["cultivar/gpu-run"] == "true", how
                run = create_run_for_test(
                    instance, job_name="evaluate_model", tags=tags,
                    job_code_origin=code_origin(values, deployment, "evaluate_model"))
                job = job_of_run(instance, run, values, tmp_path)
                assert asks_for_gpus(job), how
                assert pod_layout(job) == MODEL_RUN_LAYOUT, how

            # no GPU for the copy baseline; nothing added to another job's partitions
            baseline = submitted(IMPLICIT_ASSET_JOB_NAME,
                                 {PARTITION_NAME_TAG: "copy-source-baseline"}, model_assets)
            assert baseline.tags["cultivar/gpus"] == "0"
            assert "cultivar/gpu-run" not in baseline.tags
            job = job_of_run(instance, baseline, values, tmp_path)
            assert not asks_for_gpus(job)
            assert pod_layout(job) == MODEL_RUN_LAYOUT  # no GPU, no database either
            # the runs that write the database: its volume and the storage root
            for job_name, tags in (("build_benchmark", {PARTITION_NAME_TAG: "de_DE"}),
                                   ("refresh_results", {}), ("build_dataset", {}),
                                   ("publish_dataset", {})):
                other = submitted(job_name, tags)
                assert not any(key.startswith("cultivar/") or key.startswith("dagster-k8s/")
                               for key in other.tags), job_name
                job = job_of_run(instance, other, values, tmp_path)
                _validate_k8s(job)
                assert pod_layout(job) == DATABASE_RUN_LAYOUT, job_name
            # a model partition the registry no longer holds is refused, loudly
            with pytest.raises(ModelRunTagsError, match=r"'gone'.*unknown model 'gone'"):
                submitted(IMPLICIT_ASSET_JOB_NAME, {PARTITION_NAME_TAG: "gone"}, model_assets)


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
