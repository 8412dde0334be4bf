"""With the real Dagster daemon running, new registry entries end on the site's leaderboard page
without a manual launch: the registry sensor runs the new models, then the automation sensor
recomputes the results, writes the new models' parts of the site and rebuilds the site once for
the batch.

Slow: a first `cultivar run` (two copy baselines on the demo data), then `dagster-daemon run`
on the project's definitions with a settings file (`CULTIVAR_CONFIG`) whose sensors tick fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from conftest import COPY_ENTRY, REPO_ROOT, write_models_file

from cultivar_assets.processes import stop_group

pytestmark = [pytest.mark.slow, pytest.mark.dagster_instances]

LOCATION = ["-m", "cultivar_assets.definitions"]
FIRST, NEW = ("copy-one", "copy-two"), ("copy-three", "copy-four")
BOUND_S = 480  # the whole wait for the new models to reach the site (measured: docs/performance.md)


def _entry(model_id: str) -> dict:
    return {**COPY_ENTRY, "id": model_id, "suites": ["watched"]}


def _wait(predicate, timeout: float, what: str, daemon: subprocess.Popen):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            raise AssertionError(f"the daemon exited ({daemon.returncode}) waiting for {what}")
        value = predicate()
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _registry_cursor(instance) -> str | None:
    from dagster._core.scheduler.instigation import InstigatorType

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == "model_registry_sensor" and state.instigator_data is not None:
            return state.instigator_data.cursor
    return None


def _materialisations(instance, key: str, after: float = 0.0) -> list:
    records = instance.fetch_materializations(dg.AssetKey(key), limit=100).records
    return [r for r in records if r.timestamp > after]


@pytest.fixture
def operator(tmp_path, monkeypatch, isolated_home):
    """A settings file of two baselines, already run once (`cultivar run`)."""
    from cultivar_assets.runner import run_pipeline
    from cultivar_assets.settings import load_settings

    models = write_models_file(tmp_path / "models.yaml", [_entry(m) for m in FIRST])
    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump({
        "database": str(tmp_path / "results.duckdb"), "models_file": str(models),
        "models": ["suite:watched"], "data": {"kind": "demo"},
        "metrics": {"bleu_tokenize": "13a", "bootstrap_replicates": 50},
        "site": {"output_dir": str(tmp_path / "site"), "charts_dir": str(tmp_path / "charts"),
                 "query_page": "off"},
        "publish": {"folder": str(tmp_path / "hub")},
        "automation": {"registry_sensor_interval_seconds": 30,
                       "automation_sensor_interval_seconds": 5},
    }), "utf-8")
    dagster_home = tmp_path / "dagster"
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.setenv("CULTIVAR_CONFIG", str(config))
    result = run_pipeline(load_settings(config), say=lambda _line: None)
    assert sorted(result.models) == sorted(FIRST)
    return {"models": models, "site": tmp_path / "site", "dagster_home": dagster_home,
            "env": {**os.environ, "PYTHONPATH": str(REPO_ROOT)}, "logs": tmp_path}


def test_new_registry_entries_reach_the_site_without_a_manual_launch(operator):
    env, site = operator["env"], operator["site"] / "index.html"
    before = site.read_text("utf-8")
    assert all(m in before for m in FIRST) and not any(m in before for m in NEW)
    started = subprocess.run([sys.executable, "-m", "dagster", "sensor", "start",
                              "model_registry_sensor", *LOCATION], env=env, cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stderr[-2000:]
    log = (operator["logs"] / "daemon.log").open("w")
    executable = str(Path(sys.executable).parent / "dagster-daemon")
    daemon = subprocess.Popen([executable, "run", *LOCATION], env=env, cwd=REPO_ROOT,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        with dg.DagsterInstance.from_config(str(operator["dagster_home"])) as instance:
            _wait(lambda: _registry_cursor(instance), 240, "the registry sensor's first tick",
                  daemon)
            assert instance.get_runs(filters=dg.RunsFilter(job_name="evaluate_model",
                                                           tags={"cultivar/reason":
                                                                 "new in registry"})) == []
            models = yaml.safe_load(operator["models"].read_text("utf-8"))
            models["models"] += [_entry(m) for m in NEW]  # a batch of two new entries
            operator["models"].write_text(yaml.safe_dump(models, sort_keys=False), "utf-8")
            added = time.monotonic()

            _wait(lambda: site.is_file() and all(m in site.read_text("utf-8") for m in NEW),
                  BOUND_S, "the new models on the site's leaderboard page", daemon)
            seconds = time.monotonic() - added
            time.sleep(20)  # four more automation ticks: no second build may follow

            runs = instance.get_runs(filters=dg.RunsFilter(job_name="evaluate_model",
                                                           tags={"cultivar/reason":
                                                                 "new in registry"}))
            assert sorted(r.tags["cultivar/model"] for r in runs) == sorted(NEW)
            assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
            finished = max(instance.get_run_record_by_id(r.run_id).end_time for r in runs)
            sites = _materialisations(instance, "site", after=finished)
            assert len(sites) == 1  # once for the batch, not once per model
            [site_run] = {r.run_id for r in sites}
            automated = instance.get_run_by_id(site_run)
            assert automated.tags.get("dagster/from_automation_condition") == "true"
            # the results first, in one run of their own
            [results_run] = {r.run_id for r in _materialisations(instance, "leaderboard",
                                                                 after=finished)}
            for key in ("model_results", "error_analysis", "charts"):  # followed, in that run
                assert [r.run_id for r in _materialisations(instance, key, after=finished)] == [
                    results_run], key
            # then the new models' parts (theirs alone), then the site, which made none itself
            parts = _materialisations(instance, "model_site", after=finished)
            assert sorted(r.asset_materialization.partition for r in parts) == sorted(NEW)
            part_runs = {r.run_id for r in parts}
            assert not part_runs & {results_run, site_run} and results_run != site_run
            made_here = sites[0].asset_materialization.metadata["models_made_here"].value
            assert made_here == []
            # the dataset folder holds no scores (its input, test_sets, did not change) and no
            # push is configured: the automation launched nothing for either
            assert _materialisations(instance, "hf_dataset_folder", after=finished) == []
            assert _materialisations(instance, "hf_dataset_push", after=finished) == []
            launched = {r.run_id for r in instance.get_runs()
                        if r.tags.get("cultivar/entry") != "cli"}  # not the first cultivar run
            # nothing else launched
            assert launched == {r.run_id for r in runs} | {results_run, site_run} | part_runs
            print(f"new models on the site {seconds:.0f} s after the registry edit")
    finally:
        stop_group(daemon.pid, grace=30, child=daemon)
        log.close()
    assert daemon.returncode is not None

