"""Two pipeline runs on one database, interleaved: run A (settings v2) pauses right
after writing its translations, run B (settings v3) runs to the end meanwhile, then A goes on.
A run prints only what it computed or verified: a write by another process during a run stops
it before it prints results. Real runs in real processes (tests/concurrent_pipeline.py: Dagster
in process, the demo data as a local dataset, the copy baseline); the two settings differ in the
model's registry entry (its family), which lands in ``raw.models`` and on the leaderboard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from conftest import COPY_ENTRY, write_models_file

from cultivar_assets.data.sources import DataConfig, demo_dataset_dir
from cultivar_assets.metrics.metric_config import MetricConfig
from cultivar_assets.settings import Settings
from cultivar_assets.store.database import Store

TESTS = Path(__file__).resolve().parent
MODEL_STAGE = "model copy-source-baseline"

pytestmark = [pytest.mark.slow, pytest.mark.dagster_instances]


def _settings(tmp_path: Path, version: str) -> Settings:
    data = tmp_path / "data"
    if not data.exists():
        shutil.copytree(demo_dataset_dir(), data)
    models = write_models_file(tmp_path / f"models-{version}.yaml",
                               [{**COPY_ENTRY, "family": f"Family {version}"}])
    return Settings(database=str(tmp_path / "shared.duckdb"), models_file=str(models),
                    models=["copy-source-baseline"],
                    data=DataConfig(kind="local", cultivar_path=str(data)),
                    metrics=MetricConfig(bleu_tokenize="13a", bootstrap_replicates=50))


def _start(settings: Settings, dagster: Path, pause: Path | None = None,
           where: str = "translations") -> subprocess.Popen:
    """A pipeline run in a new process (the Dagster instance in ``dagster``, the shared
    CULTIVAR_HOME); with ``pause``, pausing at ``where`` (tests/concurrent_pipeline.py)."""
    command = [sys.executable, str(TESTS / "concurrent_pipeline.py"),
               settings.model_dump_json()] + ([str(pause), where] if pause else [])
    env = {**os.environ, "DAGSTER_HOME": str(dagster), "PYTHONPATH": str(TESTS.parent)}
    dagster.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _finish(process: subprocess.Popen) -> tuple[int, str]:
    out, _ = process.communicate(timeout=600)
    return process.returncode, out


def test_a_run_interleaved_with_another_prints_no_results(tmp_path, isolated_home):
    v2, v3 = _settings(tmp_path, "v2"), _settings(tmp_path, "v3")
    pause = tmp_path / "pause"
    pause.mkdir()
    a = _start(v2, tmp_path / "dagster-a", pause)
    deadline = time.monotonic() + 300
    while not (pause / "paused").exists():
        assert a.poll() is None, _finish(a)[1][-3000:]
        assert time.monotonic() < deadline, "run A never reached its translations"
        time.sleep(0.1)

    code, said_b = _finish(_start(v3, tmp_path / "dagster-b"))  # B runs to the end meanwhile
    assert code == 0, said_b[-3000:]
    (pause / "release").touch()
    code, said_a = _finish(a)

    # B wrote during A's run: A says so, shows no results, exits 1
    assert code == 1, said_a[-3000:]
    # wording is the interface: docs/writers-and-disk-full.md quotes this line
    assert "another process wrote to the database" in said_a
    assert "Family v" not in said_a.split("error:")[0]  # no leaderboard was printed

    # the next v2 run, in an instance of its own: every asset is missing there, so it runs
    code, said_c = _finish(_start(v2, tmp_path / "dagster-c"))
    assert code == 0, said_c[-3000:]
    assert said_c.split("fresh: ")[-1].splitlines()[0] == "[]", said_c
    assert {r["family"] for r in Store(v2.database_path).query("leaderboard")} == {"Family v2"}
    with duckdb.connect(str(v2.database_path), read_only=True) as con:
        assert con.execute("SELECT DISTINCT family FROM models").fetchall() == [("Family v2",)]

    # and a run after that in the same instance finds every asset fresh
    code, said_d = _finish(_start(v2, tmp_path / "dagster-c"))
    assert code == 0 and MODEL_STAGE in said_d.split("fresh: ")[-1], said_d[-3000:]


def _paused(process: subprocess.Popen, pause: Path) -> None:
    deadline = time.monotonic() + 300
    while not (pause / "paused").exists():
        assert process.poll() is None, _finish(process)[1][-3000:]
        assert time.monotonic() < deadline, "the run never reached its pause"
        time.sleep(0.1)


def test_a_run_paused_after_its_model_run_shows_no_results_of_another_run(tmp_path,
                                                                          isolated_home):
    """A (v2) stops after its model's run, B (v3) runs to the end meanwhile and replaces the
    model's rows; A then goes on: it must not print B's results."""
    v2, v3 = _settings(tmp_path, "v2"), _settings(tmp_path, "v3")
    pause = tmp_path / "pause"
    pause.mkdir()
    a = _start(v2, tmp_path / "dagster-a", pause, "model-run")
    _paused(a, pause)
    code, said_b = _finish(_start(v3, tmp_path / "dagster-b"))
    assert code == 0 and "Family v3" in said_b, said_b[-3000:]
    (pause / "release").touch()
    code, said_a = _finish(a)
    assert code == 1, said_a[-3000:]
    # wording is the interface: docs/writers-and-disk-full.md quotes this line
    assert "another process wrote to the database" in said_a, said_a
    assert "Family v" not in said_a.split("error:")[0]  # no leaderboard was printed


def test_runs_of_the_same_settings_started_together_take_turns_and_all_complete(
        tmp_path, isolated_home):
    """Four runs of one settings, one new Dagster instance, started at once: they take turns;
    the first materialises everything, the others find it fresh."""
    v2 = _settings(tmp_path, "v2")
    runs = [_start(v2, tmp_path / "dagster") for _ in range(4)]
    outcomes = [_finish(run) for run in runs]
    assert [code for code, _ in outcomes] == [0, 0, 0, 0], [out[-2000:] for _, out in outcomes]
    waited = [out for _, out in outcomes if "waiting for the run started at " in out]
    assert len(waited) >= 1, [out[-2000:] for _, out in outcomes]
    assert all("finished" in out for _, out in outcomes)
    # the first to get its turn materialised everything; the others found it all fresh
    fresh = [out.split("fresh: ")[-1].splitlines()[0] for _, out in outcomes]
    assert fresh.count("[]") == 1, fresh
    for _, out in outcomes:  # each printed the leaderboard it computed or verified
        assert "leaderboard: copy-source-baseline (Family v2)" in out
    assert {r["family"] for r in Store(v2.database_path).query("leaderboard")} == {"Family v2"}
