"""The local Dagster instance: set up by one process at a time, a set-up that a
killed process left half done completed by the next start, and runs of the same settings taking
turns (cultivar_assets/runner/instance.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cultivar_assets.runner.instance import (
    INSTANCE_READY,
    local_instance,
    settings_turn,
    turn_lock_path,
)
from cultivar_assets.settings import Settings

pytestmark = pytest.mark.dagster_instances

ROOT = Path(__file__).resolve().parent.parent

def _half_set_up(home: Path) -> None:
    """The storage as a process killed during Dagster's set-up leaves it: the tables of the run
    and event-log storages partly created, no alembic revision stamped."""
    import sqlalchemy as db
    from dagster._core.storage.event_log.schema import SqlEventLogStorageMetadata
    from dagster._core.storage.runs.schema import RunStorageSqlMetadata

    for path, meta in ((home / "history" / "runs" / "index.db", SqlEventLogStorageMetadata),
                       (home / "history" / "runs.db", RunStorageSqlMetadata)):
        engine = db.create_engine(f"sqlite:///{path}")
        meta.create_all(engine, tables=[t for t in meta.sorted_tables
                                        if t.name not in ("dynamic_partitions", "instance_info")])
        engine.dispose()


# one process opening the instance, started with others and released at the same moment (it
# says that its imports are done with the file ready-<pid> beside ``go``)
OPEN_AT_ONCE = """
import os, sys, time
import dagster as dg
from cultivar_assets.runner.instance import local_instance
home, go = sys.argv[1:3]
open(os.path.join(os.path.dirname(go), f"ready-{os.getpid()}"), "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
with local_instance(home) as instance:
    instance.add_dynamic_partitions("models", [f"m{os.getpid()}"])
    instance.get_runs(limit=1)
"""


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "dagster"
    (home / "history" / "runs").mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return home


def test_a_half_set_up_instance_is_completed_at_the_next_start(tmp_path):
    import dagster as dg

    home = _home(tmp_path)
    _half_set_up(home)
    with (dg.DagsterInstance.from_config(str(home)) as instance,  # the state of the issue
          pytest.raises(Exception, match="dagster instance migrate")):
        instance.get_dynamic_partitions("models")

    with local_instance(str(home)) as instance:
        instance.add_dynamic_partitions("models", ["m1"])
        assert instance.get_dynamic_partitions("models") == ["m1"]
    assert (home / INSTANCE_READY).read_text() == f"dagster {dg.__version__}\n"


def test_set_ups_started_together_wait_for_the_lock_and_one_sets_up(tmp_path, monkeypatch):
    """Three set-ups of one instance started while its lock is held (threads of one process,
    each its own lock file handle): none is done before the lock is let go, then exactly one
    sets the instance up and the others find it ready. Across processes:
    :func:`test_processes_setting_up_one_instance_at_once_all_succeed` (slow)."""
    import dagster as dg
    from filelock import FileLock

    from cultivar_assets.runner.instance import INSTANCE_LOCK, set_up_instance

    home = _home(tmp_path)
    outcomes: list[bool] = []
    threads = [threading.Thread(target=lambda: outcomes.append(set_up_instance(str(home))))
               for _ in range(3)]
    asked: list[str] = []  # the threads that have asked for the lock
    acquire = FileLock.acquire

    def acquire_said(self, *args, **kwargs):
        if threading.current_thread() in threads:
            asked.append(threading.current_thread().name)
        return acquire(self, *args, **kwargs)

    monkeypatch.setattr(FileLock, "acquire", acquire_said)
    with FileLock(str(home / INSTANCE_LOCK)):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(asked) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # each is in the lock's wait, not before it
        assert len(asked) == 3 and all(thread.is_alive() for thread in threads)
        assert outcomes == [] and not (home / INSTANCE_READY).exists()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes) == [False, False, True]
    assert (home / INSTANCE_READY).read_text() == f"dagster {dg.__version__}\n"
    with local_instance(str(home)) as instance:
        instance.add_dynamic_partitions("models", ["m1"])
        assert instance.get_dynamic_partitions("models") == ["m1"]


@pytest.mark.slow  # four processes; the lock in one process: the test above
def test_processes_setting_up_one_instance_at_once_all_succeed(tmp_path):
    home, go = _home(tmp_path), tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(home), str(go)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for _ in range(4)]
    deadline = time.monotonic() + 300
    while len(list(tmp_path.glob("ready-*"))) < len(processes):  # their imports done
        assert time.monotonic() < deadline and all(p.poll() is None for p in processes), (
            f"{len(list(tmp_path.glob('ready-*')))} of {len(processes)} processes ready; "
            f"exit codes {[p.poll() for p in processes]}")
        time.sleep(0.02)
    go.touch()  # they open the instance together
    outcomes = [(p.wait(timeout=300), p.stdout.read()) for p in processes]
    assert [code for code, _ in outcomes] == [0, 0, 0, 0], [out[-1500:] for _, out in outcomes]
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert len(instance.get_dynamic_partitions("models")) == 4


def _settings(tmp_path: Path, models: list[str]) -> Settings:
    return Settings(database=str(tmp_path / "shared.duckdb"), models=models)


def test_a_run_of_the_same_settings_waits_its_turn_and_says_for_whom(tmp_path):
    first_in, release = threading.Event(), threading.Event()
    said: list[str] = []
    order: list[str] = []

    def first() -> None:
        with settings_turn(_settings(tmp_path, ["copy-source-baseline"]), said.append):
            order.append("first")
            first_in.set()
            release.wait(30)
        order.append("first ended")

    def second() -> None:
        with settings_turn(_settings(tmp_path, ["copy-source-baseline"]), said.append):
            order.append("second")

    one = threading.Thread(target=first)
    one.start()
    assert first_in.wait(30)
    two = threading.Thread(target=second)
    two.start()
    deadline = time.monotonic() + 30
    while not said and time.monotonic() < deadline:
        time.sleep(0.02)
    assert order == ["first"]  # the second waits
    # wording is the interface: docs/writers-and-disk-full.md quotes this line
    assert len(said) == 1 and said[0].startswith("waiting for the run started at ")
    assert f"(pid {os.getpid()}) with the same settings" in said[0]  # wording is the interface
    release.set()
    one.join(30)
    two.join(30)
    assert order == ["first", "first ended", "second"]

    # other settings on the same database: no wait, no line
    with (settings_turn(_settings(tmp_path, ["copy-source-baseline"]), said.append),
          settings_turn(_settings(tmp_path, ["other-model"]), said.append)):
        pass
    assert len(said) == 1
    assert turn_lock_path(_settings(tmp_path, ["a"])) != turn_lock_path(_settings(tmp_path, ["b"]))
