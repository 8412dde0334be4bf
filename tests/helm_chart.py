"""What the official Dagster Helm chart (dagster/dagster, 1.13) makes of our values file.

Tests cannot download the chart, so the few template rules that turn the values we set into
Dagster instance config and into the container context of a user-code deployment are restated
below, each from the chart's template (read in dagster-io/dagster, helm/dagster/); where the real
chart and helm are given, tests/test_deploy_k8s.py renders the chart with ``helm template`` and
compares its output with these rules:

- ``templates/helpers/instance/_run-launcher.tpl`` (``dagsterYaml.runLauncher.k8s``): the
  ``run_launcher`` section of the instance's ``dagster.yaml``;
- ``templates/helpers/instance/_run-coordinator.tpl`` (``dagsterYaml.runCoordinator.queued``):
  its ``run_coordinator`` section;
- ``charts/dagster-user-deployments/templates/helpers/_helpers.tpl``
  (``dagsterUserDeployments.k8sContainerContext``) and ``deployment-user.yaml``: what a run
  launched from a code location inherits (``includeConfigInLaunchedRuns``, on by default) and
  the image it runs (``DAGSTER_CURRENT_IMAGE``).

Only the keys our values use are rendered; a key of ours that the rules below do not know is an
error (so a value cannot be silently ignored here while the chart would use it).

``CHART_KEYS`` lists, for the sections whose schema forbids other keys (pydantic ``extra =
forbid`` in ``helm/dagster/schema/schema/charts/``), the keys the chart's schema allows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

# helm/dagster/schema/schema/charts/dagster/subschema/run_launcher.py (K8sRunLauncherConfig,
# RunK8sConfig, RunLauncher); daemon.py (RunCoordinator, QueuedRunCoordinatorConfig,
# TagConcurrencyLimit); telemetry.py; dagster_user_deployments/subschema/user_deployments.py
# (UserDeployment, UserDeployments); values.py (the top level).
CHART_KEYS: dict[str, set[str]] = {
    "top": {"dagsterWebserver", "dagster-user-deployments", "postgresql",
            "generatePostgresqlPasswordSecret", "generateCeleryConfigSecret", "rabbitmq", "redis",
            "flower", "ingress", "imagePullSecrets", "computeLogManager", "scheduler",
            "runLauncher", "pythonLogs", "dagsterDaemon", "busybox", "migrate", "telemetry",
            "serviceAccount", "global", "retention", "additionalInstanceConfig"},
    # subschema/global_.py, and the two names the charts' helpers read from `global`
    # (templates/helpers/_helpers.tpl: dagster.fullname)
    "global": {"postgresqlSecretName", "dagsterHome", "serviceAccountName",
               "celeryConfigSecretName", "dagsterInstanceConfigMap", "fullnameOverride",
               "nameOverride"},
    "serviceAccount": {"create", "name", "annotations"},
    "postgresql": {"image", "enabled", "postgresqlHost", "postgresqlUsername",
                   "postgresqlPassword", "postgresqlDatabase", "postgresqlParams",
                   "postgresqlScheme", "service"},
    # and the subchart's own values (charts/dagster-user-deployments/values.yaml: rbacEnabled)
    "dagster-user-deployments": {"enabled", "enableSubchart", "imagePullSecrets", "deployments",
                                 "rbacEnabled"},
    "deployment": {"name", "image", "dagsterApiGrpcArgs", "codeServerArgs",
                   "includeConfigInLaunchedRuns", "port", "env", "envConfigMaps", "envSecrets",
                   "annotations", "nodeSelector", "affinity", "tolerations",
                   "podSecurityContext", "securityContext", "resources", "livenessProbe",
                   "readinessProbe", "startupProbe", "labels", "volumeMounts", "volumes",
                   "schedulerName"},
    "image": {"repository", "tag", "pullPolicy"},
    # subschema/webserver.py (Webserver) and daemon.py (Daemon): the keys our values set
    "dagsterWebserver": {"image"},
    "dagsterDaemon": {"enabled", "image", "runCoordinator"},
    "runLauncher": {"type", "config"},
    "k8sRunLauncher": {"image", "imagePullPolicy", "jobNamespace", "loadInclusterConfig",
                       "kubeconfigFile", "envConfigMaps", "envSecrets", "envVars",
                       "volumeMounts", "volumes", "labels", "failPodOnRunFailure", "resources",
                       "schedulerName", "securityContext", "runK8sConfig"},
    "runK8sConfig": {"containerConfig", "podSpecConfig", "podTemplateSpecMetadata",
                     "jobSpecConfig", "jobMetadata"},
    "runCoordinator": {"enabled", "type", "config"},
    "runCoordinatorConfig": {"queuedRunCoordinator", "customRunCoordinator"},
    "customRunCoordinator": {"module", "class", "config"},  # ConfigurableClass (utils.py)
    "queuedRunCoordinator": {"maxConcurrentRuns", "tagConcurrencyLimits",
                             "dequeueIntervalSeconds", "dequeueNumWorkers", "dequeueUseThreads",
                             "blockOpConcurrencyLimitedRuns"},
    "tagConcurrencyLimit": {"key", "value", "limit"},
    "telemetry": {"enabled"},
}

PULL_POLICIES = {"Always", "IfNotPresent", "Never"}


def load_values(path: Path) -> dict[str, Any]:
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(values, dict):
        raise ValueError(f"{path}: the values must be a mapping")
    return values


def fullname(values: dict[str, Any], release: str) -> str:
    """``dagster.fullname`` (the same in both charts): ``global.fullnameOverride``, else
    ``<release>-<chart name>``, or the release name alone when it contains the chart name. Only
    the override is rendered here: without it the two charts' names differ."""
    override = values.get("global", {}).get("fullnameOverride")
    if not override:
        raise ValueError("set global.fullnameOverride: the names below depend on it")
    return override[:63].rstrip("-")


def service_account_name(values: dict[str, Any], release: str) -> str:
    return (values.get("global", {}).get("serviceAccountName")
            or values.get("serviceAccount", {}).get("name") or fullname(values, release))


def _names(sources: list[dict[str, Any]] | None) -> list[str]:
    return [source["name"] for source in sources or [] if "name" in source]


def _known(section: str, mapping: dict[str, Any], rendered: set[str]) -> None:
    unknown = set(mapping) - rendered
    if unknown:
        raise ValueError(f"{section}: {sorted(unknown)} not rendered by tests/helm_chart.py")


RUN_K8S_KEYS = {"containerConfig": "container_config", "podSpecConfig": "pod_spec_config",
                "podTemplateSpecMetadata": "pod_template_spec_metadata",
                "jobSpecConfig": "job_spec_config", "jobMetadata": "job_metadata"}


def run_launcher_config(values: dict[str, Any], release: str, namespace: str) -> dict[str, Any]:
    """The ``run_launcher`` section the chart writes for ``runLauncher.type: K8sRunLauncher``."""
    launcher = values["runLauncher"]
    if launcher["type"] != "K8sRunLauncher":
        raise ValueError("runLauncher.type must be K8sRunLauncher")
    k8s = launcher["config"]["k8sRunLauncher"]
    _known("k8sRunLauncher", k8s, {"imagePullPolicy", "jobNamespace", "loadInclusterConfig",
                                   "envConfigMaps", "envSecrets", "envVars", "volumeMounts",
                                   "volumes", "labels", "resources", "runK8sConfig"})
    glob = values.get("global", {})
    config: dict[str, Any] = {
        "load_incluster_config": k8s["loadInclusterConfig"],
        "job_namespace": k8s.get("jobNamespace") or namespace,
        "image_pull_policy": k8s["imagePullPolicy"],
        "service_account_name": service_account_name(values, release),
        "dagster_home": glob.get("dagsterHome", "/opt/dagster/dagster_home"),
        "instance_config_map": f"{fullname(values, release)}-instance",
        "postgres_password_secret": glob.get("postgresqlSecretName",
                                             "dagster-postgresql-secret"),
    }
    for key, name in (("envConfigMaps", "env_config_maps"), ("envSecrets", "env_secrets")):
        if k8s.get(key):
            config[name] = _names(k8s[key])
    for key, name in (("envVars", "env_vars"), ("volumeMounts", "volume_mounts"),
                      ("volumes", "volumes"), ("labels", "labels"), ("resources", "resources")):
        if k8s.get(key):
            config[name] = k8s[key]
    if k8s.get("runK8sConfig"):
        _known("runK8sConfig", k8s["runK8sConfig"], set(RUN_K8S_KEYS))
        config["run_k8s_config"] = {RUN_K8S_KEYS[key]: value
                                    for key, value in k8s["runK8sConfig"].items() if value}
    return {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": config}


def run_coordinator_config(values: dict[str, Any]) -> dict[str, Any] | None:
    """The ``run_coordinator`` section, written when the daemon and the coordinator are on
    (``dagsterYaml.runCoordinator.queued`` or ``.custom``)."""
    daemon = values.get("dagsterDaemon", {})
    coordinator = daemon.get("runCoordinator", {})
    if not (daemon.get("enabled", True) and coordinator.get("enabled")):
        return None
    if coordinator["type"] == "CustomRunCoordinator":
        custom = coordinator["config"]["customRunCoordinator"]
        _known("customRunCoordinator", custom, {"module", "class", "config"})
        return {"module": custom["module"], "class": custom["class"],
                "config": custom.get("config")}
    if coordinator["type"] != "QueuedRunCoordinator":
        raise ValueError("dagsterDaemon.runCoordinator.type must be QueuedRunCoordinator or "
                         "CustomRunCoordinator")
    queued = coordinator["config"]["queuedRunCoordinator"]
    _known("queuedRunCoordinator", queued, {"maxConcurrentRuns", "tagConcurrencyLimits"})
    config: dict[str, Any] = {"max_concurrent_runs": queued.get("maxConcurrentRuns", -1)}
    if queued.get("tagConcurrencyLimits"):
        config["tag_concurrency_limits"] = queued["tagConcurrencyLimits"]
    return {"module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator",
            "config": config}


def user_deployment_image(deployment: dict[str, Any]) -> str:
    """``dagster.dagsterImage.name``: ``repository:tag`` (the chart's version when no tag)."""
    image = deployment["image"]
    return f"{image['repository']}:{image['tag']}"


def user_deployment_container_context(values: dict[str, Any], deployment: dict[str, Any],
                                      release: str, namespace: str) -> dict[str, Any] | None:
    """What the code server passes on to the runs it launches (None when
    ``includeConfigInLaunchedRuns.enabled`` is false)."""
    if not deployment.get("includeConfigInLaunchedRuns", {"enabled": True})["enabled"]:
        return None
    _known("deployment", deployment, {"name", "image", "dagsterApiGrpcArgs", "port",
                                      "includeConfigInLaunchedRuns", "envConfigMaps",
                                      "envSecrets", "volumeMounts", "volumes", "labels",
                                      "resources"})
    k8s: dict[str, Any] = {
        "image_pull_policy": deployment["image"]["pullPolicy"],
        "env_config_maps": [f"{fullname(values, release)}-{deployment['name']}-user-env",
                            *_names(deployment.get("envConfigMaps"))],
    }
    if deployment.get("envSecrets"):
        k8s["env_secrets"] = _names(deployment["envSecrets"])
    for key, name in (("volumeMounts", "volume_mounts"), ("volumes", "volumes"),
                      ("labels", "labels"), ("resources", "resources")):
        if deployment.get(key):
            k8s[name] = deployment[key]
    k8s["namespace"] = namespace
    k8s["service_account_name"] = service_account_name(values, release)
    k8s["run_k8s_config"] = {"pod_spec_config": {"automount_service_account_token": True}}
    return {"k8s": k8s}
