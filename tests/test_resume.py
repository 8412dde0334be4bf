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
