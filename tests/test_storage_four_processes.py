"""Four model partitions started at the same moment as separate processes, each
with its own CULTIVAR_HOME and Dagster home, standing for four machines that share only the
storage root; then the loading asset ``model_results`` on the machine that holds the database.
The database equals a serial run's (volatile columns aside, tests/database_state.py), and no
partition opened a database file: none exists in their homes, their runs overlapped in time, and
their logs say they recorded nothing in a database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
import yaml
from conftest import COPY_ENTRY
from database_state import NOT_RESULTS, state

from cultivar_assets.assets.graph import ASSETS
from cultivar_assets.resources import resources_from_settings
from cultivar_assets.settings import load_settings

MODELS = [f"copy-{n}" for n in range(1, 5)]
ENTRY = Path(__file__).with_name("storage_partition.py")


def _config(folder: Path, root: Path, models_file: Path) -> Path:
    """A settings file whose database and output folders lie in ``folder``, storage root
    ``root``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "cultivar.yaml"
    config.write_text(yaml.safe_dump({
        "database": str(folder / "db" / "results.duckdb"), "models_file": str(models_file),
        "models": MODELS, "data": {"kind": "demo"}, "storage": {"root": str(root)},
        "metrics": {"bleu_tokenize": "13a", "bootstrap_replicates": 50},
        "site": {"output_dir": str(folder / "site"), "charts_dir": str(folder / "charts"),
                 "query_page": "off"},
        "publish": {"folder": str(folder / "hub")}}), "utf-8")
    return config


def _materialise(config: Path, selection: list[str], partition: str | None = None) -> None:
    settings = load_settings(config)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("models", MODELS)
        result = dg.materialize(ASSETS, selection=selection, partition_key=partition,
                                resources=resources_from_settings(settings), instance=instance)
        assert result.success


@pytest.mark.slow  # 69 to 124 s on two shared cores: five processes import Dagster
@pytest.mark.dagster_instances
def test_four_partitions_at_once_on_four_machines_then_one_loader(tmp_path, monkeypatch):
    models_file = tmp_path / "models.yaml"
    models_file.write_text(yaml.safe_dump({"models": [
        {**COPY_ENTRY, "id": model} for model in MODELS]}), "utf-8")

    # the serial run: one machine, one home, the partitions one after the other
    serial = _config(tmp_path / "serial", tmp_path / "serial-storage", models_file)
    _materialise(serial, ["test_sets"])
    for model in MODELS:
        _materialise(serial, ["translations", "scores"], model)
    _materialise(serial, ["model_results"])

    # the cluster: the database's machine writes the test sets (to the database and the shared
    # root), four machines run one partition each at the same moment, then the loader
    shared = tmp_path / "shared-storage"
    main = _config(tmp_path / "main", shared, models_file)
    _materialise(main, ["test_sets"])
    go = tmp_path / "go"  # created once every process has imported Dagster and the project
    processes, outputs, homes = [], [], []
    for model in MODELS:
        home = tmp_path / f"machine-{model}"
        (home / "dagster").mkdir(parents=True)
        homes.append(home)
        outputs.append(home / "run.json")
        env = {**os.environ, "CULTIVAR_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
               "CULTIVAR_CONFIG": str(_config(home, shared, models_file)),
               "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]),
                                              os.environ.get("PYTHONPATH", "")])}
        processes.append(subprocess.Popen(
            [sys.executable, str(ENTRY), model, str(go), str(outputs[-1])], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + 300
    while not all(Path(f"{out}.ready").exists() for out in outputs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in processes)
        time.sleep(0.05)
    go.touch()
    for process in processes:
        said, _ = process.communicate(timeout=300)
        assert process.returncode == 0, said[-3000:]
    runs = [json.loads(path.read_text()) for path in outputs]
    assert all(run["success"] for run in runs)
    # the four runs were in progress at the same time: none waited for another
    assert max(run["began"] for run in runs) < min(run["ended"] for run in runs), runs
    for home, run in zip(homes, runs, strict=True):
        assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*.duckdb*")) == []
        assert not (home / "db").exists()
        assert not any("waiting" in m.lower() for m in run["messages"])
    assert sorted(p.name for p in (shared / "models").iterdir()) == MODELS

    _materialise(main, ["model_results"])
    parallel_db = tmp_path / "main" / "db" / "results.duckdb"
    serial_db = tmp_path / "serial" / "db" / "results.duckdb"
    # the step machinery's records (run ids, code digests) are not results, as for the demo's
    # reference (tests/database_state.py)
    got, want = ({table: rows for table, rows in state(path).items() if table not in NOT_RESULTS}
                 for path in (parallel_db, serial_db))
    assert {r[0] for r in got["scores"]} == set(MODELS)
    assert got == want


def test_model_results_alone_writes_models_rows_and_its_pool_runs_one_at_a_time(tmp_path,
                                                                               monkeypatch):
    from cultivar_assets.runner.instance import dagster_home_dir

    pools = {asset.key.to_user_string(): asset.op.pool for asset in ASSETS
             if asset.is_executable and asset.op.pool}
    assert pools == {"model_results": "cultivar_database"}
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    with dg.DagsterInstance.from_config(dagster_home_dir()) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
