"""A localisation run killed mid-way (SIGKILL) resumes without sending a finished request again.

The worker localises 12 pairs through the OpenAI-compatible engine against a local server that
this test runs and that records every request. The engine answers each request alone, so the
loop submits requests continuously and commits every answer as it arrives: with one request in
flight, or four (``batch_size`` 16 then only sets how often progress is said), the requests in
flight at the kill are the only ones sent twice.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from localisation_helpers import demo_pairs, localising_answer
from openai_server import FakeOpenAIServer

from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.construction.localisation.localiser import localise

LOCALE = "hin_Deva_US"
WORKER = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from localisation_helpers import demo_pairs
from cultivar_assets.construction.config import LocalisationConfig
from cultivar_assets.construction.localisation.localiser import localise
config = LocalisationConfig.model_validate(json.loads(sys.argv[1]))
localise({"hin_Deva_US": demo_pairs("hin_Deva_US")}, config, cache_dir=Path(sys.argv[2]),
         show_bar=False)
print("finished")
"""


def cached(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path, timeout=30) as con:
        try:
            return con.execute("SELECT count(*) FROM outputs").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
@pytest.mark.parametrize(("batch_size", "concurrency"), [(1, 1), (16, 4)])
def test_a_killed_localisation_resumes_and_pays_nothing_twice(tmp_path, batch_size, concurrency):
    server = FakeOpenAIServer(delay=0.15, answer=localising_answer).start()
    try:
        config = LocalisationConfig(model="gpt-test", engine_options={
            "base_url": server.url, "batch_size": batch_size, "max_concurrency": concurrency,
            "max_retries": 0})
        cache = tmp_path / "cache"
        database = cache / "localiser-gpt-test.sqlite"
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, config.model_dump_json(), str(cache),
             str(Path(__file__).parent)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while cached(database) < 4:
            assert worker.poll() is None, worker.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "the worker made no progress"
            time.sleep(0.01)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert worker.returncode == -signal.SIGKILL
        done = cached(database)
        sent_before = len(server.requests)
        assert 4 <= done < 12 and sent_before - done <= concurrency  # at most those in flight

        resumed = localise({LOCALE: demo_pairs(LOCALE)}, config, cache_dir=cache, show_bar=False)
        assert resumed.n_generated == 12 - done
        texts = [json.dumps(r.body["messages"]) for r in server.requests]
        repeated = len(texts) - len(set(texts))
        assert repeated == sent_before - done  # only the request in flight at the kill
        assert len(set(texts)) == 12

        fresh = localise({LOCALE: demo_pairs(LOCALE)}, config, cache_dir=tmp_path / "fresh",
                         show_bar=False)
        assert fresh.locales[LOCALE].records == resumed.locales[LOCALE].records
    finally:
        server.stop()
