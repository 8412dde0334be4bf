"""Kill a real run (SIGKILL) inside every DuckDB write, then resume it.

For each write of a small real evaluation (tests/fault_pipeline.py), a child process kills itself
while that write's transaction is open. The database must then hold exactly what it held before
that write (a reader sees the old rows or the new ones, never a mix), and a resumed run must end
with exactly the rows of a clean run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from database_state import state

TESTS = Path(__file__).resolve().parent


def child(tmp_path: Path, database: Path, kill: int | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, str(TESTS / "fault_pipeline.py"), str(database),
               str(tmp_path / "child-cache")]
    if kill is not None:
        command.append(str(kill))
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent)})


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """The clean run in this process: the state after each write and where its statements are."""
    sys.path.insert(0, str(TESTS))
    import fault_pipeline

    from cultivar_assets.store import database

    tmp = tmp_path_factory.mktemp("clean")
    db = tmp / "clean.duckdb"
    calls = [0]
    writes: list[tuple[int, int]] = []  # (first statement number, statements) of each write
    states = []
    original_run, original_write = database._run, database.Store.write

    def counting_run(con, statement, params):
        calls[0] += 1
        return original_run(con, statement, params)

    def recording_write(self, steps):
        first = calls[0] + 1
        original_write(self, steps)
        writes.append((first, calls[0] - first + 1))
        states.append(state(db))

    database._run, database.Store.write = counting_run, recording_write
    try:
        fault_pipeline.run(db, tmp / "cache")
    finally:
        database._run, database.Store.write = original_run, original_write
    return writes, states


@pytest.mark.slow
def test_a_run_killed_in_any_write_leaves_the_old_rows_and_resumes_to_the_clean_result(
        tmp_path, clean_run):
    writes, states = clean_run
    assert len(writes) >= 6  # dataset, two models' translations, two scorings, aggregates, ...
    kill_points = 0
    for index, (first, count) in enumerate(writes):
        # before the first statement, inside the transaction, and before its last statement
        for kill_at in sorted({first, min(first + 1, first + count - 1), first + count - 1}):
            database = tmp_path / f"killed-{kill_at}.duckdb"
            killed = child(tmp_path, database, kill=kill_at)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
            if index == 0:  # killed in the very first write: nothing at all was written
                assert all(not rows for rows in state(database).values())
            else:
                assert state(database) == states[index - 1], f"statement {kill_at}: partial"
            resumed = child(tmp_path, database)
            assert resumed.returncode == 0, resumed.stderr[-2000:]
            assert state(database) == states[-1], f"resuming after a kill at {kill_at}"
            kill_points += 1
    print(f"{kill_points} kill points in {len(writes)} writes: each left the previous state "
          "and resumed to the clean run's rows")
