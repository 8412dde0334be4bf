"""A translation run killed mid-way (SIGKILL, a real process kill) resumes without redoing work."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import tiny_entry, write_models_file

from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.engines import engine_registry
from cultivar_assets.engines.base import EngineSettings
from cultivar_assets.engines.fingerprint import run_fingerprint
from cultivar_assets.models import load_models
from cultivar_assets.translation import request_key, translate

WORKER = """
import sys
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.models import load_models
from cultivar_assets.translation import translate
spec = load_models(sys.argv[1]).get("tiny-slow")
test_sets = load_benchmark(DataConfig()).test_sets()[:3]  # 36 segments
translate(spec, test_sets, cache_dir=__import__("pathlib").Path(sys.argv[2]),
          show_progress_bar=False)
print("finished")
"""


def cached_rows(path: Path) -> set[str]:
    if not path.exists():
        return set()
    with sqlite3.connect(path, timeout=30) as con:
        try:
            return {row[0] for row in con.execute("SELECT key FROM outputs")}
        except sqlite3.OperationalError:  # table not created yet
            return set()


@pytest.mark.slow
def test_killed_run_resumes_and_equals_an_uninterrupted_run(tmp_path, tiny_model_dir,
                                                           monkeypatch):
    models = write_models_file(tmp_path / "models.yaml", [tiny_entry(
        "tiny-slow", tiny_model_dir, "base-fewshot",
        engine_options={"batch_size": 1, "max_new_tokens": 16})])
    spec = load_models(models).get("tiny-slow")
    test_sets = load_benchmark(DataConfig()).test_sets()[:3]  # the worker's 36 segments
    total = sum(len(t.segments) for t in test_sets)
    cache = tmp_path / "cache"
    database = cache / "tiny-slow.sqlite"

    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(models), str(cache)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    deadline = time.monotonic() + 120
    while len(cached_rows(database)) < 5:
        assert worker.poll() is None, worker.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "the worker made no progress"
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    assert worker.returncode == -signal.SIGKILL
    done_before_kill = cached_rows(database)
    assert 5 <= len(done_before_kill) < total  # killed mid-way

    generated_keys: list[str] = []
    engine_class = engine_registry().get("transformers")
    original = engine_class.generate_reporting  # what translate calls

    def recording_generate(self, requests, finished):
        generated_keys.extend(request_key(run_fingerprint(spec, EngineSettings()), r)
                              for r in requests)
        return original(self, requests, finished)

    monkeypatch.setattr(engine_class, "generate_reporting", recording_generate)
    resumed = translate(spec, test_sets, cache_dir=cache, show_progress_bar=False)
    assert resumed.n_cached == len(done_before_kill)
    assert resumed.n_generated == total - len(done_before_kill)
    assert not set(generated_keys) & done_before_kill  # nothing finished was generated again
    assert len(generated_keys) == len(set(generated_keys)) == total - len(done_before_kill)

    monkeypatch.setattr(engine_class, "generate_reporting", original)
    uninterrupted = translate(spec, test_sets, cache_dir=tmp_path / "fresh",
                              show_progress_bar=False)
    assert uninterrupted.n_generated == total
    assert resumed.rows == uninterrupted.rows


CONCURRENT = """
import sys
from pathlib import Path
from cultivar_assets.data.sources import DataConfig, load_benchmark
from cultivar_assets.models import load_models
from cultivar_assets.translation import translate
spec = load_models(sys.argv[1]).get("tiny-slow")
run = translate(spec, load_benchmark(DataConfig()).test_sets()[:1], cache_dir=Path(sys.argv[2]),
                show_progress_bar=False)
print(run.n_generated, run.n_cached)
"""


def test_two_runs_in_threads_generate_each_output_once(tmp_path, tiny_model_dir, caplog):
    """The model lock of two runs of one model in one process (two threads, each its own lock
    file handle), both started while the lock is held: one generates every output, the other
    waits for it and reads them all from the cache. Across processes:
    :func:`test_two_concurrent_runs_of_one_model_generate_each_output_once` (slow)."""
    import threading

    from cultivar_assets.translation import model_lock

    models = write_models_file(tmp_path / "models.yaml", [tiny_entry(
        "tiny-slow", tiny_model_dir, "base-fewshot", engine_options={"max_new_tokens": 8})])
    spec = load_models(models).get("tiny-slow")
    test_sets = load_benchmark(DataConfig()).test_sets()[:1]
    cache = tmp_path / "cache"
    results, errors = [], []

    def run():
        try:
            run = translate(spec, test_sets, cache_dir=cache, show_progress_bar=False)
            results.append((run.n_generated, run.n_cached))
        except Exception as error:  # reported by the assertion below
            errors.append(error)

    def waiting() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if "waiting for it to finish" in r.getMessage()]

    threads = [threading.Thread(target=run) for _ in range(2)]
    with caplog.at_level("WARNING", logger="cultivar_assets.translation"):
        with model_lock(cache, spec.id):  # a run holding the lock before either starts
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 60
            while len(waiting()) < 2:
                assert time.monotonic() < deadline, "the runs did not wait for the lock"
                time.sleep(0.01)
            assert results == [] and not (cache / "tiny-slow.sqlite").exists()
        for thread in threads:
            thread.join(timeout=300)
    assert errors == []
    total = len(test_sets[0].segments)
    assert sorted(results) == [(0, total), (total, 0)]
    assert len(cached_rows(cache / "tiny-slow.sqlite")) == total
    assert all("tiny-slow" in message for message in waiting())


@pytest.mark.slow  # two processes; the lock in one process: the test above
def test_two_concurrent_runs_of_one_model_generate_each_output_once(tmp_path, tiny_model_dir):
    models = write_models_file(tmp_path / "models.yaml", [tiny_entry(
        "tiny-slow", tiny_model_dir, "base-fewshot",
        engine_options={"batch_size": 1, "max_new_tokens": 8})])
    cache = tmp_path / "cache"
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    workers = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(models), str(cache)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env) for _ in range(2)]
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err[-2000:]
        results.append(tuple(int(x) for x in out.split()))
    total = len(load_benchmark(DataConfig()).test_sets()[0].segments)
    # one run generated everything; the other waited for the lock and read it from the cache
    assert sorted(results) == [(0, total), (total, 0)]
    assert len(cached_rows(cache / "tiny-slow.sqlite")) == total
