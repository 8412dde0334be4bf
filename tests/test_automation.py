"""The registry sensor, the nightly schedule and the leaderboard's automation condition."""

from __future__ import annotations

import json

import dagster as dg
import pytest
import yaml
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.automation import (
    model_registry_sensor,
    nightly_reevaluation,
    run_tags,
)
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.models import load_models
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

pytestmark = pytest.mark.dagster_instances


def llm_entry(model_id: str, revision: str = "r1", **extra) -> dict:
    entry = {"id": model_id, "hf_id": f"org/{model_id}", "revision": revision, "type": "LLM",
             "family": "Test", "engine": "transformers", "prompt_style": "chat-instruction",
             "suites": ["watched"]}
    entry.update(extra)
    return entry


@pytest.fixture
def registry(tmp_path):
    path = tmp_path / "models.yaml"
    write_models_file(path, [llm_entry("alpha"), llm_entry("beta"),
                             {**COPY_ENTRY, "suites": ["watched"]}])
    return path


def _settings(tmp_path, registry) -> Settings:
    return Settings(database=str(tmp_path / "db.duckdb"), models_file=str(registry),
                    models=["suite:watched"], metrics=MetricConfig(bleu_tokenize="13a"))


def _defs(settings: Settings) -> dg.Definitions:
    return dg.Definitions(assets=ASSETS, jobs=JOBS, sensors=[model_registry_sensor],
                          schedules=[nightly_reevaluation],
                          resources=resources_from_settings(settings))


def _tick(instance, defs, cursor):
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                                      resources=defs.resources)
    result = model_registry_sensor(context)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def _edit(registry, change) -> None:
    data = yaml.safe_load(registry.read_text())
    change(data["models"])
    registry.write_text(yaml.safe_dump(data, sort_keys=False))


def test_sensor_runs_only_new_or_changed_models(tmp_path, registry):
    defs = _defs(_settings(tmp_path, registry))
    with dg.instance_for_test() as instance:
        first = _tick(instance, defs, None)  # no database yet: none of them was evaluated
        assert sorted(r.partition_key for r in first.run_requests) == [
            "alpha", "beta", "copy-source-baseline"]
        assert {r.tags["cultivar/reason"] for r in first.run_requests} == {"not evaluated yet"}
        assert set(instance.get_dynamic_partitions("models")) == {
            "alpha", "beta", "copy-source-baseline"}
        cursor = first.cursor
        assert set(json.loads(cursor)) == {"alpha", "beta", "copy-source-baseline"}

        unchanged = _tick(instance, defs, cursor)
        assert unchanged.run_requests == []

        _edit(registry, lambda models: models.append(llm_entry("gamma")))
        added = _tick(instance, defs, unchanged.cursor)
        assert [r.partition_key for r in added.run_requests] == ["gamma"]
        assert "gamma" in instance.get_dynamic_partitions("models")
        assert added.run_requests[0].tags["cultivar/reason"] == "new in registry"

        def bump(models):
            next(m for m in models if m["id"] == "beta")["revision"] = "r2"

        _edit(registry, bump)
        changed = _tick(instance, defs, added.cursor)
        assert [r.partition_key for r in changed.run_requests] == ["beta"]
        assert changed.run_requests[0].tags["cultivar/reason"] == "changed in registry"

        def restyle(models):
            next(m for m in models if m["id"] == "alpha")["prompt_style"] = "hy-mt"

        _edit(registry, restyle)
        restyled = _tick(instance, defs, changed.cursor)
        assert [r.partition_key for r in restyled.run_requests] == ["alpha"]
        assert _tick(instance, defs, restyled.cursor).run_requests == []


def test_the_first_tick_runs_what_is_registered_and_not_evaluated(copy_baseline_home,
                                                                  tmp_path):
    """A model added while the sensor was off gets its run when the sensor starts;
    an evaluated one does not (no flood of runs). In a copy of the session's finished run
    (tests/pipeline_helpers.py): its database holds the copy baseline's run that model_results
    loaded."""
    registry = write_models_file(tmp_path / "models.yaml", [
        {**COPY_ENTRY, "suites": ["watched"]},
        {**COPY_ENTRY, "id": "copy-two", "suites": ["watched"]},  # added while it was off
    ])
    settings = copy_baseline_home.settings().model_copy(update={
        "models_file": str(registry), "models": ["suite:watched"]})
    defs = _defs(settings)
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        # the copy's database holds the copy baseline's run that model_results loaded, only
        assert {row["model_id"] for row in Store(settings.database_path).query(
            "leaderboard")} == {"copy-source-baseline"}
        first = _tick(instance, defs, None)
        assert [r.partition_key for r in first.run_requests] == ["copy-two"]
        assert first.run_requests[0].tags["cultivar/reason"] == "not evaluated yet"
        assert _tick(instance, defs, first.cursor).run_requests == []


def test_run_keys_differ_per_fingerprint(tmp_path, registry):
    defs = _defs(_settings(tmp_path, registry))
    with dg.instance_for_test() as instance:
        cursor = _tick(instance, defs, None).cursor
        _edit(registry, lambda models: models.append(llm_entry("gamma")))
        key_one = _tick(instance, defs, cursor).run_requests[0].run_key
        _edit(registry, lambda models: models[-1].update(revision="r9"))
        key_two = _tick(instance, defs, cursor).run_requests[0].run_key
        assert key_one != key_two


def test_gpu_tags_follow_tensor_parallelism(tmp_path):
    path = write_models_file(tmp_path / "m.yaml", [
        llm_entry("big", engine="vllm", engine_options={"tensor_parallel_size": 2}),
        llm_entry("small", engine="vllm"),
        {**COPY_ENTRY},
    ])
    registry = load_models(path)
    big = run_tags(registry.get("big"))
    assert big["cultivar/gpus"] == "2"
    limits = json.loads(big["dagster-k8s/config"])["container_config"]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "2"}
    assert run_tags(registry.get("small"))["cultivar/gpus"] == "1"
    copy = run_tags(registry.get("copy-source-baseline"))
    assert copy["cultivar/gpus"] == "0" and "cultivar/gpu-run" not in copy
    # its Kubernetes config gives it the volumes of a model's run, and no GPU
    assert "resources" not in json.loads(copy["dagster-k8s/config"])["container_config"]


def test_nightly_schedule_reruns_models_changed_since_their_run(copy_baseline_home, tmp_path):
    """In a copy of the session's finished run (tests/pipeline_helpers.py), which evaluated the
    copy baseline; a second model is evaluated in it."""
    registry = write_models_file(tmp_path / "models.yaml", [
        {**COPY_ENTRY, "suites": ["watched"]},
        {**COPY_ENTRY, "id": "copy-two", "suites": ["watched"]},
    ])
    settings = copy_baseline_home.settings().model_copy(update={
        "models_file": str(registry), "models": ["suite:watched"]})
    resources = resources_from_settings(settings)
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        instance.add_dynamic_partitions("models", ["copy-two"])
        assert dg.materialize(ASSETS, selection=["translations", "scores"],
                              partition_key="copy-two", resources=resources,
                              instance=instance).success
        assert dg.materialize(ASSETS, selection=["model_results"], resources=resources,
                              instance=instance).success
        context = dg.build_schedule_context(instance=instance, resources=resources)
        assert isinstance(nightly_reevaluation(context), dg.SkipReason)

        _edit(registry, lambda models: models[1].update(engine_options={"max_new_tokens": 3}))
        context = dg.build_schedule_context(instance=instance, resources=resources)
        requests = nightly_reevaluation(context)
        assert [r.partition_key for r in requests] == ["copy-two"]


def test_leaderboard_is_requested_after_new_scores(copy_baseline_home):
    """In a copy of the session's finished run (tests/pipeline_helpers.py): its instance holds
    the copy baseline's scores, the models' rows and the leaderboard."""
    resources = resources_from_settings(copy_baseline_home.settings())
    defs = dg.Definitions(assets=ASSETS, resources=resources)
    with dg.DagsterInstance.from_config(str(copy_baseline_home.dagster_home)) as instance:
        for key in ("model_results", "leaderboard"):  # materialised after the scores, no tick
            assert instance.get_latest_materialization_event(dg.AssetKey(key)) is not None
        # the loader of the new scores and the leaderboard after it, in the same tick
        selection = dg.AssetSelection.assets("model_results", "leaderboard")
        quiet = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                  asset_selection=selection)
        assert quiet.total_requested == 0
        assert dg.materialize(ASSETS, selection=["scores"], partition_key="copy-source-baseline",
                              resources=resources, instance=instance).success
        after = dg.evaluate_automation_conditions(defs=defs, instance=instance,
                                                  asset_selection=selection,
                                                  cursor=quiet.cursor)
        assert after.total_requested == 2


def test_a_changed_entry_says_which_fields_changed(tmp_path, registry):
    """The cursor held only hashes: which field of an entry changed could not be recovered."""
    defs = _defs(_settings(tmp_path, registry))
    with dg.instance_for_test() as instance:
        cursor = _tick(instance, defs, None).cursor
        assert json.loads(cursor)["beta"]["entry"]["id"] == "beta"  # the entry itself is kept

        def change(models):
            beta = next(m for m in models if m["id"] == "beta")
            beta["revision"] = "r2"
            beta.setdefault("engine_options", {})["max_new_tokens"] = 64

        _edit(registry, change)
        [request] = _tick(instance, defs, cursor).run_requests
        changed = request.tags["cultivar/changed"]
        assert 'revision: "–" → "r2"' in changed or '→ "r2"' in changed
        assert "engine_options.max_new_tokens" in changed and "→ 64" in changed


def test_a_cursor_of_another_shape_is_refused_naming_the_entry(tmp_path, registry):
    defs = _defs(_settings(tmp_path, registry))
    with dg.instance_for_test() as instance:
        current = json.loads(_tick(instance, defs, None).cursor)
        fingerprints_only = {model_id: value["fingerprint"] for model_id, value in current.items()}
        with pytest.raises(Exception, match=r"cursor: .*'alpha'.*'[0-9a-f]+'"):
            _tick(instance, defs, json.dumps(fingerprints_only))


def test_the_sensor_interval_comes_from_the_settings(tmp_path, monkeypatch):
    import importlib

    config = tmp_path / "cultivar.yaml"
    config.write_text("automation: {registry_sensor_interval_seconds: 90}\n", "utf-8")
    monkeypatch.setenv("CULTIVAR_CONFIG", str(config))
    import cultivar_assets.definitions as definitions

    try:
        defs = importlib.reload(definitions).defs
        sensor = defs.resolve_sensor_def("model_registry_sensor")
        assert sensor.minimum_interval_seconds == 90 and "every 90 s" in sensor.description
    finally:  # the module as the other tests know it
        monkeypatch.delenv("CULTIVAR_CONFIG")
        importlib.reload(definitions)


# --- run failures: recorded, reported, shown -------------------------------------------------


def _failed_run(instance, message="the GPU ran out of memory\nTraceback (most recent call last)"):
    @dg.asset(name="translations_stand_in")
    def failing():
        raise RuntimeError(message)

    result = dg.materialize([failing], instance=instance, raise_on_error=False,
                            tags={"cultivar/model": "beta"})
    assert not result.success
    event = next(e for e in result.all_events if e.event_type_value == "PIPELINE_FAILURE")
    return instance.get_run_by_id(result.run_id), event


def _sense_failure(instance, run, event, settings, config):
    from cultivar_assets.automation import build_run_failure_sensor

    sensor = build_run_failure_sensor(config)
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name, dagster_event=event, dagster_instance=instance, dagster_run=run,
        resources=resources_from_settings(settings)).for_run_failure()
    sensor(context)


def test_a_failed_run_is_recorded_and_reported(tmp_path, registry):
    """Nothing recorded failures: a model whose run failed looked like one never run."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from cultivar_assets.settings import AutomationConfig
    from cultivar_assets.store.database import Store

    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings = _settings(tmp_path, registry)
    config = AutomationConfig(failure_webhook=f"http://127.0.0.1:{server.server_port}/hook",
                              failure_log=str(tmp_path / "alerts" / "failures.jsonl"))
    try:
        with dg.instance_for_test() as instance:
            run, event = _failed_run(instance)
            _sense_failure(instance, run, event, settings, config)
    finally:
        server.shutdown()
    [row] = Store(settings.database_path).query("failed_models")
    assert (row["model_id"], row["run_id"], row["step"]) == ("beta", run.run_id,
                                                             "translations_stand_in")
    assert row["error"] == "RuntimeError: the GPU ran out of memory"
    [line] = (tmp_path / "alerts" / "failures.jsonl").read_text().splitlines()
    assert json.loads(line)["run_id"] == run.run_id and received[0]["model_id"] == "beta"
    assert received[0]["error"] == row["error"] and received[0]["failed_at"].endswith("Z")


def test_an_unreachable_webhook_keeps_the_record(tmp_path, registry):
    from cultivar_assets.settings import AutomationConfig
    from cultivar_assets.store.database import Store

    settings = _settings(tmp_path, registry)
    with dg.instance_for_test() as instance:
        run, event = _failed_run(instance)
        _sense_failure(instance, run, event, settings,
                       AutomationConfig(failure_webhook="http://127.0.0.1:9/nobody"))
    assert [r["run_id"] for r in Store(settings.database_path).query("failed_models")] == [
        run.run_id]
