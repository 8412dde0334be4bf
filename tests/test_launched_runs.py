"""Runs that Dagster launches itself (the UI, a sensor, a schedule) keep the step records, so that
`cultivar run` and they do not undo each other's work: a run that materialises a whole step
records it as the runner would, a partial or failed run forgets it, the steps reading it run
again; and a step that runs again says which input changed. Real pipeline runs and real Dagster
runs of the project's jobs (in process, on the instance the runner uses)."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest
from conftest import COPY_ENTRY, copy_baseline_settings, write_models_file

from cultivar_assets.assets.graph import ASSETS, JOBS
from cultivar_assets.construction.config import demo_construction
from cultivar_assets.data.sources import DataConfig
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.runner import run_pipeline
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store
from cultivar_assets.store.step_records import read_step_records

pytestmark = pytest.mark.dagster_instances

MODEL_ID = "copy-source-baseline"
SELECTION, TEST_SETS = "selection", "test sets"
MODEL, RESULTS = f"model {MODEL_ID}", "results, dataset folder and site"


@pytest.fixture
def settings(tmp_path, monkeypatch, isolated_home) -> Settings:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return copy_baseline_settings(tmp_path)


def _pipeline(settings: Settings) -> tuple[list[str], list[str]]:
    said: list[str] = []
    result = run_pipeline(settings, say=said.append)
    return result.reused, said


def _launch(settings: Settings, tmp_path: Path, job: str, partition: str | None = None,
            assets: list[str] | None = None) -> dg.ExecuteInProcessResult:
    """A run of ``job`` as the UI launches it: the definitions' job and resources (made from the
    settings as `definitions.py` makes them), on the runner's Dagster instance, not inside a
    pipeline run."""
    definitions = dg.Definitions(assets=ASSETS, jobs=JOBS,
                                 resources=resources_from_settings(settings))
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        return definitions.get_job_def(job).execute_in_process(
            instance=instance, partition_key=partition, raise_on_error=False,
            asset_selection=[dg.AssetKey(a) for a in assets] if assets else None)


def _tokens(settings: Settings) -> dict[str, str]:
    return {key: record.token for key, record in read_step_records(
        Store(settings.database_path)).items()}


def test_a_launched_run_of_a_whole_step_is_reused_and_a_partial_or_failed_one_is_not(
        settings, tmp_path, monkeypatch):
    assert _pipeline(settings)[0] == []
    first = _tokens(settings)
    key = f"model:{MODEL_ID}"

    result = _launch(settings, tmp_path, "evaluate_model", MODEL_ID)
    assert result.success
    records = read_step_records(Store(settings.database_path))
    assert records[key].token != first[key] and records[key].run_id == result.run_id
    assert {k: r.token for k, r in records.items() if k != key} == {
        k: t for k, t in first.items() if k != key}  # the steps it did not touch keep theirs

    reused, said = _pipeline(settings)
    assert reused == [SELECTION, TEST_SETS, MODEL]  # the model's step is not redone ...
    assert any(line.strip().startswith("runs again since its run of ") and line.endswith(
        f": step {key} ran again (its outputs changed)") for line in said)  # ... its reader is
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS, MODEL, RESULTS]

    # a run of part of the step: its record is forgotten, the step and its reader run again
    assert _launch(settings, tmp_path, "evaluate_model", MODEL_ID, ["scores"]).success
    assert set(_tokens(settings)) == {"selection", "test_sets", "results"}
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS]

    # a run that fails: the same
    import cultivar_assets.assets.model_assets as model_assets

    def failing(*args, **kwargs):
        raise RuntimeError("scoring failed on purpose")

    with monkeypatch.context() as patched:
        patched.setattr(model_assets, "compute_scores", failing)
        assert not _launch(settings, tmp_path, "evaluate_model", MODEL_ID).success
    assert key not in _tokens(settings)
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS]

    # refresh_results is the whole results step: recorded, and the next run redoes nothing
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS, MODEL, RESULTS]
    result = _launch(settings, tmp_path, "refresh_results")
    assert result.success
    assert read_step_records(Store(settings.database_path))["results"].run_id == result.run_id
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS, MODEL, RESULTS]

    # a setting that changed is named, with its old and new value
    changed = settings.model_copy(update={"metrics": settings.metrics.model_copy(
        update={"bootstrap_replicates": 60})})
    reused, said = _pipeline(changed)
    assert reused == [SELECTION, TEST_SETS]
    assert any(line.endswith(": setting metrics.bootstrap_replicates changed (50 → 60)")
               for line in said), said


@pytest.fixture
def built(tmp_path, monkeypatch, isolated_home) -> Settings:
    """The demo's closed loop with the copy baseline, its annotation files copied to tmp."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    construction = demo_construction()
    folder = tmp_path / "annotations"
    shutil.copytree(construction.annotation.folder_path(), folder)
    construction.annotation = construction.annotation.model_copy(update={"folder": str(folder)})
    models = write_models_file(tmp_path / "models.yaml", [COPY_ENTRY])
    return Settings(database=str(tmp_path / "demo.duckdb"), data=DataConfig(kind="built"),
                    construction=construction, models_file=str(models), models=[MODEL_ID],
                    metrics=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50))


@pytest.mark.slow
def test_one_locales_annotation_file_runs_its_build_step_and_what_reads_it(built, tmp_path):
    _pipeline(built)
    first = _tokens(built)
    locales = built.construction.localisation.locale_keys()
    (changed,) = Path(built.construction.annotation.folder).glob("spa_Latn_Spain-*.json")
    changed.write_bytes(changed.read_bytes() + b"\n")  # the same annotations, another file

    reused, said = _pipeline(built)
    assert reused == [SELECTION]
    for locale in locales:
        if locale != "spa_Latn_Spain":
            assert any(line.strip().startswith(f"{locale}: unchanged since its run of ")
                       for line in said)
    (line,) = [line for line in said if line.strip().startswith("spa_Latn_Spain: runs again")]
    assert line.endswith(f": annotation file {changed.name} changed"), line
    now = _tokens(built)
    ran = {key for key in first if now[key] != first[key]}
    assert ran == {"build:spa_Latn_Spain", "dataset", "test_sets", f"model:{MODEL_ID}",
                   "results"}
    assert any(line.endswith(": step build:spa_Latn_Spain ran again (its outputs changed)")
               for line in said)

    # a launched run of build_benchmark for one locale records the selection and that locale's
    # build; the other locales' builds read the selection, which ran again: they run again
    result = _launch(built, tmp_path, "build_benchmark", "hin_Deva_US")
    assert result.success
    records = read_step_records(Store(built.database_path))
    assert records["selection"].run_id == records["build:hin_Deva_US"].run_id == result.run_id
    said = _pipeline(built)[1]
    assert any(line.strip().startswith("unchanged since its run of ") for line in said[:3])
    assert any(line.strip().startswith("hin_Deva_US: unchanged since its run of ")
               for line in said)
    assert any(line.strip().startswith("spa_Latn_Spain: runs again since its run of ") and
               line.endswith(": step selection ran again (its outputs changed)") for line in said)


@pytest.mark.slow
def test_a_run_on_the_instance_in_subprocesses_as_the_ui_launches_it_is_reused(
        settings, tmp_path, monkeypatch):
    """The multiprocess executor, as a run the UI launches: each asset in its own process, which
    loads the definitions from the settings file."""
    import sys

    import yaml

    config = tmp_path / "cultivar.yaml"
    config.write_text(yaml.safe_dump(settings.model_dump(mode="json")), "utf-8")
    monkeypatch.setenv("CULTIVAR_CONFIG", str(config))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    from launched_job import evaluate_model_job

    assert _pipeline(settings)[0] == []
    first = _tokens(settings)
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        result = dg.execute_job(dg.reconstructable(evaluate_model_job), instance=instance,
                                tags={"dagster/partition": MODEL_ID})
        assert result.success, sys.stderr
        run_id = result.run_id
    records = read_step_records(Store(settings.database_path))
    key = f"model:{MODEL_ID}"
    assert records[key].run_id == run_id and records[key].token != first[key]
    assert _pipeline(settings)[0] == [SELECTION, TEST_SETS, MODEL]
